"""Platform Applications of one cluster (host side): Argo CD config, Cilium, cert-manager, NVIDIA GPU
Operator, csi-driver-nfs and the static Slurm-home PVs.

Each returns ``{relative path: object}`` (values files and manifests) plus the child Applications.
Values are gpufleet's settings deep-merged with the inventory's ``components.<name>.values``.
Pitfalls handled here (upstream sources: the Cilium Helm reference for ``hubble.tls.auto`` and
``cni.exclusive``, the NVIDIA GPU Operator chart values for ``daemonsets.tolerations``):

* Cilium: ``hubble.tls.auto.method: cronJob`` (the chart default ``helm`` mints new certs on every
  render, so Argo CD would never be in sync); ``cni.exclusive`` from the inventory (set it false
  when Multus/SR-IOV carry the RDMA networks, or Cilium renames their CNI configs away).
* GPU Operator: ``daemonsets.tolerations`` *replaces* the chart default, so the default
  ``nvidia.com/gpu`` toleration is kept and the pool taint added; the same for the NFD worker;
  DCGM HPC job mapping on, so dcgm-exporter labels GPU metrics with Slurm job ids; operator on
  the system pool.
* Shared storage: one static RWX PV per Slurm tenant (``Retain``), pre-bound (``claimRef``) to the
  host name vCluster gives the tenant's ``slurm/slurm-home`` PVC.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Cluster, Component, Fleet, Pool
from ansible_collections.gpufleet.core.plugins.module_utils.pools import fence
from ansible_collections.gpufleet.core.plugins.module_utils.render import argocd as argo
from ansible_collections.gpufleet.core.plugins.module_utils.render import loadbalancer
from ansible_collections.gpufleet.core.plugins.module_utils.render.storage import storage_class
from ansible_collections.gpufleet.core.plugins.module_utils.render.values import (
    deep_merge,
    translated_name,
    vcluster_namespace,
)
from ansible_collections.gpufleet.core.plugins.module_utils.versions import CHARTS, chart

DCGM_JOB_MAPPING_DIR = "/var/lib/dcgm-exporter/job-mapping"
NFS_DRIVER = "nfs.csi.k8s.io"
SLURM_NAMESPACE = "slurm"  # inside each tenant vCluster
SLURM_HOME_PVC = "slurm-home"
NFD_DEFAULT_TOLERATION = {
    "key": "node-role.kubernetes.io/control-plane",
    "operator": "Equal",
    "value": "",
    "effect": "NoSchedule",
}

DEFAULT_NAMESPACES = {
    "cilium": "kube-system",
    "cert_manager": "cert-manager",
    "gpu_operator": "gpu-operator",
    "shared_storage": "kube-system",
    "argocd": argo.ARGOCD_NS,
    "slurm_operator": "slinky",
    "kueue": "kueue-system",
}


@dataclass
class Rendered:
    """Objects to write: values files (single document) and manifest files (YAML streams)."""

    values: dict[str, dict[str, Any]] = field(default_factory=dict)  # Helm values files
    manifests: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # Kubernetes objects
    data: dict[str, dict[str, Any]] = field(default_factory=dict)  # other YAML (for the apply step)
    raw: dict[str, str] = field(default_factory=dict)  # text files (topology.conf, for review)
    apps: dict[str, dict[str, Any]] = field(default_factory=dict)  # apps/<file> -> Application/AppProject
    notes: list[str] = field(default_factory=list)

    def update(self, other: Rendered) -> None:
        for mine, theirs in (
            (self.values, other.values),
            (self.manifests, other.manifests),
            (self.data, other.data),
            (self.raw, other.raw),
            (self.apps, other.apps),
        ):
            clash = set(mine) & set(theirs)
            if clash:
                raise GpufleetError(
                    f"two parts of the fleet render the same file(s) {sorted(clash)}; rename the tenant or pool"
                )
            mine.update(theirs)
        self.notes += other.notes


def namespace_of(comp: Component) -> str:
    return comp.namespace or DEFAULT_NAMESPACES[comp.name]


def system_pool(fleet: Fleet, cluster: str) -> Pool | None:
    pools = sorted((p for p in fleet.cluster_pools(cluster) if p.kind == "system"), key=lambda p: p.name)
    return pools[0] if pools else None


def system_placement(fleet: Fleet, cluster: str) -> dict[str, str]:
    """nodeSelector putting a platform Deployment on the system pool (untainted: no tolerations)."""
    sp = system_pool(fleet, cluster)
    return fence.node_selector(sp) if sp else {}


def cluster_dir(cluster: str) -> str:
    return f"clusters/{cluster}"


def _chart_app(
    fleet: Fleet,
    cluster: Cluster,
    comp: Component,
    chart_key: str,
    app: str,
    wave: str,
    values_file: str,
    release: str,
    namespace_labels: dict[str, str] | None = None,
    ignore_differences: list[dict[str, Any]] | None = None,
    keep: bool = False,
) -> dict[str, Any]:
    return argo.chart_app(
        f"{cluster.name}-{app}",
        fleet=fleet,
        chart=chart(chart_key, fleet.versions),
        release=release,
        values_file=values_file,
        project=argo.platform_project(cluster.name),
        wave=wave,
        app_labels=argo.labels(cluster.name, app),
        dest_server=cluster.server,
        dest_namespace=namespace_of(comp),
        policy=argo.sync_policy(namespace_labels=namespace_labels),
        ignore_differences=ignore_differences,
        keep=keep,
    )


def argocd_self_managed(cluster: Cluster) -> bool:
    comp = cluster.components["argocd"]
    return comp.enabled and comp.install_method == "gitops"


def argocd_values(cluster: Cluster) -> dict[str, Any]:
    """Values of the argo-cd chart: the bootstrap installs Argo CD with exactly these (apply step),
    then the ``<cluster>-argocd`` Application keeps it so. The Application health check lives here
    (``configs.cm``), the one owner of ``argocd-cm``."""
    # resource health persisted in the Application status (3.x defaults to redis only): what
    # argocd_status reads to say *why* an app is not ready (a MariaDB refused by the quota, ...)
    ours = {"configs": {"cm": argo.health_checks(), "params": {argo.PERSIST_HEALTH: "true"}}}
    return deep_merge(ours, cluster.components["argocd"].values)


def render_argocd_config(fleet: Fleet, cluster: Cluster) -> Rendered:
    base = cluster_dir(cluster.name)
    out = Rendered()
    if argocd_self_managed(cluster):
        vf = f"{base}/platform/argocd/values.yaml"
        out.values[vf] = argocd_values(cluster)
        out.apps["00-argocd.yaml"] = _chart_app(
            fleet,
            cluster,
            cluster.components["argocd"],
            "argocd",
            "argocd",
            "argocd-config",
            vf,
            "argocd",  # the bootstrap's Helm release name: same object names, adopted in place
            keep=True,  # never delete Argo CD (and its CRDs) with its own Application
        )
        return out
    path = f"{base}/platform/argocd-config"
    out.manifests[f"{path}/argocd-cm.yaml"] = [argo.argocd_cm_health()]
    out.apps["00-argocd-config.yaml"] = argo.directory_app(
        f"{cluster.name}-argocd-config",
        fleet=fleet,
        path=path,
        project=argo.platform_project(cluster.name),
        wave="argocd-config",
        app_labels=argo.labels(cluster.name, "argocd-config"),
        dest_server=cluster.server,
        dest_namespace=argo.ARGOCD_NS,
        policy=argo.sync_policy(create_namespace=False),
    )
    return out


def cilium_values(cluster: Cluster) -> dict[str, Any]:
    comp = cluster.components["cilium"]
    ours: dict[str, Any] = {
        "cni": {"exclusive": bool(comp.options.get("exclusive", True))},
        "hubble": {"tls": {"auto": {"enabled": True, "method": "cronJob"}}},
        "operator": {"replicas": 2},
    }
    # Explicit, as the string the chart expects: "false" keeps kube-proxy (the chart default, stated so
    # an upgrade cannot flip it); "true" replaces it and then the agent must reach the API server
    # directly, not through the kube-proxy ClusterIP it replaces.
    if comp.options.get("kube_proxy_replacement", False):
        host = comp.options.get("k8s_service_host")
        if not host:
            raise GpufleetError(
                f"gpufleet_clusters[{cluster.name}].components.cilium.k8s_service_host: required with"
                " kube_proxy_replacement: true (the API server address the agents use without kube-proxy)"
            )
        ours.update(
            {
                "kubeProxyReplacement": "true",
                "k8sServiceHost": str(host),
                "k8sServicePort": int(comp.options.get("k8s_service_port", 6443)),
            }
        )
    else:
        ours["kubeProxyReplacement"] = "false"
    return deep_merge(ours, comp.values)


def render_cilium(fleet: Fleet, cluster: Cluster) -> Rendered:
    comp = cluster.components["cilium"]
    out = Rendered()
    vf = f"{cluster_dir(cluster.name)}/platform/cilium/values.yaml"
    out.values[vf] = deep_merge(cilium_values(cluster), loadbalancer.cilium_fragment(fleet, cluster))
    if comp.install_method == "gitops":
        out.apps["10-cilium.yaml"] = _chart_app(
            fleet,
            cluster,
            comp,
            "cilium",
            "cilium",
            "network",
            vf,
            "cilium",
            keep=True,  # the CNI
        )
    lb = loadbalancer.objects(fleet, cluster)
    if lb:  # LB IPAM pool + announcement (render/loadbalancer.py); CRDs come with the cilium-operator
        path = f"{cluster_dir(cluster.name)}/platform/load-balancer"
        out.manifests[f"{path}/load-balancer.yaml"] = lb
        out.apps["11-load-balancer.yaml"] = argo.directory_app(
            f"{cluster.name}-load-balancer",
            fleet=fleet,
            path=path,
            project=argo.platform_project(cluster.name),
            wave="operators",
            app_labels=argo.labels(cluster.name, "load-balancer"),
            dest_server=cluster.server,
            dest_namespace=namespace_of(comp),
            policy=argo.sync_policy(create_namespace=False, extra=["SkipDryRunOnMissingResource=true"]),
        )
    return out


def render_cert_manager(fleet: Fleet, cluster: Cluster) -> Rendered:
    comp = cluster.components["cert_manager"]
    out = Rendered()
    vf = f"{cluster_dir(cluster.name)}/platform/cert-manager/values.yaml"
    ours: dict[str, Any] = {"crds": {"enabled": True, "keep": True}}
    sel = system_placement(fleet, cluster.name)
    if sel:
        ours["nodeSelector"] = sel
    out.values[vf] = deep_merge(ours, comp.values)
    if comp.install_method == "gitops":
        out.apps["20-cert-manager.yaml"] = _chart_app(
            fleet,
            cluster,
            comp,
            "cert_manager",
            "cert-manager",
            "crds",
            vf,
            "cert-manager",
            keep=True,  # CRDs
        )
    return out


def gpu_operator_values(fleet: Fleet, cluster: Cluster) -> dict[str, Any]:
    comp = cluster.components["gpu_operator"]
    pools = fleet.cluster_pools(cluster.name)
    # the GPU-health quarantine taint too: the driver, device plugin, DCGM and NFD must keep running
    # on a quarantined node (the health check needs them; the node comes back only through them)
    quarantine = {"key": fence.QUARANTINE_TAINT_KEY, "operator": "Exists", "effect": fence.QUARANTINE_TAINT_EFFECT}
    ds_tol = [*fence.daemonset_tolerations(pools), quarantine]
    ours: dict[str, Any] = {
        "daemonsets": {"tolerations": ds_tol},
        "node-feature-discovery": {
            "worker": {
                "tolerations": [
                    NFD_DEFAULT_TOLERATION,
                    *fence.daemonset_tolerations(pools, gpu_default=True),
                    quarantine,
                ]
            }
        },
        "dcgmExporter": {"hpcJobMapping": {"enabled": True, "directory": DCGM_JOB_MAPPING_DIR}},
        # The chart default (true) deploys the driver container on every GPU node; on hosts whose image
        # carries the driver it must be off (inventory: gpu_operator.driver: preinstalled).
        "driver": {"enabled": comp.options.get("driver", "operator") != "preinstalled"},
    }
    sel = system_placement(fleet, cluster.name)
    if sel:
        ours["operator"] = {"nodeSelector": {"kubernetes.io/os": "linux", **sel}}
    return deep_merge(ours, comp.values)


def render_gpu_operator(fleet: Fleet, cluster: Cluster) -> Rendered:
    comp = cluster.components["gpu_operator"]
    out = Rendered()
    vf = f"{cluster_dir(cluster.name)}/platform/gpu-operator/values.yaml"
    out.values[vf] = gpu_operator_values(fleet, cluster)
    if comp.install_method == "gitops":
        out.apps["30-gpu-operator.yaml"] = _chart_app(
            fleet,
            cluster,
            comp,
            "gpu_operator",
            "gpu-operator",
            "operators",
            vf,
            "gpu-operator",
            namespace_labels={"pod-security.kubernetes.io/enforce": "privileged"},
            keep=True,  # CRDs (ClusterPolicy, NVIDIADriver) and the drivers every GPU job runs on
        )
    return out


def slurm_tenants(fleet: Fleet, cluster: str) -> list[str]:
    return sorted(t.name for t in fleet.cluster_tenants(cluster) if fleet.tenant_pools(t.name, "slurm"))


def home_pv(cluster: Cluster, tenant: str) -> dict[str, Any]:
    """Static RWX PV of a tenant's Slurm home, pre-bound to the host PVC vCluster syncs."""
    opts = cluster.components["shared_storage"].options
    server, share = opts["nfs_server"], str(opts["nfs_share"]).rstrip("/")
    ns = vcluster_namespace(tenant)
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": f"slurm-home-{tenant}",
            "labels": {argo.LABEL_TENANT: tenant, argo.LABEL_COMPONENT: "slurm-home"},
        },
        "spec": {
            "capacity": {"storage": str(opts.get("capacity", "10Ti"))},
            "accessModes": ["ReadWriteMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "volumeMode": "Filesystem",
            "mountOptions": ["nfsvers=4.1"],
            "csi": {
                "driver": NFS_DRIVER,
                "volumeHandle": f"{server}#{share}/{tenant}#",
                "volumeAttributes": {"server": server, "share": f"{share}/{tenant}"},
            },
            "claimRef": {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": ns,
                "name": translated_name(SLURM_HOME_PVC, SLURM_NAMESPACE, tenant),
            },
        },
    }


