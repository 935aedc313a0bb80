"""Per-tenant render: the tenant's AppProject and root Application, and its child apps as rows: the
host side (render/tenants/host.py), the vCluster and the platform's objects inside it
(render/tenants/vcluster.py), Kueue, and inside the vCluster of a Slurm tenant the Slinky Slurm stack
(CRDs -> operator -> cluster, render/tenants/slurm.py) and its accounting.

Ownership: everything that *is* the fence (host namespace, CiliumClusterwideNetworkPolicy, the
vCluster, Slinky/Kueue controllers, Kueue flavors and queues, the Slurm-home PVC) is in the
platform project; the tenant's Slurm cluster app is in the tenant's own project, which is what a
tenant may do: deploy into its vCluster only, no quota/policy objects, no host destination (so no
cluster-scoped kinds on the host).
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.model import fence
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Cluster, Fleet, Tenant
from ansible_collections.gpufleet.core.plugins.module_utils.render import argocd as argo
from ansible_collections.gpufleet.core.plugins.module_utils.render.apps import SKIP_DRY_RUN, App, Rendered, Scope, emit
from ansible_collections.gpufleet.core.plugins.module_utils.render.inputs import ClusterInputs
from ansible_collections.gpufleet.core.plugins.module_utils.render.shared_names import (
    SLURM_NAMESPACE,
    cluster_dir,
    namespace_of,
)
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants import (
    accounting,
    bridge,
    health,
    host_fence,
    quota,
    rollout,
    slurm_ready,
)
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants.host import host_files
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants.slurm import (
    slurm_operator_values,
    slurm_values,
    tenant_cert_manager_values,
)
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants.vcluster import (
    vcluster_objects,
    vcluster_values,
)
from ansible_collections.gpufleet.core.plugins.module_utils.render.values import (
    deep_merge,
    vcluster_namespace,
    vcluster_server,
)
from ansible_collections.gpufleet.core.plugins.module_utils.versions import chart

# what Argo CD leaves to others: the vCluster's volume claims (the StatefulSet controller fills in
# defaults), the replicas of an autoscaled NodeSet (the autoscaler sets them)
VCLUSTER_IGNORE = {"group": "apps", "kind": "StatefulSet", "jsonPointers": ["/spec/volumeClaimTemplates"]}
NODESET_REPLICAS_IGNORE = {"group": "slinky.slurm.net", "kind": "NodeSet", "jsonPointers": ["/spec/replicas"]}
TENANT_NS_BLACKLIST = [
    {"group": "", "kind": "ResourceQuota"},
    {"group": "", "kind": "LimitRange"},
    {"group": "networking.k8s.io", "kind": "NetworkPolicy"},
    {"group": "cilium.io", "kind": "CiliumNetworkPolicy"},
]
TENANT_CLUSTER_BLACKLIST = [
    {"group": "cilium.io", "kind": "CiliumClusterwideNetworkPolicy"},
    {"group": "kueue.x-k8s.io", "kind": "ClusterQueue"},
    {"group": "kueue.x-k8s.io", "kind": "Cohort"},
    {"group": "kueue.x-k8s.io", "kind": "ResourceFlavor"},
    {"group": "kueue.x-k8s.io", "kind": "Topology"},
]


def tenant_dir(cluster: str, tenant: str) -> str:
    return f"{cluster_dir(cluster)}/tenants/{tenant}"


# ------------------------------------------------------------------ AppProject


def tenant_project(fleet: Fleet, cluster: Cluster, tenant: Tenant) -> dict[str, Any]:
    slurm_repo = fleet.chart_repo(chart("slurm", fleet.versions)["repo_url"])
    return argo.project(
        tenant.name,
        # not the tenant's own description: this file is the platform's, the description lives in the
        # tenant's REPORT.md, so that editing it renders into the tenant's files only
        description=f"tenant {tenant.name}",
        source_repos=[fleet.gitops.repo_url, slurm_repo],
        destinations=[{"server": vcluster_server(tenant.name), "namespace": "*"}],
        cluster_whitelist=[{"group": "*", "kind": "*"}],  # inside the vCluster only: no host destination
        namespace_blacklist=TENANT_NS_BLACKLIST,
        roles=[
            {
                "name": "admin",
                "description": f"{tenant.name} administrators: manage the tenant's apps",
                "groups": [f"{tenant.name}-admins"],
                "policies": [f"p, proj:{tenant.name}:admin, applications, *, {tenant.name}/*, allow"],
            }
        ],
        project_scoped_only=True,
        project_labels=argo.labels(cluster.name, "project", tenant.name),
    )


def _with_cluster_blacklist(proj: dict[str, Any]) -> dict[str, Any]:
    proj["spec"]["clusterResourceBlacklist"] = TENANT_CLUSTER_BLACKLIST
    return proj


# ------------------------------------------------------------------ one tenant


def fence_rows(fleet: Fleet, cluster: Cluster, tenant: Tenant, inputs: ClusterInputs) -> list[App]:
    """The platform's apps of every tenant: host side, the vCluster, the objects inside it, Kueue."""
    t, ns = tenant.name, vcluster_namespace(tenant.name)
    slurm = bool(fleet.tenant_pools(t, "slurm"))
    kube = bool(fleet.tenant_pools(t, "kubernetes"))
    kueue = kube and cluster.components["kueue"].enabled
    objects = {"objects.yaml": vcluster_objects(fleet, cluster, tenant, inputs, kube, kueue)}
    vc_api = {"name": "vCluster API (Argo CD destination)", "value": vcluster_server(t)}
    vc_values = vcluster_values(fleet, cluster, tenant, inputs)
    host = host_files(cluster, tenant, slurm)
    members = {p.name: inputs.members.get(p.name, []) for p in fleet.tenant_pools(t)}
    admission = host_fence.objects(t, ns, vc_values, members)
    if admission:  # a vCluster with its own scheduler: the fence is the host's admission
        host["fence.yaml"] = admission
    rows = [
        App(
            "1-host.yaml",
            "host",
            "tenant-host",
            ns,
            manifests=host,
            component="tenant-host",
            server=cluster.server,
            create_namespace=False,
            sync_options=(SKIP_DRY_RUN,),
        ),
        App(
            "2-vcluster.yaml",
            "vcluster",
            "vcluster",
            ns,
            chart="vcluster",
            values=vc_values,
            release=t,
            server=cluster.server,
            create_namespace=False,
            ignore_differences=(VCLUSTER_IGNORE,),
            info=(vc_api,),
        ),
        App(
            "5-objects.yaml",
            "objects",
            "tenant-objects",
            "default",
            manifests=objects,
            component="tenant-objects",
            create_namespace=False,
            sync_options=(SKIP_DRY_RUN,),
        ),
    ]
    if kueue:
        comp = cluster.components["kueue"]
        rows.append(
            App(
                "4-kueue.yaml",
                "kueue",
                "tenant-operators",
                namespace_of(comp),
                chart="kueue",
                values=deep_merge({}, comp.values),
            )
        )
    return rows


