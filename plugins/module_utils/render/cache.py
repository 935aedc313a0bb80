"""The render cache: parsed snapshots and the no-change fast path, outside the repository.

Both live under :func:`cache_dir` (``$GPUFLEET_CACHE_DIR``, else ``$XDG_CACHE_HOME/gpufleet``) and
are only ever an optimisation: a miss, an unreadable entry or code that cannot be read means
parse and render again, with the same bytes as a result.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import operator
import os
import sys
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.deps import missing
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Cluster, Fleet
from ansible_collections.gpufleet.core.plugins.module_utils.model.inventory import vars_files
from ansible_collections.gpufleet.core.plugins.module_utils.model.nodes import NodeInfo, load_nodes
from ansible_collections.gpufleet.core.plugins.module_utils.pools.lock import LOCK_NAME
from ansible_collections.gpufleet.core.plugins.module_utils.render import writer as tree_writer
from ansible_collections.gpufleet.core.plugins.module_utils.topology import topology_load
from ansible_collections.gpufleet.core.plugins.module_utils.topology.topology_model import Topology, TreeSwitch

try:
    import yaml
except ImportError:  # importing works without it; the first use raises a clear error
    yaml = missing("yaml", "PyYAML")


# ------------------------------------------------------------------ parse cache
#
# Parsing a 10,000-node snapshot (YAML) and a 55 MB ibnetdiscover dump takes most of a render, and
# snapshots change far less often than the inventory. Parsed results are kept as JSON in a cache
# directory (cache_dir below, outside the repository), keyed by the sha256 of the input bytes,
# the settings that shape the result and the parsing code; a miss or an unreadable entry parses again.

_CODE_DIR = Path(__file__).resolve().parent.parent  # plugins/module_utils


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
    try:
        with zipfile.ZipFile(archive) as zf:
            names = sorted(n for n in zf.namelist() if n.startswith(prefix) and n.endswith(".py"))
            found = {n[len(prefix) :]: zf.read(n) for n in names}
    except (OSError, zipfile.BadZipFile):
        return None
    return found or None


def sha256_file(path: Path) -> str:
    """sha256 (hex) of a file's bytes, read in 1 MiB blocks (a 55 MB fabric dump is never held whole)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


class Memo:
    """Parsed snapshots kept in memory for the renders of one call that reads two revisions of an
    inventory (a review renders its base and its head): a snapshot both hold with the same bytes is
    parsed once. Keyed like the parse cache (the content's sha256, the settings, the code), so a
    changed snapshot is parsed on its own side; the code is read and hashed once too."""

    def __init__(self) -> None:
        self.parsed: dict[str, Any] = {}
        self.code: tuple[dict[str, bytes] | None, str | None] | None = None


class InputDigests:
    """The digests one render needs, each input read and hashed once: the no-change digest
    (:func:`input_digest`) and the parse-cache keys (:func:`cached_nodes`, :func:`cached_topology`)
    share them. One instance per render (files may change between renders), None for a render
    that was not handed one (then each call makes its own). ``memo``: shared with the other
    renders of the same call (see :class:`Memo`)."""

    def __init__(self, memo: Memo | None = None) -> None:
        self._files: dict[Path, str | None] = {}
        self._code: tuple[dict[str, bytes] | None, str | None] | None = None
        self.memo = memo

    def file(self, path: Path | None) -> str | None:
        """sha256 of the regular file at ``path``; None when there is none (or it cannot be read)."""
        if path is None:
            return None
        if path not in self._files:
            try:
                self._files[path] = sha256_file(path) if path.is_file() else None
            except OSError:
                self._files[path] = None
        return self._files[path]

    def _code_pair(self) -> tuple[dict[str, bytes] | None, str | None]:
        if self._code is None and self.memo is not None:
            self._code = self.memo.code
        if self._code is None:
            files = code_files()
            self._code = (files, _key(*(_key(name, data) for name, data in sorted(files.items()))) if files else None)
            if self.memo is not None:
                self.memo.code = self._code
        return self._code

    def code_files(self) -> dict[str, bytes] | None:
        """:func:`code_files`, read once."""
        return self._code_pair()[0]

    def code(self) -> str | None:
        """One digest of every module_utils file (a hand-kept list of the parsing code would go stale
        when a parser gains a helper module); None when the code cannot be read (caches are off)."""
        return self._code_pair()[1]


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
        tmp.write_text(json.dumps(data, separators=(",", ":"), default=_jsonable), encoding="utf-8")
        os.replace(tmp, cache / name)
    except OSError:
        pass


