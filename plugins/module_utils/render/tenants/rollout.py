"""The ordered rollout of a Slurm tenant's Slinky release: waves, update bounds, disruption budgets.

``slurm_fragment(fleet, tenant_values)`` returns ``slurm`` chart values merged under the tenant's:

- Argo CD sync waves on the Slinky objects, in the order Slurm's upgrade guide gives (the chart copies
  each component's ``metadata`` onto its custom resource): ``Accounting`` (slurmdbd) in wave ``WAVES
  ["accounting"]``, then the ``Controller`` (slurmctld), the ``NodeSet`` workers, the ``LoginSet`` and
  the ``RestApi`` (slurmrestd, a client of both daemons: clients go last);
  the chart's ConfigMaps stay in wave 0, before all of them; between the Accounting and the Controller
  and between the Controller and the NodeSets, hook Jobs that wait until the daemon answers
  (render/tenants/upgrade_gates.py);
- every NodeSet ``updateStrategy: ScheduledUpdate`` in the tenant's update window, if the platform
  set one (``gpufleet_rollout.window`` / ``tenant_windows``), else ``RollingUpdate`` with
  ``maxUnavailable`` = the platform's
  ``gpufleet_rollout.max_unavailable_per_block`` (pods roll by ordinal, so this bounds what one NodeSet
  takes from any block); NodeSets that share a block roll in successive waves from ``WAVES["nodesets"]``
  on, and the LoginSets follow the last of them (render/tenants/rollout_waves.py);
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
from ansible_collections.gpufleet.core.plugins.module_utils.render.inputs import ClusterInputs
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants import (
    rollout_waves,
    slurm_ready,
    upgrade_gates,
)
from ansible_collections.gpufleet.core.plugins.module_utils.versions import chart

WAVE_ANNOTATION = rollout_waves.WAVE_ANNOTATION
# a budget labelled so is Healthy only once every pod it guards is Ready (render/argocd.py)
READY_GATE = {"gpufleet.io/health": "all-pods-ready"}
WAVES = {
    "accounting": "1",
    "accounting-ready": "2",  # render/tenants/upgrade_gates.py: sacctmgr ping
    "controller": "3",
    "controller-ready": "4",  # render/tenants/upgrade_gates.py: scontrol ping
    "nodesets": "5",  # the first NodeSet wave; the LoginSets follow the tenant's last (waves())
}
# The slurm chart (1.2.1, templates/{nodeset,loginset,controller,accounting}/*-cr.yaml) writes a
# component's ``metadata`` both on its custom resource and as its pod template's metadata, so the wave
# annotation lands in ``spec.template``, which the operator's revision hashes (slurm-operator 1.2.1
# internal/controller/nodeset/nodeset_history.go getPatch): a changed wave would replace every pod.
# Argo CD ignores that one path and, with ``RespectIgnoreDifferences``, keeps its live value when it
# syncs (argo-cd v3.5.1 controller/sync.go normalizeTargetResources): a wave orders the custom resource
# and never changes a pod template. The CR's own ``metadata.annotations`` are not in the revision.
TEMPLATE_WAVE = "/spec/template/metadata/annotations/" + WAVE_ANNOTATION.replace("~", "~0").replace("/", "~1")
WAVED_KINDS = ("Accounting", "Controller", "LoginSet", "NodeSet", "RestApi")
TEMPLATE_WAVE_IGNORE = tuple(
    {"group": "slinky.slurm.net", "kind": kind, "jsonPointers": [TEMPLATE_WAVE]} for kind in WAVED_KINDS
)
RELEASE = "slurm"  # the Helm release name of the slurm chart: the Controller and Accounting objects' name
LOGINSET = "main"


def _pdb(name: str, app: str, instance: str, budget: dict[str, Any], wave: str | int) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {
            "name": name,
            "labels": {"app.kubernetes.io/part-of": "gpufleet", **READY_GATE},
            "annotations": {WAVE_ANNOTATION: str(wave)},
        },
        "spec": {
            **budget,
            "selector": {"matchLabels": {"app.kubernetes.io/name": app, "app.kubernetes.io/instance": instance}},
        },
    }


def disruption_budgets(tenant: Tenant, login_wave: int) -> list[dict[str, Any]]:
    out = [_pdb(f"{RELEASE}-controller", "slurmctld", RELEASE, {"maxUnavailable": 0}, WAVES["controller"])]
    if tenant.accounting.enabled:
        out.append(_pdb(f"{RELEASE}-accounting", "slurmdbd", RELEASE, {"maxUnavailable": 0}, WAVES["accounting"]))
    if tenant.login_replicas > 0:
        budget = {"maxUnavailable": 1} if tenant.login_replicas > 1 else {"maxUnavailable": 0}
        out.append(_pdb(f"{RELEASE}-login", "login", f"{RELEASE}-login-{LOGINSET}", budget, login_wave))
    return out


def gate_image(fleet: Fleet) -> str:
    """The image of the gates: the login image of the Slurm the fleet's ``slurm`` chart runs."""
    return slurm_ready.login_image(chart("slurm", fleet.versions)["version"])


