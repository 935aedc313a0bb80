"""The plan of an upgrade: what restarts, in which order, and the most capacity each tenant loses.

``upgrade_plan(old, new)`` lists, for a change of the Slinky charts (the Slurm release) or the GPU
Operator chart/driver, the steps in the order the render enforces them (``render.rollout`` waves for
Slurm; the GPU Operator's rolling driver upgrade), and per tenant the most nodes and GPUs down at once:
each NodeSet rolls at most ``gpufleet_rollout.max_unavailable_per_block`` nodes at a time and the
NodeSets of a tenant roll side by side.
"""

from __future__ import annotations

from dataclasses import dataclass

from ansible_collections.gpufleet.core.plugins.module_utils.daytwo.rules import SLURM_UPGRADE_ORDER
from ansible_collections.gpufleet.core.plugins.module_utils.daytwo.versions import driver_version, slurm_release
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Fleet, Pool
from ansible_collections.gpufleet.core.plugins.module_utils.render.inputs import ClusterInputs, cluster_inputs
from ansible_collections.gpufleet.core.plugins.module_utils.render.rollout import WAVES
from ansible_collections.gpufleet.core.plugins.module_utils.versions import chart

SLINKY = ("slurm_operator_crds", "slurm_operator", "slurm")
_WAVE_OF = {"slurmdbd": "accounting", "slurmctld": "controller", "slurmd": "nodesets", "login": "loginsets"}


@dataclass(frozen=True)
class TenantLoss:
    tenant: str
    nodes: int  # most nodes down at once during the worker step
    of_nodes: int
    gpus: int
    of_gpus: int
    block: str = "-"  # the leaf group (or block) that can lose the most nodes at once
    block_nodes: int = 0  # how many: one bound per NodeSet with nodes there


def _worst_block(inputs: ClusterInputs, pools: list[Pool], per_block: int) -> tuple[str, int]:
    """The leaf group that loses the most nodes when every NodeSet takes its bound from it."""
    topo = inputs.topology
    if topo is None:
        return "-", 0
    down: dict[str, int] = {}
    for p in pools:
        here: dict[str, int] = {}
        for n in inputs.members.get(p.name, []):
            group = topo.node_group.get(n)
            if group is not None:
                here[group] = here.get(group, 0) + 1
        for group, count in here.items():
            down[group] = down.get(group, 0) + min(per_block, count)
    if not down:
        return "-", 0
    group = min(down, key=lambda g: (-down[g], g))
    return group, down[group]


def _changed(old: Fleet, new: Fleet, components: tuple[str, ...]) -> list[str]:
    return [
        f"{chart(c, new.versions)['chart']} {chart(c, old.versions)['version']} -> {chart(c, new.versions)['version']}"
        for c in components
        if chart(c, old.versions)["version"] != chart(c, new.versions)["version"]
    ]


def losses(fleet: Fleet) -> list[TenantLoss]:
    """Per Slurm tenant, the most nodes/GPUs a rolling update of its NodeSets takes down at once."""
    per_block = fleet.rollout.max_unavailable_per_block
    out = []
    for name in sorted(fleet.clusters):
        inputs = cluster_inputs(fleet, fleet.clusters[name])
        for t in sorted(fleet.cluster_tenants(name), key=lambda t: t.name):
            pools = fleet.tenant_pools(t.name, "slurm")
            if not pools:
                continue
            down = gpus = total = total_gpus = 0
            for p in pools:
                members = inputs.members.get(p.name, [])
                per_node = max((inputs.by_name[n].gpus for n in members), default=0)
                down += min(per_block, len(members))
                gpus += min(per_block, len(members)) * per_node
                total += len(members)
                total_gpus += sum(inputs.by_name[n].gpus for n in members)
            block, block_nodes = _worst_block(inputs, pools, per_block)
            out.append(TenantLoss(t.name, down, total, gpus, total_gpus, block, block_nodes))
    return out


def upgrade_plan(old: Fleet, new: Fleet) -> list[str]:
    """Markdown lines of the rollout a version change starts ([] when it changes no version)."""
    slinky = _changed(old, new, SLINKY)
    drivers = [
        c for c in sorted(set(old.clusters) & set(new.clusters)) if driver_version(old, c) != driver_version(new, c)
    ]
    gpu_op = _changed(old, new, ("gpu_operator",)) + [
        f"cluster {c}: driver {driver_version(old, c) or 'default'} -> {driver_version(new, c) or 'default'}"
        for c in drivers
    ]
    if not slinky and not gpu_op:
        return []
    lines = ["## Upgrade plan", ""]
    if slinky:
        (_old_name, a), (_new_name, b) = slurm_release(old), slurm_release(new)
        lines += [f"Slinky: {'; '.join(slinky)} (Slurm {a} -> {b}). Per Slurm tenant, in this order:", ""]
        lines += ["| step | restarts | Argo CD wave | note |", "| ---: | --- | ---: | --- |"]
        for i, (daemon, note) in enumerate(SLURM_UPGRADE_ORDER, 1):
            lines.append(f"| {i} | {daemon} | {WAVES[_WAVE_OF[daemon]]} | {note} |")
        lines.append("")
    if gpu_op:
        what = "the driver pod of every GPU node is replaced (the chart's upgradePolicy: one node at a time)"
        lines += [f"GPU Operator: {'; '.join(gpu_op)}: {what}.", ""]
    per_block = new.rollout.max_unavailable_per_block
    lines += [
        f"Most capacity down at once per tenant (workers roll {per_block} node(s) per NodeSet at a time):",
        "",
        "| tenant | nodes | GPUs | most of one leaf group |",
        "| --- | ---: | ---: | --- |",
    ]
    for x in losses(new):
        block = f"{x.block_nodes} in `{x.block}`" if x.block_nodes else "-"
        if x.block_nodes > per_block:
            block += f" (over the {per_block} allowed: the NodeSets sharing it roll side by side)"
        lines.append(f"| {x.tenant} | {x.nodes} of {x.of_nodes} | {x.gpus} of {x.of_gpus} | {block} |")
    return [*lines, ""]
