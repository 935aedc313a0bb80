"""KWOK GPU nodes from a nodes snapshot; the real kube-scheduler places GPU pods."""

from __future__ import annotations

import json
import time

import pytest
from controlplane import KWOK_ANNOTATION, LocalControlPlane, load_node_snapshot

pytestmark = pytest.mark.kube


def gpu_pod(name: str, gpus: int, nodes: list[str]) -> dict:
    """A pod asking for ``gpus`` GPUs, confined to ``nodes`` (the session cluster is shared
    with other test modules, which add nodes of their own)."""
    only_nodes = {"key": "kubernetes.io/hostname", "operator": "In", "values": sorted(nodes)}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [only_nodes]}]
                    }
                }
            },
            "containers": [
                {
                    "name": "train",
                    "image": "registry.invalid/train:1",
                    "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
                }
            ],
        },
    }


@pytest.fixture(scope="module")
def gpu_nodes(kube_cluster: LocalControlPlane, nodes_snapshot) -> list[str]:
    return kube_cluster.create_nodes_from_snapshot(nodes_snapshot, timeout=120)


def test_snapshot_nodes_are_ready_fake_nodes_with_gpus(kube_cluster, gpu_nodes, nodes_snapshot):
    assert gpu_nodes == sorted(n["metadata"]["name"] for n in load_node_snapshot(nodes_snapshot))
    nodes = {n["metadata"]["name"]: n for n in kube_cluster.get_json("nodes")["items"]}
    h100 = nodes["gpu-h100-0"]
    assert h100["metadata"]["annotations"][KWOK_ANNOTATION] == "fake"
    assert h100["metadata"]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
    assert h100["metadata"]["labels"]["nvidia.com/gpu.clique"] == "7b3f0a54-9bd3-4c2e-8f51-1c0b8a9e2d11.1"
    assert h100["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    assert nodes["gpu-gb200-0"]["status"]["capacity"]["nvidia.com/gpu"] == "4"
    assert "nvidia.com/gpu" not in nodes["cpu-0"]["status"]["allocatable"]


def test_eight_gpu_pods_scheduled_running_and_capacity_enforced(kube_cluster, gpu_nodes):
    ns = kube_cluster.create_namespace("gpu-sched")
    for name in ("train-a", "train-b"):
        kube_cluster.kubectl("create", "-n", ns, "-f", "-", input=json.dumps(gpu_pod(name, 8, gpu_nodes)))
    placed = {
        name: kube_cluster.wait_pod_phase(ns, name, "Running", timeout=90)["spec"]["nodeName"]
        for name in ("train-a", "train-b")
    }
    # only the two H100 nodes have 8 GPUs; one pod each
    assert sorted(placed.values()) == ["gpu-h100-0", "gpu-h100-1"], placed

    # all 8-GPU nodes are full now: a third 8-GPU pod must stay Pending
    kube_cluster.kubectl("create", "-n", ns, "-f", "-", input=json.dumps(gpu_pod("train-c", 8, gpu_nodes)))
    cond = wait_unschedulable(kube_cluster, ns, "train-c")
    assert "nvidia.com/gpu" in cond.get("message", ""), cond
    assert kube_cluster.get_json("pod", "train-c", "-n", ns)["status"]["phase"] == "Pending"

    # freeing one node lets it run there
    kube_cluster.kubectl("delete", "pod", "train-a", "-n", ns, "--wait=true", "--timeout=60s")
    pod = kube_cluster.wait_pod_phase(ns, "train-c", "Running", timeout=90)
    assert pod["spec"]["nodeName"] == placed["train-a"]


def wait_unschedulable(kube_cluster: LocalControlPlane, ns: str, name: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pod = kube_cluster.get_json("pod", name, "-n", ns)
        for c in pod["status"].get("conditions", []):
            if c["type"] == "PodScheduled" and c["status"] == "False" and c.get("reason") == "Unschedulable":
                return c
        time.sleep(0.25)
    raise AssertionError(f"pod {ns}/{name} not reported Unschedulable: {pod.get('status')}")
