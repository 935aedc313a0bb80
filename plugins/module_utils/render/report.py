"""The short human reports of one cluster (Markdown, deterministic), split by owner so that a tenant's
change renders into the tenant's files only:

- ``clusters/<c>/REPORT.md`` (the platform's): the pools, the fabric, the tenants (links), the
  platform components and the sync waves; no tenant's own settings;
- ``clusters/<c>/tenants/<t>/REPORT.md`` (the tenant's): its vCluster, partitions and queues,
  Slurm services, observability and the Secrets to provision.
"""

from __future__ import annotations

from ansible_collections.gpufleet.core.plugins.module_utils.hostlist import compress
from ansible_collections.gpufleet.core.plugins.module_utils.model.fence import (
    QUARANTINE_CONDITION,
    QUARANTINE_TAINT_KEY,
)
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Cluster, Fleet, Pool, Tenant
from ansible_collections.gpufleet.core.plugins.module_utils.render import argocd as argo
from ansible_collections.gpufleet.core.plugins.module_utils.render.inputs import ClusterInputs
from ansible_collections.gpufleet.core.plugins.module_utils.render.shared_names import (
    COMPONENT_CHART,
    SLURM_HOME_PVC,
    SLURM_NAMESPACE,
    namespace_of,
)
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants import accounting, sssd
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants.health import REASON_PREFIX
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants.rollout import LOGINSET
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants.slurm import JWT_KEY_SECRET, SLURM_KEY_SECRET
from ansible_collections.gpufleet.core.plugins.module_utils.render.values import vcluster_namespace, vcluster_server
from ansible_collections.gpufleet.core.plugins.module_utils.topology.picture import mermaid
from ansible_collections.gpufleet.core.plugins.module_utils.versions import chart

_WHERE = {"slurm_operator": "in each Slurm tenant's vCluster", "kueue": "in each Kubernetes tenant's vCluster"}


def _hosts(names: list[str]) -> str:
    if not names:
        return "-"
    text = compress(names)
    return text if len(text) <= 120 else text[:117] + "..."


def observability_lines(cluster: Cluster, t: Tenant, slurm: bool) -> list[str]:
    """Monitoring and GPU-health state of one tenant (render/platform/monitoring.py, render/tenants/health.py)."""
    m, h = t.monitoring, t.health
    if not m.enabled:
        mon = "off"
    elif slurm:
        where = (
            f"PodMonitor `vc-{t.name}/{t.name}-slurmctld` every {m.scrape_interval}"
            if cluster.monitoring.prometheus_operator
            else "no PodMonitor (cluster has no prometheus-operator CRDs)"
        )
        mon = f"Slurm metrics on ({where}); DCGM job mapping by the Slurm prolog/epilog (`hpc_job` label)"
    else:
        mon = "GPU metrics from dcgm-exporter, labelled `tenant`"
    out = [f"- Monitoring: {mon}."]
    if slurm:
        if h.enabled:
            out.append(
                f"- GPU health: HealthCheckProgram every {h.interval}s on {h.node_state} nodes, checks "
                f"{', '.join(h.checks)} (dcgmi diag -r {h.dcgm_diag_level} on idle nodes); a failure drains the "
                f"node with reason `{REASON_PREFIX}: ...`; Node condition `{QUARANTINE_CONDITION}` drains too."
            )
        else:
            out.append("- GPU health: off (no HealthCheckProgram).")
    taint = f"{QUARANTINE_TAINT_KEY}:NoSchedule"
    out.append(f"- Quarantine taint `{taint}` is tolerated by none of the tenant's workloads.")
    return out


def _head(fleet: Fleet, cluster: Cluster, inputs: ClusterInputs, pools: list[Pool]) -> list[str]:
    """The title, what the tree holds, and the pool table."""
    total_gpus = sum(n.gpus for n in inputs.nodes)
    lines = [
        f"# Cluster `{cluster.name}`: what runs where",
        "",
        f"Rendered by gpufleet from inventory fleet `{fleet.name}`; do not edit, re-render instead.",
        f"Nodes: {len(inputs.nodes)} ({total_gpus} GPUs) in {len(pools)} pools. Root Application:",
        f"`clusters/{cluster.name}/root-app.yaml` (applied once by the bootstrap; it syncs `apps/`: the",
        "platform, and one root Application per tenant, `apps/tenant-<t>.yaml`, syncing `tenants/<t>/apps/`;",
        "an unhealthy tenant never holds back another).",
        "",
        "## Pools",
        "",
        "| pool | kind | tenant | nodes | GPUs | hosts |",
        "| --- | --- | --- | ---: | ---: | --- |",
    ]
    for p in pools:
        members = inputs.members.get(p.name, [])
        lines.append(
            f"| {p.name} | {p.kind} | {p.tenant or '-'} | {len(members)} | {inputs.pool_gpus(p.name)} "
            f"| {_hosts(members)} |"
        )
    return lines


