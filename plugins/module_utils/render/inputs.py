"""What the renderer needs per cluster, read from the snapshots: nodes, topology, pool assignment.

A thin adapter over the pool (``pools.assign``, ``pools.lock``), node (``model.nodes``) and topology
(``topology.load``) modules, so the render modules depend on one
small interface (:class:`ClusterInputs`) and not on each module's signature.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Cluster, Fleet, Pool
from ansible_collections.gpufleet.core.plugins.module_utils.model.nodes import NodeInfo, load_nodes
from ansible_collections.gpufleet.core.plugins.module_utils.render import topology_guard


class RenderInputError(GpufleetError):
    """A snapshot is missing or cannot be used for this cluster."""


@dataclass
class ClusterInputs:
    cluster: Cluster
    nodes: tuple[NodeInfo, ...]
    topology: Any | None  # topology.Topology, None when the cluster has no fabric source
    members: dict[str, list[str]]  # pool -> node names (sorted as the assignment returns them)
    pool_of: dict[str, str]  # node -> pool
    lock_path: Path
    lock_bytes: bytes
    pool_table: str
    assignment: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    def topology_view(self, nodes: list[str]) -> Any | None:
        """The cluster topology restricted to ``nodes`` (None without a topology); no health report."""
        if self.topology is None:
            return None
        return self.topology.subset(nodes, health=False)

    @property
    def by_name(self) -> dict[str, NodeInfo]:
        cached = self.extra.get("by_name")
        if cached is None:
            cached = self.extra["by_name"] = {n.name: n for n in self.nodes}
        return cached

    def pool_gpus(self, pool: str) -> int:
        return int(self.pool_resources(pool)["nvidia.com/gpu"])

    def pool_resources(self, pool: str) -> dict[str, int | str]:
        from ansible_collections.gpufleet.core.plugins.module_utils.pools.assign import node_resources

        by_name = self.by_name
        return node_resources(by_name[n] for n in self.members.get(pool, []) if n in by_name)


def _node_map(spec: Mapping[str, str] | None) -> dict[str, str] | None:
    if not spec:
        return None
    return {"pattern": spec["pattern"], "replacement": spec.get("replacement", spec.get("replace", ""))}


def load_topology(cluster: Cluster, nodes: tuple[NodeInfo, ...]) -> Any | None:
    """The cluster's topology through the same loader as the slurm_topology module: the fabric
    snapshot (or the nodes' fabric labels) plus the NVLink domains of the nodes snapshot."""
    fab = cluster.fabric
    if fab.source == "none":
        return None
    from ansible_collections.gpufleet.core.plugins.module_utils.topology.load import load_topology as load

    ibnetdiscover = fabric_file = None
    if fab.source != "labels":
        if fab.path is None or not fab.path.is_file():
            raise RenderInputError(
                f"{fab.path}: fabric snapshot of cluster {cluster.name!r} not found (run discover first)"
            )
        if fab.source == "file":
            fabric_file = fab.path
        else:
            ibnetdiscover = fab.path
    return load(
        ibnetdiscover=ibnetdiscover,
        fabric=fabric_file,
        nodes_snapshot=cluster.nodes_snapshot,
        nodes_doc={"kind": "List", "items": [{"metadata": {"name": n.name, "labels": dict(n.labels)}} for n in nodes]},
        node_map=_node_map(fab.node_name_map),
        nodes=[n.name for n in nodes] or None,
        exclude=[*fab.exclude_hosts, *fab.exclude_switches] or None,
    )


# ------------------------------------------------------------------ parse cache
#
# Parsing a 10,000-node snapshot (YAML) and a 55 MB ibnetdiscover dump takes most of a render, and
# snapshots change far less often than the inventory. Parsed results are kept as JSON in a cache
# directory (render_tree.cache_dir, outside the repository), keyed by the sha256 of the input bytes,
# the settings that shape the result and the parsing code; a miss or an unreadable entry parses again.

_CODE_DIR = Path(__file__).resolve().parent.parent  # plugins/module_utils
_PARSE_CODE = (
    "model/nodes.py",
    "fabric/model.py",
    "fabric/load.py",
    "fabric/ibnetdiscover.py",
    "fabric/labels.py",
    "fabric/file.py",
    "topology/build.py",
    "topology/load.py",
    "render/inputs.py",
)


def _key(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for part in parts:
        b = part.encode() if isinstance(part, str) else part
        h.update(len(b).to_bytes(8, "big"))
        h.update(b)
    return h.hexdigest()[:40]


def code_files() -> dict[str, bytes] | None:
    """name -> source of every module_utils file, from disk or from the zip the module was loaded
    from (Ansible's AnsiballZ payload); None when neither can be read (then caches are off)."""
    if _CODE_DIR.is_dir():
        found = {f.relative_to(_CODE_DIR).as_posix(): f.read_bytes() for f in sorted(_CODE_DIR.rglob("*.py"))}
        if found:
            return found
    loader = globals().get("__loader__")
    archive, prefix = getattr(loader, "archive", None), getattr(loader, "prefix", None)
    if not archive or prefix is None:
        return None
    prefix = prefix.rstrip("/").rpartition("/")[0] + "/"  # this file's package -> module_utils/
    import zipfile

    try:
        with zipfile.ZipFile(archive) as zf:
            names = sorted(n for n in zf.namelist() if n.startswith(prefix) and n.endswith(".py"))
            found = {n[len(prefix) :]: zf.read(n) for n in names}
    except (OSError, zipfile.BadZipFile):
        return None
    return found or None


def _code() -> bytes | None:
    files = code_files()
    if files is None:
        return None
    return b"".join(files.get(f, b"") for f in _PARSE_CODE)


def _cache_get(cache: Path | None, name: str) -> Any:
    if cache is None:
        return None
    try:
        return json.loads((cache / name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _cache_put(cache: Path | None, name: str, data: Any, prefix: str) -> None:
    if cache is None:
        return
    try:
        cache.mkdir(parents=True, exist_ok=True)
        for old in cache.glob(f"{prefix}-*.json"):
            old.unlink()
        tmp = cache / f".{name}.tmp"
        tmp.write_text(json.dumps(data, separators=(",", ":")), encoding="utf-8")
        os.replace(tmp, cache / name)
    except OSError:
        pass


# every NodeInfo field, so a field added later cannot silently drop out of cached renders
_NODE_FIELDS = tuple(f.name for f in dataclasses.fields(NodeInfo))


def _nodes_to_json(nodes: tuple[NodeInfo, ...]) -> list:
    return [[dict(v) if isinstance(v, Mapping) else v for v in (getattr(n, f) for f in _NODE_FIELDS)] for n in nodes]


def _nodes_from_json(data: list) -> tuple[NodeInfo, ...]:
    return tuple(NodeInfo(*row) for row in data)  # rows hold _NODE_FIELDS in field order


def _topo_to_json(t: Any) -> dict:
    return {
        "switches": [
            [s.name, s.tier, s.members, s.children, s.nodes, s.parent, s.member_names] for s in t.switches.values()
        ],
        "roots": t.roots,
        "leaf_groups": t.leaf_groups,
        "node_group": t.node_group,
        "blocks": t.blocks,
        "block_domains": t.block_domains,
        "block_source": t.block_source,
        "health": t.health,
        "order": t.order,
        "source": t.source,
    }


def _topo_from_json(d: dict) -> Any:
    from ansible_collections.gpufleet.core.plugins.module_utils.topology.build import Topology, TreeSwitch

    sws = {s[0]: TreeSwitch(s[0], s[1], s[2], s[3], s[4], s[5], s[6]) for s in d["switches"]}
    return Topology(
        sws,
        d["roots"],
        [(x[0], x[1]) for x in d["leaf_groups"]],
        d["node_group"],
        [(x[0], x[1]) for x in d["blocks"]],
        d["block_domains"],
        d["block_source"],
        d["health"],
        d["order"],
        d["source"],
    )


def cached_nodes(cluster: Cluster, cache: Path | None) -> tuple[NodeInfo, ...]:
    code = _code()
    if code is None:
        return load_nodes(cluster.nodes_snapshot)
    name = f"nodes-{_key(cluster.nodes_snapshot.read_bytes(), code)}.json"
    hit = _cache_get(cache, name)
    if isinstance(hit, list):
        try:
            return _nodes_from_json(hit)
        except (TypeError, ValueError):
            pass
    nodes = load_nodes(cluster.nodes_snapshot)
    _cache_put(cache, name, _nodes_to_json(nodes), "nodes")
    return nodes


def cached_topology(cluster: Cluster, nodes: tuple[NodeInfo, ...], cache: Path | None) -> Any | None:
    fab = cluster.fabric
    if fab.source == "none":
        return None
    src = cluster.nodes_snapshot if fab.source == "labels" else fab.path
    if src is None or not src.is_file():
        return load_topology(cluster, nodes)  # raises the clear error
    settings = json.dumps(
        [fab.source, fab.node_name_map, list(fab.exclude_hosts), list(fab.exclude_switches), [n.name for n in nodes]],
        sort_keys=True,
    )
    code = _code()
    if code is None:
        return load_topology(cluster, nodes)
    snapshot = cluster.nodes_snapshot.read_bytes() if src != cluster.nodes_snapshot else b""  # NVLink domains
    name = f"topology-{_key(src.read_bytes(), snapshot, settings, code)}.json"
    hit = _cache_get(cache, name)
    if isinstance(hit, dict):
        try:
            return _topo_from_json(hit)
        except (KeyError, TypeError, ValueError):
            pass
    topo = load_topology(cluster, nodes)
    if topo is not None:
        _cache_put(cache, name, _topo_to_json(topo), "topology")
    return topo


def cluster_inputs(fleet: Fleet, cluster: Cluster, cache: Path | None = None, base: str | None = None) -> ClusterInputs:
    """Nodes, topology and pool assignment of one cluster, from its snapshots.

    ``cache``: a directory for parsed snapshots (see above); None parses every time. ``base``: a
    Git revision (the pull request's base): the previous assignment is the lock committed there,
    and the working tree's lock must be that one or the one computed from it (pools/lock.py).
    """
    from ansible_collections.gpufleet.core.plugins.module_utils.pools.assign import (
        assign,
        check_owner_moves,
        render_pool_table,
    )
    from ansible_collections.gpufleet.core.plugins.module_utils.pools.lock import (
        LOCK_NAME,
        lock_text_at,
        parse_lock,
        parse_lock_owners,
        read_lock,
        render_lock,
        verify_lock,
    )

    if not cluster.nodes_snapshot.is_file():
        raise RenderInputError(
            f"{cluster.nodes_snapshot}: nodes snapshot of cluster {cluster.name!r} not found (run discover first)"
        )
    ccache = cache / cluster.name if cache is not None else None
    nodes = cached_nodes(cluster, ccache)
    topo = cached_topology(cluster, nodes, ccache)
    lock_path = cluster.snapshot_dir / LOCK_NAME
    previous = working = read_lock(lock_path, cluster.name)
    owners = parse_lock_owners(lock_path.read_bytes(), str(lock_path)) if previous is not None else {}
    if base is not None:
        text = lock_text_at(base, lock_path)
        previous = parse_lock(text, f"{lock_path} (at {base})", cluster.name) if text is not None else None
        owners = parse_lock_owners(text, f"{lock_path} (at {base})")
    node_group = dict(topo.node_group) if topo is not None else {}
    assignment = assign(fleet, cluster.name, nodes, node_group, previous)
    if base is not None:
        verify_lock(lock_path, working, previous, dict(assignment.pool_of), base)
    moves: list[str] = []
    refused: Exception | None = None
    if previous:
        try:
            moves = check_owner_moves(fleet, assignment, previous, str(lock_path), owners)
        except GpufleetError as exc:  # raised after the render's own checks (render/tree.py): a
            refused = exc  # colliding or reserved name explains more than the moves it causes
    members = {p.name: list(assignment.members(p.name)) for p in fleet.cluster_pools(cluster.name)}
    pool_of = {n: p for p, ns in members.items() for n in ns}
    slurm_nodes = sorted(n for p in fleet.cluster_pools(cluster.name) if p.kind == "slurm" for n in members[p.name])
    warnings = topology_guard.check(fleet, cluster, topo, slurm_nodes)
    return ClusterInputs(
        cluster=cluster,
        nodes=nodes,
        topology=topo,
        members=members,
        pool_of=pool_of,
        lock_path=lock_path,
        lock_bytes=_as_bytes(render_lock(assignment)),
        pool_table=_as_text(render_pool_table(assignment)),
        assignment=assignment,
        extra={"warnings": warnings, "moves": moves, "refused_moves": refused},
    )


def _as_bytes(x: Any) -> bytes:
    return x if isinstance(x, bytes) else str(x).encode("utf-8")


def _as_text(x: Any) -> str:
    return x.decode("utf-8") if isinstance(x, bytes) else str(x)


def pools_by_kind(fleet: Fleet, cluster: str, kind: str) -> list[Pool]:
    return sorted((p for p in fleet.cluster_pools(cluster) if p.kind == kind), key=lambda p: p.name)
