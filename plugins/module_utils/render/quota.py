"""The host ResourceQuota of a tenant's vCluster namespace (``policies.resourceQuota.quota``).

The chart's defaults (vcluster values.yaml: ``requests.storage: 100Gi``, ``services.nodeports: 0``,
``services.loadbalancers: 1``, cpu/memory/pod counts, ...) refuse a GPU tenant's objects: the
Slurm-home claim is terabytes and a LoadBalancer Service counts its node ports too. Helm merges
maps, so each default is overridden or nulled. What is set is derived from the inventory:

* ``requests.nvidia.com/gpu``: the GPUs of the tenant's pools;
* ``requests.storage``: Slurm home + the vCluster data volume + slurmctld state;
* ``services.loadbalancers`` / ``services.nodeports``: what ``expose`` opens (login: 1 and port 22;
  inference: 1 and its ports), 0 otherwise.
"""

from __future__ import annotations

import re
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Cluster, Tenant

# Chart defaults that are removed (null): cpu/memory are the pools' business (Kueue, Slurm).
QUOTA_DROP = (
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "count/pods",
    "count/endpoints",
    "count/services",
    "count/secrets",
    "count/configmaps",
    "count/persistentvolumeclaims",
)
VCLUSTER_DATA_GI = 5  # vcluster chart controlPlane.statefulSet.persistence.volumeClaim.size
SLURMCTLD_STATE_GI = 4  # slurm chart controller.persistence.resources.requests.storage
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50}
_DECIMAL = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15}
_QTY = re.compile(r"^([0-9]+)(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?$")


def quantity_bytes(text: str, where: str) -> int:
    m = _QTY.match(str(text))
    if not m:
        raise GpufleetError(f"{where}: {text!r} is not a storage size like 20Ti or 500Gi")
    unit = m.group(2) or ""
    return int(m.group(1)) * (_BINARY.get(unit) or _DECIMAL[unit])


def gi(n_bytes: int) -> str:
    return f"{-(-n_bytes // 2**30)}Gi"


def storage_bytes(cluster: Cluster, tenant: Tenant, slurm: bool, vcluster_values: dict[str, Any]) -> int:
    claim: Any = vcluster_values
    for key in ("controlPlane", "statefulSet", "persistence", "volumeClaim"):
        claim = claim.get(key) if isinstance(claim, dict) else None
    size = claim.get("size") if isinstance(claim, dict) else None
    where = f"gpufleet_tenants[{tenant.name}].vcluster.values.controlPlane.statefulSet.persistence.volumeClaim.size"
    total = quantity_bytes(size, where) if size else VCLUSTER_DATA_GI * 2**30
    if slurm:
        total += SLURMCTLD_STATE_GI * 2**30
        storage = cluster.components["shared_storage"]
        if storage.enabled:
            total += quantity_bytes(
                storage.options.get("capacity", "10Ti"),
                f"gpufleet_clusters[{cluster.name}].components.shared_storage.capacity",
            )
    return total


def tenant_quota(
    cluster: Cluster, tenant: Tenant, gpus: int, slurm: bool, vcluster_values: dict[str, Any]
) -> dict[str, Any]:
    quota: dict[str, Any] = {k: None for k in QUOTA_DROP}
    e = tenant.expose
    lbs = int(e.login_lb) + int(bool(e.inference))
    ports = (1 if e.login_lb else 0) + len(e.inference)
    quota.update(
        {
            "requests.nvidia.com/gpu": gpus,
            "requests.storage": gi(storage_bytes(cluster, tenant, slurm, vcluster_values)),
            "services.loadbalancers": lbs,
            "services.nodeports": ports,
        }
    )
    return quota
