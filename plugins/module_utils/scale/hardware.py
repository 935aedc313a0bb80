"""Hardware in and out of a cluster's snapshots (``gpufleet.py hardware add|remove``), the way kubespray's
``scale.yml`` and ``remove-node.yml`` add and remove nodes: the Nodes in ``snapshots/<c>/nodes.yaml`` and
their place under a leaf switch in the fabric file (``fabric.source: file``).

- ``add``: the new nodes go under a leaf switch, an existing one or a new one (``parent``: the switch it
  hangs from); each new Node is a copy of an existing one (``like``: default the first node of the leaf,
  else of the snapshot) with its own name;
- ``remove``: the nodes leave the snapshot and the fabric; a leaf left without nodes goes too, and so
  does its name under its parent.

Both files are computed in memory and parsed again (the fabric by the fabric-file parser, the Nodes by
YAML) before either is written, so a refusal leaves both untouched; comments and layout of both files
are kept (ruamel round trip). New nodes are in no pool until a pool grows (``pools.yml``), removed nodes
leave their pool: the render that follows and its review say which (the scaling pull request).
"""

from __future__ import annotations

import copy
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.file import parse_fabric_yaml
from ansible_collections.gpufleet.core.plugins.module_utils.files import replace_file
from ansible_collections.gpufleet.core.plugins.module_utils.hostlist import compress, expand
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Fleet
from ansible_collections.gpufleet.core.plugins.module_utils.scale.inventory_edit import round_trip_yaml


class HardwareError(GpufleetError):
    """The hardware change cannot be made (names the file and key)."""


@dataclass
class HardwareChange:
    cluster: str
    files: dict[Path, str] = field(default_factory=dict)  # path -> new text
    lines: list[str] = field(default_factory=list)  # what changes, for the user


def _load(path: Path) -> Any:
    try:
        return round_trip_yaml().load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise HardwareError(f"{path}: cannot read: {exc}") from None


def _dump(doc: Any) -> str:
    buf = io.StringIO()
    round_trip_yaml().dump(doc, buf)
    return buf.getvalue()


def _files(fleet: Fleet, cluster: str) -> tuple[Path, Path]:
    c = fleet.clusters.get(cluster)
    if c is None:
        raise HardwareError(
            f"--cluster {cluster!r}: not a cluster of {fleet.inventory_dir} ({', '.join(sorted(fleet.clusters))})"
        )
    if c.fabric.source != "file" or c.fabric.path is None:
        raise HardwareError(
            f"cluster {cluster!r}: fabric.source is {c.fabric.source!r}; `hardware` edits a fabric file"
            " (fabric.source: file). With ibnetdiscover or labels, discover again instead (discover.yml)"
        )
    return c.nodes_snapshot, c.fabric.path


def _node_items(doc: Any, path: Path) -> Any:
    items = doc.get("items") if isinstance(doc, dict) else None
    if items is None:
        raise HardwareError(f"{path}: items: expected a `kind: List` of Nodes")
    return items


def _node_name(item: Any) -> str:
    return str(((item or {}).get("metadata") or {}).get("name", ""))


def _switches(doc: Any, path: Path) -> Any:
    sw = doc.get("switches") if isinstance(doc, dict) else None
    if not isinstance(sw, dict):
        raise HardwareError(f"{path}: switches: expected the switch mapping of a fabric file")
    return sw


def _leaf_nodes(spec: Any) -> list[str]:
    """The nodes of one switch of the fabric file (its ``nodes`` hostlists, expanded)."""
    return [n for expr in (spec.get("nodes") or []) for n in expand(str(expr))]


def _check(change: HardwareChange, nodes_path: Path, fabric_path: Path) -> None:
    """Parse both new texts before anything is written: the fabric by its parser, every fabric host a Node."""
    fabric = parse_fabric_yaml(change.files[fabric_path], str(fabric_path))
    names = {_node_name(i) for i in _node_items(round_trip_yaml().load(change.files[nodes_path]), nodes_path)}
    hosts = {ca.host for ca in fabric.cas.values() if ca.host}
    stray = sorted(hosts - names)
    if stray:
        raise HardwareError(f"{fabric_path}: host(s) {compress(stray)} under a switch but not in {nodes_path}")


