"""What the ``slurm_topology`` and ``fabric_facts`` modules do, without Ansible (unit-testable).

Both take the module parameters as a dict and return the module result as a dict; errors are
:class:`FabricError` (the module turns them into ``fail_json``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.fabric.model import FabricError
from ansible_collections.gpufleet.core.plugins.module_utils.files import as_text, replace_file
from ansible_collections.gpufleet.core.plugins.module_utils.topology.names import node_list
from ansible_collections.gpufleet.core.plugins.module_utils.topology.render import (
    render,
    slinky_spec_for,
)
from ansible_collections.gpufleet.core.plugins.module_utils.topology.topology_load import load_topology, module_inputs
from ansible_collections.gpufleet.core.plugins.module_utils.topology.topology_model import Topology


def topology_from_params(params: Mapping[str, Any], ibnetdiscover_text: str | None = None) -> Topology:
    """The module parameters, handed to the one topology loader (:func:`topology.topology_load.load_topology`)."""
    return load_topology(
        module_inputs(params),
        nodes_snapshot=params.get("nodes_snapshot"),
        fabric_kind=params.get("fabric_kind") or "auto",
        text=ibnetdiscover_text,
        use_cliques=params.get("use_cliques") is not False,
        node_map=params.get("node_name_map") or params.get("node_map") or None,
        nodes=node_list(params.get("nodes")),
        exclude=params.get("exclude") or None,
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


def _write_dest(dest: Any, text: str, check: bool, mode: int) -> tuple[bool, str]:
    """``dest`` through the one atomic writer (files.replace_file); (changed, old text).
    A directory or an unwritable path is a :class:`FabricError` naming ``dest``."""
    p = Path(dest)
    if p.is_dir():
        raise FabricError(f"dest {str(p)!r} is a directory; give a file path (e.g. {p}/topology.conf)", key="dest")
    try:
        changed, before = replace_file(p, text, check=check, mode=mode)
    except OSError as e:
        raise FabricError(f"cannot write dest {str(p)!r}: {e.strerror or e}", key="dest") from None
    return changed, as_text(before)


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
        "slinky_spec": slinky_spec_for(topo, fmt, params.get("topologies") or None, params.get("slinky_tree_name")),
    }
    dest = params.get("dest")
    if dest:
        changed, old = _write_dest(dest, content, check=check_mode, mode=_mode(params.get("mode")))
        result["changed"] = changed
        result["dest"] = str(dest)
        if diff_mode and changed:
            result["diff"] = {"before": old, "after": content, "before_header": str(dest), "after_header": str(dest)}
    return result


def run_fabric_facts(
    params: Mapping[str, Any], ibnetdiscover_text: str | None = None, check_mode: bool = False, diff_mode: bool = False
) -> dict:
    """Fabric summary + topology + health; optionally save the raw ibnetdiscover output to ``dest``."""
    topo = topology_from_params(params, ibnetdiscover_text)
    result: dict = {"changed": False, "fabric": {**topology_summary(topo), "health": topo.health}}
    dest = params.get("dest")
    if dest and ibnetdiscover_text is not None:
        changed, old = _write_dest(dest, ibnetdiscover_text, check=check_mode, mode=0o644)
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
