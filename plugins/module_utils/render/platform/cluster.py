"""Platform Applications of one cluster (host side): Argo CD config, Cilium, cert-manager, NVIDIA GPU
Operator, csi-driver-nfs and the static Slurm-home PVs.

Each component is one or more rows of render/apps.py (``platform_rows``): its values file or its
manifests and the child Application that syncs them.
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

from collections.abc import Callable
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.model import components, fence
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Cluster, Component, Fleet, Pool
from ansible_collections.gpufleet.core.plugins.module_utils.render import argocd as argo
from ansible_collections.gpufleet.core.plugins.module_utils.render.apps import SKIP_DRY_RUN, App, Rendered, Scope, emit
from ansible_collections.gpufleet.core.plugins.module_utils.render.platform import driver_upgrade, loadbalancer
from ansible_collections.gpufleet.core.plugins.module_utils.render.platform.storage import storage_class
from ansible_collections.gpufleet.core.plugins.module_utils.render.shared_names import (
    DCGM_JOB_MAPPING_DIR,
    SLURM_HOME_PVC,
    SLURM_NAMESPACE,
    cluster_dir,
    namespace_of,
)
from ansible_collections.gpufleet.core.plugins.module_utils.render.values import (
    deep_merge,
    translated_name,
    vcluster_namespace,
)
from ansible_collections.gpufleet.core.plugins.module_utils.versions import CHARTS, GIT_SOURCES, IMAGES, chart

NFS_DRIVER = "nfs.csi.k8s.io"
NFD_DEFAULT_TOLERATION = {
    "key": "node-role.kubernetes.io/control-plane",
    "operator": "Equal",
    "value": "",
    "effect": "NoSchedule",
}


def system_pool(fleet: Fleet, cluster: str) -> Pool | None:
    pools = sorted((p for p in fleet.cluster_pools(cluster) if p.kind == "system"), key=lambda p: p.name)
    return pools[0] if pools else None


def system_placement(fleet: Fleet, cluster: str) -> dict[str, str]:
    """nodeSelector putting a platform Deployment on the system pool (untainted: no tolerations)."""
    sp = system_pool(fleet, cluster)
    return fence.node_selector(sp) if sp else {}


def platform_scope(cluster: Cluster) -> Scope:
    """The platform's rows: files under ``platform/<part>/``, Applications ``<cluster>-<part>``."""
    return Scope(cluster.name, f"{cluster_dir(cluster.name)}/platform", cluster.name, cluster.server)


