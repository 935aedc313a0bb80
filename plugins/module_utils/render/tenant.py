"""Per-tenant render: AppProject, host namespace + network isolation, vCluster, and inside the vCluster
the Slinky Slurm stack (CRDs -> operator -> cluster) and/or Kueue queues.

Ownership: everything that *is* the fence (host namespace, CiliumClusterwideNetworkPolicy, the
vCluster, Slinky/Kueue controllers, Kueue flavors and queues, the Slurm-home PVC) is in the
platform project; the tenant's Slurm cluster app is in the tenant's own project, which is what a
tenant may do: deploy into its vCluster only, no quota/policy objects, no host destination (so no
cluster-scoped kinds on the host).

Pitfalls handled (upstream: the Slinky ``slurm`` chart values and Helm's ``lookup``, which returns
nothing under ``helm template`` as Argo CD renders charts):

* ``slurmKey``/``jwtKey``: ``create: false`` + ``secretRef`` (the chart's ``lookup`` does not run
  under Argo CD: each render would mint a new key). The Secrets are provisioned out of Git.
* Slinky operator per tenant inside the vCluster: its cluster-wide ``pods/binding`` webhook only
  sees that vCluster, never host scheduling; ``certManager.enabled: true`` kept (``genCA`` would
  diff on every sync), served by a cert-manager installed inside the vCluster one wave before the
  operator (docs/adr/slinky-webhook-tls.md).
* ``GresTypes`` set explicitly (the v1.2.1 operator does not); NodeSets in ``DaemonSet`` mode
  (one slurmd per pool node, nothing for Argo CD to fight) or, for autoscaled pools,
  ``StatefulSet`` with ``ignoreDifferences`` on ``/spec/replicas``.
* vCluster: ``selector.labels`` + ``enforceTolerations`` fence, the LimitRange off and the quota
  derived from the tenant (render/quota.py), no host Secret sync (docs/adr/vcluster-secrets.md),
  ``exportKubeConfig.server`` and extra SANs so Argo CD reaches ``https://<name>.<namespace>:443``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.model.exposure import LOGIN_PORT
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Cluster, Fleet, Pool, Tenant
from ansible_collections.gpufleet.core.plugins.module_utils.pools import fence
from ansible_collections.gpufleet.core.plugins.module_utils.render import (
    accounting,
    control_plane,
    driver_upgrade,
    eviction,
    health,
    monitoring,
    quota,
    rollout,
    rollout_waves,
    slurm_conf_map,
    slurm_ready,
    sssd,
)
from ansible_collections.gpufleet.core.plugins.module_utils.render import argocd as argo
from ansible_collections.gpufleet.core.plugins.module_utils.render.apps import SKIP_DRY_RUN, App, Rendered, Scope, emit
from ansible_collections.gpufleet.core.plugins.module_utils.render.fabric_labels import kueue_topology as tas_topology
from ansible_collections.gpufleet.core.plugins.module_utils.render.inputs import ClusterInputs
from ansible_collections.gpufleet.core.plugins.module_utils.render.platform import (
    DCGM_JOB_MAPPING_DIR,
    SLURM_HOME_PVC,
    SLURM_NAMESPACE,
    cluster_dir,
    namespace_of,
    system_placement,
    system_pool,
)
from ansible_collections.gpufleet.core.plugins.module_utils.render.storage import state_storage_class
from ansible_collections.gpufleet.core.plugins.module_utils.render.values import (
    deep_merge,
    vcluster_namespace,
    vcluster_server,
)
from ansible_collections.gpufleet.core.plugins.module_utils.topology import render as tr
from ansible_collections.gpufleet.core.plugins.module_utils.versions import chart

SLURM_KEY_SECRET = {"name": "slurm-auth-slurm", "key": "slurm.key"}
JWT_KEY_SECRET = {"name": "slurm-auth-jwt", "key": "jwt.key"}
HOME_VOLUME = "slurm-home"
CGROUP_CONF = (
    "CgroupPlugin=cgroup/v2\nIgnoreSystemd=yes\nConstrainCores=yes\nConstrainDevices=yes\nConstrainRAMSpace=yes\n"
)
GRES_CONF = "AutoDetect=nvidia\n"
# worker SSH (NodeSet ssh.enabled): the slurmd image's PAM stack adopts a login into the user's job
# with pam_slurm_adopt, which needs the job's extern step: PrologFlags=Contain (the operator and the
# chart leave it unset) and job containers from the cgroup proctrack plugin
ADOPT_CONF = {"PrologFlags": ["Contain"], "ProctrackType": "proctrack/cgroup"}
# jobs confined to their cores, memory and GPUs (cgroup.conf Constrain*) and bound to their cores
TASK_PLUGIN = ["task/cgroup", "task/affinity"]
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


def pool_gpus_per_node(inputs: ClusterInputs, pool: str) -> int:
    """GPUs per node of a pool: the smallest count among its nodes (Gres must hold on every node)."""
    by_name = inputs.by_name
    counts = [by_name[n].gpus for n in inputs.members.get(pool, []) if n in by_name]
    return min(counts) if counts else 0


def pool_product(inputs: ClusterInputs, pool: Pool) -> str | None:
    if pool.gpu_product:
        return pool.gpu_product
    by_name = inputs.by_name
    products = Counter(by_name[n].gpu_product for n in inputs.members.get(pool.name, []) if n in by_name)
    products.pop(None, None)
    return products.most_common(1)[0][0] if products else None


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


# ------------------------------------------------------------------ host side


def host_namespace(cluster: Cluster, tenant: Tenant, slurm: bool) -> dict[str, Any]:
    level = "privileged" if slurm else "baseline"  # slurmd needs privileged pods; others do not
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": vcluster_namespace(tenant.name),
            "labels": {
                fence.NAMESPACE_TENANT_LABEL: tenant.name,
                argo.LABEL_CLUSTER: cluster.name,
                "pod-security.kubernetes.io/enforce": level,
            },
        },
    }


def _policy(tenant: Tenant, suffix: str, spec: dict[str, Any]) -> dict[str, Any]:
    """A CiliumClusterwideNetworkPolicy ``tenant-<t>-<suffix>`` of the tenant."""
    return {
        "apiVersion": "cilium.io/v2",
        "kind": "CiliumClusterwideNetworkPolicy",
        "metadata": {"name": f"tenant-{tenant.name}-{suffix}", "labels": {argo.LABEL_TENANT: tenant.name}},
        "spec": spec,
    }


def isolation_policy(tenant: Tenant) -> dict[str, Any]:
    """CiliumClusterwideNetworkPolicy: the tenant's host namespace talks to itself, DNS, the API
    server and the world; Argo CD reaches the vCluster API; other tenants are denied both ways."""
    own = {f"k8s:io.cilium.k8s.namespace.labels.{fence.NAMESPACE_TENANT_LABEL}": tenant.name}
    return _policy(
        tenant,
        "isolation",
        {
            "description": f"isolate tenant {tenant.name} (host namespace {vcluster_namespace(tenant.name)})",
            "endpointSelector": {"matchLabels": own},
            "ingress": [
                {"fromEndpoints": [{"matchLabels": own}]},
                {
                    "fromEndpoints": [{"matchLabels": {"k8s:io.kubernetes.pod.namespace": argo.ARGOCD_NS}}],
                    "toPorts": [{"ports": [{"port": "8443", "protocol": "TCP"}]}],
                },
                {"fromEntities": ["host"]},
                *exposure_rules(tenant),
            ],
            "egress": [
                {"toEndpoints": [{"matchLabels": own}]},
                {
                    "toEndpoints": [
                        {"matchLabels": {"k8s:io.kubernetes.pod.namespace": "kube-system", "k8s:k8s-app": "kube-dns"}}
                    ],
                    "toPorts": [{"ports": [{"port": "53", "protocol": "ANY"}]}],
                },
                {"toEntities": ["kube-apiserver", "world"]},
            ],
        },
    )


def metrics_policy(cluster: Cluster, tenant: Tenant) -> dict[str, Any]:
    """CiliumClusterwideNetworkPolicy admitting the monitoring namespace's Prometheus to the tenant's
    slurmctld metrics port only (what the slurmctld PodMonitor scrapes); every other ingress from
    there stays denied by the isolation policy. Prometheus pods carry the prometheus-operator's
    ``app.kubernetes.io/name: prometheus``; slurmctld pods the slurm chart's
    ``app.kubernetes.io/name: slurmctld`` (synced to the host by vCluster with their labels)."""
    own = {f"k8s:io.cilium.k8s.namespace.labels.{fence.NAMESPACE_TENANT_LABEL}": tenant.name}
    return _policy(
        tenant,
        "metrics",
        {
            "description": f"Prometheus ({cluster.monitoring.namespace}) scrapes tenant {tenant.name}'s slurmctld",
            "endpointSelector": {"matchLabels": {**own, f"k8s:{monitoring.SLURMCTLD_LABEL}": "slurmctld"}},
            "ingress": [
                {
                    "fromEndpoints": [
                        {
                            "matchLabels": {
                                "k8s:io.kubernetes.pod.namespace": cluster.monitoring.namespace,
                                "k8s:app.kubernetes.io/name": "prometheus",
                            }
                        }
                    ],
                    "toPorts": [{"ports": [{"port": str(monitoring.SLURMCTLD_METRICS_PORT), "protocol": "TCP"}]}],
                }
            ],
        },
    )


def exposure_rules(tenant: Tenant) -> list[dict[str, Any]]:
    """Ingress from outside the cluster that ``expose`` opens: only from ``from_cidrs``, only to the
    login port (Slurm login pods) and the declared inference ports. Nothing by default."""
    e = tenant.expose
    ports = ([LOGIN_PORT] if e.login_lb else []) + list(e.inference)
    if not ports:
        return []
    return [
        {
            "fromCIDRSet": [{"cidr": c} for c in e.from_cidrs],
            "toPorts": [{"ports": [{"port": str(p), "protocol": "TCP"} for p in ports]}],
        }
    ]


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
    if any(p.kind == "slurm" for p in pools):
        ours = deep_merge(ours, eviction.vcluster_fragment(tenant.name))
    sts: dict[str, Any] = {}
    sel = system_placement(fleet, cluster.name)
    if sel:
        sts["scheduling"] = {"nodeSelector": sel}
    sc = state_storage_class(cluster)
    if sc:  # the backing store on a local/block class (render/storage.py); else the default class
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


# ------------------------------------------------------------------ Slurm inside the vCluster


def _topology_conf(cluster: Cluster, sub: Any) -> tuple[str, str] | None:
    """(file name, text) of the tenant's topology (``sub``: the cluster topology restricted to the
    tenant's Slurm nodes), rendered as the slurm_topology module renders it."""
    if sub is None:
        return None
    plugin = cluster.topology.plugin
    if plugin not in tr.TOPOLOGY_FILE or not (sub.blocks if plugin == "block" else sub.node_group):
        return None
    return tr.TOPOLOGY_FILE[plugin], tr.render(sub, plugin, block_sizes=list(cluster.topology.block_sizes) or None)


