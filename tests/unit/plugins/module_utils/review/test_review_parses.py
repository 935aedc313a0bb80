"""`review --base` parses each snapshot once when the base holds the same bytes: the base's render
takes the head's parses from the review's memo (keyed by content), and a changed snapshot is parsed on
each side. The Markdown is the same as with nothing shared."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from render_fixtures import GIT_ENV, cut_last_cable, edit_vars, make_inventory

from ansible_collections.gpufleet.core.plugins.module_utils.render import cache as render_cache
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_and_write
from ansible_collections.gpufleet.core.plugins.module_utils.review.change import review_change
from ansible_collections.gpufleet.core.plugins.module_utils.review.review_markdown import render_markdown
from ansible_collections.gpufleet.core.plugins.module_utils.topology import topology_load


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env={**os.environ, **GIT_ENV})


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Counter:
    """Counts the nodes-snapshot and fabric parses of the renders."""
    monkeypatch.setenv("GPUFLEET_CACHE_DIR", str(tmp_path / "render-cache"))
    counts: Counter = Counter()
    nodes, topology = render_cache.load_nodes, topology_load.cluster_topology

    def count_nodes(path):
        counts["nodes"] += 1
        return nodes(path)

    def count_topology(cluster, ns):
        counts["fabric"] += 1
        return topology(cluster, ns)

    monkeypatch.setattr(render_cache, "load_nodes", count_nodes)
    monkeypatch.setattr(topology_load, "cluster_topology", count_topology)
    return counts


class _Forgetful(dict):
    def __setitem__(self, key, value) -> None:  # a memo that keeps nothing: every render parses
        pass


def _review(repo: Path, change) -> str:
    inv = repo / "inv"
    git(repo, "init", "-q", "-b", "main")
    render_and_write(inv)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "fleet")
    git(repo, "checkout", "-qb", "pr")
    change(inv)
    render_and_write(inv)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "change")
    return render_markdown(review_change(repo, "main", ["inv"]))


def _shared_and_not(repo: Path, parses: Counter, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Counter, str, Counter]:
    cache = render_cache.cache_dir(repo / "gitops")
    parses.clear()
    shutil.rmtree(cache, ignore_errors=True)  # a CI job's cold start
    md = render_markdown(review_change(repo, "main", ["inv"]))
    shared = Counter(parses)
    parses.clear()
    shutil.rmtree(cache, ignore_errors=True)
    real = render_cache.Memo.__init__

    def forgetful(self) -> None:
        real(self)
        self.parsed = _Forgetful()

    monkeypatch.setattr(render_cache.Memo, "__init__", forgetful)
    md_unshared = render_markdown(review_change(repo, "main", ["inv"]))
    return md, shared, md_unshared, Counter(parses)


def _add_namespace(inv: Path) -> None:
    def go(data: dict) -> None:
        t = next(t for t in data["gpufleet_tenants"] if t.get("namespaces"))
        t["namespaces"].append("review")

    edit_vars(inv, "tenants.yml", go)


def test_unchanged_snapshots_are_parsed_once(tmp_path: Path, parses: Counter, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    make_inventory(repo)
    md = _review(repo, _add_namespace)
    assert "Changed inputs (1)" in md and "tenants.yml" in md
    md_shared, shared, md_unshared, unshared = _shared_and_not(repo, parses, monkeypatch)
    assert shared == {"nodes": 1, "fabric": 1}, shared  # the head's parses, reused by the base
    assert unshared == {"nodes": 2, "fabric": 2}, unshared  # the memo is what saved them
    assert md_shared == md_unshared == md


def test_a_changed_fabric_is_parsed_on_each_side(
    tmp_path: Path, parses: Counter, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    make_inventory(repo)
    md = _review(repo, lambda inv: cut_last_cable(inv / "snapshots" / "gpu-east" / "fabric.ibnetdiscover"))
    assert "fabric.ibnetdiscover" in md
    md_shared, shared, md_unshared, unshared = _shared_and_not(repo, parses, monkeypatch)
    assert shared == {"nodes": 1, "fabric": 2}, shared
    assert unshared == {"nodes": 2, "fabric": 2}, unshared
    assert md_shared == md_unshared == md
