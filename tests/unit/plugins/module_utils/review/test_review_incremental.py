"""`review --base` renders only the clusters a change touches (review/incremental.py), and its Markdown
is byte for byte the full review's, on generated changes of every kind: a tenant's file, a pool, a
platform setting of one cluster, a fleet-wide setting, a chart version, a fabric snapshot, a file outside
the inventory. What may not be scoped to one cluster renders everything (deny by default)."""

from __future__ import annotations

import os
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from render_fixtures import GIT_ENV, cut_last_cable, make_big_inventory, split_tenants

from ansible_collections.gpufleet.core.plugins.module_utils.render import tree as render_tree
from ansible_collections.gpufleet.core.plugins.module_utils.review.change import review_change
from ansible_collections.gpufleet.core.plugins.module_utils.review.review_markdown import render_markdown

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True, env=env).stdout


@pytest.fixture(scope="module")
def base_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three clusters (each its own fabric, pools and tenants), one file per tenant, rendered, committed."""
    root = tmp_path_factory.mktemp("incremental")
    make_big_inventory(root / "gen", nodes=64, tenants=3, fabric=True, clusters=3)
    repo = root / "main"
    shutil.copytree(root / "gen" / "inv", repo / "inv")
    split_tenants(repo / "inv")
    git(repo, "init", "-q", "-b", "main")
    render_tree.render_and_write(repo / "inv", repo / "gitops")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "fleet")
    return repo


def _vars(repo: Path, name: str, fn) -> None:
    f = repo / "inv" / "group_vars" / "all" / name
    data = yaml.safe_load(f.read_text(encoding="utf-8"))
    fn(data)
    f.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def _tenant(repo: Path) -> None:
    def go(data: dict) -> None:
        t = next(iter(data.values()))
        t["namespaces"] = [*t.get("namespaces", []), "review"]

    _vars(repo, "tenants/c01-team002.yml", go)


def _pool(repo: Path) -> None:  # a pool of gpu-01 grows by 8 nodes (taken from the spare)
    _vars(
        repo,
        "pools.yml",
        lambda d: next(p for p in d["gpufleet_pools"] if p["name"] == "c01-team000-a")["size"].update(nodes=16),
    )


def _platform(repo: Path) -> None:  # one cluster's platform setting
    def go(data: dict) -> None:
        c = next(c for c in data["gpufleet_clusters"] if c["name"] == "gpu-01")
        c["components"]["shared_storage"]["nfs_server"] = "nfs2.gpu-01.example.internal"

    _vars(repo, "clusters.yml", go)


def _fleet_wide(repo: Path) -> None:
    _vars(repo, "fleet.yml", lambda d: d.update(gpufleet_image_mirror="mirror.example.internal/proxy"))


def _version(repo: Path) -> None:
    _vars(repo, "fleet.yml", lambda d: d.update(gpufleet_versions={"kueue": {"version": "0.99.0"}}))


def _fabric(repo: Path) -> None:
    cut_last_cable(repo / "inv" / "snapshots" / "gpu-01" / "fabric.ibnetdiscover")


def _outside(repo: Path) -> None:
    (repo / "docs").mkdir(exist_ok=True)
    (repo / "docs" / "notes.md").write_text("a file outside the inventory\n", encoding="utf-8")


def _tenant_unrendered(repo: Path) -> None:  # the tenant's change, the tree not re-rendered: stale
    _tenant(repo)


# change -> (edit, re-render, the clusters the incremental review renders; None: all of them)
CHANGES = {
    "tenant": (_tenant, True, {"gpu-01"}),
    "pool": (_pool, True, {"gpu-01"}),
    "platform": (_platform, True, {"gpu-01"}),
    "fleet-wide": (_fleet_wide, True, None),
    "version": (_version, True, None),
    "fabric": (_fabric, True, {"gpu-01"}),
    "outside": (_outside, True, None),
    "tenant-not-rendered": (_tenant_unrendered, False, {"gpu-01"}),
}


@pytest.mark.parametrize("kind", sorted(CHANGES))
def test_incremental_review_is_the_full_review(base_repo: Path, tmp_path: Path, kind: str, monkeypatch) -> None:
    edit, rerender, expected = CHANGES[kind]
    repo = tmp_path / "repo"
    shutil.copytree(base_repo, repo)
    git(repo, "checkout", "-qb", "pr")
    edit(repo)
    if rerender:
        render_tree.render_and_write(repo / "inv", repo / "gitops")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", kind)

    rendered: list[list[str] | None] = []
    real = render_tree.render_fleet

    def spy(fleet, *a, **kw):
        rendered.append(None if kw.get("clusters") is None else sorted(kw["clusters"]))
        return real(fleet, *a, **kw)

    monkeypatch.setattr(render_tree, "render_fleet", spy)
    full = review_change(repo, "main", ["inv"], now=NOW, full=True)
    assert rendered == [None, None], "the full review renders every cluster of the head and of the base"
    rendered.clear()
    incremental = review_change(repo, "main", ["inv"], now=NOW)
    want = None if expected is None else sorted(expected)
    assert rendered == [want, want], f"{kind}: the clusters rendered at the head and at the base"
    assert render_markdown(incremental) == render_markdown(full)
    assert incremental.ok == full.ok
    if kind == "tenant":
        assert full.ok and full.tenant_pr == "c01-team002"
    if kind == "tenant-not-rendered":
        assert not full.ok and any("is not the rendered" in p for p in full.problems)
    if kind == "pool":
        assert full.rendered and full.moves, "the pool's change moves nodes and alters rendered files"


def test_a_hand_edit_of_another_cluster_renders_it(base_repo: Path, tmp_path: Path) -> None:
    """A committed file of an untouched cluster's folder changed by hand: that cluster is rendered too,
    and the review names the drift as the full one does."""
    repo = tmp_path / "repo"
    shutil.copytree(base_repo, repo)
    git(repo, "checkout", "-qb", "pr")
    _tenant(repo)
    render_tree.render_and_write(repo / "inv", repo / "gitops")
    report = repo / "gitops" / "clusters" / "gpu-02" / "REPORT.md"
    report.write_text(report.read_text(encoding="utf-8") + "edited\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "tenant and a hand edit")
    full = review_change(repo, "main", ["inv"], now=NOW, full=True)
    incremental = review_change(repo, "main", ["inv"], now=NOW)
    assert not full.ok
    assert render_markdown(incremental) == render_markdown(full)
