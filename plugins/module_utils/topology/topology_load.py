"""The one way from fabric inputs to a :class:`Topology`, for the renderer and the modules alike.

``gitops_render`` (through :mod:`render.inputs`), ``slurm_topology`` and ``fabric_facts`` all call
:func:`load_topology`, so every input (ibnetdiscover dumps, fabric files, the nodes snapshot with its
NVLink domains, node name map, exclusions) reaches each of them the same way, and the same fleet
gives the same topology.conf whichever path wrote it. Blocks come from the accelerator (NVLink)
domains of the nodes snapshot when it has them, else from the leaf groups (docs/adr/topology.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.fabric.load import load_fabric, load_source
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.model import Fabric, FabricError, merge_into
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.node_labels import (
    domains_from_nodes,
    fabric_from_nodes,
    load_nodes,
)
from ansible_collections.gpufleet.core.plugins.module_utils.model import fabric_sources
from ansible_collections.gpufleet.core.plugins.module_utils.model.nodes import NodeInfo
from ansible_collections.gpufleet.core.plugins.module_utils.topology.build import build_topology
from ansible_collections.gpufleet.core.plugins.module_utils.topology.topology_model import Topology


def _as_list(v: Any) -> list:
    if v is None:
        return []
    return [v] if isinstance(v, (str, Path)) else list(v)


def load_topology(
    inputs: Iterable[tuple[str, str | Path]] = (),
    nodes_snapshot: str | Path | None = None,
    fabric_kind: str = "auto",
    text: str | None = None,
    use_cliques: bool = True,
    nodes_doc: Any = None,
    node_map: Mapping[str, str] | None = None,
    nodes: str | Iterable[str] | None = None,
    exclude: Iterable[str] | str | None = None,
) -> Topology:
    """The fabric from ``inputs`` ((source, file) pairs, each source a row of model/fabric_sources.py),
    ``text`` (a fabric of ``fabric_kind`` in memory) or, when neither is given, the fabric labels of
    ``nodes_snapshot``; NVLink domains from the snapshot; built into a topology (:func:`build_topology`:
    ``node_map``, ``nodes``, ``exclude``). ``nodes_doc``: the snapshot's Node list when the caller has it
    in memory already (the renderer), so it is not parsed twice."""
    kind = fabric_kind or "auto"
    fabs = [load_fabric(text, kind=kind)] if text is not None else []
    fabs += [load_source(source, p, kind) for source, p in inputs]
    domains: dict | None = None
    if nodes_snapshot or nodes_doc is not None:
        source = str(nodes_snapshot) if nodes_snapshot else "<nodes>"
        doc = nodes_doc if nodes_doc is not None else load_nodes(source)
        domains = domains_from_nodes(doc, source) or None
        if not fabs:
            fabs.append(fabric_from_nodes(doc, source))
    if not fabs:
        options = [s.module_option for s in fabric_sources.SOURCES if s.module_option]
        raise FabricError(f"give one of {', '.join(options)} or nodes_snapshot", key=options[0])
    if len(fabs) == 1:
        fab = fabs[0]
    else:
        fab = Fabric(source=", ".join(f.source for f in fabs))
        for f in fabs:
            merge_into(fab, f)
        fab.finish()
    if not use_cliques:
        domains = {}
    return build_topology(fab, node_map=node_map or None, nodes=nodes, exclude=exclude or None, domains=domains)


def module_inputs(params: Mapping[str, Any]) -> list[tuple[str, str | Path]]:
    """(source, file) pairs of the fabric modules' options (``ibnetdiscover``, ``fabric``: each a file or a
    list of files), in the order of model/fabric_sources.py."""
    options = [(s.name, s.module_option) for s in fabric_sources.SOURCES if s.module_option]
    return [(name, p) for name, option in options for p in _as_list(params.get(option))]


def _node_map(spec: Mapping[str, str] | None) -> dict[str, str] | None:
    if not spec:
        return None
    return {"pattern": spec["pattern"], "replacement": spec.get("replacement", spec.get("replace", ""))}


def cluster_topology(cluster: Any, nodes: tuple[NodeInfo, ...]) -> Topology | None:
    """A cluster's topology as the renderer reads it: its fabric input (``Cluster.fabric_input``), the
    NVLink domains of its nodes (already parsed), its node name map and exclusions; None without a
    fabric source. ``cluster`` is a ``model.fleet.Cluster``, not imported: this module also runs on
    managed hosts (Python 3.9), and the fleet model is the controller's."""
    fab, path = cluster.fabric, cluster.fabric_input
    source = fabric_sources.BY_NAME.get(fab.source)
    if source is None:
        return None
    if path is None or (source.needs_path and not path.is_file()):
        raise FabricError(f"{fab.path}: fabric snapshot of cluster {cluster.name!r} not found (run discover first)")
    return load_topology(
        [] if source.reads_nodes else [(source.name, path)],
        nodes_snapshot=cluster.nodes_snapshot,
        nodes_doc={"kind": "List", "items": [{"metadata": {"name": n.name, "labels": dict(n.labels)}} for n in nodes]},
        node_map=_node_map(fab.node_name_map),
        nodes=[n.name for n in nodes] or None,
        exclude=[*fab.exclude_hosts, *fab.exclude_switches] or None,
    )