# every NodeInfo field, so a field added later cannot silently drop out of cached renders
_NODE_FIELDS = tuple(f.name for f in dataclasses.fields(NodeInfo))


_node_row = operator.attrgetter(*_NODE_FIELDS)


def _nodes_to_json(nodes: tuple[NodeInfo, ...]) -> list:
    return [_node_row(n) for n in nodes]  # tuples, written as JSON arrays (labels: see _jsonable)


def _jsonable(value: Any) -> Any:
    """json.dumps ``default``: mappings that are not dicts (a NodeInfo's labels may be one) as dicts."""
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


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


def _memoized(
    cache: Path | None,
    digests: InputDigests | None,
    kind: str,
    source: Path | None,
    also: tuple[Path, ...],
    settings: str,
    parse: Callable[[], Any],
    codec: tuple[Callable[[Any], Any], Callable[[Any], Any]],
) -> Any:
    """``parse()`` kept by the digests of ``source`` (the file it reads), of the files it ``also``
    reads (a missing one counts as empty), ``settings`` and the code: from the render's memo, else
    the cache directory, else parsed (then kept in both; a None result is not written). Without a
    cache or a memo, or with ``source`` or the code unreadable, it just parses (which raises the clear
    error for a missing file)."""
    digests = digests or InputDigests()
    if cache is None and digests.memo is None:  # nothing to keep it in: nothing is hashed
        return parse()
    digest, code = digests.file(source), digests.code()
    if digest is None or code is None:
        return parse()
    key = _key(digest, *(digests.file(p) or "" for p in also), settings, code)
    name, memo = f"{kind}-{key}.json", digests.memo
    if memo is not None and name in memo.parsed:
        return memo.parsed[name]
    to_json, from_json = codec
    value = None
    hit = _cache_get(cache, name)
    if hit is not None:
        try:
            value = from_json(hit)
        except (KeyError, TypeError, ValueError, IndexError):
            value = None
    if value is None:
        value = parse()
        if value is not None:
            _cache_put(cache, name, to_json(value), kind)
    if memo is not None:
        memo.parsed[name] = value
    return value


def _nodes_from_cached(data: Any) -> tuple[NodeInfo, ...]:
    if not isinstance(data, list):
        raise TypeError("not a list")
    return _nodes_from_json(data)


def _topo_from_cached(data: Any) -> Any:
    if not isinstance(data, dict):
        raise TypeError("not a mapping")
    return _topo_from_json(data)


def cached_nodes(cluster: Cluster, cache: Path | None, digests: InputDigests | None = None) -> tuple[NodeInfo, ...]:
    """The cluster's nodes snapshot, parsed once per snapshot bytes."""
    return _memoized(
        cache,
        digests,
        "nodes",
        cluster.nodes_snapshot,
        (),
        "",
        lambda: load_nodes(cluster.nodes_snapshot),
        (_nodes_to_json, _nodes_from_cached),
    )


def cached_topology(
    cluster: Cluster, nodes: tuple[NodeInfo, ...], cache: Path | None, digests: InputDigests | None = None
) -> Any | None:
    """The cluster's topology (``topology.topology_load.cluster_topology``), parsed once per fabric input,
    nodes snapshot (its NVLink domains) and settings."""
    fab = cluster.fabric
    if fab.source == "none":
        return None
    settings = json.dumps(
        [fab.source, fab.node_name_map, list(fab.exclude_hosts), list(fab.exclude_switches), [n.name for n in nodes]],
        sort_keys=True,
    )
    src = cluster.fabric_input
    return _memoized(
        cache,
        digests,
        "topology",
        src,
        (cluster.nodes_snapshot,) if src != cluster.nodes_snapshot else (),  # its NVLink domains
        settings,
        lambda: topology_load.cluster_topology(cluster, nodes),
        (_topo_to_json, _topo_from_cached),
    )


