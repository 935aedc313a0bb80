"""Read the nodes snapshot of a cluster: a Kubernetes ``kind: List`` of ``v1 Node`` objects.

The snapshot is written by discovery (``snapshots/<cluster>/nodes.yaml``) and read here as a
sorted tuple of :class:`NodeInfo`:

- ``name``: ``metadata.name``;
- ``gpus``: ``status.capacity["nvidia.com/gpu"]`` (0 when absent);
- ``gpu_product``: label ``nvidia.com/gpu.product`` (GPU Feature Discovery), or None;
- ``nvlink_domain``: label ``nvidia.com/gpu.clique`` (``<ClusterUUID>.<CliqueID>``, MNNVL/NVL72),
  or None for nodes whose NVLink domain is the node itself;
- ``labels``: every label of the node;
- ``cpu_millis``, ``memory_bytes``: ``status.allocatable`` (else ``status.capacity``) cpu and memory,
  0 when absent (used for Kueue quotas).

``load_nodes(path)`` raises :class:`NodesError` naming the file and the item for bad input.
``nodes_from_objects(objs, source)`` does the same for Node dicts already in memory (e.g. from the API).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.yaml_dump import load_or_raise

GPU_RESOURCE = "nvidia.com/gpu"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
NVLINK_DOMAIN_LABEL = "nvidia.com/gpu.clique"


class NodesError(GpufleetError):
    """The nodes snapshot is unreadable or holds something that is not a valid Node."""


@dataclass(frozen=True, order=True)
class NodeInfo:
    name: str
    gpus: int = 0
    gpu_product: str | None = None
    nvlink_domain: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)
    cpu_millis: int = field(default=0, compare=False)
    memory_bytes: int = field(default=0, compare=False)


_SUFFIX = {
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
    "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000),
    "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
}  # fmt: skip
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$")


def parse_quantity(value: Any) -> int | Fraction | None:
    """A Kubernetes resource quantity (``500m``, ``64``, ``1990Gi``, ``1e3``) as an exact number:
    an int when whole digits with a whole suffix (most of a snapshot: ``64``, ``2113363548Ki``; no
    ``Fraction`` to build), else a Fraction."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if abs(value) < 10**30 else None
    if isinstance(value, float):
        return Fraction(value) if math.isfinite(value) and abs(value) < 1e30 else None
    if not isinstance(value, str) or len(value) > 64:  # never str() of a container (alias bombs)
        return None
    m = _QUANTITY.match(value.strip())
    if not m or not m.group(1).isascii() or (m.group(2) and abs(int(m.group(2)[1:])) > 30):
        return None
    if m.group(1).isdigit() and not m.group(2) and isinstance(_SUFFIX.get(m.group(3), 1), int):
        return int(m.group(1)) * _SUFFIX.get(m.group(3), 1)
    try:
        number = Fraction(m.group(1))
    except (ValueError, ZeroDivisionError):
        return None
    if m.group(2):
        return number * Fraction(10) ** int(m.group(2)[1:])
    return number * _SUFFIX[m.group(3)] if m.group(3) else number


def _quantity(value: Any) -> int | None:
    """An integer Kubernetes quantity (GPUs are whole): ``8``, ``"8"``; None when not an integer."""
    if value.__class__ is str and len(value) <= 6 and value.isdigit() and value.isascii():
        return int(value) if int(value) <= MAX_GPUS else None  # what snapshots hold: "8"
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value <= MAX_GPUS else None
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit() and len(value.strip()) <= 6:
        return _quantity(int(value.strip()))  # ASCII digits only: '²'.isdigit() is true
    return None


MAX_GPUS = 1024  # per node
MAX_SNAPSHOT_BYTES = 64 << 20  # a nodes snapshot is refused above 64 MiB, before parsing
MAX_FABRIC_BYTES = 1 << 30  # a fabric snapshot (fabric/load.py), likewise: 38,912 hosts x 8 rails dump
# 208 MB; the dump is streamed in blocks, so the bound is on time, not memory
_NODE_NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?){0,3}")


def _labels(labels: Any, where: str, name: str) -> dict[str, str]:
    """``metadata.labels`` as a dict of strings sorted by key (None values as "")."""
    if labels.__class__ is dict and all(k.__class__ is str and v.__class__ is str for k, v in labels.items()):
        return dict(sorted(labels.items()))  # what a snapshot holds: nothing to convert or check
    if not isinstance(labels, Mapping) or not all(isinstance(k, str) for k in labels):
        raise NodesError(f"{where} ({name}): metadata.labels must be a mapping of strings")
    if not all(v is None or isinstance(v, (str, int, float)) for v in labels.values()):  # no containers
        raise NodesError(f"{where} ({name}): metadata.labels values must be strings")
    return dict(sorted({str(k): "" if v is None else str(v) for k, v in labels.items()}.items()))


def _size(raw: Any, scale: int) -> int | None:
    """``ceil(quantity * scale)`` of a quantity, None when it is not a non-negative quantity."""
    qty = parse_quantity(raw)
    return None if qty is None or qty < 0 else math.ceil(qty * scale)


_size_of_str = functools.lru_cache(maxsize=4096)(_size)  # a fleet's nodes share a few cpu and memory sizes


