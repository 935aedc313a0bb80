"""Observability of the fleet: Slurm metrics, DCGM job mapping, PodMonitors, the Grafana dashboard.

* Slurm metrics: the ``slurm`` chart's ``controller.metrics.enabled`` (slurmctld's OpenMetrics
  endpoints ``/metrics/{jobs,nodes,partitions,scheduler}``). The chart's own ServiceMonitor stays
  off: it would be created inside the vCluster, where no Prometheus and no CRD exist. Prometheus
  runs on the host, so the monitor is a host-side PodMonitor in ``vc-<tenant>`` selecting the
  slurmctld pod vCluster syncs there, labelled ``tenant=<name>`` (rendered only when the cluster
  declares the prometheus-operator CRDs: ``monitoring.prometheus_operator``).
* DCGM HPC job mapping: the GPU Operator's dcgm-exporter reads ``<dir>/<GPU index>`` files holding
  the ids of the jobs on that GPU and adds the ``hpc_job`` label. gpufleet's Slurm prolog writes
  them (``SLURM_JOB_GPUS``), its epilog removes the job again; the directory is a hostPath shared
  by the slurmd pod and dcgm-exporter. The chart's ``vendor.nvidia.dcgm`` scripts are replaced by
  these (same directory) so that the scripts that run are the ones the tests run under slurmd.
* dcgm-exporter's metrics get a ``tenant`` label from the tenant label of the node they come from
  (``model.fence.TENANT_KEY``, which the apply step sets and kubelets cannot), so "GPUs per tenant"
  needs no join and the rendered monitor names no node and no tenant: resizing or adding a tenant's
  pool changes none of the platform's files. The GPU Operator's own ServiceMonitor cannot attach node
  metadata (its ClusterPolicy has no ``attachMetadata``), so it is off and gpufleet renders one
  (``attachMetadata.node``, a single relabeling) beside the dashboard.
* Grafana: one dashboard for the fleet as a ConfigMap with the sidecar label, in the cluster's
  ``monitoring.namespace``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.model.fence import QUARANTINE_TAINT_KEY, TENANT_KEY
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Cluster, Fleet, Tenant
from ansible_collections.gpufleet.core.plugins.module_utils.render import argocd as argo
from ansible_collections.gpufleet.core.plugins.module_utils.render.apps import App, Rendered, emit
from ansible_collections.gpufleet.core.plugins.module_utils.render.inputs import ClusterInputs
from ansible_collections.gpufleet.core.plugins.module_utils.render.platform.cluster import platform_scope
from ansible_collections.gpufleet.core.plugins.module_utils.render.shared_names import (
    DCGM_JOB_MAPPING_DIR,
    namespace_of,
)
from ansible_collections.gpufleet.core.plugins.module_utils.render.values import vcluster_namespace

MONITORING_API = "monitoring.coreos.com/v1"
JOB_MAPPING_SCRIPT = "90-gpufleet-dcgm-job-mapping.sh"
JOB_MAPPING_VOLUME = "dcgm-job-mapping"
SLURM_METRICS_PATHS = ("/metrics/jobs", "/metrics/nodes", "/metrics/partitions", "/metrics/scheduler")
SLURMCTLD_PORT = "slurmctld"  # the slurm chart's named container port of slurmctld ...
SLURMCTLD_METRICS_PORT = 6817  # ... its number: slurmctld serves /metrics/* on its own port
SLURMCTLD_LABEL = "app.kubernetes.io/name"  # = "slurmctld" on the slurm chart's controller pods
DASHBOARD_UID = "gpufleet-fleet"

PROLOG = r"""#!/bin/bash
# gpufleet: DCGM HPC job mapping, prolog. dcgm-exporter labels the metrics of GPU <i> with the job
# ids listed in $DIR/<i> (one per line). Rendered by gpufleet; do not edit, re-render.
set -u
DIR="${DCGM_HPC_JOB_MAPPING_DIR:-@DIR@}"
GPUS="${SLURM_JOB_GPUS:-${CUDA_VISIBLE_DEVICES:-}}"
[ -n "${SLURM_JOB_ID:-}" ] && [ -n "$GPUS" ] || exit 0
mkdir -p "$DIR" || exit 0
exec 9<"$DIR" && flock 9
for gpu in ${GPUS//,/ }; do
  case "$gpu" in '' | *[!0-9]*) continue ;; esac
  grep -qxF "$SLURM_JOB_ID" "$DIR/$gpu" 2>/dev/null || echo "$SLURM_JOB_ID" >>"$DIR/$gpu"
