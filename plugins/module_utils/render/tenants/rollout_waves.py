"""Sync waves that keep a Slurm tenant's rolling NodeSet updates inside the per-block disruption budget.

A Slinky NodeSet (v1.2.1) with ``RollingUpdate`` replaces ``maxUnavailable`` of its pods at a time, by
ordinal or node, not by block: it takes at most ``min(maxUnavailable, its nodes in the block)`` nodes of
any topology block (leaf group) at once. NodeSets that sync in the same Argo CD wave roll side by side, so
what they take from a block adds up.

- ``nodeset_waves``: each NodeSet, in name order, goes to the first wave (from ``WAVES["nodesets"]`` on)
  where what it takes from every block, added to what that wave's NodeSets take there, stays within
  ``gpufleet_rollout.max_unavailable_per_block``. NodeSets that share no block roll together; two that
  share one roll one after the other: Argo CD applies a wave only once every resource of the wave before
  is Healthy, and the NodeSet health check (render/argocd.py) is Progressing until every pod runs the new
  template and is Ready. A tenant with an update window (``ScheduledUpdate``) keeps all its NodeSets in
  one wave: the window is the planned outage of all of them, and a NodeSet held for a later wave would
  get its new template after the window and wait for one that never comes.
- ``check``: the values as rendered (the platform's ``tenant_overrides`` merged in) are refused when a
  wave could still take more than the budget from a block: an override raised a ``maxUnavailable``
  (an integer or a percentage of the NodeSet's nodes, rounded up as the operator does; unset is its
  default 25 %) or put NodeSets that share a block in one wave. The error names the tenant, the NodeSets,
  the block and the numbers. ``ScheduledUpdate`` and ``OnDelete`` NodeSets take nothing here: the first
  replaces pods inside the platform's window, the second only when someone deletes one.

Nodes with no leaf group (a cluster without a fabric source) are in no block and bound nothing.
"""

from __future__ import annotations

import math
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.model.contracts import SYNC_WAVE as WAVE_ANNOTATION
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Fleet, Tenant
from ansible_collections.gpufleet.core.plugins.module_utils.render.inputs import ClusterInputs

DEFAULT_MAX_UNAVAILABLE = "25%"  # slurm-operator v1.2.1 internal/defaults/nodeset.go


class RolloutBudgetError(GpufleetError):
    """The rendered NodeSet updates could take more nodes of a block at once than the platform allows."""


def block_counts(inputs: ClusterInputs, nodes: list[str]) -> dict[str, int]:
    """How many of ``nodes`` sit in each leaf group (nodes in none are left out)."""
    group = inputs.topology.node_group if inputs.topology is not None else {}
    out: dict[str, int] = {}
    for n in nodes:
        g = group.get(n)
        if g is not None:
            out[g] = out.get(g, 0) + 1
    return out


def max_unavailable(strategy: dict[str, Any] | None, total: int) -> int | None:
    """Pods a NodeSet replaces at once under ``strategy`` (None: not a rolling update). A percentage is
    of ``total`` rounded up, at least 1 (the operator's GetScaledValueFromIntOrPercent(.., true, 1))."""
    strategy = strategy or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return None
    mu = (strategy.get("rollingUpdate") or {}).get("maxUnavailable", DEFAULT_MAX_UNAVAILABLE)
    if isinstance(mu, str) and mu.endswith("%") and mu[:-1].isdigit():
        return max(1, math.ceil(int(mu[:-1]) * total / 100))
    if isinstance(mu, int) and not isinstance(mu, bool):
        return max(1, mu)
    raise RolloutBudgetError(f"maxUnavailable {mu!r} is neither an integer nor a percentage")


def takes(counts: dict[str, int], mu: int) -> dict[str, int]:
    """What one NodeSet rolling ``mu`` pods at a time can take from each block at once."""
    return {block: min(mu, n) for block, n in counts.items()}


def assign(loads: dict[str, dict[str, int]], budget: int) -> dict[str, int]:
    """Wave offset per NodeSet (name order, first wave where every block stays within ``budget``)."""
    waves: list[dict[str, int]] = []
    out: dict[str, int] = {}
    for name in sorted(loads):
        take = loads[name]
        offset = next(
            (i for i, used in enumerate(waves) if all(used.get(b, 0) + n <= budget for b, n in take.items())),
            len(waves),
        )
        if offset == len(waves):
            waves.append({})
        for b, n in take.items():
            waves[offset][b] = waves[offset].get(b, 0) + n
        out[name] = offset
    return out