def _sizes(allocatable: Mapping[str, Any], capacity: Mapping[str, Any], where: str, name: str) -> tuple[int, int]:
    """(cpu millis, memory bytes) from ``status.allocatable``, else ``status.capacity``; 0 when absent."""
    sizes = []
    for res, scale in (("cpu", 1000), ("memory", 1)):
        raw = allocatable.get(res, capacity.get(res))
        if raw is None:
            sizes.append(0)
            continue
        # remembered for short strings; longer ones are never a quantity, other types not hashable
        size = _size_of_str(raw, scale) if raw.__class__ is str and len(raw) <= 64 else _size(raw, scale)
        if size is None:
            raise NodesError(f"{where} ({name}): status.allocatable.{res} is {raw!r}, not a Kubernetes quantity")
        sizes.append(size)
    return sizes[0], sizes[1]


def node_from_object(obj: Any, where: str) -> NodeInfo:
    """One ``v1 Node`` dict to NodeInfo; ``where`` names the file and item for errors.

    ``x.__class__ is dict`` before ``isinstance(x, Mapping)``: the ABC check costs more than the rest of
    a node when a snapshot holds 10,000 of them."""
    if obj.__class__ is not dict and not isinstance(obj, Mapping):
        raise NodesError(f"{where}: expected a Node mapping, got {type(obj).__name__}")
    if obj.get("kind", "Node") != "Node":
        raise NodesError(f"{where}: kind is {obj.get('kind')!r}, expected Node")
    meta = obj.get("metadata")
    if (
        (meta.__class__ is not dict and not isinstance(meta, Mapping))
        or not isinstance(meta.get("name"), str)
        or not meta["name"]
    ):
        raise NodesError(f"{where}: metadata.name is missing or not a string")
    name = meta["name"]
    if not _NODE_NAME.fullmatch(name):
        raise NodesError(
            f"{where}: metadata.name {name!r} is not a valid Kubernetes node name (lowercase DNS subdomain)"
        )
    labels = _labels(meta.get("labels") or {}, where, name)
    status = obj.get("status") or {}
    is_map = status.__class__ is dict or isinstance(status, Mapping)
    capacity = status.get("capacity") or {} if is_map else {}
    if capacity.__class__ is not dict and not isinstance(capacity, Mapping):
        raise NodesError(f"{where} ({name}): status.capacity must be a mapping")
    gpus = 0
    if GPU_RESOURCE in capacity:
        q = _quantity(capacity[GPU_RESOURCE])
        if q is None:
            raise NodesError(
                f"{where} ({name}): status.capacity[{GPU_RESOURCE!r}] is {capacity[GPU_RESOURCE]!r},"
                " expected a whole number"
            )
        gpus = q
    allocatable = status.get("allocatable") or {} if is_map else {}
    if allocatable.__class__ is not dict and not isinstance(allocatable, Mapping):
        raise NodesError(f"{where} ({name}): status.allocatable must be a mapping")
    cpu_millis, memory_bytes = _sizes(allocatable, capacity, where, name)
    return NodeInfo(
        name=name,
        gpus=gpus,
        gpu_product=labels.get(GPU_PRODUCT_LABEL) or None,
        nvlink_domain=labels.get(NVLINK_DOMAIN_LABEL) or None,
        labels=labels,
        cpu_millis=cpu_millis,
        memory_bytes=memory_bytes,
    )


def nodes_from_objects(objs: Iterable[Any], source: str = "<nodes>") -> tuple[NodeInfo, ...]:
    """Node dicts to a tuple of NodeInfo sorted by name; duplicate names are errors."""
    out: dict[str, NodeInfo] = {}
    for i, obj in enumerate(objs):
        where = f"{source}: items[{i}]"
        node = node_from_object(obj, where)
        if node.name in out:
            raise NodesError(f"{where}: duplicate node name {node.name!r}")
        out[node.name] = node
    return tuple(out[n] for n in sorted(out))


def load_nodes(path: str | Path) -> tuple[NodeInfo, ...]:
    """Read a nodes snapshot (``kind: List``/``NodeList`` of Nodes) sorted by node name."""
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            data = fh.read(MAX_SNAPSHOT_BYTES + 1)
        if len(data) > MAX_SNAPSHOT_BYTES:
            raise NodesError(f"{p}: refused: the nodes snapshot is larger than {MAX_SNAPSHOT_BYTES} bytes")
        text = data.decode("utf-8")
    except OSError as exc:
        raise NodesError(f"{p}: cannot read the nodes snapshot: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise NodesError(f"{p}: not UTF-8 text (byte {exc.start}); re-run discover") from None
    doc = load_or_raise(text, str(p), NodesError)
    if doc is None:
        return ()
    if not isinstance(doc, Mapping) or doc.get("kind") not in ("List", "NodeList"):
        kind = doc.get("kind") if isinstance(doc, Mapping) else type(doc).__name__
        raise NodesError(f"{p}: expected a 'kind: List' of Node objects, got {kind!r}")
    items = doc.get("items") or []
    if not isinstance(items, list):
        raise NodesError(f"{p}: items must be a list")
    return nodes_from_objects(items, str(p))
