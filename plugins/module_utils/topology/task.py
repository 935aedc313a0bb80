"""What the ``slurm_topology`` and ``fabric_facts`` modules do, without Ansible (unit-testable).

Both take the module parameters as a dict and return the module result as a dict; errors are
:class:`FabricError` (the module turns them into ``fail_json``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.fabric.labels import (
    domains_from_nodes,
    fabric_from_nodes,
    load_nodes,
)
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.model import (
    Fabric,
    FabricError,
    load_fabric,
    merge_into,
)
from ansible_collections.gpufleet.core.plugins.module_utils.topology.build import Topology, build_topology, node_list
from ansible_collections.gpufleet.core.plugins.module_utils.topology.render import (
    default_topologies,
    render,
    slinky_topology_spec,
    write_if_changed,
)


def _as_list(v: Any) -> list:
    if v is None:
        return []
    return [v] if isinstance(v, str) else list(v)


def load_sources(params: Mapping[str, Any], ibnetdiscover_text: str | None = None) -> tuple[Fabric, dict | None]:
    """Fabric from ``ibnetdiscover`` / ``fabric`` / ``nodes_snapshot``; domains from the snapshot."""
    kind = params.get("fabric_kind") or "auto"
    fabs: list[Fabric] = []
    if ibnetdiscover_text is not None:
        fabs.append(load_fabric(ibnetdiscover_text, kind=kind if kind != "auto" else "auto"))
    for p in _as_list(params.get("ibnetdiscover")):
        fabs.append(load_fabric(str(p), kind=kind if kind.startswith("ibnetdiscover") else "auto"))
    for p in _as_list(params.get("fabric")):
        fabs.append(load_fabric(str(p), kind="file"))
    domains: dict | None = None
    snap = params.get("nodes_snapshot")
    if snap:
        doc = load_nodes(str(snap))
        domains = domains_from_nodes(doc, str(snap)) or None
        if not fabs:
            fabs.append(fabric_from_nodes(doc, str(snap)))
    if not fabs:
        raise FabricError("give one of ibnetdiscover, fabric or nodes_snapshot", key="ibnetdiscover")
    if len(fabs) == 1:
        fab = fabs[0]
    else:
        fab = Fabric(source=", ".join(f.source for f in fabs))
        for f in fabs:
            merge_into(fab, f)
        fab.finish()
    if params.get("use_cliques") is False:
        domains = {}
    return fab, domains


def topology_from_params(params: Mapping[str, Any], ibnetdiscover_text: str | None = None) -> Topology:
    fab, domains = load_sources(params, ibnetdiscover_text)
    return build_topology(
        fab,
        node_map=params.get("node_map") or None,
        nodes=node_list(params.get("nodes")),
        exclude=params.get("exclude") or None,
        domains=domains,
    )


def topology_summary(topo: Topology) -> dict:
    return {
        "roots": list(topo.roots),
        "leaf_groups": [{"name": g, "nodes": list(ns)} for g, ns in topo.leaf_groups],
        "node_group": dict(sorted(topo.node_group.items())),
        "blocks": [{"name": b, "nodes": list(ns), "domain": topo.block_domains.get(b, b)} for b, ns in topo.blocks],
        "block_source": topo.block_source,
    }


def _mode(value: Any) -> int:
    """File mode from the module's ``mode`` option: octal digits like ``0644`` (no symbolic modes)."""
    text = str(value or "0644")
    if not re.fullmatch(r"0?[0-7]{3,4}", text) or int(text, 8) > 0o7777:
        raise FabricError(f"mode {text!r} is not an octal file mode like '0644'", key="mode")
    return int(text, 8)


def run_slurm_topology(params: Mapping[str, Any], check_mode: bool = False, diff_mode: bool = False) -> dict:
    """Render topology.conf / topology.yaml; write ``dest`` atomically when its bytes change."""
    topo = topology_from_params(params)
    fmt = params.get("format") or "tree"
    warnings: list[str] = []
    content = render(
        topo,
        fmt,
        block_sizes=params.get("block_sizes") or None,
        topologies=params.get("topologies") or None,
        warnings=warnings,
    )
    lost = topo.health.get("nodes_not_in_fabric") or []
    if lost:
        warnings.append(f"{len(lost)} node(s) not in the fabric, so in no switch or block: {', '.join(lost[:10])}")
    if params.get("strict") and not topo.health.get("ok"):
        raise FabricError("fabric health check failed (strict): " + _health_line(topo.health))
    result: dict = {
        "changed": False,
        "content": content,
        "warnings": warnings,
        "health": topo.health,
        "topology": topology_summary(topo),
        "slinky_spec": slinky_topology_spec(topo, **_slinky_names(topo, fmt, params)),
    }
    dest = params.get("dest")
    if dest:
        changed, old = write_if_changed(dest, content, check=check_mode, mode=_mode(params.get("mode")))
        result["changed"] = changed
        result["dest"] = str(dest)
        if diff_mode and changed:
            result["diff"] = {"before": old, "after": content, "before_header": str(dest), "after_header": str(dest)}
    return result


def _slinky_names(topo: Topology, fmt: str, params: Mapping[str, Any]) -> dict:
    """Topology names for the Slinky annotation: ``default`` for topology.conf, else from ``topologies``."""
    if fmt == "tree":
        return {"tree": params.get("slinky_tree_name") or "default", "block": None}
    if fmt == "block":
        return {"tree": None, "block": "default"}
    specs = params.get("topologies") or default_topologies(topo)
    tree = next((str(t.get("name")) for t in specs if str(t.get("plugin", "tree")).endswith("tree")), None)
    block = next((str(t.get("name")) for t in specs if str(t.get("plugin", "tree")).endswith("block")), None)
    return {"tree": tree, "block": block}


def run_fabric_facts(
    params: Mapping[str, Any], ibnetdiscover_text: str | None = None, check_mode: bool = False, diff_mode: bool = False
) -> dict:
    """Fabric summary + topology + health; optionally save the raw ibnetdiscover output to ``dest``."""
    topo = topology_from_params(params, ibnetdiscover_text)
    result: dict = {"changed": False, "fabric": {**topology_summary(topo), "health": topo.health}}
    dest = params.get("dest")
    if dest and ibnetdiscover_text is not None:
        changed, old = write_if_changed(dest, ibnetdiscover_text, check=check_mode)
        result["changed"] = changed
        result["dest"] = str(dest)
        if diff_mode and changed:
            result["diff"] = {
                "before": old,
                "after": ibnetdiscover_text,
                "before_header": str(dest),
                "after_header": str(dest),
            }
    return result


def _health_line(h: dict) -> str:
    parts = []
    for key in ("hosts_missing_rails_count", "unnamed_hcas_count"):
        if h.get(key):
            parts.append(f"{key.removesuffix('_count')}={h[key]}")
    for key in ("uplink_anomalies", "asymmetric_switches", "hosts_outside_unit", "nodes_not_in_fabric"):
        if h.get(key):
            parts.append(f"{key}={len(h[key])}")
    return ", ".join(parts) or "ok"
