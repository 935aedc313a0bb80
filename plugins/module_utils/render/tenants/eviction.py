"""Slurm pods are the last the kubelet evicts on a tenant's nodes.

The fence puts a Slurm tenant's slurmctld, slurmrestd, login pods, MariaDB, the operators and
CoreDNS on the tenant's own GPU nodes, next to slurmd, whose jobs run inside its pod. Under memory
pressure the kubelet evicts first the pods using more than they request, then by priority, then by
how far over their request they are. So:

* every Slurm pod of the chart (slurmctld, slurmd, slurmrestd, login, slurmdbd) gets the host
  PriorityClass ``gpufleet-slurm-<tenant>`` (platform-owned, rendered on the host by the tenant's
  host app; ``preemptionPolicy: Never``, so it never displaces a pod to get scheduled), through the
  slurm chart's ``priorityClass`` values and the vCluster's ``sync.fromHost.priorityClasses``
  restricted to that one class by label;
* slurmd requests the memory of the pool's smallest node less :func:`reserve` (room for the
  tenant's other pods there), so jobs within it keep slurmd under its request;
* system-node-critical and system-cluster-critical (which vCluster passes through once priority
  classes come from the host) are refused in the tenant's host namespace by a zero quota.

None of these keys is on a tenant's allow-list (model/tenant_values.py); only the platform's
``tenant_overrides`` reach them.
"""

from __future__ import annotations

from typing import Any

LABEL = "gpufleet.io/slurm-priority"
VALUE = 1_000_000  # above every pod without a class (0); far below system-*-critical (2e9)
WHY = (
    "gpufleet: Slurm pods (slurmd and its jobs, slurmctld) are evicted after the tenant's other pods"
    " on its nodes; platform-owned, preemptionPolicy Never"
)
SYSTEM_CLASSES = ("system-node-critical", "system-cluster-critical")
GIB = 2**30


def class_name(tenant: str) -> str:
    return f"gpufleet-slurm-{tenant}"


def priority_class(tenant: str) -> dict[str, Any]:
    """The tenant's host PriorityClass."""
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": class_name(tenant), "labels": {LABEL: tenant}},
        "value": VALUE,
        "globalDefault": False,
        "preemptionPolicy": "Never",
        "description": WHY,
    }


def no_system_priority(namespace: str) -> dict[str, Any]:
    """A quota of zero pods with a system-critical class in the tenant's host namespace."""
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "gpufleet-no-system-priority", "namespace": namespace},
        "spec": {
            "hard": {"pods": "0"},
            "scopeSelector": {
                "matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": list(SYSTEM_CLASSES)}]
            },
        },
    }


def vcluster_fragment(tenant: str) -> dict[str, Any]:
    """vCluster values: the tenant's class (only it) is visible inside and kept on synced pods."""
    sel = {"matchLabels": {LABEL: tenant}}
    return {"sync": {"fromHost": {"priorityClasses": {"enabled": True, "selector": sel}}}}


def slurm_fragment(tenant: str) -> dict[str, Any]:
    """slurm chart values: every Slurm pod uses the host class (the chart does not create it)."""
    return {"priorityClass": {"enabled": True, "create": False, "name": class_name(tenant), "description": WHY}}


def reserve(memory: int) -> int:
    """Memory left on a node for the tenant's other pods: a quarter, at most 32Gi."""
    return min(memory // 4, 32 * GIB)


def slurmd_memory_request(node_memory: list[int]) -> str | None:
    """slurmd's memory request on a pool whose nodes have ``node_memory`` allocatable bytes; None
    when a node's size is unknown (a snapshot without ``status.allocatable``)."""
    sizes = [m for m in node_memory if m > 0]
    if not sizes or len(sizes) < len(node_memory):
        return None
    least = min(sizes)
    return f"{(least - reserve(least)) // 2**20}Mi"
