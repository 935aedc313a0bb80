"""Live Node objects -> nodes snapshot text (deterministic, volatile fields and our labels dropped)."""

from __future__ import annotations

import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.module_utils.model.node_snapshot import (
    NodeSnapshotError,
    snapshot,
    snapshot_text,
)
from ansible_collections.gpufleet.core.plugins.module_utils.model.nodes import nodes_from_objects


def node(name: str, gpus: int = 8, **labels: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "resourceVersion": "123",
            "uid": "u-" + name,
            "managedFields": [{"manager": "kubelet"}],
            "labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", **labels},
        },
        "spec": {"taints": [{"key": "x", "effect": "NoSchedule"}]},
        "status": {
            "capacity": {"nvidia.com/gpu": str(gpus), "cpu": "128"},
            "allocatable": {"nvidia.com/gpu": str(gpus)},
            "conditions": [{"type": "Ready", "lastHeartbeatTime": "2026-11-23T00:00:00Z"}],
        },
    }


def test_reduced_sorted_and_readable_by_nodes_loader():
    text = snapshot_text([node("gpu002"), node("gpu001", gpus=4)])
    doc = yaml.safe_load(text)
    assert doc["kind"] == "List"
    assert [n["metadata"]["name"] for n in doc["items"]] == ["gpu001", "gpu002"]
    first = doc["items"][0]
    assert set(first["metadata"]) == {"name", "labels"} and set(first["status"]) == {"capacity", "allocatable"}
    assert "spec" not in first
    infos = nodes_from_objects(doc["items"], "snapshot")
    assert [(n.name, n.gpus) for n in infos] == [("gpu001", 4), ("gpu002", 8)]


def test_own_fence_labels_dropped_so_apply_does_not_churn_the_snapshot():
    fenced = node("gpu001", **{"node-restriction.kubernetes.io/gpufleet-pool": "pretrain"})
    assert snapshot_text([fenced]) == snapshot_text([node("gpu001")])


def test_volatile_fields_do_not_change_bytes():
    a = node("gpu001")
    b = node("gpu001")
    b["metadata"]["resourceVersion"] = "999"
    b["status"]["conditions"][0]["lastHeartbeatTime"] = "2026-11-24T00:00:00Z"
    assert snapshot_text([a]) == snapshot_text([b])


def test_bad_objects():
    with pytest.raises(NodeSnapshotError, match=r"item 1: Node without metadata\.name"):
        snapshot([node("a"), {"metadata": {}}])
    with pytest.raises(NodeSnapshotError, match="duplicate Node names: a"):
        snapshot([node("a"), node("a")])
    with pytest.raises(NodeSnapshotError, match="item 0: not a Node object"):
        snapshot(["gpu001"])
