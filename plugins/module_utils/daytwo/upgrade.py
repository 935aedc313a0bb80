"""The plan of an upgrade: what restarts, in which order, when, and the most capacity each tenant loses.

``upgrade_plan(old, new)`` lists, for a change of the Slinky charts (the Slurm release), the GPU Operator
chart or the GPU driver, the steps in the order the render enforces them (``render.tenants.rollout`` waves for
Slurm; the GPU Operator's driver upgrade policy, ``render.platform.driver_upgrade``), and per tenant the most
nodes and GPUs down at once and when:

- Slurm workers with an update window (``gpufleet_rollout.window`` / ``tenant_windows``) restart inside
  it, all nodes of the tenant's NodeSets together (the operator reserves them all with MAINT);
- the others roll: each NodeSet at most ``max_unavailable_per_block`` nodes at a time, NodeSets that
  share a block in successive sync waves (``render.tenants.rollout_waves``), the others side by side;
- a driver upgrade takes at most ``max_unavailable_per_block`` nodes of the whole cluster at once, each
  only after its Slurm jobs ended (the upgrade's drain waits on the busy-slurmd budget).
"""

from __future__ import annotations

from dataclasses import dataclass

from ansible_collections.gpufleet.core.plugins.module_utils.daytwo.rules import SLURM_UPGRADE_ORDER
from ansible_collections.gpufleet.core.plugins.module_utils.daytwo.version_change import driver_version, slurm_release
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Fleet, Pool, Tenant
from ansible_collections.gpufleet.core.plugins.module_utils.render.inputs import ClusterInputs, cluster_inputs
from ansible_collections.gpufleet.core.plugins.module_utils.render.platform.driver_upgrade import SLURMD_SELECTOR
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants import rollout, rollout_waves
from ansible_collections.gpufleet.core.plugins.module_utils.versions import chart

SLINKY = ("slurm_operator_crds", "slurm_operator", "slurm")
_WAVE_OF = {"slurmdbd": "accounting", "slurmctld": "controller"}
_TIME = "%Y-%m-%d %H:%M"


@dataclass(frozen=True)
class TenantLoss:
    tenant: str
    nodes: int  # most nodes down at once during the worker step
    of_nodes: int
    gpus: int
    of_gpus: int
    block: str = "-"  # the leaf group (or block) that can lose the most nodes at once
    block_nodes: int = 0  # how many: one bound per NodeSet of a wave with nodes there
    when: str = "rolling"  # rolling | the update window, UTC
    waves: tuple[tuple[str, int], ...] = ()  # (NodeSet, its sync wave)
    login_wave: int = 0


def _worst_block(
    inputs: ClusterInputs, pools: list[Pool], waves: dict[str, int], per_block: int | None
) -> tuple[str, int]:
    """The leaf group that loses the most nodes when every pool takes ``per_block`` (None: all) from it,
    the pools of one sync wave together."""
    down: dict[tuple[int, str], int] = {}
    for p in pools:
        counts = rollout_waves.block_counts(inputs, inputs.members.get(p.name, []))
        for group, n in (counts if per_block is None else rollout_waves.takes(counts, per_block)).items():
            down[(waves[p.name], group)] = down.get((waves[p.name], group), 0) + n
    if not down:
        return "-", 0
    (_wave, group), n = min(down.items(), key=lambda kv: (-kv[1], kv[0][1], kv[0][0]))
    return group, n


def _changed(old: Fleet, new: Fleet, components: tuple[str, ...]) -> list[str]:
    return [
        f"{chart(c, new.versions)['chart']} {chart(c, old.versions)['version']} -> {chart(c, new.versions)['version']}"
        for c in components
        if chart(c, old.versions)["version"] != chart(c, new.versions)["version"]
    ]


