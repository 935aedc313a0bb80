"""What the renderer needs per cluster, read from the snapshots: nodes, topology, pool assignment.

A thin adapter over the pool (``pools``, ``pool_lock``), node (``nodes``) and topology
(``fabric``, ``topology``, ``topology_render``) modules, so the render modules depend on one
small interface (:class:`ClusterInputs`) and not on each module's signature.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.model import Cluster, Fleet, Pool
from ansible_collections.gpufleet.core.plugins.module_utils.nodes import NodeInfo, load_nodes

LOCK_NAME = "pools.lock.yaml"


class RenderInputError(GpufleetError):
    """A snapshot is missing or cannot be used for this cluster."""


@dataclass
class ClusterInputs:
    cluster: Cluster
    nodes: tuple[NodeInfo, ...]
    topology: Any | None  # topology.Topology, None when the cluster has no fabric source
    members: dict[str, list[str]]  # pool -> node names (sorted as the assignment returns them)
    pool_of: dict[str, str]  # node -> pool
    lock_path: Path
    lock_bytes: bytes
    pool_table: str
    assignment: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    def pool_gpus(self, pool: str) -> int:
        by_name = {n.name: n for n in self.nodes}
        return sum(by_name[n].gpus for n in self.members.get(pool, []) if n in by_name)


def _node_map(spec: Mapping[str, str] | None) -> dict[str, str] | None:
    if not spec:
        return None
    return {"pattern": spec["pattern"], "replacement": spec.get("replacement", spec.get("replace", ""))}


def load_topology(cluster: Cluster, nodes: tuple[NodeInfo, ...]) -> Any | None:
    fab = cluster.fabric
    if fab.source == "none":
        return None
    from ansible_collections.gpufleet.core.plugins.module_utils.fabric import load_fabric
    from ansible_collections.gpufleet.core.plugins.module_utils.topology import build_topology

    if fab.source == "labels":
        src: Any = cluster.nodes_snapshot
        kind = "labels"
    else:
        if fab.path is None or not fab.path.is_file():
            raise RenderInputError(
                f"{fab.path}: fabric snapshot of cluster {cluster.name!r} not found (run discover first)"
            )
        src, kind = fab.path, ("file" if fab.source == "file" else "auto")
    fabric = load_fabric(src, kind=kind)
    exclude = [*fab.exclude_hosts, *fab.exclude_switches] or None
    return build_topology(fabric, _node_map(fab.node_name_map), [n.name for n in nodes] or None, exclude)


def cluster_inputs(fleet: Fleet, cluster: Cluster) -> ClusterInputs:
    """Nodes, topology and pool assignment of one cluster, from its snapshots."""
    from ansible_collections.gpufleet.core.plugins.module_utils.pool_lock import read_lock, render_lock
    from ansible_collections.gpufleet.core.plugins.module_utils.pools import assign, render_pool_table

    if not cluster.nodes_snapshot.is_file():
        raise RenderInputError(
            f"{cluster.nodes_snapshot}: nodes snapshot of cluster {cluster.name!r} not found (run discover first)"
        )
    nodes = load_nodes(cluster.nodes_snapshot)
    topo = load_topology(cluster, nodes)
    lock_path = cluster.snapshot_dir / LOCK_NAME
    previous = read_lock(lock_path, cluster.name)
    node_group = dict(topo.node_group) if topo is not None else {}
    assignment = assign(fleet, cluster.name, nodes, node_group, previous)
    members = {p.name: list(assignment.members(p.name)) for p in fleet.cluster_pools(cluster.name)}
    pool_of = {n: p for p, ns in members.items() for n in ns}
    return ClusterInputs(
        cluster=cluster,
        nodes=nodes,
        topology=topo,
        members=members,
        pool_of=pool_of,
        lock_path=lock_path,
        lock_bytes=_as_bytes(render_lock(assignment)),
        pool_table=_as_text(render_pool_table(assignment)),
        assignment=assignment,
    )


def _as_bytes(x: Any) -> bytes:
    return x if isinstance(x, bytes) else str(x).encode("utf-8")


def _as_text(x: Any) -> str:
    return x.decode("utf-8") if isinstance(x, bytes) else str(x)


def pools_by_kind(fleet: Fleet, cluster: str, kind: str) -> list[Pool]:
    return sorted((p for p in fleet.cluster_pools(cluster) if p.kind == kind), key=lambda p: p.name)