def slurm_cluster_values(
    fleet: Fleet, cluster: Cluster, tenant: Tenant, inputs: ClusterInputs, out: Rendered
) -> dict[str, Any]:
    """The ``slurm`` chart values; beside them in ``slurm/`` (``out``) the topology file, for review,
    and the Node topology annotations the apply step sets (with slurm-bridge, in ``slurm-bridge/`` the
    Node name labels it sets)."""
    base = f"{tenant_dir(cluster.name, tenant.name)}/slurm"
    values, annotations = slurm_values(fleet, cluster, tenant, inputs)
    if tenant.bridge:  # the Nodes' slurm-nodename labels, set by the apply step
        names = f"{tenant_dir(cluster.name, tenant.name)}/slurm-bridge/{fence.BRIDGE_NAMES_FILE}"
        out.data[names] = bridge.node_names(tenant.bridge, inputs)
    topo_file = next((f for f in ("topology.conf", "topology.yaml") if f in values["configFiles"]), None)
    if topo_file:
        out.raw[f"{base}/{topo_file}"] = values["configFiles"][topo_file]
    if annotations:
        out.data[f"{base}/node-topology.yaml"] = {"annotation": fence.TOPOLOGY_ANNOTATION, "nodes": annotations}
    return values


def slurm_rows(fleet: Fleet, cluster: Cluster, tenant: Tenant, inputs: ClusterInputs, out: Rendered) -> list[App]:
    """Inside a Slurm tenant's vCluster: cert-manager, then the Slinky CRDs and operator (platform),
    the Slurm cluster (the tenant's own project) and its accounting (render/tenants/accounting.py)."""
    comps = cluster.components
    op_ns = namespace_of(comps["slurm_operator"])
    op_values = slurm_operator_values(fleet, cluster)
    if tenant.health.enabled:
        op_values = deep_merge(health.operator_fragment(), op_values)
    values = slurm_cluster_values(fleet, cluster, tenant, inputs, out)
    autoscaled = any(p.slurm and p.slurm.autoscale for p in fleet.tenant_pools(tenant.name, "slurm"))
    ignore = (*rollout.TEMPLATE_WAVE_IGNORE, *((NODESET_REPLICAS_IGNORE,) if autoscaled else ()))
    return [
        # cert-manager inside the vCluster, before the operator: the Slinky webhook's caBundle is
        # injected by a cainjector that watches the API holding the webhook configurations, i.e. the
        # vCluster's (docs/adr/slinky-webhook-tls.md). It and the Slinky CRDs are kept (deleting the
        # app must not delete the Certificates or every Slurm cluster object), but not past the
        # tenant (keep_app=False: removing the tenant removes the apps, its vCluster goes too).
        App(
            "3-cert-manager.yaml",
            "cert-manager",
            "tenant-certs",
            namespace_of(comps["cert_manager"]),
            chart="cert_manager",
            values=tenant_cert_manager_values(cluster),
            keep=True,
            keep_app=False,
        ),
        App(
            "3-slurm-operator-crds.yaml",
            "slurm-operator-crds",
            "tenant-crds",
            op_ns,
            chart="slurm_operator_crds",
            values={},
            keep=True,
            keep_app=False,
        ),
        App(
            "4-slurm-operator.yaml",
            "slurm-operator",
            "tenant-operators",
            op_ns,
            chart="slurm_operator",
            values=op_values,
        ),
        App(
            "6-slurm.yaml",
            "slurm",
            "tenant-clusters",
            SLURM_NAMESPACE,
            chart="slurm",
            values=values,
            project=tenant.name,
            create_namespace=False,
            sync_options=("RespectIgnoreDifferences=true",),
            ignore_differences=ignore,
        ),
        *accounting.app_rows(cluster, tenant, rollout.gate_image(fleet)),
        *slurm_ready.app_rows(tenant, values, rollout.gate_image(fleet)),
        *(bridge.app_rows(tenant.bridge, values["jwtKey"]["secretRef"]) if tenant.bridge else ()),
    ]