def nodeset_waves(fleet: Fleet, tenant: Tenant, inputs: ClusterInputs, base: int) -> dict[str, int]:
    """The sync wave of each of ``tenant``'s NodeSets (one per Slurm pool), from ``base`` on."""
    pools = sorted(p.name for p in fleet.tenant_pools(tenant.name, "slurm"))
    if fleet.rollout.window_of(tenant.name) is not None:
        return {p: base for p in pools}
    budget = fleet.rollout.max_unavailable_per_block
    loads = {p: takes(block_counts(inputs, inputs.members.get(p, [])), budget) for p in pools}
    return {p: base + offset for p, offset in assign(loads, budget).items()}


def _wave(name: str, nodeset: dict[str, Any], tenant: str) -> int:
    raw = ((nodeset.get("metadata") or {}).get("annotations") or {}).get(WAVE_ANNOTATION, "0")
    try:
        return int(str(raw))
    except ValueError:
        raise RolloutBudgetError(
            f"tenant {tenant}: NodeSet {name}: {WAVE_ANNOTATION} {raw!r} is not an integer"
        ) from None


def over_budget(waves: dict[str, int], loads: dict[str, dict[str, int]], budget: int) -> list[tuple[int, str, dict]]:
    """(wave, block, {NodeSet: nodes it can take there}) for every block a wave can take more than
    ``budget`` nodes of at once, sorted."""
    per: dict[tuple[int, str], dict[str, int]] = {}
    for name, take in loads.items():
        for block, n in take.items():
            per.setdefault((waves[name], block), {})[name] = n
    return [(w, b, dict(sorted(t.items()))) for (w, b), t in sorted(per.items()) if sum(t.values()) > budget]


def rendered_loads(values: dict[str, Any], tenant: str, inputs: ClusterInputs) -> tuple[dict, dict, dict]:
    """(waves, loads, maxUnavailable) of the rolling NodeSets in ``values`` that are pools of the cluster."""
    waves: dict[str, int] = {}
    loads: dict[str, dict[str, int]] = {}
    mus: dict[str, int] = {}
    for name, ns in sorted((values.get("nodesets") or {}).items()):
        if not isinstance(ns, dict) or ns.get("enabled") is False or name not in inputs.members:
            continue
        nodes = inputs.members[name]
        try:
            mu = max_unavailable(ns.get("updateStrategy"), len(nodes))
        except RolloutBudgetError as exc:
            raise RolloutBudgetError(f"tenant {tenant}: NodeSet {name}: {exc}") from None
        if mu is None:
            continue
        waves[name], mus[name] = _wave(name, ns, tenant), mu
        loads[name] = takes(block_counts(inputs, nodes), mu)
    return waves, loads, mus


def check(fleet: Fleet, tenant: Tenant, values: dict[str, Any], inputs: ClusterInputs) -> None:
    """Refuse ``values`` (a tenant's final slurm chart values) if a wave can break the per-block budget."""
    budget = fleet.rollout.max_unavailable_per_block
    waves, loads, mus = rendered_loads(values, tenant.name, inputs)
    problems = over_budget(waves, loads, budget)
    if not problems:
        return
    lines = []
    for w, b, t in problems:
        who = " and ".join(f"{n} (maxUnavailable {mus[n]}: up to {k} there)" for n, k in t.items())
        lines.append(
            f"tenant {tenant.name}: NodeSet {who} in sync wave {w} can take {sum(t.values())} nodes of block {b}"
            f" at once, over the {budget} allowed by gpufleet_rollout.max_unavailable_per_block"
        )
    raise RolloutBudgetError(
        "\n".join(lines) + "\nlower maxUnavailable or drop the sync-wave annotation in"
        f" gpufleet_clusters[].tenant_overrides.{tenant.name}.slurm.values.nodesets (the render spreads"
        " NodeSets that share a block over successive waves), or raise max_unavailable_per_block"
    )