def _wave(wave: str | int) -> dict[str, Any]:
    return {"metadata": {"annotations": {WAVE_ANNOTATION: str(wave)}}}


def waves(fleet: Fleet, tenant: Tenant, inputs: ClusterInputs) -> tuple[dict[str, int], int]:
    """(the sync wave of each NodeSet, the LoginSets' wave: the one after the last NodeSet wave)."""
    nodesets = rollout_waves.nodeset_waves(fleet, tenant, inputs, int(WAVES["nodesets"]))
    return nodesets, max(nodesets.values(), default=int(WAVES["nodesets"])) + 1


def update_strategy(fleet: Fleet, tenant: Tenant) -> dict[str, Any]:
    """A NodeSet's ``updateStrategy``: ``ScheduledUpdate`` in the tenant's window (the operator reserves the
    NodeSet's nodes with MAINT over it and replaces their pods then), else ``RollingUpdate`` bounded per
    block. Field names: slurm-operator v1.2.1 ``api/v1beta1/nodeset_types.go`` (``startTime`` RFC 3339,
    ``duration`` a Go duration); the operator adds MAINT and IGNORE_JOBS to the reservation itself.
    No reservation flags: the operator makes the reservation only while its start is ahead unless
    ``FORCE_START`` is set (1.2.1 internal/controller/nodeset/slurmcontrol/slurmcontrol.go
    SyncReservationForNodeSet), but Slurm 26.05 refuses that flag on a one-off reservation, which would
    lose every window; a window set after its start is refused by review instead (daytwo/windows.py)."""
    window = fleet.rollout.window_of(tenant.name)
    if window is not None:
        return {
            "type": "ScheduledUpdate",
            "scheduledUpdate": {"startTime": window.start, "duration": window.go_duration()},
        }
    return {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": fleet.rollout.max_unavailable_per_block}}


def slurm_fragment(fleet: Fleet, tenant: Tenant, values: dict[str, Any], inputs: ClusterInputs) -> dict[str, Any]:
    """The rollout part of ``values`` (the tenant's slurm chart values as rendered so far)."""
    strategy = update_strategy(fleet, tenant)
    nodeset_waves, login_wave = waves(fleet, tenant, inputs)
    base = WAVES["nodesets"]
    out: dict[str, Any] = {
        "controller": _wave(WAVES["controller"]),
        "nodesets": {
            name: {**_wave(nodeset_waves.get(name, base)), "updateStrategy": dict(strategy)}
            for name in values.get("nodesets", {})
        },
        "extraObjects": disruption_budgets(tenant, login_wave) + upgrade_gates.gates(tenant, WAVES, gate_image(fleet)),
    }
    if tenant.accounting.enabled:
        out["accounting"] = _wave(WAVES["accounting"])
    if values.get("loginsets"):
        out["loginsets"] = {name: _wave(login_wave) for name in values["loginsets"]}
    out["restapi"] = _wave(login_wave)  # slurmrestd is a client: with the login pods, last
    return out
