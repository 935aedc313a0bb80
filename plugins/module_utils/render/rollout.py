"""The ordered rollout of a Slurm tenant's Slinky release: waves, update bounds, disruption budgets.

``slurm_fragment(fleet, tenant_values)`` returns ``slurm`` chart values merged under the tenant's:

- Argo CD sync waves on the Slinky objects, in the order Slurm's upgrade guide gives (the chart copies
  each component's ``metadata`` onto its custom resource): ``Accounting`` (slurmdbd) in wave ``WAVES
  ["accounting"]``, then the ``Controller`` (slurmctld), the ``NodeSet`` workers, the ``LoginSet``;
  the chart's ConfigMaps stay in wave 0, before all of them; between the Accounting and the Controller
  and between the Controller and the NodeSets, hook Jobs that wait until the daemon answers
  (render/upgrade_gates.py);
- every NodeSet ``updateStrategy: ScheduledUpdate`` in the tenant's update window, if the platform
  set one (``gpufleet_rollout.window`` / ``tenant_windows``), else ``RollingUpdate`` with
  ``maxUnavailable`` = the platform's
  ``gpufleet_rollout.max_unavailable_per_block`` (pods roll by ordinal, so this bounds what one NodeSet
  takes from any block; NodeSets of a tenant roll side by side, so a block shared by k of them can lose
  k times that);
- PodDisruptionBudgets (chart ``extraObjects``) for the slurmctld, slurmdbd and login pods (the operator's
  selector labels ``app.kubernetes.io/name`` + ``app.kubernetes.io/instance``): no eviction (a node
  drain, an autoscaler, the GPU Operator's upgrade drain) takes down the controller or the database
  while they restart or convert state; the operator's own rolling update deletes pods and is not held.
  Login pods keep one replica up when there are two or more. Each budget is in the wave of the object
  whose pods it guards, and its health (render/argocd.py) waits for every one of them to be Ready: the
  wave does not end before slurmdbd, slurmctld or the login pods are Ready.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Fleet, Tenant
from ansible_collections.gpufleet.core.plugins.module_utils.render import upgrade_gates

WAVE_ANNOTATION = "argocd.argoproj.io/sync-wave"
# a budget labelled so is Healthy only once every pod it guards is Ready (render/argocd.py)
READY_GATE = {"gpufleet.io/health": "all-pods-ready"}
WAVES = {
    "accounting": "1",
    "accounting-ready": "2",  # render/upgrade_gates.py: sacctmgr ping
    "controller": "3",
    "controller-ready": "4",  # render/upgrade_gates.py: scontrol ping
    "nodesets": "5",
    "loginsets": "6",
}
RELEASE = "slurm"  # the Helm release name of the slurm chart: the Controller and Accounting objects' name
LOGINSET = "main"


def _pdb(name: str, app: str, instance: str, budget: dict[str, Any], wave: str) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {
            "name": name,
            "labels": {"app.kubernetes.io/part-of": "gpufleet", **READY_GATE},
            "annotations": {WAVE_ANNOTATION: WAVES[wave]},
        },
        "spec": {
            **budget,
            "selector": {"matchLabels": {"app.kubernetes.io/name": app, "app.kubernetes.io/instance": instance}},
        },
    }


def disruption_budgets(tenant: Tenant) -> list[dict[str, Any]]:
    out = [_pdb(f"{RELEASE}-controller", "slurmctld", RELEASE, {"maxUnavailable": 0}, "controller")]
    if tenant.accounting.enabled:
        out.append(_pdb(f"{RELEASE}-accounting", "slurmdbd", RELEASE, {"maxUnavailable": 0}, "accounting"))
    if tenant.login_replicas > 0:
        budget = {"maxUnavailable": 1} if tenant.login_replicas > 1 else {"maxUnavailable": 0}
        out.append(_pdb(f"{RELEASE}-login", "login", f"{RELEASE}-login-{LOGINSET}", budget, "loginsets"))
    return out


def _wave(kind: str) -> dict[str, Any]:
    return {"metadata": {"annotations": {WAVE_ANNOTATION: WAVES[kind]}}}


def update_strategy(fleet: Fleet, tenant: Tenant) -> dict[str, Any]:
    """A NodeSet's ``updateStrategy``: ``ScheduledUpdate`` in the tenant's window (the operator reserves the
    NodeSet's nodes with MAINT over it and replaces their pods then), else ``RollingUpdate`` bounded per
    block. Field names: slurm-operator v1.2.1 ``api/v1beta1/nodeset_types.go`` (``startTime`` RFC 3339,
    ``duration`` a Go duration); the operator adds MAINT and IGNORE_JOBS to the reservation itself."""
    window = fleet.rollout.window_of(tenant.name)
    if window is not None:
        return {
            "type": "ScheduledUpdate",
            "scheduledUpdate": {"startTime": window.start, "duration": window.go_duration()},
        }
    return {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": fleet.rollout.max_unavailable_per_block}}


def slurm_fragment(fleet: Fleet, tenant: Tenant, values: dict[str, Any]) -> dict[str, Any]:
    """The rollout part of ``values`` (the tenant's slurm chart values as rendered so far)."""
    nodeset = {**_wave("nodesets"), "updateStrategy": update_strategy(fleet, tenant)}
    out: dict[str, Any] = {
        "controller": _wave("controller"),
        "nodesets": {name: dict(nodeset) for name in values.get("nodesets", {})},
        "extraObjects": disruption_budgets(tenant) + upgrade_gates.gates(tenant, WAVES),
    }
    if tenant.accounting.enabled:
        out["accounting"] = _wave("accounting")
    if values.get("loginsets"):
        out["loginsets"] = {name: _wave("loginsets") for name in values["loginsets"]}
    return out