def render_tenant(fleet: Fleet, cluster: Cluster, tenant: Tenant, inputs: ClusterInputs) -> Rendered:
    """The tenant's AppProject and root Application (in the cluster's ``apps/``) and its child apps
    (in ``tenants/<t>/apps/``, synced by that root), one row each (render/apps.py)."""
    out = Rendered()
    t = tenant.name
    base = tenant_dir(cluster.name, t)
    out.apps[f"tenant-{t}-0-project.yaml"] = _with_cluster_blacklist(tenant_project(fleet, cluster, tenant))
    rows = fence_rows(fleet, cluster, tenant, inputs)
    if fleet.tenant_pools(t, "slurm") and cluster.components["slurm_operator"].enabled:
        rows += slurm_rows(fleet, cluster, tenant, inputs, out)
    tapps = emit(fleet, Scope(cluster.name, base, t, vcluster_server(t), tenant=t), rows, out)
    for fname, app in tapps.items():
        out.manifests[f"{base}/apps/{fname}"] = [app]
    out.apps[f"tenant-{t}.yaml"] = argo.tenant_root_app(fleet, cluster.name, t, f"{base}/apps")
    set_storage_quota(fleet, tenant, out, out.values[f"{base}/vcluster/values.yaml"], tapps.values())
    return out


def set_storage_quota(
    fleet: Fleet, tenant: Tenant, out: Rendered, vc_values: dict[str, Any], apps: Any
) -> list[quota.Claim]:
    """``requests.storage`` of the vCluster's host quota from the claims the tenant's rendered apps
    make (render/tenants/quota.py); returns them."""
    claims = quota.rendered_claims(
        apps,
        {argo.repo_path(fleet, k): v for k, v in out.values.items()},
        {argo.repo_path(fleet, k): v for k, v in out.manifests.items()},
        vcluster_namespace(tenant.name),
        vcluster_server(tenant.name),
    )
    # the platform's override, merged into the values already (gpufleet's quota has no requests.storage)
    own = vc_values["policies"]["resourceQuota"]["quota"]
    own[quota.STORAGE_KEY] = quota.storage_quota(tenant, claims, own.get(quota.STORAGE_KEY))
    return claims
