"""A tenant's vCluster: its chart values (the pool fence, the quota, the state storage, the platform's
override, checked against host reads) and the platform's objects inside it (namespaces, the Slurm-home
PVC, the health-check and CA ConfigMaps, Kueue's flavors and queues).

Pitfalls handled (upstream: the vcluster chart values): the ``selector.labels`` +
``enforceTolerations`` fence, the LimitRange off and the quota derived from the tenant
(render/tenants/quota.py), no host Secret sync (docs/adr/vcluster-secrets.md), ``exportKubeConfig.server``
and extra SANs so Argo CD reaches ``https://<name>.<namespace>:443``.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.model import fence
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Cluster, Fleet, Tenant
from ansible_collections.gpufleet.core.plugins.module_utils.render.inputs import ClusterInputs
from ansible_collections.gpufleet.core.plugins.module_utils.render.platform.cluster import system_placement, system_pool
from ansible_collections.gpufleet.core.plugins.module_utils.render.platform.fabric_labels import (
    kueue_topology as tas_topology,
)
from ansible_collections.gpufleet.core.plugins.module_utils.render.platform.storage import state_storage_class
from ansible_collections.gpufleet.core.plugins.module_utils.render.shared_names import SLURM_HOME_PVC, SLURM_NAMESPACE
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants import (
    control_plane,
    eviction,
    health,
    quota,
    sssd,
)
from ansible_collections.gpufleet.core.plugins.module_utils.render.values import (
    deep_merge,
    vcluster_namespace,
    vcluster_server,
)


def vcluster_values(fleet: Fleet, cluster: Cluster, tenant: Tenant, inputs: ClusterInputs) -> dict[str, Any]:
    pools = fleet.tenant_pools(tenant.name)
    fragment = fence.vcluster_sync_fragment(pools)
    ns = vcluster_namespace(tenant.name)
    gpus = sum(inputs.pool_gpus(p.name) for p in pools)
    ours: dict[str, Any] = {
        "sync": {
            "fromHost": {"nodes": {"enabled": True, "clearImageStatus": True, "syncBackChanges": False}},
            "toHost": {"pods": {}},
        },
        "controlPlane": {"proxy": {"extraSANs": [f"{tenant.name}.{ns}.svc", f"{tenant.name}.{ns}.svc.cluster.local"]}},
        "policies": {
            "resourceQuota": {"enabled": True},
            "limitRange": {"enabled": False},
        },
        "exportKubeConfig": {"server": vcluster_server(tenant.name)},
        "telemetry": {"enabled": False},  # the chart reports usage to the vendor by default
    }
    ours = deep_merge(ours, fragment)
    if own_scheduler(fleet, cluster, tenant, inputs):
        ours["controlPlane"]["distro"] = {"k8s": {"scheduler": {"enabled": True}}}
    if any(p.kind == "slurm" for p in pools):
        ours = deep_merge(ours, eviction.vcluster_fragment(tenant.name))
    sts: dict[str, Any] = {}
    sel = system_placement(fleet, cluster.name)
    if sel:
        sts["scheduling"] = {"nodeSelector": sel}
    sc = state_storage_class(cluster)
    if sc:  # the backing store on a local/block class (render/platform/storage.py); else the default class
        sts["persistence"] = {"volumeClaim": {"storageClass": sc}}
    if sts:
        ours["controlPlane"]["statefulSet"] = sts
    # the tenant's allow-listed values (model/tenant_values.py), then the platform's override
    given = deep_merge(tenant.vcluster_values, cluster.tenant_override(tenant.name, "vcluster"))
    # requests.storage is added by render_tenant once every claim of the tenant is rendered
    ours["policies"]["resourceQuota"]["quota"] = quota.tenant_quota(tenant, gpus)
    # No sync.fromHost.secrets: the chart turns it into a ClusterRole with cluster-wide Secret
    # list/watch (docs/adr/vcluster-secrets.md). The Slurm keys are written straight into the
    # vCluster by the apply step (tenant role), where the slurm chart reads them by secretRef.
    merged = deep_merge(ours, given)
    where = None
    if cluster.tenant_override(tenant.name, "vcluster") and fleet.source is not None:
        ci = list(fleet.clusters).index(cluster.name)
        key = ("gpufleet_clusters", ci, "tenant_overrides", tenant.name, "vcluster", "values")
        file, line = fleet.source.locate(key)
        where = f"{file}:{line}: gpufleet_clusters[{ci}].tenant_overrides.{tenant.name}.vcluster.values"
    check_vcluster_values(tenant.name, merged, where)
    sp = system_pool(fleet, cluster.name)
    control_plane.check(fleet, cluster, sp and sp.name, inputs.pool_resources(sp.name) if sp else {})
    return merged


def own_scheduler(fleet: Fleet, cluster: Cluster, tenant: Tenant, inputs: ClusterInputs) -> bool:
    """A Kubernetes tenant whose Kueue places by topology runs its own scheduler in its vCluster: Kueue's
    ungater removes the topology gate and adds the chosen domain's ``nodeSelector`` in one update
    (Kueue v0.19.2 pkg/controller/tas/topology_ungater.go), and vCluster 0.36.1 copies the gate removal
    to the host pod but not the selector (pkg/controllers/resources/pods/translate/diff.go); so the pod
    is bound inside the vCluster, where the selector is, and the host fence is admission
    (render/tenants/host_fence.py). A tenant with slurm-bridge runs one too: the bridge's scheduler
    binds pods inside the vCluster (render/tenants/bridge.py)."""
    if tenant.bridge is not None:
        return True
    kube = bool(fleet.tenant_pools(tenant.name, "kubernetes")) and cluster.components["kueue"].enabled
    return kube and tas_topology(cluster, inputs) is not None


# vCluster values that make the chart grant the vCluster's ServiceAccount cluster-wide list/watch on
# a Secret-like kind on the host (its fromHost syncers list/watch every namespace).
HOST_READ_SYNCERS = ("secrets", "configMaps")


def check_vcluster_values(tenant: str, values: dict[str, Any], where: str | None = None) -> None:
    """Fail closed when the (inventory-merged) vCluster values would let the vCluster read host Secrets.

    Tenant values cannot reach these keys (model/tenant_values.py); this is the absolute rule that
    holds even for the platform's ``tenant_overrides`` (``where``: that key, with file and line)."""
    at = where or f"gpufleet_tenants[{tenant}].vcluster.values"

    from_host = ((values.get("sync") or {}).get("fromHost") or {}) if isinstance(values.get("sync"), dict) else {}
    for kind in HOST_READ_SYNCERS:
        spec = from_host.get(kind) if isinstance(from_host, dict) else None
        if isinstance(spec, dict) and spec.get("enabled"):
            raise GpufleetError(
                f"{at}.sync.fromHost.{kind}.enabled: not allowed: the vcluster"
                f" chart grants the vCluster cluster-wide list/watch on host {kind} for it (other tenants' keys,"
                " Argo CD cluster credentials); put what the tenant needs inside its vCluster instead"
            )
    rbac = values.get("rbac") if isinstance(values.get("rbac"), dict) else {}
    cr = rbac.get("clusterRole") if isinstance(rbac.get("clusterRole"), dict) else {}
    for rule in [*(cr.get("extraRules") or []), *(cr.get("overwriteRules") or [])]:
        if isinstance(rule, dict) and {"secrets", "*"} & set(rule.get("resources") or []):
            raise GpufleetError(
                f"{at}.rbac.clusterRole: a cluster-wide rule on Secrets is"
                " not allowed (it lets the vCluster read every tenant's Secrets)"
            )


