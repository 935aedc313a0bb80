"""Nodes that change tenant between the pool lock and a new assignment: listed for the plan, and
refused unless the platform allows each one (``gpufleet_clusters[].allow_node_moves``)."""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.hostlist import expand as _expand
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Fleet
from ansible_collections.gpufleet.core.plugins.module_utils.pools.assignment import Assignment, PoolError


def allowed_node_moves(fleet: Fleet, cluster: str) -> set[str]:
    """Nodes the platform lets change tenant (``gpufleet_clusters[].allow_node_moves``)."""
    out: set[str] = set()
    for expr in fleet.clusters[cluster].allow_node_moves:
        try:
            out.update(_expand(expr))
        except GpufleetError as exc:
            raise PoolError(f"cluster {cluster!r}: allow_node_moves: bad hostlist {expr!r}: {exc}") from None
    return out


def check_owner_moves(
    fleet: Fleet,
    assignment: Assignment,
    previous: Mapping[str, str] | None,
    source: str = "pools.lock.yaml",
    owners: Mapping[str, str] | None = None,
) -> list[str]:
    """The plan's lines for nodes that change tenant; PoolError for those the platform did not allow.

    A node never goes from one tenant to another on a tenant's word (a pin, a pool moved to another
    tenant's list, a shrink and a grow in one change): the node carries the previous tenant's state
    (privileged slurmd, local disks), so the platform allows each such node explicitly."""
    allowed = allowed_node_moves(fleet, assignment.cluster)
    lines, refused = [], []
    for m, a, b in assignment.owner_moves(previous, owners):
        line = f"node {m.node}: pool {m.before} (tenant {a or '-'}) -> pool {m.after} (tenant {b or '-'})"
        lines.append(line)
        if a is not None and b is not None and a != b and m.node not in allowed:
            refused.append(line)
    if refused:
        ci = list(fleet.clusters).index(assignment.cluster)
        more = f" (and {len(refused) - 10} more)" if len(refused) > 10 else ""
        raise PoolError(
            f"{source}: nodes: cluster {assignment.cluster!r}: {len(refused)} node(s) would change tenant:"
            f" {'; '.join(refused[:10])}{more};"
            f" a node moves between tenants only when the platform lists it in"
            f" gpufleet_clusters[{ci}].allow_node_moves (with a reason)"
        )
    return lines
