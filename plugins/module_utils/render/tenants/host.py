"""A tenant's side of the host cluster: its namespace (where its vCluster runs), the
CiliumClusterwideNetworkPolicies that isolate it (and admit Prometheus to slurmctld's metrics), what
``expose`` opens from outside, and the files of its ``host`` app.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.model import fence
from ansible_collections.gpufleet.core.plugins.module_utils.model.exposure import LOGIN_PORT
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Cluster, Tenant
from ansible_collections.gpufleet.core.plugins.module_utils.render import argocd as argo
from ansible_collections.gpufleet.core.plugins.module_utils.render.platform import driver_upgrade, monitoring
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants import eviction
from ansible_collections.gpufleet.core.plugins.module_utils.render.values import vcluster_namespace


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


def monitoring_files(cluster: Cluster, tenant: Tenant, slurm: bool) -> dict[str, list[dict[str, Any]]]:
    """The host files the tenant's own monitoring switch adds, whatever it says: the slurmctld
    PodMonitor and the policy admitting Prometheus to it, when the platform's cluster runs the
    Prometheus Operator and the tenant runs Slurm (else none). The host project allows their kinds
    either way, so the switch changes the tenant's folder only (render/tenants/host_project.py)."""
    if not (slurm and cluster.monitoring.prometheus_operator):
        return {}
    files = {"monitoring.yaml": [monitoring.pod_monitor(cluster, tenant)]}
    if cluster.components["cilium"].enabled:
        files["network-policy-metrics.yaml"] = [metrics_policy(cluster, tenant)]
    return files


def host_files(cluster: Cluster, tenant: Tenant, slurm: bool) -> dict[str, list[dict[str, Any]]]:
    """The tenant's host side: its namespace, network isolation and the slurmctld PodMonitor."""
    files = {"namespace.yaml": [host_namespace(cluster, tenant, slurm)]}
    if cluster.components["cilium"].enabled:
        files["network-policy.yaml"] = [isolation_policy(tenant)]
    if tenant.monitoring.enabled:
        files.update(monitoring_files(cluster, tenant, slurm))
    if slurm:  # Slurm pods evicted last (render/tenants/eviction.py)
        ns = vcluster_namespace(tenant.name)
        files["priority.yaml"] = [eviction.priority_class(tenant.name), eviction.no_system_priority(ns)]
        files["disruption.yaml"] = [driver_upgrade.busy_slurmd_budget(ns)]
    return files