# ------------------------------------------------------------------ Kueue inside the vCluster


def kueue_objects(fleet: Fleet, cluster: Cluster, tenant: Tenant, inputs: ClusterInputs) -> list[dict[str, Any]]:
    pools = sorted(fleet.tenant_pools(tenant.name, "kubernetes"), key=lambda p: p.name)
    namespaces = list(tenant.namespaces) or [tenant.name]
    # Topology Aware Scheduling over the fabric labels the apply step puts on the Nodes
    topology = tas_topology(cluster, inputs)
    objs: list[dict[str, Any]] = [topology] if topology else []
    for p in pools:
        objs.append(fence.kueue_resource_flavor(p, topology=topology["metadata"]["name"] if topology else None))
        # Kueue admits a workload only if every resource it requests is covered, so cpu and memory
        # are quotas too (the pool's allocatable totals), not only GPUs.
        r = inputs.pool_resources(p.name)
        objs.append(
            fence.kueue_cluster_queue(
                p, tenant.name, gpus=int(r["nvidia.com/gpu"]), cpu=r["cpu"], memory=str(r["memory"])
            )
        )
    for ns in namespaces:
        for p in pools:
            objs.append(
                {
                    "apiVersion": fence.KUEUE_API,
                    "kind": "LocalQueue",
                    "metadata": {"name": p.name, "namespace": ns},
                    "spec": {"clusterQueue": p.name},
                }
            )
    return objs


def tenant_namespaces(tenant: Tenant, slurm: bool, kube: bool) -> list[dict[str, Any]]:
    names = ([SLURM_NAMESPACE] if slurm else []) + ((list(tenant.namespaces) or [tenant.name]) if kube else [])
    return [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": n, "labels": {fence.NAMESPACE_TENANT_LABEL: tenant.name}},
        }
        for n in sorted(set(names))
    ]


def home_pvc(cluster: Cluster) -> dict[str, Any]:
    opts = cluster.components["shared_storage"].options
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": SLURM_HOME_PVC, "namespace": SLURM_NAMESPACE},
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": "",
            "volumeMode": "Filesystem",
            "resources": {"requests": {"storage": str(opts.get("capacity", "10Ti"))}},
        },
    }


def vcluster_objects(
    fleet: Fleet, cluster: Cluster, tenant: Tenant, inputs: ClusterInputs, kube: bool, kueue: bool
) -> list[dict[str, Any]]:
    """Platform-owned objects inside the vCluster: namespaces, the home PVC, the health-check and CA
    ConfigMaps, Kueue flavors and queues."""
    slurm = bool(fleet.tenant_pools(tenant.name, "slurm"))
    objects = tenant_namespaces(tenant, slurm, kube)
    if slurm and cluster.components["shared_storage"].enabled:
        objects.append(home_pvc(cluster))
    if slurm and tenant.health.enabled:
        objects.append(health.configmap(tenant, SLURM_NAMESPACE))
    if slurm and tenant.identity is not None and tenant.identity.tls_ca_pem:
        objects.append(sssd.ca_configmap(tenant.identity))
    if kueue:
        objects += kueue_objects(fleet, cluster, tenant, inputs)
    return objects