def topology_annotations(sub: Any, plugin: str) -> dict[str, str]:
    """Node annotation ``topology.slinky.slurm.net/spec`` values (the apply step sets them)."""
    if sub is None:
        return {}
    return tr.slinky_spec_for(sub, plugin)


def nodeset(pool: Pool, inputs: ClusterInputs) -> dict[str, Any]:
    gpus = pool_gpus_per_node(inputs, pool.name)
    product = pool_product(inputs, pool)
    n_nodes = len(inputs.members.get(pool.name, []))
    features = [pool.name]
    if product:
        features.append(product.lower().replace("_", "-"))
    conf: dict[str, Any] = {"Features": features}
    slurmd: dict[str, Any] = {"volumeMounts": [{"name": HOME_VOLUME, "mountPath": "/home"}]}
    if gpus:
        conf["Gres"] = [f"gpu:{gpus}"]
        slurmd["resources"] = {"limits": {fence.GPU_RESOURCE: gpus}}
    memory = eviction.slurmd_memory_request([inputs.by_name[n].memory_bytes for n in inputs.members.get(pool.name, [])])
    if memory:
        slurmd.setdefault("resources", {})["requests"] = {"memory": memory}
    ns: dict[str, Any] = {
        "enabled": True,
        "slurmd": slurmd,
        "extraConfMap": conf,
        "partition": {"enabled": False},
    }
    autoscale = bool(pool.slurm and pool.slurm.autoscale)
    if autoscale:
        ns["scalingMode"] = "StatefulSet"
        ns["replicas"] = n_nodes
    else:
        ns["scalingMode"] = "DaemonSet"  # one slurmd per node of the pool: the pool is the NodeSet
    frag = fence.slinky_nodeset_fragment(pool)
    pod = dict(frag["podSpec"])
    pod["nodeSelector"] = {"kubernetes.io/os": "linux", **pod["nodeSelector"]}
    pod["volumes"] = [{"name": HOME_VOLUME, "persistentVolumeClaim": {"claimName": SLURM_HOME_PVC}}]
    ns["podSpec"] = pod
    return ns