def chart_app(comp: Component, values: dict[str, Any]) -> App:
    """A component from its chart, as its row says; its values are written whoever installs it (Argo
    CD, or the apply step with Helm when its ``install_method`` is not ``gitops``)."""
    row = components.ROWS[comp.name]
    return App(
        row.app,
        row.part,
        row.wave,
        namespace_of(comp),
        chart=row.chart,
        values=values,
        synced=comp.install_method == "gitops",
        keep=row.keep,
        namespace_labels=dict(row.namespace_labels) or None,
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
    # the image is the Argo CD release pinned in versions.py (the chart's default is its appVersion,
    # an older release); the test bed builds and runs that same release (tools/build.sh argocd)
    # the chart's CRDs are its appVersion's (10.1.1: v3.4.4), not the image's: off, the argocd-crds
    # Application ships the release's own (argocd_crds_app, docs/adr/argocd-crds.md)
    ours = {
        "configs": {
            "cm": argo.health_checks(),
            "params": {argo.PERSIST_HEALTH: "true", **dict.fromkeys(argo.GIT_SUBMODULE_KEYS, "false")},
        },
        "crds": {"install": False},
        "global": {"image": {"tag": IMAGES["argocd"]}},
    }
    values = deep_merge(ours, cluster.components["argocd"].values)
    if values["crds"].get("install") is not False or values["global"]["image"].get("tag") != IMAGES["argocd"]:
        raise GpufleetError(
            f"cluster {cluster.name}: components.argocd.values may not set crds.install or global.image.tag:"
            f" Argo CD runs the pinned release {IMAGES['argocd']} with that release's CRDs (the argocd-crds"
            " Application)"
        )
    return values


def argocd_crds_app() -> App:
    """The CRDs of the Argo CD release that runs, from the argo-cd repository at its tag (the
    upstream's manifests/crds, applied server-side: the ApplicationSet CRD is too big for a
    client-side apply); never deleted with the app, and a CRD a later release drops is pruned only on
    confirmation (pruning a CRD deletes every object of its kind)."""
    return App(
        "00-argocd-crds.yaml",
        "argocd-crds",
        "argocd-crds",
        argo.ARGOCD_NS,
        git="argocd_crds",
        create_namespace=False,
        sync_options=("Prune=confirm",),
        keep=True,
    )


def argocd_config_app() -> App:
    """Argo CD not managing itself: its ``argocd-cm`` (the Application health check) alone."""
    cm = {"argocd-cm.yaml": [argo.argocd_cm_health()]}
    return App(
        "00-argocd-config.yaml",
        "argocd-config",
        "argocd-config",
        argo.ARGOCD_NS,
        manifests=cm,
        create_namespace=False,
    )


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


def cilium_with_lb_values(fleet: Fleet, cluster: Cluster) -> dict[str, Any]:
    return deep_merge(cilium_values(cluster), loadbalancer.cilium_fragment(fleet, cluster))


def load_balancer_rows(fleet: Fleet, cluster: Cluster) -> list[App]:
    """LB IPAM pool + announcement (render/platform/loadbalancer.py); CRDs come with the cilium-operator."""
    lb = loadbalancer.objects(fleet, cluster)
    if not lb:
        return []
    return [
        App(
            "11-load-balancer.yaml",
            "load-balancer",
            "operators",
            namespace_of(cluster.components["cilium"]),
            manifests={"load-balancer.yaml": lb},
            create_namespace=False,
            sync_options=(SKIP_DRY_RUN,),
        )
    ]


def cert_manager_values(fleet: Fleet, cluster: Cluster) -> dict[str, Any]:
    ours: dict[str, Any] = {"crds": {"enabled": True, "keep": True}}
    sel = system_placement(fleet, cluster.name)
    if sel:
        ours["nodeSelector"] = sel
    return deep_merge(ours, cluster.components["cert_manager"].values)


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
    return deep_merge(deep_merge(ours, comp.values), driver_upgrade.values(fleet, cluster))


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


def csi_driver_nfs_values(fleet: Fleet, cluster: Cluster) -> dict[str, Any]:
    ours: dict[str, Any] = {"externalSnapshotter": {"enabled": False}}
    sel = system_placement(fleet, cluster.name)
    if sel:
        ours["controller"] = {"nodeSelector": sel}
    return deep_merge(ours, cluster.components["shared_storage"].values)


def storage_rows(fleet: Fleet, cluster: Cluster) -> list[App]:
    """Beside the NFS driver: its StorageClass and the Slurm-home PVs of the Slurm tenants."""
    ns = namespace_of(cluster.components["shared_storage"])
    rows = []
    sc = storage_class(cluster)
    if sc:  # kept: deleting the app must not delete the class every tenant volume names
        files = {f"{sc['metadata']['name']}.yaml": [sc]}
        rows.append(
            App(
                "42-storage-class.yaml",
                "storage-class",
                "storage",
                ns,
                manifests=files,
                create_namespace=False,
                keep=True,
            )
        )
    tenants = slurm_tenants(fleet, cluster.name)
    if tenants:
        pvs = {f"pv-{t}.yaml": [home_pv(cluster, t)] for t in tenants}
        rows.append(
            App(
                "41-slurm-home.yaml",
                "slurm-home",
                "storage",
                ns,
                manifests=pvs,
                create_namespace=False,
                sync_options=("Delete=false", "Prune=confirm"),
            )
        )
    return rows


def platform_project(fleet: Fleet, cluster: Cluster, tenant_servers: list[str]) -> dict[str, Any]:
    """The platform project: the host cluster (all namespaces, cluster-scoped kinds) and the
    platform-owned apps inside tenant vClusters (Slinky CRDs/operator, Kueue)."""
    upstream = [c["repo_url"] for c in _all_charts(fleet)] + [g["repo_url"] for g in GIT_SOURCES.values()]
    repos = [fleet.gitops.repo_url, *sorted({fleet.chart_repo(u) for u in upstream})]
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


_Rows = Callable[[Fleet, Cluster], list[App]]
# The values function of each host component of the table (model/components.py): gpufleet's settings
# deep-merged with the inventory's ``components.<name>.values``.
VALUES: dict[str, Callable[[Fleet, Cluster], dict[str, Any]]] = {
    "argocd": lambda _fleet, cluster: argocd_values(cluster),
    "cilium": cilium_with_lb_values,
    "cert_manager": cert_manager_values,
    "gpu_operator": gpu_operator_values,
    "shared_storage": csi_driver_nfs_values,
}
# Applications a component brings beside its chart's
EXTRA_ROWS: dict[str, _Rows] = {
    "argocd": lambda _fleet, _cluster: [argocd_crds_app()],
    "cilium": load_balancer_rows,
    "shared_storage": storage_rows,
}


def component_rows(fleet: Fleet, cluster: Cluster, row: components.Row) -> list[App]:
    """A host component's Applications: its chart (unless disabled), then what it brings beside it.
    Argo CD not managing itself still gets its ``argocd-cm``."""
    comp = cluster.components[row.name]
    if row.name == "argocd" and not argocd_self_managed(cluster):
        return [argocd_config_app()]
    if not comp.enabled:
        return []
    return [chart_app(comp, VALUES[row.name](fleet, cluster)), *EXTRA_ROWS.get(row.name, _no_rows)(fleet, cluster)]


def _no_rows(_fleet: Fleet, _cluster: Cluster) -> list[App]:
    return []


def platform_rows(fleet: Fleet, cluster: Cluster) -> list[App]:
    """The host-side components of the cluster, in the order of their Application files."""
    host = sorted((r for r in components.COMPONENTS if r.host), key=lambda r: r.app)
    return [app for row in host for app in component_rows(fleet, cluster, row)]


def render_platform(fleet: Fleet, cluster: Cluster) -> Rendered:
    out = Rendered()
    out.apps.update(emit(fleet, platform_scope(cluster), platform_rows(fleet, cluster), out))
    return out