def plan_add(fleet: Fleet, cluster: str, nodes: str, leaf: str, parent: str | None, like: str | None) -> HardwareChange:
    """New nodes ``nodes`` (a hostlist) under ``leaf`` (new: under ``parent``), copies of ``like``."""
    nodes_path, fabric_path = _files(fleet, cluster)
    ndoc, fdoc = _load(nodes_path), _load(fabric_path)
    items, switches = _node_items(ndoc, nodes_path), _switches(fdoc, fabric_path)
    new = expand(nodes)
    have = {_node_name(i): i for i in items}
    taken = sorted(set(new) & set(have))
    if taken:
        raise HardwareError(f"{nodes_path}: node(s) {compress(taken)} already in the cluster; remove them first")
    change = HardwareChange(cluster)
    if leaf in switches:
        if parent:
            raise HardwareError(f"{fabric_path}: switches.{leaf} exists; --parent is only for a new leaf")
        spec = switches[leaf]
        if spec.get("switches"):
            raise HardwareError(f"{fabric_path}: switches.{leaf} has switches under it: nodes go under a leaf")
        existing = _leaf_nodes(spec)
        first = existing[0] if existing else None
        spec["nodes"] = [compress(existing + new)]
    else:
        if not parent or parent not in switches:
            raise HardwareError(
                f"{fabric_path}: switches.{leaf} is new: --parent must name the switch it hangs from"
                f" ({', '.join(str(s) for s in switches if switches[s].get('switches'))})"
            )
        switches[parent].setdefault("switches", []).append(leaf)
        switches[leaf] = {"nodes": [compress(new)]}
        first = None
        change.lines.append(f"new leaf switch {leaf} under {parent}")
    model = like or first or (_node_name(items[0]) if items else None)
    if model not in have:
        raise HardwareError(f"--like {model!r}: no such node in {nodes_path} to copy the new nodes from")
    for name in new:
        item = copy.deepcopy(have[model])
        item["metadata"]["name"] = name
        labels = item["metadata"].get("labels")
        if labels is not None and "kubernetes.io/hostname" in labels:
            labels["kubernetes.io/hostname"] = name
        items.append(item)
    change.files = {nodes_path: _dump(ndoc), fabric_path: _dump(fdoc)}
    change.lines.append(f"{len(new)} node(s) {compress(new)} added under {leaf}, each like {model}")
    _check(change, nodes_path, fabric_path)
    return change


def plan_remove(fleet: Fleet, cluster: str, nodes: str) -> HardwareChange:
    """``nodes`` (a hostlist) leave the snapshot and the fabric; an emptied leaf goes with them."""
    nodes_path, fabric_path = _files(fleet, cluster)
    ndoc, fdoc = _load(nodes_path), _load(fabric_path)
    items, switches = _node_items(ndoc, nodes_path), _switches(fdoc, fabric_path)
    gone = set(expand(nodes))
    unknown = sorted(gone - {_node_name(i) for i in items})
    if unknown:
        raise HardwareError(f"{nodes_path}: no node(s) {compress(unknown)} in cluster {cluster!r}")
    change = HardwareChange(cluster)
    for i in reversed(range(len(items))):
        if _node_name(items[i]) in gone:
            del items[i]
    for name in list(switches):
        spec = switches[name]
        if not isinstance(spec, dict) or not spec.get("nodes"):
            continue
        left = [n for n in _leaf_nodes(spec) if n not in gone]
        if left:
            spec["nodes"] = [compress(left)]
            continue
        del switches[name]
        for other in switches.values():
            if isinstance(other, dict) and name in (other.get("switches") or []):
                other["switches"].remove(name)
        change.lines.append(f"leaf switch {name} removed (no node left under it)")
    change.files = {nodes_path: _dump(ndoc), fabric_path: _dump(fdoc)}
    change.lines.insert(0, f"{len(gone)} node(s) {compress(sorted(gone))} removed")
    _check(change, nodes_path, fabric_path)
    return change


def write_hardware(change: HardwareChange, check: bool = False) -> list[Path]:
    """Write the files of ``change`` (``check``: write nothing); the paths that change."""
    return [p for p, text in sorted(change.files.items()) if replace_file(p, text, check=check)[0]]
