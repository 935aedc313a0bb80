"""fleet_maintenance in-process on a real Git work tree: check mode writes nothing, start writes the
inventory file and the rendered maintenance, a second start of the same name fails, end returns the tree."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from module_harness import run_module

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "integration"))

from scale_gitrepo import INV, Repos, make_fleet_repos

MAINT = f"{INV}/group_vars/all/maintenance.yml"


@pytest.fixture
def repos(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Repos:
    monkeypatch.setenv("GPUFLEET_CACHE_DIR", str(tmp_path / "render-cache"))
    return make_fleet_repos(tmp_path)


def test_fleet_maintenance(repos: Repos) -> None:
    inv = str(repos.work / INV)
    args = {
        "inventory_dir": inv,
        "action": "start",
        "name": "psu-swap",
        "cluster": "gpu-east",
        "nodes": "gpu[041-042]",
        "reason": "PSU swap RMA-4411",
    }
    r = run_module("fleet_maintenance", args, check=True, diff=True)
    assert r["changed"] is True and repos.git("status", "--porcelain") == ""
    assert "| research | `psu-swap` | 2 of 14 |" in r["plan_markdown"] and "psu-swap" in r["diff"]["after"]
    r = run_module("fleet_maintenance", args)
    assert r["changed"] is True and r["files"] == [
        "clusters/gpu-east/MAINTENANCE.md",
        "clusters/gpu-east/maintenance.yaml",
    ]
    assert MAINT in repos.git("status", "--porcelain", "--untracked-files=all")
    again = run_module("fleet_maintenance", args)
    assert again["failed"] is True and "already in" in again["msg"]
    bad = run_module("fleet_maintenance", {**args, "name": "other", "nodes": "gpu[900-901]"})
    assert bad["failed"] is True and "gpufleet_maintenance[1].nodes: not nodes of gpu-east" in bad["msg"]
    r = run_module("fleet_maintenance", {"inventory_dir": inv, "action": "end", "name": "psu-swap"})
    assert r["changed"] is True and r["plan_markdown"] == "No node is in maintenance.\n"
    assert repos.git("status", "--porcelain", "--untracked-files=all") == ""
    half = run_module("fleet_maintenance", {**args, "start": "2026-12-01T06:00:00Z"})
    assert half["failed"] is True and "duration" in half["msg"]