def _fabric(cluster: Cluster, inputs: ClusterInputs, pools: list[Pool]) -> list[str]:
    """The switch tree and the pools on it (a Mermaid picture), when the cluster has a topology."""
    if inputs.topology is None:
        return []
    picture = mermaid(inputs.topology, inputs.pool_of, {p.name: (p.kind, p.tenant) for p in pools})
    if not picture:
        return []
    head = ["", "## Fabric", "", f"The switch tree (`topology/{cluster.topology.plugin}`) and the pools on it.", ""]
    return head + picture


def _pool_lines(fleet: Fleet, inputs: ClusterInputs, t: Tenant) -> list[str]:
    """The tenant's Slurm partitions and Kueue ClusterQueues."""
    lines = []
    for p in sorted(fleet.tenant_pools(t.name, "slurm"), key=lambda p: p.name):
        s = p.slurm
        n = len(inputs.members.get(p.name, []))
        default = ", default" if s and s.default else ""
        max_time = s.max_time if s and s.max_time else "UNLIMITED"
        lines.append(
            f"- Slurm partition `{s.partition if s else p.name}` (NodeSet `{p.name}`{default}): {n} nodes, "
            f"{inputs.pool_gpus(p.name)} GPUs, MaxTime {max_time}" + (", autoscaled" if s and s.autoscale else "") + "."
        )
    for p in sorted(fleet.tenant_pools(t.name, "kubernetes"), key=lambda p: p.name):
        lines.append(
            f"- Kueue ClusterQueue `{p.name}` (flavor `{p.name}`): {len(inputs.members.get(p.name, []))} nodes, "
            f"{inputs.pool_gpus(p.name)} GPUs; LocalQueues in namespaces "
            f"{', '.join(f'`{n}`' for n in (t.namespaces or (t.name,)))}."
        )
    return lines


def _secrets_inside(t: Tenant) -> list[str]:
    """The Secrets of a Slurm tenant provisioned inside its vCluster, out of Git."""
    inside = [
        f"`{SLURM_NAMESPACE}/{s['name']}` (key `{s['key']}`, created once by the apply step through the"
        " vCluster's kubeconfig)"
        for s in (SLURM_KEY_SECRET, JWT_KEY_SECRET)
    ]
    if t.accounting.enabled:
        inside += [
            f"`{SLURM_NAMESPACE}/{s['name']}` (key `{s['key']}`, database password, created once by the"
            " apply step through the vCluster's kubeconfig)"
            for s in accounting.secrets(t.accounting)
        ]
    if t.identity is not None and t.identity.bind_dn:
        inside.append(
            f"`{SLURM_NAMESPACE}/{t.identity.bind_secret}` (key `bind.conf`, directory bind password,"
            " written by the apply step through the vCluster's kubeconfig)"
        )
    return inside