def slurm_values(fleet: Fleet, cluster: Cluster, tenant: Tenant, inputs: ClusterInputs) -> tuple[dict, dict]:
    """(values, annotations): the ``slurm`` chart values and per-node topology annotations."""
    pools = sorted(fleet.tenant_pools(tenant.name, "slurm"), key=lambda p: p.name)
    nodesets = {p.name: nodeset(p, inputs) for p in pools}
    partitions: dict[str, Any] = {}
    default_seen = False
    for p in sorted(pools, key=lambda p: p.slurm.partition if p.slurm else p.name):
        s = p.slurm
        part = s.partition if s else p.name
        cfg: dict[str, Any] = {"State": "UP"}
        if s and s.default and not default_seen:
            cfg["Default"] = "YES"
            default_seen = True
        cfg["MaxTime"] = s.max_time if s and s.max_time else "UNLIMITED"
        if s and s.allow_groups:
            cfg["AllowGroups"] = list(s.allow_groups)
        if s and s.allow_accounts:
            cfg["AllowAccounts"] = list(s.allow_accounts)
        partitions[part] = {"enabled": True, "nodesets": [p.name], "configMap": cfg}
    slurm_nodes = sorted({n for p in pools for n in inputs.members.get(p.name, [])})
    conf_map: dict[str, Any] = {"GresTypes": ["gpu"], "TaskPlugin": list(TASK_PLUGIN), **ADOPT_CONF}
    config_files: dict[str, str] = {"gres.conf": GRES_CONF, "cgroup.conf": CGROUP_CONF}
    sub = inputs.topology_view(slurm_nodes) if slurm_nodes else None
    topo = _topology_conf(cluster, sub)
    plugin = cluster.topology.plugin
    if topo:
        config_files[topo[0]] = topo[1]
        if plugin in ("tree", "block"):
            conf_map["TopologyPlugin"] = f"topology/{plugin}"
    acct = tenant.accounting
    if acct.enabled:
        conf_map.update(accounting.slurm_conf(acct))
    values: dict[str, Any] = {
        "clusterName": accounting.slurm_cluster_name(tenant),
        "slurmKey": {"create": False, "secretRef": dict(SLURM_KEY_SECRET)},
        "jwtKey": {"create": False, "secretRef": dict(JWT_KEY_SECRET)},
        "configFiles": config_files,
        "controller": {"extraConfMap": conf_map},
        "nodesets": nodesets,
        "partitions": {"all": {"enabled": False}, **partitions},
        "accounting": accounting.chart_values(acct) if acct.enabled else {"enabled": False},
        "vendor": {"nvidia": {"dcgm": {"enabled": True, "jobMappingDir": DCGM_JOB_MAPPING_DIR}}},
    }
    sc = state_storage_class(cluster)
    if sc:  # slurmctld's state save on the databases' class (render/storage.py); null: the default
        values["controller"]["persistence"] = {"storageClassName": sc}
    if tenant.login_replicas > 0:
        values["loginsets"] = {
            "main": {
                "enabled": True,
                "replicas": tenant.login_replicas,
                "login": {"volumeMounts": [{"name": HOME_VOLUME, "mountPath": "/home"}]},
                "podSpec": {"volumes": [{"name": HOME_VOLUME, "persistentVolumeClaim": {"claimName": SLURM_HOME_PVC}}]},
                "service": {"spec": login_service_spec(tenant)},
            }
        }
    ann = topology_annotations(sub, plugin)
    if tenant.identity is not None:
        sssd.add_to_values(tenant.name, tenant.identity, values)
    values = deep_merge(observe(tenant, values), eviction.slurm_fragment(tenant.name))
    values = deep_merge(values, rollout.slurm_fragment(fleet, tenant, values, inputs))
    given = deep_merge(tenant.slurm_values, cluster.tenant_override(tenant.name, "slurm"))
    values = slurm_conf_map.as_words(deep_merge(values, given), f"tenant {tenant.name} slurm values")
    rollout_waves.check(fleet, tenant, values, inputs)
    return values, ann


