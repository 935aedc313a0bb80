"""Each snapshot is read and hashed once per render: the no-change digest and the parse-cache keys
share one :class:`InputDigests` (a 55 MB fabric dump used to be hashed twice per uncached render)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

import pytest
from render_fixtures import make_inventory

from ansible_collections.gpufleet.core.plugins.module_utils.model.nodes import NodeInfo
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.render import cache as render_cache
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_and_write, render_fleet


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Counter:
    """Counts the files hashed (render_cache.sha256_file) by name, relative to the inventory."""
    monkeypatch.setenv("GPUFLEET_CACHE_DIR", str(tmp_path / "render-cache"))
    counts: Counter = Counter()
    real = render_cache.sha256_file

    def counting(path: Path) -> str:
        counts[Path(path).name] += 1
        return real(path)

    monkeypatch.setattr(render_cache, "sha256_file", counting)
    return counts


def test_uncached_render_hashes_each_snapshot_once(hashed: Counter, tmp_path: Path) -> None:
    inv = make_inventory(tmp_path / "inv")
    out = tmp_path / "gitops"
    result = render_and_write(inv, out)[2]
    assert result is not None  # a full render, parse caches empty
    entries = sorted(p.name.split("-")[0] for p in render_cache.cache_dir(out).glob("gpu-east/*.json"))
    assert entries == ["nodes", "topology"]  # both parse caches were keyed (by the shared digests)
    assert hashed["fabric.ibnetdiscover"] == 1 and hashed["nodes.yaml"] == 1, hashed


def test_cached_and_noop_renders_hash_each_snapshot_once(hashed: Counter, tmp_path: Path) -> None:
    inv = make_inventory(tmp_path / "inv")
    out = tmp_path / "gitops"
    render_and_write(inv, out)
    render_and_write(inv, out)  # the first one wrote the pool lock, so it recorded no state
    (render_cache.cache_dir(out) / "state.json").unlink()  # parse caches kept: a full render from them
    hashed.clear()
    result = render_and_write(inv, out)[2]
    assert result is not None
    assert hashed["fabric.ibnetdiscover"] == 1 and hashed["nodes.yaml"] == 1, hashed
    hashed.clear()
    result = render_and_write(inv, out)[2]
    assert result is None  # the no-change fast path
    assert hashed["fabric.ibnetdiscover"] == 1 and hashed["nodes.yaml"] == 1, hashed


def test_digests_see_new_bytes_per_render(tmp_path: Path) -> None:
    """One InputDigests per render: a dump edited between renders changes the digest."""
    inv = make_inventory(tmp_path / "inv")
    fleet = load_fleet(inv)
    before = render_cache.input_digest(fleet)
    assert render_cache.input_digest(fleet) == before
    dump = inv / "snapshots/gpu-east/fabric.ibnetdiscover"
    dump.write_bytes(dump.read_bytes() + b"\n")
    assert render_cache.input_digest(fleet) != before
    digests = render_cache.InputDigests()
    assert digests.file(dump) == render_cache.sha256_file(dump) and digests.file(tmp_path / "absent") is None


def test_nodes_cache_round_trip(tmp_path: Path) -> None:
    """Every NodeInfo field survives the parse cache, labels that are not a dict included."""
    nodes = (
        NodeInfo("a", 8, "H100", "dom.1", {"x": "1"}, 224_000, 2 << 40),
        NodeInfo("b", labels=MappingProxyType({"y": ""})),
    )
    render_cache._cache_put(tmp_path, "nodes-k.json", render_cache._nodes_to_json(nodes), "nodes")
    back = render_cache._nodes_from_json(render_cache._cache_get(tmp_path, "nodes-k.json"))

    def fields(n: NodeInfo) -> list:
        return [dict(v) if isinstance(v, Mapping) else v for v in (getattr(n, f.name) for f in dataclasses.fields(n))]

    assert [fields(n) for n in back] == [fields(n) for n in nodes]
    assert [dict(n.labels) for n in back] == [{"x": "1"}, {"y": ""}]


def test_render_without_cache_hashes_nothing(hashed: Counter, tmp_path: Path) -> None:
    """Parse-cache keys are only worked out when there is a cache to look in."""
    fleet = load_fleet(make_inventory(tmp_path / "inv"))
    assert render_fleet(fleet).files
    assert not hashed