def render_shared_storage(fleet: Fleet, cluster: Cluster) -> Rendered:
    comp = cluster.components["shared_storage"]
    out = Rendered()
    if not comp.enabled:
        return out
    base = f"{cluster_dir(cluster.name)}/platform"
    vf = f"{base}/csi-driver-nfs/values.yaml"
    ours: dict[str, Any] = {"externalSnapshotter": {"enabled": False}}
    sel = system_placement(fleet, cluster.name)
    if sel:
        ours["controller"] = {"nodeSelector": sel}
    out.values[vf] = deep_merge(ours, comp.values)
    if comp.install_method == "gitops":
        out.apps["40-csi-driver-nfs.yaml"] = _chart_app(
            fleet, cluster, comp, "csi_driver_nfs", "csi-driver-nfs", "operators", vf, "csi-driver-nfs"
        )
    sc = storage_class(cluster)
    if sc:
        path = f"{base}/storage-class"
        out.manifests[f"{path}/{sc['metadata']['name']}.yaml"] = [sc]
        out.apps["42-storage-class.yaml"] = argo.directory_app(
            f"{cluster.name}-storage-class",
            fleet=fleet,
            path=path,
            project=argo.platform_project(cluster.name),
            wave="storage",
            app_labels=argo.labels(cluster.name, "storage-class"),
            dest_server=cluster.server,
            dest_namespace=namespace_of(comp),
            policy=argo.sync_policy(create_namespace=False),
            keep=True,  # deleting the app must not delete the class every tenant volume names
        )
    tenants = slurm_tenants(fleet, cluster.name)
    if tenants:
        path = f"{base}/slurm-home"
        for t in tenants:
            out.manifests[f"{path}/pv-{t}.yaml"] = [home_pv(cluster, t)]
        out.apps["41-slurm-home.yaml"] = argo.directory_app(
            f"{cluster.name}-slurm-home",
            fleet=fleet,
            path=path,
            project=argo.platform_project(cluster.name),
            wave="storage",
            app_labels=argo.labels(cluster.name, "slurm-home"),
            dest_server=cluster.server,
            dest_namespace=namespace_of(comp),
            policy=argo.sync_policy(create_namespace=False, extra=["Delete=false", "Prune=confirm"]),
        )
    return out


