"""fleet_scale and fleet_publish in-process on a real Git work tree and bare remote (git command line):
check mode plans and pushes nothing, a run writes or pushes once, a rerun changes nothing, bad input
fails with the pool or file named."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from module_harness import hide_library, run_module

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "integration"))

from scale_gitrepo import INV, Repos, make_fleet_repos

POOLS = f"{INV}/group_vars/all/pools.yml"


@pytest.fixture
def repos(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Repos:
    monkeypatch.setenv("GPUFLEET_CACHE_DIR", str(tmp_path / "render-cache"))
    return make_fleet_repos(tmp_path)


def test_fleet_scale(repos: Repos) -> None:
    args = {"inventory_dir": str(repos.work / INV), "pool": "research-batch", "size": 14}
    r = run_module("fleet_scale", args, check=True, diff=True)
    assert r["changed"] is True and r["written"] == [] and repos.git("status", "--porcelain") == ""
    assert r["plan"]["pool_nodes"]["research-batch"] == {"before": 12, "after": 14} and r["diff"]
    r = run_module("fleet_scale", args)
    assert r["changed"] is True and POOLS in repos.git("status", "--porcelain")
    assert "nodes: 14" in (repos.work / POOLS).read_text()
    assert run_module("fleet_scale", args)["changed"] is False
    r = run_module("fleet_scale", {**args, "pool": "no-such-pool"})
    assert r["failed"] is True and "no-such-pool" in r["msg"]


def test_fleet_publish(repos: Repos) -> None:
    run_module("fleet_scale", {"inventory_dir": str(repos.work / INV), "pool": "research-batch", "size": 14})
    args = {"inventory_dir": str(repos.work / INV), "open_pull_request": False}
    r = run_module("fleet_publish", args, check=True)
    assert r["branch"].startswith("gpufleet/render-") and r["pushed"] is False and repos.remote_branches() == ["main"]
    assert POOLS in [f["path"] for f in r["files"]]
    r = run_module("fleet_publish", args)
    assert r["changed"] is True and r["pushed"] is True and repos.remote_branches() == sorted(["main", r["branch"]])
    again = run_module("fleet_publish", {**args, "branch": r["branch"]})
    assert again["pushed"] is False


def test_fleet_publish_refuses_an_unrendered_change(repos: Repos) -> None:
    pools = repos.work / POOLS
    pools.write_text(pools.read_text().replace("nodes: 12", "nodes: 14", 1))
    r = run_module("fleet_publish", {"inventory_dir": str(repos.work / INV), "open_pull_request": False})
    assert r["failed"] is True and "render" in r["msg"] and repos.remote_branches() == ["main"]


def test_missing_ruamel_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hide_library(monkeypatch, "ruamel")
    r = run_module("fleet_scale", {"inventory_dir": str(tmp_path), "pool": "p", "size": 1})
    assert r["failed"] is True and "ruamel.yaml" in r["msg"]
