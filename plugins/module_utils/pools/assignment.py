"""A cluster's pool assignment as data: which node is in which pool, the moves against the lock,
one row per node (what ``pools/assign.py`` returns, what the lock and the pool tables read)."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.model.nodes import NodeInfo

NO_GROUP = ""


class PoolError(GpufleetError):
    """The pools of a cluster cannot be assigned as asked; nothing is written."""


def node_resources(members: Iterable[NodeInfo]) -> dict[str, int | str]:
    """Allocatable totals of ``members`` as Kubernetes quantities: cpu, memory, nvidia.com/gpu."""
    millis = mem = gpus = 0
    for n in members:
        millis += n.cpu_millis
        mem += n.memory_bytes
        gpus += n.gpus
    return {
        "cpu": millis // 1000 if millis % 1000 == 0 else f"{millis}m",
        "memory": _binary_quantity(mem),
        "nvidia.com/gpu": gpus,
    }


@dataclass(frozen=True, order=True)
class Move:
    node: str
    before: str | None  # None: not in the snapshot before, or unassigned
    after: str | None  # None: gone from the snapshot, or unassigned


@dataclass(frozen=True, order=True)
class PoolRow:
    node: str
    pool: str | None
    kind: str | None
    tenant: str | None
    leaf_group: str | None
    gpus: int
    gpu_product: str | None
    nvlink_domain: str | None


@dataclass(frozen=True)
class PoolInfo:
    name: str
    kind: str
    tenant: str | None


@dataclass(frozen=True)
class Assignment:
    cluster: str
    pool_of: Mapping[str, str]
    pools: Mapping[str, PoolInfo]  # by name: the order of every pool table (POOLS.md, REPORT.md, the lock)
    nodes: Mapping[str, NodeInfo] = field(repr=False)
    node_group: Mapping[str, str] = field(repr=False)

    @property
    def unassigned(self) -> tuple[str, ...]:
        return tuple(n for n in sorted(self.nodes) if n not in self.pool_of)

    def members(self, pool: str) -> tuple[str, ...]:
        if pool not in self.pools:
            raise KeyError(f"pool {pool!r} is not a pool of cluster {self.cluster!r}")
        return self._by_pool.get(pool, ())

    @functools.cached_property
    def _by_pool(self) -> dict[str, tuple[str, ...]]:
        """pool -> its sorted nodes, grouped in one pass (per pool it was a scan of every node:
        200 pools x 10,000 nodes). Built once: the assignment is frozen."""
        groups: dict[str, list[str]] = {}
        for n, p in self.pool_of.items():
            groups.setdefault(p, []).append(n)
        return {p: tuple(sorted(ns)) for p, ns in groups.items()}

    def gpus(self, pool: str) -> int:
        return sum(self.nodes[n].gpus for n in self.members(pool))

    def resources(self, pool: str) -> dict[str, int | str]:
        """Allocatable totals of the pool's nodes, as Kueue quotas: cpu, memory, nvidia.com/gpu."""
        return node_resources(self.nodes[n] for n in self.members(pool))

    def moves(self, previous: Mapping[str, str] | None) -> list[Move]:
        """Nodes whose pool differs from ``previous`` (every node when previous is None), sorted."""
        prev = dict(previous or {})
        out = []
        for n in sorted(set(prev) | set(self.nodes)):
            before, after = prev.get(n), self.pool_of.get(n)
            if before != after:
                out.append(Move(n, before, after))
        return out

    def owner_moves(
        self, previous: Mapping[str, str] | None, owners: Mapping[str, str] | None = None
    ) -> list[tuple[Move, str | None, str | None]]:
        """(move, tenant before, tenant after) of the nodes whose tenant changes against ``previous``
        (node -> pool) and ``owners`` (pool -> tenant when ``previous`` was written; the current
        owner where it does not say): a node that changes pool, or stays in a pool that changed tenant."""
        prev, was = dict(previous or {}), dict(owners or {})
        out = []
        for n in sorted(set(prev) & set(self.pool_of)):
            before, after = prev[n], self.pool_of[n]
            cur = self.pools.get(before)
            a = was[before] if before in was else (cur.tenant if cur else None)
            b = self.pools[after].tenant
            if a != b or (before != after and (a or b)):
                out.append((Move(n, before, after), a, b))
        return out

    def rows(self) -> list[PoolRow]:
        out = []
        for n in sorted(self.nodes):
            info = self.nodes[n]
            p = self.pool_of.get(n)
            meta = self.pools.get(p) if p else None
            out.append(
                PoolRow(
                    node=n,
                    pool=p,
                    kind=meta.kind if meta else None,
                    tenant=meta.tenant if meta else None,
                    leaf_group=self.node_group.get(n),
                    gpus=info.gpus,
                    gpu_product=info.gpu_product,
                    nvlink_domain=info.nvlink_domain,
                )
            )
        return out


def _binary_quantity(n: int) -> int | str:
    """Bytes as the largest exact binary-suffixed quantity: 3980Gi, 24766464Mi, or plain bytes."""
    for suffix, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if n and n % size == 0:
            return f"{n // size}{suffix}"
    return n
