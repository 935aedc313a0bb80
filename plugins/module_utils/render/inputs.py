"""What the renderer needs per cluster, read from the snapshots: nodes, topology, pool assignment.

A thin adapter over the pool (``pools.assign``, ``pools.lock``), node (``model.nodes``) and topology
(``topology.topology_load``) modules, so the render modules depend on one
small interface (:class:`ClusterInputs`) and not on each module's signature.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Cluster, Fleet, Pool
from ansible_collections.gpufleet.core.plugins.module_utils.model.nodes import NodeInfo
from ansible_collections.gpufleet.core.plugins.module_utils.pools.assign import assign
from ansible_collections.gpufleet.core.plugins.module_utils.pools.assignment import Assignment, node_resources
from ansible_collections.gpufleet.core.plugins.module_utils.pools.lock import (
    LOCK_NAME,
    lock_text_at,
    parse_lock_entries,
    read_lock_entries,
    render_lock,
    verify_lock,
)
from ansible_collections.gpufleet.core.plugins.module_utils.pools.owner_moves import check_owner_moves
from ansible_collections.gpufleet.core.plugins.module_utils.pools.pool_table import render_pool_tables
from ansible_collections.gpufleet.core.plugins.module_utils.render import cache as render_cache
from ansible_collections.gpufleet.core.plugins.module_utils.render import topology_guard


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
    pool_tables: dict[str | None, str]  # POOLS.md per owner: None the platform's, else a tenant's
    assignment: Assignment  # its ``pools`` order is the one every pool table of the cluster uses
    extra: dict[str, Any] = field(default_factory=dict)

    def topology_view(self, nodes: list[str]) -> Any | None:
        """The cluster topology restricted to ``nodes`` (None without a topology); no health report."""
        if self.topology is None:
            return None
        return self.topology.subset(nodes, health=False)

    @property
    def by_name(self) -> dict[str, NodeInfo]:
        cached = self.extra.get("by_name")
        if cached is None:
            cached = self.extra["by_name"] = {n.name: n for n in self.nodes}
        return cached

    def pool_gpus(self, pool: str) -> int:
        return int(self.pool_resources(pool)["nvidia.com/gpu"])

    def pool_resources(self, pool: str) -> dict[str, int | str]:
        by_name = self.by_name
        return node_resources(by_name[n] for n in self.members.get(pool, []) if n in by_name)


def cluster_inputs(
    fleet: Fleet,
    cluster: Cluster,
    cache: Path | None = None,
    base: str | None = None,
    digests: render_cache.InputDigests | None = None,
) -> ClusterInputs:
    """Nodes, topology and pool assignment of one cluster, from its snapshots.

    ``cache``: a directory for parsed snapshots (see above); None parses every time. ``base``: a
    Git revision (the pull request's base): the previous assignment is the lock committed there,
    and the working tree's lock must be that one or the one computed from it (pools/lock.py).
    ``digests``: the render's snapshot digests (render/cache.py), so that each snapshot is hashed once.
    """
    digests = digests or render_cache.InputDigests()
    if not cluster.nodes_snapshot.is_file():
        raise RenderInputError(
            f"{cluster.nodes_snapshot}: nodes snapshot of cluster {cluster.name!r} not found (run discover first)"
        )
    ccache = cache / cluster.name if cache is not None else None
    nodes = render_cache.cached_nodes(cluster, ccache, digests)
    topo = render_cache.cached_topology(cluster, nodes, ccache, digests)
    lock_path = cluster.snapshot_dir / LOCK_NAME
    previous, owners = read_lock_entries(lock_path, cluster.name) or (None, {})
    working = previous
    if base is not None:
        text = lock_text_at(base, lock_path)
        previous, owners = (
            parse_lock_entries(text, f"{lock_path} (at {base})", cluster.name) if text is not None else (None, {})
        )
    node_group = dict(topo.node_group) if topo is not None else {}
    assignment = assign(fleet, cluster.name, nodes, node_group, previous)
    if base is not None:
        verify_lock(lock_path, working, previous, dict(assignment.pool_of), base)
    moves: list[str] = []
    refused: Exception | None = None
    if previous:
        try:
            moves = check_owner_moves(fleet, assignment, previous, str(lock_path), owners)
        except GpufleetError as exc:  # raised after the render's own checks (render/tree.py): a
            refused = exc  # colliding or reserved name explains more than the moves it causes
    members = {p.name: list(assignment.members(p.name)) for p in fleet.cluster_pools(cluster.name)}
    pool_of = {n: p for p, ns in members.items() for n in ns}
    slurm_nodes = sorted(n for p in fleet.cluster_pools(cluster.name) if p.kind == "slurm" for n in members[p.name])
    warnings = topology_guard.check(fleet, cluster, topo, slurm_nodes)
    return ClusterInputs(
        cluster=cluster,
        nodes=nodes,
        topology=topo,
        members=members,
        pool_of=pool_of,
        lock_path=lock_path,
        lock_bytes=_as_bytes(render_lock(assignment)),
        pool_tables=render_pool_tables(assignment),
        assignment=assignment,
        extra={"warnings": warnings, "moves": moves, "refused_moves": refused},
    )


def _as_bytes(x: Any) -> bytes:
    return x if isinstance(x, bytes) else str(x).encode("utf-8")


def pools_by_kind(fleet: Fleet, cluster: str, kind: str) -> list[Pool]:
    return sorted((p for p in fleet.cluster_pools(cluster) if p.kind == kind), key=lambda p: p.name)
