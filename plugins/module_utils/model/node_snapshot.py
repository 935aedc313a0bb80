"""Nodes snapshot text from live Node objects (Kubernetes API) for ``snapshots/<cluster>/nodes.yaml``.

The snapshot is a ``kind: List`` of ``v1 Node`` objects reduced to what planning reads: name,
labels, capacity and allocatable. Volatile fields (resourceVersion, conditions, heartbeats,
managedFields) and the labels gpufleet itself sets on Nodes (pool and tenant fence, see
``fence.OWNED_LABEL_KEYS``) are dropped, so the snapshot only changes when the hardware or the
discovery labels change. Items are sorted by name and keys sorted: same Nodes, same bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.deps import missing
from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError

try:
    import yaml
except ImportError:  # importing works without it; the first use raises a clear error
    yaml = missing("yaml", "PyYAML")

OWNED_PREFIX = "node-restriction.kubernetes.io/gpufleet-"


class NodeSnapshotError(GpufleetError):
    """A Node object is not usable for a snapshot."""


def reduce_node(obj: Mapping[str, Any], index: int = 0) -> dict[str, Any]:
    if not isinstance(obj, Mapping) or not isinstance(obj.get("metadata"), Mapping):
        raise NodeSnapshotError(f"item {index}: not a Node object (no metadata)")
    meta = obj["metadata"]
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise NodeSnapshotError(f"item {index}: Node without metadata.name")
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items() if not str(k).startswith(OWNED_PREFIX)}
    status = obj.get("status") or {}
    node: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}
    if labels:
        node["metadata"]["labels"] = dict(sorted(labels.items()))
    kept = {
        k: dict(sorted((str(a), str(b)) for a, b in (status.get(k) or {}).items())) for k in ("capacity", "allocatable")
    }
    kept = {k: v for k, v in kept.items() if v}
    if kept:
        node["status"] = kept
    return node


def snapshot(nodes: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    items = [reduce_node(n, i) for i, n in enumerate(nodes)]
    names = [n["metadata"]["name"] for n in items]
    dupes = sorted({n for n in names if names.count(n) > 1}) if len(set(names)) != len(names) else []
    if dupes:
        raise NodeSnapshotError(f"duplicate Node names: {', '.join(dupes)}")
    return {"apiVersion": "v1", "kind": "List", "items": sorted(items, key=lambda n: n["metadata"]["name"])}


def snapshot_text(nodes: Iterable[Mapping[str, Any]]) -> str:
    """The snapshot as YAML text, stable byte for byte."""
    head = "# Nodes snapshot written by gpufleet discovery (gpufleet.core.discover); reviewed as a diff.\n"
    return head + yaml.safe_dump(snapshot(nodes), sort_keys=True, default_flow_style=False, width=1000)
