"""The clusters a change touches, so that ``review --base`` renders those only.

The contract (docs/adr/fleet-render.md, checked by
tests/unit/plugins/module_utils/render/test_render_cluster_reads.py): a cluster's rendered files
(``render.tree._cluster_part``) read the fleet-wide settings, that cluster's model, its tenants and its
pools, and its snapshots and pool lock, nothing of another cluster. A cluster whose inputs are the same
at the base and at the head therefore has the same files on both sides: the review leaves it alone (it
neither parses its snapshots nor renders it) and trusts the base's committed tree for it (the merge's
review checked that tree).

Deny by default. A cluster is left alone only when all of these hold; else it is rendered, and when any
changed file is not known to belong to one cluster, everything is (``None``):

- its part of the model (:func:`cluster_key`) is the same on both sides. Every field of ``Fleet`` but
  the clusters, tenants and pools (split by cluster) is fleet-wide: a new field counts for every cluster;
- no changed file is its snapshot, fabric dump or pool lock, or under its rendered folder;
- every changed file is one of: a vars file the model is read from (what it says is compared through
  the keys), a file of one cluster's snapshots, a file of one cluster's rendered folder, the root render
  manifest (its lines of untouched clusters unchanged). Anything else (another inventory file, the
  fleet-wide rendered files, a file outside the inventory) renders everything;
- the clusters are the same on both sides, and not every cluster is touched (then it is a full render).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Cluster, Fleet
from ansible_collections.gpufleet.core.plugins.module_utils.model.inventory import vars_files
from ansible_collections.gpufleet.core.plugins.module_utils.render import writer as tree_writer

SCOPED = ("clusters", "tenants", "pools")  # the Fleet fields split by cluster; every other one is fleet-wide
NOT_INPUTS = ("inventory_dir",)  # where the fleet was read from, not what it says


def _plain(obj: Any, inv: Path) -> Any:
    """A comparable form of a model value: paths relative to the inventory, dict order kept (a pool's
    place is an input), anything unknown by its ``repr`` (never equal by accident: the cluster renders)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = [f.name for f in dataclasses.fields(obj) if f.compare]
        return [type(obj).__name__, [[f, _plain(getattr(obj, f), inv)] for f in fields]]
    if isinstance(obj, Path):
        return ["path", obj.relative_to(inv).as_posix() if obj.is_relative_to(inv) else str(obj)]
    if isinstance(obj, dict):
        return ["dict", [[_plain(k, inv), _plain(v, inv)] for k, v in obj.items()]]
    if isinstance(obj, (list, tuple)):
        return [type(obj).__name__, [_plain(x, inv) for x in obj]]
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    return ["repr", repr(obj)]


def cluster_key(fleet: Fleet, name: str) -> Any:
    """Everything of the model the files of cluster ``name`` may read (see the module's docstring)."""
    inv = fleet.inventory_dir
    wide = [
        [f.name, _plain(getattr(fleet, f.name), inv)]
        for f in dataclasses.fields(fleet)
        if f.compare and f.name not in SCOPED + NOT_INPUTS
    ]
    return [
        wide,
        _plain(fleet.clusters[name], inv),
        [_plain(t, inv) for t in fleet.tenants.values() if t.cluster == name],
        [_plain(p, inv) for p in fleet.pools.values() if p.cluster == name],
    ]


def _snapshot_paths(cluster: Cluster) -> list[Path]:
    """The files and folder a cluster's inputs are read from: its snapshot folder (nodes, lock) and fabric."""
    return [cluster.snapshot_dir, *([cluster.fabric_input] if cluster.fabric_input is not None else [])]


def snapshot_dirs(fleet: Fleet, inv_rel: str, clusters: set[str] | None = None) -> list[str]:
    """The snapshot folders of ``clusters`` (default all) inside the inventory, repository-relative
    (``inv_rel``: the inventory's), sorted."""
    out = set()
    for name, c in fleet.clusters.items():
        d = c.snapshot_dir
        inside = d.is_relative_to(fleet.inventory_dir) and d != fleet.inventory_dir
        if (clusters is None or name in clusters) and inside:
            out.add(f"{inv_rel}/{d.relative_to(fleet.inventory_dir).as_posix()}")
    return sorted(out)


def _clusters_of(path: Path, fleets: tuple[Fleet, Fleet]) -> set[str]:
    """The clusters whose snapshots hold ``path`` (absolute, in the head's inventory)."""
    hit = set()
    for fleet in fleets:
        rel = path.relative_to(fleets[0].inventory_dir)
        for name, c in fleet.clusters.items():
            for p in _snapshot_paths(c):
                p_rel = p.relative_to(fleet.inventory_dir) if p.is_relative_to(fleet.inventory_dir) else None
                if p_rel is not None and (rel == p_rel or p_rel in rel.parents) and p_rel != Path("."):
                    hit.add(name)
    return hit


def _manifest_paths(data: bytes | None) -> dict[str, str]:
    text = (data or b"").decode("utf-8", "replace")
    return {ln.partition("  ")[2]: ln for ln in text.splitlines() if "  " in ln and not ln.startswith("#")}


def touched_clusters(
    changed: Mapping[str, str],
    rels: tuple[str, str],
    head: Fleet,
    base: Fleet,
    committed: Callable[[str], tuple[bytes | None, bytes | None]],
) -> set[str] | None:
    """The clusters a review must render (None: all of them). ``changed``: repository-relative path ->
    change; ``rels``: the inventory's and its GitOps tree's repository-relative paths; ``committed``:
    a path's bytes at the base and at the head."""
    inv_rel, gitops_rel = rels
    if set(head.clusters) != set(base.clusters):
        return None
    touched = {c for c in head.clusters if cluster_key(head, c) != cluster_key(base, c)}
    model = {p.relative_to(f.inventory_dir).as_posix() for f in (head, base) for p in vars_files(f.inventory_dir)}
    manifest = f"{gitops_rel}/{tree_writer.MANIFEST}"
    for path in changed:
        if path == manifest:
            continue  # below, once the touched clusters are known
        if path.startswith(gitops_rel + "/"):
            parts = path[len(gitops_rel) + 1 :].split("/")
            if len(parts) < 3 or parts[0] != tree_writer.CLOSED or parts[1] not in head.clusters:
                return None
            touched.add(parts[1])
        elif not path.startswith(inv_rel + "/"):
            return None  # outside the inventory (the collection's pin, CI, CODEOWNERS, another inventory)
        elif path[len(inv_rel) + 1 :] not in model:
            hit = _clusters_of(head.inventory_dir / path[len(inv_rel) + 1 :], (head, base))
            if not hit:
                return None  # an inventory file no cluster's snapshots hold (hosts.yml, a README)
            touched |= hit
    if manifest in changed:
        old, new = (_manifest_paths(b) for b in committed(manifest))
        moved = {p for p in set(old) | set(new) if old.get(p) != new.get(p)}
        if any(not p.startswith(tuple(f"{tree_writer.CLOSED}/{c}/" for c in touched)) for p in moved):
            return None
    return touched if touched != set(head.clusters) else None
