"""The GPU Operator's driver upgrade, set so that Slurm drains a node before its driver pod is replaced.

``values(fleet, cluster)``: the ``driver.upgradePolicy`` values of the gpu-operator chart (chart values
names; the chart writes them to ClusterPolicy ``spec.driver.upgradePolicy``, where ``gpuPodDeletion`` is
``podDeletion``: ``../shared/upstream/charts/gpu-operator/values.yaml`` and the ClusterPolicy CRD):

* ``autoUpgrade: true``: a changed driver version is rolled out by the operator, node by node (the CRD's
  default is false: an unset value would leave old drivers running).
* ``maxParallelUpgrades`` and ``maxUnavailable`` = ``gpufleet_rollout.max_unavailable_per_block``: the
  whole cluster upgrades at most that many nodes at once, so no topology block loses more than the
  Slurm rollout may take from it.
* ``drain``: enabled, for the Slurm worker pods only (``podSelector app.kubernetes.io/name=slurmd``,
  the Slinky operator's label, kept by vCluster on the host copy), never forced, waiting
  ``driver_drain_timeout_seconds``. The upgrade cordons the node first; Slinky turns the cordon into a
  Slurm DRAIN (``syncCordon``); while the Slurm node still runs jobs the operator labels its slurmd pod
  ``nodeset.slinky.slurm.net/pod-protect=true`` (``model/contracts.py``) and a budget with
  ``maxUnavailable: 0`` refuses its eviction.
  The operator keeps that budget inside the vCluster; the GPU Operator drains the host copy, so the
  same budget is rendered in the tenant's host namespace (:func:`busy_slurmd_budget`). The drain
  therefore completes only once the jobs ended; on timeout the node is left cordoned and marked
  upgrade-failed, never force-drained.
* ``gpuPodDeletion``: not forced, the same timeout, emptyDir allowed (a slurmd pod's scratch).
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.model import contracts
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Cluster, Fleet

SLURMD_SELECTOR = f"{contracts.APP_LABEL}={contracts.SLURMD_APP}"


def upgrade_policy(fleet: Fleet) -> dict[str, Any]:
    per_block = fleet.rollout.max_unavailable_per_block
    timeout = fleet.rollout.driver_drain_timeout_seconds
    return {
        "autoUpgrade": True,
        "maxParallelUpgrades": per_block,
        "maxUnavailable": per_block,
        "drain": {
            "enable": True,
            "force": False,
            "podSelector": SLURMD_SELECTOR,
            "timeoutSeconds": timeout,
            "deleteEmptyDir": True,
        },
        "gpuPodDeletion": {"force": False, "timeoutSeconds": timeout, "deleteEmptyDir": True},
    }


def values(fleet: Fleet, cluster: Cluster) -> dict[str, Any]:
    """Merged over the cluster's gpu-operator values (the budget is the platform's, one place)."""
    comp = cluster.components["gpu_operator"]
    if comp.options.get("driver", "operator") == "preinstalled":
        return {}
    return {"driver": {"upgradePolicy": upgrade_policy(fleet)}}


def busy_slurmd_budget(namespace: str) -> dict[str, Any]:
    """The host-side twin of the operator's worker budget: no eviction of a slurmd pod whose Slurm node
    runs jobs (the operator sets and clears the label from the Slurm node state)."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {
            "name": "slurmd-busy",
            "namespace": namespace,
            "labels": {"app.kubernetes.io/part-of": "gpufleet"},
        },
        "spec": {
            "maxUnavailable": 0,
            "selector": {"matchLabels": {contracts.POD_PROTECT_LABEL: contracts.POD_PROTECT_VALUE}},
        },
    }