def observe(tenant: Tenant, values: dict[str, Any]) -> dict[str, Any]:
    """Monitoring (metrics, DCGM job mapping prolog/epilog) and GPU health check of a tenant's
    ``slurm`` values: see render/monitoring.py and render/health.py."""
    values = deep_merge(values, monitoring.slurm_fragment(tenant))
    if tenant.health.enabled:
        values["controller"]["extraConfMap"].update(health.slurm_conf(tenant.health))
    for ns in values["nodesets"].values():
        if tenant.monitoring.enabled:
            monitoring.add_to_nodeset(ns)
        if tenant.health.enabled:
            health.add_to_nodeset(ns)
    return values


def login_service_spec(tenant: Tenant) -> dict[str, Any]:
    """The login Service: the chart default is ``LoadBalancer`` open to all; gpufleet keeps it
    in-cluster unless ``expose.login`` asks for a LoadBalancer, then only from ``from_cidrs`` (with
    the client address kept, so the network policy can match it)."""
    e = tenant.expose
    if not e.login_lb:
        return {"type": "ClusterIP"}
    return {
        "type": "LoadBalancer",
        "loadBalancerSourceRanges": list(e.from_cidrs),
        "externalTrafficPolicy": "Local",
    }


def tenant_cert_manager_values(cluster: Cluster) -> dict[str, Any]:
    """cert-manager inside a Slurm tenant's vCluster: CRDs kept on uninstall; the cluster's
    ``cert_manager.values`` apply here too."""
    ours: dict[str, Any] = {"crds": {"enabled": True, "keep": True}}
    return deep_merge(ours, cluster.components["cert_manager"].values)


