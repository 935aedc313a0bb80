"""The fabric health report of a topology build: hosts missing rails or cabled into another unit,
switches with fewer links than their tier, and whether the whole report is clean."""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.gpufleet.core.plugins.module_utils.topology.names import natural_key

LIST_CAP = 50  # longest list kept in one health item


def rail_report(
    host_group: Mapping[str, tuple[str, ...]],
    group_leaves: Mapping[tuple[str, ...], list[str]],
    group_of_leaf: Mapping[str, tuple[str, ...]],
    host_leaves: Mapping[str, list[str]],
    sw_all: dict,
) -> dict:
    """Hosts missing rails of their unit, and hosts cabled into another unit."""
    missing: list[dict] = []
    outside: list[dict] = []
    for node, g in host_group.items():
        expected = group_leaves[g]
        have = set(host_leaves[node])
        if len(expected) > 1 and not set(expected) <= have:
            missing.append(
                {
                    "node": node,
                    "rails": len(have & set(expected)),
                    "expected": len(expected),
                    "missing_leaves": sorted((sw_all[s].name for s in expected if s not in have), key=natural_key),
                }
            )
        foreign = sorted(sw_all[s].name for s in host_leaves[node] if group_of_leaf[s] != g)
        if foreign:
            outside.append({"node": node, "foreign_leaves": foreign})
    missing.sort(key=lambda d: natural_key(d["node"]))
    outside.sort(key=lambda d: natural_key(d["node"]))
    return {
        "hosts_missing_rails": missing[:LIST_CAP],
        "hosts_missing_rails_count": len(missing),
        "hosts_outside_unit": outside[:LIST_CAP],
    }


def healthy(h: dict) -> bool:
    return not (
        h["hosts_missing_rails_count"]
        or h["unnamed_hcas_count"]
        or h["uplink_anomalies"]
        or h["asymmetric_switches"]
        or h["hosts_outside_unit"]
        or h["nodes_not_in_fabric"]
        or h["summary"]["roots"] > h["summary"]["fabrics"]
    )


def uplink_anomalies(sw_all: dict, tier: dict[str, int]) -> list[dict]:
    """Switches with fewer cables up (or down) than most switches of their tier."""
    up: dict[int, dict[str, int]] = {}
    down: dict[int, dict[str, int]] = {}
    for s, t in tier.items():
        u = d = 0
        for p, n in sw_all[s].peers.items():
            pt = tier.get(p)
            if pt is None:
                continue
            if pt > t:
                u += n
            elif pt < t:
                d += n
        up.setdefault(t, {})[s] = u
        if t > 0:
            down.setdefault(t, {})[s] = d
    out: list[dict] = []
    for direction, table in (("up", up), ("down", down)):
        for t in sorted(table):
            counts = table[t]
            freq: dict[int, int] = {}
            for v in counts.values():
                freq[v] = freq.get(v, 0) + 1
            mode, support = max(freq.items(), key=lambda kv: (kv[1], kv[0]))
            if (direction == "up" and mode == 0) or support < 2 or support * 2 <= len(counts):
                continue
            low = [s for s, v in counts.items() if v < mode]  # few: only they are sorted by name
            for s in sorted(low, key=lambda x: natural_key(sw_all[x].name)):
                if len(out) < LIST_CAP:
                    out.append(
                        {
                            "switch": sw_all[s].name,
                            "tier": t,
                            "direction": direction,
                            "links": counts[s],
                            "expected": mode,
                        }
                    )
    return out