# ------------------------------------------------------------------ no-change fast path
#
# A render is a pure function of its inputs (inventory vars, snapshots, pool locks) and of this
# code. The digest of all of them is kept in a cache directory outside the repository (cache_dir).
# When the digest is unchanged and every owned file still has the bytes the manifest records, the
# tree is current: nothing is parsed, rendered or written.


def input_digest(fleet: Fleet, digests: InputDigests | None = None) -> str | None:
    """Digest of everything a render reads (inputs and the module_utils code, from disk or from the
    AnsiballZ zip), or None when the code cannot be read: then there is no fast path. ``digests``:
    the render's :class:`InputDigests`, so that the parse caches do not hash the snapshots again."""
    digests = digests or InputDigests()
    code = digests.code_files()
    if not code:
        return None

    h = hashlib.sha256(b"gpufleet-render-2\0")
    h.update(f"{sys.version_info[0]}.{sys.version_info[1]} yaml {yaml.__version__}\0".encode())

    def add(tag: str, path: Path | None) -> None:
        h.update(tag.encode() + b"\0")
        h.update((digests.file(path) or "<missing>").encode())

    for name, data in sorted(code.items()):
        h.update(f"code/{name}\0".encode())
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    inv = fleet.inventory_dir
    for f in vars_files(inv):
        add(f"vars/{f.relative_to(inv).as_posix()}", f)
    for name in sorted(fleet.clusters):
        c = fleet.clusters[name]
        add(f"{name}/nodes", c.nodes_snapshot)
        add(f"{name}/fabric", c.fabric.path)
        add(f"{name}/lock", c.snapshot_dir / LOCK_NAME)
    return h.hexdigest()


def cache_dir(out: Path) -> Path:
    """The render cache of tree ``out``: ``$GPUFLEET_CACHE_DIR`` or ``$XDG_CACHE_HOME/gpufleet`` (default
    ``~/.cache/gpufleet``), then ``render/<sha256 of the tree's absolute path>``; never in the tree
    or the repository."""
    base = os.environ.get("GPUFLEET_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "gpufleet"
    )
    key = hashlib.sha256(str(out.absolute()).encode("utf-8")).hexdigest()[:24]
    return Path(base) / "render" / key


def _cache_path(out: Path) -> Path:
    return cache_dir(out) / "state.json"


def cached_current(out: Path, digest: str | None) -> int | None:
    """Number of owned files when ``out`` is known current for ``digest``; None to render."""
    if digest is None:
        return None
    try:
        cache = json.loads(_cache_path(out).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    manifest = tree_writer.manifest_digest(out)
    if manifest is None or cache.get("inputs") != digest or cache.get("manifest") != manifest:
        return None
    return _owned_current(out)


def _owned_current(out: Path) -> int | None:
    """Every check the full render runs on ``out`` (no link, no Git entry a checkout hides, the closed
    tree), then the number of owned files when each still has its recorded bytes (read without following
    a link), else None."""
    tree_writer.check_confined(out)  # a link or a submodule added since: refused, never "up to date"
    owned, found = tree_writer.read_manifests(out)
    tree_writer.check_closed(out, owned, found)  # a file added since: refused, never "up to date"
    for rel, sha in owned.items():
        try:
            data = tree_writer.read_owned(out / rel)
        except OSError:
            return None
        if data is None or hashlib.sha256(data).hexdigest() != sha:
            return None
    return len(owned)


def record_cache(out: Path, digest: str | None) -> None:
    """Remember that ``out`` is current for ``digest`` (best effort: a cache, never required)."""
    if digest is None:
        return
    try:
        manifest = tree_writer.manifest_digest(out)
        if manifest is None:
            return
        path = _cache_path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps({"inputs": digest, "manifest": manifest}) + "\n")
        os.replace(tmp, path)
    except OSError:
        pass
