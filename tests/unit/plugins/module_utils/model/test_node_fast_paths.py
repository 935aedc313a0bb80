"""node_from_object's fast paths (plain dicts of strings, remembered quantity sizes, digit GPU counts)
give what the general path gives, and every refusal keeps its message."""

from __future__ import annotations

from collections import OrderedDict
from types import MappingProxyType
from typing import Any

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.model.nodes import NodeInfo, NodesError, node_from_object


def _node(labels: Any = None, capacity: Any = None, allocatable: Any = None, wrap: Any = dict) -> Any:
    status: dict[str, Any] = {}
    if capacity is not None:
        status["capacity"] = capacity
    if allocatable is not None:
        status["allocatable"] = allocatable
    meta: dict[str, Any] = {"name": "gpu001"}
    if labels is not None:
        meta["labels"] = labels
    return wrap({"kind": "Node", "metadata": wrap(meta), "status": wrap(status)})


CAP = {"cpu": "224", "memory": "2113363548Ki", "nvidia.com/gpu": "8"}
LABELS = {"z": "1", "nvidia.com/gpu.product": "H100", "a": "x"}


def _fields(n: NodeInfo) -> tuple:
    return (n.name, n.gpus, n.gpu_product, n.nvlink_domain, list(n.labels.items()), n.cpu_millis, n.memory_bytes)


@pytest.mark.parametrize("wrap", [OrderedDict, MappingProxyType])
def test_other_mappings_read_like_dicts(wrap: Any) -> None:
    """Mappings that are not dicts take the general path: same NodeInfo as the dict fast path."""
    fast = node_from_object(_node(dict(LABELS), dict(CAP)), "n")
    slow = node_from_object(_node(wrap(LABELS), wrap(CAP), wrap=wrap), "n")
    assert _fields(fast) == _fields(slow)
    assert _fields(fast) == ("gpu001", 8, "H100", None, sorted(LABELS.items()), 224_000, 2113363548 * 1024)


def test_label_values_converted_off_the_fast_path() -> None:
    n = node_from_object(_node({"b": 1, "a": None, "c": 1.5}), "n")
    assert list(n.labels.items()) == [("a", ""), ("b", "1"), ("c", "1.5")]


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        ({1: "x"}, "metadata.labels must be a mapping of strings"),
        ({1: ["x"]}, "metadata.labels must be a mapping of strings"),  # the key is named first
        ({"a": ["x"]}, "metadata.labels values must be strings"),
        (["a"], "metadata.labels must be a mapping of strings"),
    ],
)
def test_label_refusals(labels: Any, message: str) -> None:
    with pytest.raises(NodesError, match=rf"^n \(gpu001\): {message}$"):
        node_from_object(_node(labels), "n")


@pytest.mark.parametrize(
    ("gpus", "expected"), [("8", 8), (" 8 ", 8), (8, 8), ("0", 0), ("1024", 1024), ("1025", None), ("²", None)]
)
def test_gpu_counts(gpus: Any, expected: int | None) -> None:
    obj = _node(capacity={"nvidia.com/gpu": gpus})
    if expected is None:
        with pytest.raises(NodesError, match="expected a whole number"):
            node_from_object(obj, "n")
    else:
        assert node_from_object(obj, "n").gpus == expected


def test_sizes_remembered_per_scale() -> None:
    """The same string is cpu (x1000, rounded up) and memory (x1) without one answer leaking into the other."""
    a = node_from_object(_node(allocatable={"cpu": "1500m", "memory": "1500m"}), "n")
    assert (a.cpu_millis, a.memory_bytes) == (1500, 2)
    b = node_from_object(_node(allocatable={"cpu": "1500m", "memory": "1500m"}), "n")
    assert (b.cpu_millis, b.memory_bytes) == (1500, 2)
    c = node_from_object(_node(capacity={"cpu": 2, "memory": 1.5}), "n")  # not strings: not remembered
    assert (c.cpu_millis, c.memory_bytes) == (2000, 2)


@pytest.mark.parametrize("raw", ["-1", "lots", "1" * 65, True])
def test_size_refusals(raw: Any) -> None:
    for res in ("cpu", "memory"):
        with pytest.raises(NodesError, match=rf"status\.allocatable\.{res} is .*, not a Kubernetes quantity"):
            node_from_object(_node(allocatable={res: raw}), "n")