done
exit 0
"""

EPILOG = r"""#!/bin/bash
# gpufleet: DCGM HPC job mapping, epilog: remove this job from every GPU file, delete empty files.
# Rendered by gpufleet; do not edit, re-render.
set -u
DIR="${DCGM_HPC_JOB_MAPPING_DIR:-@DIR@}"
[ -n "${SLURM_JOB_ID:-}" ] && [ -d "$DIR" ] || exit 0
exec 9<"$DIR" && flock 9
for f in "$DIR"/*; do
  [ -f "$f" ] && grep -qxF "$SLURM_JOB_ID" "$f" || continue
  rest=$(grep -vxF "$SLURM_JOB_ID" "$f")
  if [ -z "$rest" ]; then rm -f "$f"; else printf '%s\n' "$rest" >"$f"; fi
done
exit 0
"""


def prolog_script() -> str:
    return PROLOG.replace("@DIR@", DCGM_JOB_MAPPING_DIR)


def epilog_script() -> str:
    return EPILOG.replace("@DIR@", DCGM_JOB_MAPPING_DIR)


def slurm_fragment(tenant: Tenant) -> dict[str, Any]:
    """``slurm`` chart values of a tenant with monitoring on (only keys of the chart's values)."""
    if not tenant.monitoring.enabled:
        return {}
    return {
        "controller": {"metrics": {"enabled": True, "serviceMonitor": {"enabled": False}}},
        "prologScripts": {JOB_MAPPING_SCRIPT: prolog_script()},
        "epilogScripts": {JOB_MAPPING_SCRIPT: epilog_script()},
        "vendor": {"nvidia": {"dcgm": {"enabled": False, "jobMappingDir": DCGM_JOB_MAPPING_DIR}}},
    }


def add_to_nodeset(ns: dict[str, Any]) -> None:
    """Mount the host's job-mapping directory into a NodeSet's slurmd (in place)."""
    ns["slurmd"].setdefault("volumeMounts", []).append({"name": JOB_MAPPING_VOLUME, "mountPath": DCGM_JOB_MAPPING_DIR})
    ns["podSpec"].setdefault("volumes", []).append(
        {"name": JOB_MAPPING_VOLUME, "hostPath": {"path": DCGM_JOB_MAPPING_DIR, "type": "DirectoryOrCreate"}}
    )


def pod_monitor(cluster: Cluster, tenant: Tenant) -> dict[str, Any]:
    """Host-side PodMonitor of a tenant's slurmctld (synced by vCluster into ``vc-<tenant>``)."""
    ns = vcluster_namespace(tenant.name)
    relabel = [{"action": "replace", "targetLabel": "tenant", "replacement": tenant.name}]
    return {
        "apiVersion": MONITORING_API,
        "kind": "PodMonitor",
        "metadata": {
            "name": f"{tenant.name}-slurmctld",
            "namespace": ns,
            "labels": {**cluster.monitoring.labels, argo.LABEL_TENANT: tenant.name},
        },
        "spec": {
            "namespaceSelector": {"matchNames": [ns]},
            "selector": {"matchLabels": {SLURMCTLD_LABEL: "slurmctld", "vcluster.loft.sh/namespace": "slurm"}},
            "podMetricsEndpoints": [
                {
                    "port": SLURMCTLD_PORT,
                    "path": path,
                    "interval": tenant.monitoring.scrape_interval,
                    "relabelings": relabel,
                }
                for path in SLURM_METRICS_PATHS
            ],
        },
    }


DCGM_SERVICE_LABELS = {"app": "nvidia-dcgm-exporter"}  # the GPU Operator's dcgm-exporter Service ...
DCGM_PORT = "gpu-metrics"  # ... and its named port
# Prometheus' name for a node label of a target (attachMetadata.node): every character that is not
# [a-zA-Z0-9_] becomes "_"
NODE_TENANT_LABEL = "__meta_kubernetes_node_label_" + re.sub(r"[^a-zA-Z0-9_]", "_", TENANT_KEY)


def dcgm_fragment(cluster: Cluster) -> dict[str, Any]:
    """GPU Operator values: its own dcgm-exporter ServiceMonitor off where gpufleet renders one."""
    if not cluster.monitoring.prometheus_operator:
        return {}
    return {"dcgmExporter": {"serviceMonitor": {"enabled": False}}}


def dcgm_service_monitor(cluster: Cluster) -> dict[str, Any]:
    """The dcgm-exporter ServiceMonitor: the ``tenant`` label from the scraped node's tenant label."""
    mon = cluster.monitoring
    relabel = {"sourceLabels": [NODE_TENANT_LABEL], "regex": "(.+)", "targetLabel": "tenant", "action": "replace"}
    return {
        "apiVersion": MONITORING_API,
        "kind": "ServiceMonitor",
        "metadata": {
            "name": "gpufleet-dcgm-exporter",
            "namespace": mon.namespace,
            "labels": {**dict(mon.labels), argo.LABEL_CLUSTER: cluster.name},
        },
        "spec": {
            "attachMetadata": {"node": True},
            "namespaceSelector": {"matchNames": [namespace_of(cluster.components["gpu_operator"])]},
            "selector": {"matchLabels": dict(DCGM_SERVICE_LABELS)},
            "endpoints": [{"port": DCGM_PORT, "interval": "15s", "relabelings": [relabel]}],
        },
    }


# ------------------------------------------------------------------ Grafana


def _panel(pid: int, title: str, kind: str, grid: tuple[int, int, int, int], **kw: Any) -> dict[str, Any]:
    x, y, w, h = grid
    return {"id": pid, "title": title, "type": kind, "gridPos": {"x": x, "y": y, "w": w, "h": h}, **kw}


def _target(expr: str, legend: str = "", instant: bool = False, ref: str = "A") -> dict[str, Any]:
    t: dict[str, Any] = {"refId": ref, "expr": expr, "datasource": {"type": "prometheus", "uid": "${datasource}"}}
    if legend:
        t["legendFormat"] = legend
    if instant:
        t["instant"] = True
        t["format"] = "table"
    return t


_GPUS = 'count by (tenant) (DCGM_FI_DEV_GPU_UTIL{tenant=~"$tenant"})'
_GPU_UTIL = 'avg by (tenant) (DCGM_FI_DEV_GPU_UTIL{tenant=~"$tenant"})'
_JOB_GPUS = 'max by (tenant, hpc_job, Hostname, gpu) (DCGM_FI_DEV_GPU_UTIL{hpc_job!="", tenant=~"$tenant"})'
_RUNNING = 'sum by (tenant, partition) (slurm_partition_jobs_running{tenant=~"$tenant"})'
_PENDING = 'sum by (tenant, partition) (slurm_partition_jobs_pending{tenant=~"$tenant"})'
_QUARANTINED = f'kube_node_spec_taint{{key="{QUARANTINE_TAINT_KEY}"}}'
_PER_PARTITION = "{{tenant}}/{{partition}}"
# The dashboard's query panels, after the pool table: title, panel type, grid position (x, y, w, h)
# and its queries (PromQL, legend); a table panel's queries are instant ones.
PANELS: tuple[tuple[str, str, tuple[int, int, int, int], tuple[tuple[str, str], ...]], ...] = (
    ("GPUs per tenant", "stat", (12, 0, 12, 8), ((_GPUS, "{{tenant}}"),)),
    ("GPU utilisation per tenant (%)", "timeseries", (0, 8, 12, 8), ((_GPU_UTIL, "{{tenant}}"),)),
    ("Job -> GPU (DCGM HPC job mapping)", "table", (12, 8, 12, 8), ((_JOB_GPUS, ""),)),
    (
        "Slurm jobs per partition",
        "timeseries",
        (0, 16, 12, 8),
        ((_RUNNING, f"{_PER_PARTITION} running"), (_PENDING, f"{_PER_PARTITION} pending")),
    ),
    ("Nodes quarantined for GPU health (taint)", "table", (12, 16, 12, 8), ((_QUARANTINED, ""),)),
)


def pools_markdown(fleet: Fleet, cluster: Cluster) -> str:
    """The pools and their tenants (no sizes: a resize is the tenant's files only; the GPU panels count)."""
    rows = ["| pool | kind | tenant |", "| --- | --- | --- |"]
    for p in sorted(fleet.cluster_pools(cluster.name), key=lambda p: (p.kind, p.name)):
        rows.append(f"| {p.name} | {p.kind} | {p.tenant or '-'} |")
    return "\n".join(rows)


def dashboard(fleet: Fleet, cluster: Cluster) -> dict[str, Any]:
    pools = {"mode": "markdown", "content": pools_markdown(fleet, cluster)}
    panels = [_panel(1, "Pools (rendered from the inventory)", "text", (0, 0, 12, 8), options=pools)]
    for pid, (title, kind, grid, queries) in enumerate(PANELS, start=2):
        targets = [
            _target(expr, legend, kind == "table", chr(ord("A") + i)) for i, (expr, legend) in enumerate(queries)
        ]
        panels.append(_panel(pid, title, kind, grid, targets=targets))
    tenants = ",".join(sorted(t.name for t in fleet.cluster_tenants(cluster.name)))
    return {
        "uid": DASHBOARD_UID,
        "title": f"gpufleet {fleet.name} / {cluster.name}",
        "tags": ["gpufleet"],
        "schemaVersion": 39,
        "editable": False,
        "time": {"from": "now-6h", "to": "now"},
        "templating": {
            "list": [
                {"name": "datasource", "type": "datasource", "query": "prometheus"},
                {
                    "name": "tenant",
                    "type": "custom",
                    "includeAll": True,
                    "multi": True,
                    "allValue": ".*",
                    "query": tenants,
                },
            ]
        },
        "panels": panels,
    }


def dashboard_configmap(fleet: Fleet, cluster: Cluster) -> dict[str, Any]:
    mon = cluster.monitoring
    text = json.dumps(dashboard(fleet, cluster), indent=1, sort_keys=True) + "\n"
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"gpufleet-dashboard-{cluster.name}",
            "namespace": mon.namespace,
            "labels": {mon.dashboard_label: "1", argo.LABEL_CLUSTER: cluster.name},
        },
        "data": {f"gpufleet-{cluster.name}.json": text},
    }


def render_monitoring(fleet: Fleet, cluster: Cluster, inputs: ClusterInputs) -> Rendered:
    """Cluster-level monitoring: the dashboard (when any tenant has monitoring on) and the dcgm-exporter
    ServiceMonitor (with the prometheus-operator CRDs and the GPU Operator)."""
    out = Rendered()
    files = {}
    if any(t.monitoring.enabled for t in fleet.cluster_tenants(cluster.name)):
        files["dashboard.yaml"] = [dashboard_configmap(fleet, cluster)]
    gpu_operator = cluster.components.get("gpu_operator")
    if cluster.monitoring.prometheus_operator and gpu_operator is not None and gpu_operator.enabled:
        files["dcgm-exporter.yaml"] = [dcgm_service_monitor(cluster)]
    if not files:
        return out
    row = App("50-monitoring.yaml", "monitoring", "operators", cluster.monitoring.namespace, manifests=files)
    out.apps.update(emit(fleet, platform_scope(cluster), [row], out))
    return out