def platform_project(fleet: Fleet, cluster: Cluster, tenant_servers: list[str]) -> dict[str, Any]:
    """The platform project: the host cluster (all namespaces, cluster-scoped kinds) and the
    platform-owned apps inside tenant vClusters (Slinky CRDs/operator, Kueue)."""
    repos = [fleet.gitops.repo_url, *sorted({fleet.chart_repo(c["repo_url"]) for c in _all_charts(fleet)})]
    dests = [{"server": cluster.server, "namespace": "*"}] + [
        {"server": s, "namespace": "*"} for s in sorted(set(tenant_servers))
    ]
    return argo.project(
        argo.platform_project(cluster.name),
        description=f"gpufleet platform of cluster {cluster.name}: host components and tenant fences",
        source_repos=repos,
        destinations=dests,
        cluster_whitelist=[{"group": "*", "kind": "*"}],
        project_labels=argo.labels(cluster.name, "project"),
    )


def _all_charts(fleet: Fleet) -> list[dict[str, str]]:
    return [chart(k, fleet.versions) for k in sorted(CHARTS)]


def render_platform(fleet: Fleet, cluster: Cluster) -> Rendered:
    out = Rendered()
    comps = cluster.components
    out.update(render_argocd_config(fleet, cluster))
    if comps["cilium"].enabled:
        out.update(render_cilium(fleet, cluster))
    if comps["cert_manager"].enabled:
        out.update(render_cert_manager(fleet, cluster))
    if comps["gpu_operator"].enabled:
        out.update(render_gpu_operator(fleet, cluster))
    out.update(render_shared_storage(fleet, cluster))
    return out