def tenant_section(fleet: Fleet, cluster: Cluster, inputs: ClusterInputs, t: Tenant) -> list[str]:
    """``### <tenant>``: its vCluster, pools, Slurm services, observability and Secrets."""
    slurm = bool(fleet.tenant_pools(t.name, "slurm"))
    lines = [f"### {t.name}", ""]
    if t.description:
        lines += [t.description, ""]
    lines.append(
        f"- vCluster `{t.name}` in host namespace `{vcluster_namespace(t.name)}`; Argo CD destination "
        f"`{vcluster_server(t.name)}`; AppProject `{t.name}`."
    )
    lines += _pool_lines(fleet, inputs, t)
    inside = _secrets_inside(t) if slurm else []
    if slurm:
        login = f"LoginSet `{LOGINSET}`, {t.login_replicas} replica(s)" if t.login_replicas > 0 else "none"
        lines.append(f"- Slurm login nodes: {login}.")
        lines += accounting.report_lines(t)
        lines += sssd.report_lines(t.identity)
        lines.append(f"- Slurm home: PVC `{SLURM_NAMESPACE}/{SLURM_HOME_PVC}` on PV `slurm-home-{t.name}`.")
    lines += observability_lines(cluster, t, slurm)
    host_secret = (
        f"`{argo.ARGOCD_NS}/cluster-{t.name}` (Argo CD cluster Secret, written by the apply step from `vc-{t.name}`)"
    )
    lines.append(
        f"- Secrets provisioned out of Git: on the host {host_secret}"
        + ("; inside the vCluster " + ", ".join(inside) if inside else "")
        + "."
    )
    lines.append(synced_secrets_line(t.name, bool(inside)))
    lines.append("")
    return lines


def synced_secrets_line(tenant: str, slurm: bool) -> str:
    """Where the vCluster syncer puts the Secrets the tenant's pods use, and what guards them there
    (docs/adr/vcluster-secrets.md)."""
    ns = vcluster_namespace(tenant)
    which = "; here the Slurm and JWT keys, the database and directory bind passwords, sssd.conf" if slurm else ""
    return (
        f"- Copied to the host by the vCluster syncer: every Secret a pod inside the vCluster uses (volumes,"
        f" projected volumes, env, envFrom, imagePullSecrets{which}), into `{ns}` as"
        f" `<name>-x-<namespace>-x-{tenant}`. Guarded there by host RBAC on `{ns}` only: readable by the"
        f" vCluster's own ServiceAccount, the kubelets of the nodes running those pods and host"
        f" cluster admins (Argo CD's controller among them); gpufleet gives tenants no host access (their"
        f" AppProject deploys only into their vCluster)."
    )


def platform_section(fleet: Fleet, cluster: Cluster) -> list[str]:
    """The table of the enabled components: chart, version, namespace, what installs them."""
    lines = [
        "## Platform",
        "",
        "| component | chart | version | namespace | installed by |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name in sorted(cluster.components):
        comp = cluster.components[name]
        if not comp.enabled:
            continue
        c = chart(COMPONENT_CHART[name], fleet.versions)
        where = _WHERE.get(name, namespace_of(comp))
        how = "Argo CD" if comp.install_method == "gitops" else "apply (Helm)"
        if name == "argocd" and comp.install_method == "gitops":
            how = "bootstrap (Helm), then Argo CD itself"
        lines.append(f"| {name} | {c['chart']} | {c['version']} | {where} | {how} |")
    return lines


def render_report(fleet: Fleet, cluster: Cluster, inputs: ClusterInputs) -> str:
    """The platform's report of the cluster."""
    pools = [fleet.pools[name] for name in inputs.assignment.pools]  # POOLS.md's order (pools/assignment.py)
    lines = _head(fleet, cluster, inputs, pools) + _fabric(cluster, inputs, pools)
    lines += ["", "## Tenants", ""]
    tenants = sorted(fleet.cluster_tenants(cluster.name), key=lambda t: t.name)
    if not tenants:
        lines.append("No tenants.")
    for t in tenants:
        lines.append(f"- `{t.name}`: [tenants/{t.name}/REPORT.md](tenants/{t.name}/REPORT.md)")
    lines += ["", *platform_section(fleet, cluster)]
    lines += ["", "## Sync waves (cluster root, then inside each tenant root)", ""]
    lines += [f"- {wave}: {n}" for n, wave in sorted(((v, k) for k, v in argo.WAVES.items()))]
    lines.append("")
    return "\n".join(lines)


def render_tenant_report(fleet: Fleet, cluster: Cluster, inputs: ClusterInputs, t: Tenant) -> str:
    """The tenant's own report (``tenants/<t>/REPORT.md``)."""
    lines = [
        f"# Tenant `{t.name}` on cluster `{cluster.name}`",
        "",
        f"Rendered by gpufleet from inventory fleet `{fleet.name}`; do not edit, re-render instead. The nodes"
        " are listed in `POOLS.md` beside this file.",
        "",
    ]
    return "\n".join(lines + tenant_section(fleet, cluster, inputs, t)[2:])
