"""Maintenance of one cluster: the nodes the apply step cordons and the plan the review shows.

For the cluster's ``gpufleet_maintenance`` entries (none: nothing is rendered, and the files of an
earlier render are removed, which returns the nodes):

- ``clusters/<cluster>/maintenance.yaml``: node -> maintenance, reason, window (read by the apply step,
  ``pools.cordon``), and per Slurm tenant the MAINT reservation of each window;
- ``clusters/<cluster>/MAINTENANCE.md``: per maintenance the nodes and when, and per tenant how many
  nodes and GPUs leave, of how many, and when (the plan of the pull request).

Nodes come from a hostlist (each must be a node of the cluster) or a switch of the topology (a leaf group,
a switch of the tree with every node below it, or a block). A node in two maintenances is refused.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import Issue, ModelError
from ansible_collections.gpufleet.core.plugins.module_utils.hostlist import HostlistError, compress, expand
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Cluster, Fleet
from ansible_collections.gpufleet.core.plugins.module_utils.model.maintenance_model import KEY, Maintenance
from ansible_collections.gpufleet.core.plugins.module_utils.pools.cordon import FILE, SLURM_REASON_PREFIX
from ansible_collections.gpufleet.core.plugins.module_utils.render.inputs import ClusterInputs
from ansible_collections.gpufleet.core.plugins.module_utils.render.shared_names import cluster_dir
from ansible_collections.gpufleet.core.plugins.module_utils.render.values import header
from ansible_collections.gpufleet.core.plugins.module_utils.yaml_dump import dump_file

RESERVATION_PREFIX = "gpufleet-"
RESERVATION_FLAGS = ("MAINT", "IGNORE_JOBS")  # MAINT: maintenance accounting; IGNORE_JOBS: created over running jobs


def _issue(fleet: Fleet, index: int, key: str, message: str) -> ModelError:
    """The error naming ``gpufleet_maintenance[index].key`` (with its file and line when the fleet was loaded)."""
    if fleet.source is not None:
        return ModelError([fleet.source.issue((KEY, index, key), message)])
    return ModelError([Issue(file="<fleet>", line=None, path=f"{KEY}[{index}].{key}", message=message)])


def _under_switch(inputs: ClusterInputs, switch: str) -> list[str] | None:
    topo = inputs.topology
    if topo is None:
        return None
    blocks = dict(topo.blocks)
    if switch in blocks:
        return list(blocks[switch])
    if switch not in topo.switches:
        return None
    out, todo = [], [switch]
    while todo:
        sw = topo.switches[todo.pop()]
        out.extend(sw.nodes)
        todo.extend(sw.children)
    return out


def resolve(fleet: Fleet, cluster: Cluster, inputs: ClusterInputs) -> list[tuple[Maintenance, list[str]]]:
    """Each maintenance of ``cluster`` with its nodes (sorted); a ModelError names the entry and key."""
    known = inputs.by_name
    owner: dict[str, str] = {}
    out = []
    for i, m in enumerate(fleet.maintenance):
        if m.cluster != cluster.name:
            continue
        if m.switch:
            nodes = _under_switch(inputs, m.switch)
            if not nodes:
                raise _issue(fleet, i, "switch", f"{m.switch!r} is not a switch or block of {cluster.name}'s topology")
        else:
            try:
                nodes = expand(m.nodes or "")
            except HostlistError as exc:
                raise _issue(fleet, i, "nodes", str(exc)) from None
            unknown = [n for n in nodes if n not in known]
            if unknown:
                raise _issue(fleet, i, "nodes", f"not nodes of {cluster.name}: {compress(unknown)}")
        for n in nodes:
            if n in owner:
                raise _issue(fleet, i, "name", f"node {n} is already in maintenance {owner[n]!r}")
            owner[n] = m.name
        out.append((m, sorted(set(nodes))))
    return out


def _when(m: Maintenance) -> str:
    if not m.start:
        return "from the apply after the merge, until the return"
    end = m.end_time()
    return f"{m.start} to {end.strftime('%Y-%m-%dT%H:%M:%SZ') if end else '?'} (cordoned from the start)"


def _tenant_of(fleet: Fleet, inputs: ClusterInputs, node: str) -> tuple[str, str]:
    pool = inputs.pool_of.get(node, "")
    p = fleet.pools.get(pool)
    return (p.tenant or f"({p.kind})", pool) if p is not None else ("(no pool)", "-")


def _reservations(fleet: Fleet, inputs: ClusterInputs, resolved: list) -> list[dict[str, Any]]:
    out = []
    for m, nodes in resolved:
        if not m.start or not m.duration:
            continue
        by_tenant: dict[str, list[str]] = {}
        for n in nodes:
            p = fleet.pools.get(inputs.pool_of.get(n, ""))
            if p is not None and p.kind == "slurm" and p.tenant:
                by_tenant.setdefault(p.tenant, []).append(n)
        for tenant, names in sorted(by_tenant.items()):
            out.append(
                {
                    "tenant": tenant,
                    "name": f"{RESERVATION_PREFIX}{m.name}",
                    "nodes": compress(names),
                    "start": m.start,
                    "duration": m.duration,
                    "flags": list(RESERVATION_FLAGS),
                }
            )
    return out


def _capacity_rows(fleet: Fleet, inputs: ClusterInputs, resolved: list) -> list[str]:
    totals: dict[str, list[int]] = {}
    for n in inputs.nodes:
        t = totals.setdefault(_tenant_of(fleet, inputs, n.name)[0], [0, 0])
        t[0] += 1
        t[1] += n.gpus
    rows = []
    for m, nodes in resolved:
        leaving: dict[str, list[str]] = {}
        for n in nodes:
            leaving.setdefault(_tenant_of(fleet, inputs, n)[0], []).append(n)
        for tenant, names in sorted(leaving.items()):
            gpus = sum(inputs.by_name[n].gpus for n in names)
            nodes_total, gpus_total = totals[tenant][0], totals[tenant][1]
            pct = f"{100 * gpus / gpus_total:.0f}%" if gpus_total else "-"
            rows.append(
                f"| {tenant} | `{m.name}` | {len(names)} of {nodes_total} | {gpus} of {gpus_total} ({pct}) |"
                f" `{compress(names)}` | {_when(m)} |"
            )
    return rows


def _plan_md(fleet: Fleet, cluster: Cluster, inputs: ClusterInputs, resolved: list, reservations: list) -> str:
    lines = [
        f"# Maintenance of cluster `{cluster.name}`",
        "",
        "Rendered from `gpufleet_maintenance`; do not edit. The apply step (`node_pools`) cordons the nodes;",
        "the Slinky operator drains each Slurm node behind a cordon (running jobs finish, nothing new starts)",
        f"with the reason `{SLURM_REASON_PREFIX}<reason>`. Returning the nodes (`gpufleet.py maintenance end`)",
        "uncordons them and the operator resumes them.",
        "",
        "| maintenance | nodes | reason | when |",
        "| --- | --- | --- | --- |",
    ]
    lines += [f"| `{m.name}` | `{compress(n)}` ({len(n)}) | {m.reason} | {_when(m)} |" for m, n in resolved]
    lines += ["", "## Capacity that leaves, per tenant", ""]
    lines += ["| tenant | maintenance | nodes | GPUs | which | when |", "| --- | --- | ---: | ---: | --- | --- |"]
    lines += _capacity_rows(fleet, inputs, resolved)
    if reservations:
        lines += ["", "## Slurm MAINT reservations (created before the window; jobs that would overlap it wait)", ""]
        lines += ["| tenant | reservation | nodes | start | duration |", "| --- | --- | --- | --- | --- |"]
        lines += [
            f"| {r['tenant']} | `{r['name']}` | `{r['nodes']}` | {r['start']} | {r['duration']} |" for r in reservations
        ]
    return "\n".join(lines) + "\n"


def render_maintenance(fleet: Fleet, cluster: Cluster, inputs: ClusterInputs) -> dict[str, bytes]:
    """The cluster's maintenance files (``{}`` when none of its nodes is in maintenance)."""
    resolved = resolve(fleet, cluster, inputs)
    if not resolved:
        return {}
    nodes: dict[str, dict[str, str]] = {}
    for m, names in resolved:
        entry = {"maintenance": m.name, "reason": m.reason}
        end = m.end_time()
        if m.start and end:
            entry.update(start=m.start, end=end.strftime("%Y-%m-%dT%H:%M:%SZ"))
        for n in names:
            nodes[n] = entry
    reservations = _reservations(fleet, inputs, resolved)
    base = cluster_dir(cluster.name)
    doc = {"cluster": cluster.name, "nodes": dict(sorted(nodes.items())), "reservations": reservations}
    return {
        f"{base}/{FILE}": dump_file(doc, header(fleet.name, "Nodes the apply step (node_pools) cordons.")),
        f"{base}/MAINTENANCE.md": _plan_md(fleet, cluster, inputs, resolved, reservations).encode("utf-8"),
    }