def slurm_operator_values(fleet: Fleet, cluster: Cluster) -> dict[str, Any]:
    comp = cluster.components["slurm_operator"]
    ours = {"crds": {"enabled": False}, "certManager": {"enabled": True}}
    return deep_merge(ours, comp.values)


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


# ------------------------------------------------------------------ one tenant


def host_files(cluster: Cluster, tenant: Tenant, slurm: bool) -> dict[str, list[dict[str, Any]]]:
    """The tenant's host side: its namespace, network isolation and the slurmctld PodMonitor."""
    files = {"namespace.yaml": [host_namespace(cluster, tenant, slurm)]}
    scraped = slurm and tenant.monitoring.enabled and cluster.monitoring.prometheus_operator
    if cluster.components["cilium"].enabled:
        files["network-policy.yaml"] = [isolation_policy(tenant)]
        if scraped:
            files["network-policy-metrics.yaml"] = [metrics_policy(cluster, tenant)]
    if scraped:
        files["monitoring.yaml"] = [monitoring.pod_monitor(cluster, tenant)]
    if slurm:  # Slurm pods evicted last (render/eviction.py)
        ns = vcluster_namespace(tenant.name)
        files["priority.yaml"] = [eviction.priority_class(tenant.name), eviction.no_system_priority(ns)]
        files["disruption.yaml"] = [driver_upgrade.busy_slurmd_budget(ns)]
    return files


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


def fence_rows(fleet: Fleet, cluster: Cluster, tenant: Tenant, inputs: ClusterInputs) -> list[App]:
    """The platform's apps of every tenant: host side, the vCluster, the objects inside it, Kueue."""
    t, ns = tenant.name, vcluster_namespace(tenant.name)
    slurm = bool(fleet.tenant_pools(t, "slurm"))
    kube = bool(fleet.tenant_pools(t, "kubernetes"))
    kueue = kube and cluster.components["kueue"].enabled
    objects = {"objects.yaml": vcluster_objects(fleet, cluster, tenant, inputs, kube, kueue)}
    vc_api = {"name": "vCluster API (Argo CD destination)", "value": vcluster_server(t)}
    rows = [
        App(
            "1-host.yaml",
            "host",
            "tenant-host",
            ns,
            manifests=host_files(cluster, tenant, slurm),
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
            values=vcluster_values(fleet, cluster, tenant, inputs),
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
    and the Node topology annotations the apply step sets."""
    base = f"{tenant_dir(cluster.name, tenant.name)}/slurm"
    values, annotations = slurm_values(fleet, cluster, tenant, inputs)
    topo_file = next((f for f in ("topology.conf", "topology.yaml") if f in values["configFiles"]), None)
    if topo_file:
        out.raw[f"{base}/{topo_file}"] = values["configFiles"][topo_file]
    if annotations:
        out.data[f"{base}/node-topology.yaml"] = {"annotation": fence.TOPOLOGY_ANNOTATION, "nodes": annotations}
    return values


def slurm_rows(fleet: Fleet, cluster: Cluster, tenant: Tenant, inputs: ClusterInputs, out: Rendered) -> list[App]:
    """Inside a Slurm tenant's vCluster: cert-manager, then the Slinky CRDs and operator (platform),
    the Slurm cluster (the tenant's own project) and its accounting (render/accounting.py)."""
    comps = cluster.components
    op_ns = namespace_of(comps["slurm_operator"])
    op_values = slurm_operator_values(fleet, cluster)
    if tenant.health.enabled:
        op_values = deep_merge(health.operator_fragment(), op_values)
    values = slurm_cluster_values(fleet, cluster, tenant, inputs, out)
    autoscaled = any(p.slurm and p.slurm.autoscale for p in fleet.tenant_pools(tenant.name, "slurm"))
    ignore = (NODESET_REPLICAS_IGNORE,) if autoscaled else ()
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
            sync_options=("RespectIgnoreDifferences=true",) if ignore else (),
            ignore_differences=ignore,
        ),
        *accounting.app_rows(cluster, tenant),
        *slurm_ready.app_rows(tenant, values),
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
    make (render/quota.py); returns them."""
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
