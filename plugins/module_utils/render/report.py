"""The short human report of one cluster: what runs where, per tenant (Markdown, deterministic)."""

from __future__ import annotations

from ansible_collections.gpufleet.core.plugins.module_utils.hostlist import compress
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Cluster, Fleet, Tenant
from ansible_collections.gpufleet.core.plugins.module_utils.pools.fence import (
    QUARANTINE_CONDITION,
    QUARANTINE_TAINT_KEY,
)
from ansible_collections.gpufleet.core.plugins.module_utils.render import accounting, sssd
from ansible_collections.gpufleet.core.plugins.module_utils.render import argocd as argo
from ansible_collections.gpufleet.core.plugins.module_utils.render.health import REASON_PREFIX
from ansible_collections.gpufleet.core.plugins.module_utils.render.inputs import ClusterInputs
from ansible_collections.gpufleet.core.plugins.module_utils.render.platform import (
    SLURM_HOME_PVC,
    SLURM_NAMESPACE,
    namespace_of,
)
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenant import JWT_KEY_SECRET, SLURM_KEY_SECRET
from ansible_collections.gpufleet.core.plugins.module_utils.render.values import vcluster_namespace, vcluster_server
from ansible_collections.gpufleet.core.plugins.module_utils.topology.picture import mermaid
from ansible_collections.gpufleet.core.plugins.module_utils.versions import chart

_CHART_OF = {
    "cilium": "cilium",
    "cert_manager": "cert_manager",
    "gpu_operator": "gpu_operator",
    "shared_storage": "csi_driver_nfs",
    "slurm_operator": "slurm_operator",
    "kueue": "kueue",
    "argocd": "argocd",
}
_WHERE = {"slurm_operator": "in each Slurm tenant's vCluster", "kueue": "in each Kubernetes tenant's vCluster"}


def _hosts(names: list[str]) -> str:
    if not names:
        return "-"
    text = compress(names)
    return text if len(text) <= 120 else text[:117] + "..."


def observability_lines(cluster: Cluster, t: Tenant, slurm: bool) -> list[str]:
    """Monitoring and GPU-health state of one tenant (render/monitoring.py, render/health.py)."""
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


def render_report(fleet: Fleet, cluster: Cluster, inputs: ClusterInputs) -> str:
    pools = sorted(fleet.cluster_pools(cluster.name), key=lambda p: (p.kind, p.name))
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
    if inputs.topology is not None:
        picture = mermaid(
            inputs.topology,
            inputs.pool_of,
            {p.name: (p.kind, p.tenant) for p in pools},
        )
        if picture:
            lines += [
                "",
                "## Fabric",
                "",
                f"The switch tree (`topology/{cluster.topology.plugin}`) and the pools on it.",
                "",
            ]
            lines += picture
    lines += ["", "## Tenants", ""]
    tenants = sorted(fleet.cluster_tenants(cluster.name), key=lambda t: t.name)
    if not tenants:
        lines.append("No tenants.")
    for t in tenants:
        slurm = sorted(fleet.tenant_pools(t.name, "slurm"), key=lambda p: p.name)
        kube = sorted(fleet.tenant_pools(t.name, "kubernetes"), key=lambda p: p.name)
        lines += [f"### {t.name}", ""]
        if t.description:
            lines += [t.description, ""]
        lines.append(
            f"- vCluster `{t.name}` in host namespace `{vcluster_namespace(t.name)}`; Argo CD destination "
            f"`{vcluster_server(t.name)}`; AppProject `{t.name}`."
        )
        for p in slurm:
            s = p.slurm
            n = len(inputs.members.get(p.name, []))
            default = ", default" if s and s.default else ""
            max_time = s.max_time if s and s.max_time else "UNLIMITED"
            lines.append(
                f"- Slurm partition `{s.partition if s else p.name}` (NodeSet `{p.name}`{default}): {n} nodes, "
                f"{inputs.pool_gpus(p.name)} GPUs, MaxTime {max_time}"
                + (", autoscaled" if s and s.autoscale else "")
                + "."
            )
        for p in kube:
            lines.append(
                f"- Kueue ClusterQueue `{p.name}` (flavor `{p.name}`): {len(inputs.members.get(p.name, []))} nodes, "
                f"{inputs.pool_gpus(p.name)} GPUs; LocalQueues in namespaces "
                f"{', '.join(f'`{n}`' for n in (t.namespaces or (t.name,)))}."
            )
        host_secret = (
            f"`{argo.ARGOCD_NS}/cluster-{t.name}` (Argo CD cluster Secret, written by the apply step from "
            f"`vc-{t.name}`)"
        )
        inside: list[str] = []
        if slurm:
            inside += [
                f"`{SLURM_NAMESPACE}/{s['name']}` (key `{s['key']}`, created once by the apply step through the"
                " vCluster's kubeconfig; never on the host)"
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
            lines += accounting.report_lines(t)
            lines += sssd.report_lines(t.identity)
            lines.append(f"- Slurm home: PVC `{SLURM_NAMESPACE}/{SLURM_HOME_PVC}` on PV `slurm-home-{t.name}`.")
        lines += observability_lines(cluster, t, bool(slurm))
        lines.append(
            f"- Secrets provisioned out of Git: on the host {host_secret}"
            + ("; inside the vCluster " + ", ".join(inside) if inside else "")
            + "."
        )
        lines.append("")
    lines += [
        "## Platform",
        "",
        "| component | chart | version | namespace | installed by |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name in sorted(cluster.components):
        comp = cluster.components[name]
        if not comp.enabled:
            continue
        c = chart(_CHART_OF[name], fleet.versions)
        ns = namespace_of(comp)
        where = _WHERE.get(name, ns)
        how = "Argo CD" if comp.install_method == "gitops" else "apply (Helm)"
        if name == "argocd" and comp.install_method == "gitops":
            how = "bootstrap (Helm), then Argo CD itself"
        lines.append(f"| {name} | {c['chart']} | {c['version']} | {where} | {how} |")
    lines += ["", "## Sync waves (cluster root, then inside each tenant root)", ""]
    lines += [f"- {wave}: {n}" for n, wave in sorted(((v, k) for k, v in argo.WAVES.items()))]
    lines.append("")
    return "\n".join(lines)