def _tenant_loss(fleet: Fleet, inputs: ClusterInputs, tenant: Tenant, pools: list[Pool]) -> TenantLoss:
    """``max_unavailable_per_block`` nodes per pool at once, the pools of one sync wave together, or all
    of them in the tenant's window (Slurm workers)."""
    window = fleet.rollout.window_of(tenant.name)
    per_block = fleet.rollout.max_unavailable_per_block
    waves, login_wave = rollout.waves(fleet, tenant, inputs)
    down: dict[int, tuple[int, int]] = {}
    total = total_gpus = 0
    for p in pools:
        members = inputs.members.get(p.name, [])
        per_node = max((inputs.by_name[n].gpus for n in members), default=0)
        take = len(members) if window else min(per_block, len(members))
        nodes, gpus = down.get(waves[p.name], (0, 0))
        down[waves[p.name]] = (nodes + take, gpus + take * per_node)
        total += len(members)
        total_gpus += sum(inputs.by_name[n].gpus for n in members)
    nodes, gpus = max(down.values(), default=(0, 0))
    block, block_nodes = _worst_block(inputs, pools, waves, None if window else per_block)
    when = f"{window.start_time():{_TIME}} to {window.end_time():{_TIME}} UTC" if window else "rolling"
    return TenantLoss(
        tenant.name, nodes, total, gpus, total_gpus, block, block_nodes, when, tuple(sorted(waves.items())), login_wave
    )


def losses(fleet: Fleet) -> list[TenantLoss]:
    """Per Slurm tenant, the most nodes/GPUs an update of its NodeSets takes down at once."""
    out = []
    for name in sorted(fleet.clusters):
        inputs = cluster_inputs(fleet, fleet.clusters[name])
        for t in sorted(fleet.cluster_tenants(name), key=lambda t: t.name):
            pools = fleet.tenant_pools(t.name, "slurm")
            if pools:
                out.append(_tenant_loss(fleet, inputs, t, pools))
    return out


def driver_losses(fleet: Fleet, cluster: str) -> list[TenantLoss]:
    """Per tenant of ``cluster``, the most nodes/GPUs the driver upgrade takes at once: the upgrade runs
    ``max_unavailable_per_block`` nodes of the whole cluster at a time, so no tenant loses more."""
    inputs = cluster_inputs(fleet, fleet.clusters[cluster])
    per_block = fleet.rollout.max_unavailable_per_block
    out = []
    for t in sorted(fleet.cluster_tenants(cluster), key=lambda t: t.name):
        members = [n for p in fleet.tenant_pools(t.name) for n in inputs.members.get(p.name, [])]
        gpus = sorted((inputs.by_name[n].gpus for n in members), reverse=True)
        take = min(per_block, len(members))
        out.append(TenantLoss(t.name, take, len(members), sum(gpus[:take]), sum(gpus)))
    return out


def _span(waves: list[int]) -> str:
    first = int(rollout.WAVES["nodesets"])
    lo, hi = min(waves, default=first), max(waves, default=first)
    return str(lo) if lo == hi else f"{lo} to {hi}"


