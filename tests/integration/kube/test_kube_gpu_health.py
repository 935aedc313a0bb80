"""GPU health on the Kubernetes side, on the real kube-apiserver + kube-scheduler with KWOK nodes.

A node quarantined by ``quarantine.apply`` (what ``gpufleet.core.gpu_health`` / playbooks run)
keeps a tenant's pod off it: the pod carries exactly the fence a rendered Slinky NodeSet carries
(nodeSelector + tolerations from the sample's ``research`` slurm values), stays Pending with the
scheduler reporting an untolerated taint on both nodes, and schedules once the node is resumed.
The rendered dcgm-exporter ServiceMonitor settings are checked against the upstream CRD too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from test_kube_gpu_scheduling import wait_unschedulable

from ansible_collections.gpufleet.core.plugins.module_utils.health import quarantine
from ansible_collections.gpufleet.core.plugins.module_utils.health.quarantine import core_api
from ansible_collections.gpufleet.core.plugins.module_utils.model import fence
from ansible_collections.gpufleet.core.plugins.module_utils.model.fence import (
    QUARANTINE_CONDITION,
    QUARANTINE_TAINT_KEY,
)
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_fleet

pytestmark = pytest.mark.kube

ROOT = Path(__file__).resolve().parents[3]
POOL = "research-batch"
NODES = ["gpuhealth-0", "gpuhealth-1"]


@pytest.fixture(scope="module")
def sample():
    fleet = load_fleet(ROOT / "inventories/sample")
    files = render_fleet(fleet).files
    return fleet, files


def _node(name: str, pool) -> dict:
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", **fence.node_labels(pool)}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": fence.node_taints(pool)},
        "status": {
            "capacity": {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"},
            "allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }


def test_quarantine_taint_keeps_tenant_pod_off_and_resume_lets_it_in(kube_cluster, sample):
    fleet, files = sample
    pool = fleet.pools[POOL]
    kube_cluster.create_nodes_from_snapshot([_node(n, pool) for n in NODES], timeout=120)
    api = core_api(str(kube_cluster.kubeconfig))

    # quarantine both nodes (idempotent: the second call changes nothing)
    for n in NODES:
        r = quarantine.apply(api, n, "quarantined", "XID 79 gpu3 fallen off the bus")
        assert r["changed"] and r["after"]["quarantined"], r
        assert not quarantine.apply(api, n, "quarantined", "XID 79 gpu3 fallen off the bus")["changed"]
    node = kube_cluster.get_json("node", NODES[0])
    assert {"key": QUARANTINE_TAINT_KEY, "value": "true", "effect": "NoSchedule"} in node["spec"]["taints"]
    assert any(t["key"] == fence.POOL_KEY for t in node["spec"]["taints"])  # the pool fence is kept
    cond = next(c for c in node["status"]["conditions"] if c["type"] == QUARANTINE_CONDITION)
    assert (cond["status"], cond["message"]) == ("True", "XID 79 gpu3 fallen off the bus")
    listed = {h.node: h for h in quarantine.list_health(api)}
    assert listed[NODES[0]].quarantined and listed[NODES[0]].pool == POOL and listed[NODES[0]].tenant == "research"

    # the pod a rendered NodeSet of this pool makes: its nodeSelector and tolerations, verbatim
    values = yaml.safe_load(files["clusters/gpu-east/tenants/research/slurm/values.yaml"])
    pod_spec = values["nodesets"][POOL]["podSpec"]
    ns = kube_cluster.create_namespace("gpu-health")
    only = {"key": "kubernetes.io/hostname", "operator": "In", "values": NODES}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "slurmd-like"},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "nodeSelector": pod_spec["nodeSelector"],
            "tolerations": pod_spec["tolerations"],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [only]}]
                    }
                }
            },
            "containers": [
                {
                    "name": "slurmd",
                    "image": "registry.invalid/slurmd:1",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                }
            ],
        },
    }
    kube_cluster.kubectl("create", "-n", ns, "-f", "-", input=json.dumps(pod))
    cond = wait_unschedulable(kube_cluster, ns, "slurmd-like")
    # this scheduler names no taint key ("2 node(s) had untolerated taint(s)"); the pool taint is
    # tolerated, so the untolerated one is ours, and resuming one node below is what lets the pod in
    assert "2 node(s) had untolerated taint" in cond.get("message", ""), cond

    # resume one node: the pod lands there and nowhere else
    r = quarantine.apply(api, NODES[1], "resumed")
    assert r["changed"] and not r["after"]["quarantined"], r
    placed = kube_cluster.wait_pod_phase(ns, "slurmd-like", "Running", timeout=90)
    assert placed["spec"]["nodeName"] == NODES[1]
    node = kube_cluster.get_json("node", NODES[1])
    assert all(t["key"] != QUARANTINE_TAINT_KEY for t in node["spec"]["taints"])
    assert any(t["key"] == fence.POOL_KEY for t in node["spec"]["taints"])
    assert quarantine.REASON_ANNOTATION not in node["metadata"].get("annotations", {})
    assert not quarantine.apply(api, NODES[1], "resumed")["changed"]


def test_rendered_dcgm_service_monitor_validates(kube_cluster, prometheus_crd_files, sample):
    """The dcgm-exporter ServiceMonitor gpufleet renders (node metadata, the tenant label from the node's
    tenant label) is valid for the upstream CRD."""
    kube_cluster.apply_crds(prometheus_crd_files, timeout=180)
    _, files = sample
    (obj,) = yaml.safe_load_all(files["clusters/gpu-east/platform/monitoring/dcgm-exporter.yaml"])
    assert obj["spec"]["attachMetadata"] == {"node": True}
    obj["metadata"]["namespace"] = kube_cluster.create_namespace("gpu-operator-sm")
    proc = kube_cluster.server_dry_run(obj)
    assert proc.returncode == 0, proc.stderr
    obj["spec"]["endpoints"][0]["relabelings"][0]["action"] = "rename"
    assert kube_cluster.server_dry_run(obj).returncode != 0
