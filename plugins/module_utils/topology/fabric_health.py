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
    host_leaves: Mapping[str, tuple[str, ...]],
    sw_all: dict,
) -> dict:
    """Hosts missing rails of their unit, and hosts cabled into another unit."""
    missing: list[dict] = []
    outside: list[dict] = []
    # the findings depend on a host's leaves and group only: worked out once per (leaf set, group)
    found: dict[tuple, tuple[dict | None, list[str]]] = {}
    for node, g in host_group.items():
        key = (host_leaves[node], g)
        if key not in found:
            found[key] = _rail_findings(key[0], group_leaves[g], g, group_of_leaf, sw_all)
        short, foreign = found[key]
        if short is not None:
            missing.append({"node": node, **short, "missing_leaves": list(short["missing_leaves"])})
        if foreign:
            outside.append({"node": node, "foreign_leaves": list(foreign)})
    missing.sort(key=lambda d: natural_key(d["node"]))
    outside.sort(key=lambda d: natural_key(d["node"]))
    return {
        "hosts_missing_rails": missing[:LIST_CAP],
        "hosts_missing_rails_count": len(missing),
        "hosts_outside_unit": outside[:LIST_CAP],
    }


def _rail_findings(
    have_leaves: tuple[str, ...],
    expected: list[str],
    g: tuple[str, ...],
    group_of_leaf: Mapping[str, tuple[str, ...]],
    sw_all: dict,
) -> tuple[dict | None, list[str]]:
    """For a host on ``have_leaves`` in group ``g``: the rails it misses (or None), its foreign leaves."""
    have = set(have_leaves)
    short = None
    if len(expected) > 1 and not set(expected) <= have:
        short = {
            "rails": len(have & set(expected)),
            "expected": len(expected),
            "missing_leaves": sorted((sw_all[s].name for s in expected if s not in have), key=natural_key),
        }
    return short, sorted(sw_all[s].name for s in have_leaves if group_of_leaf[s] != g)


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


def uplink_anomalies(
    sw_all: dict, tier: dict[str, int], up_cables: Mapping[str, int], down_cables: Mapping[str, int]
) -> list[dict]:
    """Switches with fewer cables up (or down) than most switches of their tier.

    ``up_cables``/``down_cables``: each tiered switch's cables to switches of higher/lower tiers.
    """
    up: dict[int, dict[str, int]] = {}
    down: dict[int, dict[str, int]] = {}
    for s, t in tier.items():
        u = up.get(t)
        if u is None:
            u = up[t] = {}
        u[s] = up_cables[s]
        if t > 0:
            d = down.get(t)
            if d is None:
                d = down[t] = {}
            d[s] = down_cables[s]
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