def _slurm_lines(old: Fleet, new: Fleet, slinky: list[str]) -> list[str]:
    (_old_chart, a), (_new_chart, b) = slurm_release(old), slurm_release(new)
    tenants = losses(new)
    wave_of = {
        **{d: rollout.WAVES[w] for d, w in _WAVE_OF.items()},
        "slurmd": _span([w for x in tenants for _ns, w in x.waves]),
        "login": _span([x.login_wave for x in tenants]),
        "slurmrestd": _span([x.login_wave for x in tenants]),
    }
    lines = [f"Slinky: {'; '.join(slinky)} (Slurm {a} -> {b}). Per Slurm tenant, in this order:", ""]
    lines += ["| step | restarts | Argo CD wave | note |", "| ---: | --- | ---: | --- |"]
    for i, (daemon, note) in enumerate(SLURM_UPGRADE_ORDER, 1):
        lines.append(f"| {i} | {daemon} | {wave_of[daemon]} | {note} |")
    per_block = new.rollout.max_unavailable_per_block
    lines += [
        "",
        "Each step starts only once the one before answers: the Argo CD Sync hooks `slurm-accounting-ready`"
        f" (wave {rollout.WAVES['accounting-ready']}, `sacctmgr ping`, up to 2 h for a database conversion) and"
        f" `slurm-controller-ready` (wave {rollout.WAVES['controller-ready']}, `scontrol ping` and slurmctld"
        f" reporting Slurm {b}); a gate that keeps failing fails the sync and the later steps do not start."
        " The accounting gate cannot tell the old slurmdbd from the new one (no Slurm client reports"
        " slurmdbd's version): check that the Accounting's pod runs the new release before the Controller's"
        " wave if the database is large.",
        "",
        "Workers (step 3) per tenant: in the tenant's update window every node of its NodeSets is reserved"
        " (Slurm MAINT, IGNORE_JOBS) and restarts inside it: Slurm starts no job there that would still run at"
        " the start; the operator drains each node and replaces its pod only once its jobs ended, so a job"
        " that outlives the window leaves its node drained on the old release until it ends; without a window,"
        f" each NodeSet rolls {per_block} node(s) at a time, and NodeSets that share a leaf group roll in"
        " successive sync waves (a wave starts once every pod of the one before runs the new release and is"
        " Ready), so no leaf group of this tenant loses more than"
        f" {per_block} at once (other tenants' NodeSets in a shared leaf group, the driver upgrade and"
        " maintenance cordons count separately). While a wave rolls the tenant's sync stays in progress, for"
        " as long as jobs hold nodes, and Argo CD starts no other sync meanwhile: a later commit, a revert"
        " too, waits for it (terminate the operation to stop it). Restarts: every pod of the components"
        " listed; a change of sync waves alone restarts nothing. Most capacity down at once:",
        "",
        "| tenant | when | NodeSet (sync wave) | nodes | GPUs | most of one leaf group |",
        "| --- | --- | --- | ---: | ---: | --- |",
    ]
    for x in tenants:
        block = f"{x.block_nodes} in `{x.block}`" if x.block_nodes else "-"
        waves = ", ".join(f"`{ns}` ({w})" for ns, w in x.waves)
        lines.append(
            f"| {x.tenant} | {x.when} | {waves} | {x.nodes} of {x.of_nodes} | {x.gpus} of {x.of_gpus} | {block} |"
        )
    return [*lines, ""]


def _driver_lines(new: Fleet, what: list[str], clusters: list[str]) -> list[str]:
    per_block = new.rollout.max_unavailable_per_block
    timeout = new.rollout.driver_drain_timeout_seconds
    wait = f"up to {timeout} s" if timeout else "with no time limit"
    lines = [
        f"GPU Operator: {'; '.join(what)}. The driver pod of every GPU node is replaced, {per_block} node(s)"
        " of the cluster at a time (upgradePolicy maxParallelUpgrades/maxUnavailable), each node in this order:",
        "",
        "1. cordoned; Slinky drains its Slurm node (no new jobs, running ones go on);",
        f"2. its slurmd pod (`{SLURMD_SELECTOR}`) is evicted once its jobs ended ({wait}; never forced:"
        " on timeout the node stays cordoned and the upgrade reports it failed);",
        "3. the driver pod restarts with the new driver; the node is uncordoned and Slurm resumes it.",
        "",
        "On a node of a Kubernetes pool, step 2 deletes its GPU pods (gpuPodDeletion, not forced).",
        "",
    ]
    for cluster in clusters:
        lines += [
            f"Most capacity down at once in `{cluster}`:",
            "",
            "| tenant | nodes | GPUs |",
            "| --- | ---: | ---: |",
        ]
        lines += [
            f"| {x.tenant} | {x.nodes} of {x.of_nodes} | {x.gpus} of {x.of_gpus} |" for x in driver_losses(new, cluster)
        ]
        lines.append("")
    return lines


def upgrade_plan(old: Fleet, new: Fleet) -> list[str]:
    """Markdown lines of the rollout a version change starts ([] when it changes no version)."""
    slinky = _changed(old, new, SLINKY)
    drivers = [
        c for c in sorted(set(old.clusters) & set(new.clusters)) if driver_version(old, c) != driver_version(new, c)
    ]
    gpu_chart = _changed(old, new, ("gpu_operator",))
    if not slinky and not gpu_chart and not drivers:
        return []
    lines = ["### Upgrade plan", ""]
    if slinky:
        lines += _slurm_lines(old, new, slinky)
    if gpu_chart or drivers:
        what = gpu_chart + [
            f"cluster {c}: driver {driver_version(old, c) or 'default'} -> {driver_version(new, c) or 'default'}"
            for c in drivers
        ]
        clusters = drivers or sorted(c for c in new.clusters if new.clusters[c].components["gpu_operator"].enabled)
        lines += _driver_lines(new, what, clusters)
    return lines
