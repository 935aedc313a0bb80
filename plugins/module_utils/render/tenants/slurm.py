"""A Slurm tenant's ``slurm`` chart values: the Slinky Slurm cluster inside its vCluster (NodeSets per
pool, partitions, topology, login, monitoring and health hooks), and the values of the cert-manager and
Slinky operator installed there beside it (rows in render/tenants/tenant.py).

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
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.model import fence
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Cluster, Fleet, Pool, Tenant
from ansible_collections.gpufleet.core.plugins.module_utils.render.inputs import ClusterInputs
from ansible_collections.gpufleet.core.plugins.module_utils.render.platform import monitoring
from ansible_collections.gpufleet.core.plugins.module_utils.render.platform.storage import state_storage_class
from ansible_collections.gpufleet.core.plugins.module_utils.render.shared_names import (
    DCGM_JOB_MAPPING_DIR,
    SLURM_HOME_PVC,
)
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants import (
    accounting,
    bridge,
    eviction,
    health,
    rollout,
    rollout_waves,
    slurm_conf_map,
    sssd,
)
from ansible_collections.gpufleet.core.plugins.module_utils.render.values import deep_merge
from ansible_collections.gpufleet.core.plugins.module_utils.topology import render as tr

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
    if sc:  # slurmctld's state save on the databases' class (render/platform/storage.py); null: the default
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
    values = bridge.with_slurm(values, tenant.bridge)
    given = deep_merge(tenant.slurm_values, cluster.tenant_override(tenant.name, "slurm"))
    values = slurm_conf_map.as_words(deep_merge(values, given), f"tenant {tenant.name} slurm values")
    rollout_waves.check(fleet, tenant, values, inputs)
    return values, ann


def observe(tenant: Tenant, values: dict[str, Any]) -> dict[str, Any]:
    """Monitoring (metrics, DCGM job mapping prolog/epilog) and GPU health check of a tenant's
    ``slurm`` values: see render/platform/monitoring.py and render/tenants/health.py."""
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
