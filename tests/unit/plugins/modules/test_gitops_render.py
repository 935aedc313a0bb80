"""gitops_render in-process: check mode writes nothing, a render writes, a rerun changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from module_harness import hide_library, run_module
from render_fixtures import make_inventory, tree_state


@pytest.fixture(autouse=True)
def _render_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUFLEET_CACHE_DIR", str(tmp_path / "render-cache"))


def test_check_write_rerun(tmp_path: Path) -> None:
    inv = make_inventory(tmp_path)
    dest = tmp_path / "gitops"
    args = {"inventory_dir": str(inv), "gitops_dir": str(dest)}
    r = run_module("gitops_render", args, check=True, diff=True)
    assert r["changed"] is True and not dest.exists() and r["files_added"]
    assert any(d["after_header"].endswith("root-app.yaml") for d in r["diff"])
    r = run_module("gitops_render", args)
    written = sorted(tree_state(dest))
    assert r["changed"] is True and [f for f in written if not f.endswith(".gpufleet-manifest")] == r["files_added"]
    assert ".gpufleet-manifest" in written and "clusters/gpu-east/tenants/research/.gpufleet-manifest" in written
    r = run_module("gitops_render", {"inventory_dir": str(inv), "dest": str(dest)})  # the alias
    assert r["changed"] is False and r["files_added"] == [] and r["dest"] == str(dest)


def test_bad_input_fails_and_writes_nothing(tmp_path: Path) -> None:
    inv = make_inventory(tmp_path)
    (inv / "snapshots/gpu-east/nodes.yaml").unlink()
    r = run_module("gitops_render", {"inventory_dir": str(inv), "gitops_dir": str(tmp_path / "gitops")})
    assert r["failed"] is True and "nodes.yaml" in r["msg"] and not (tmp_path / "gitops").exists()


def test_missing_library_is_named(tmp_path: Path, monkeypatch) -> None:
    hide_library(monkeypatch, "yaml")
    r = run_module("gitops_render", {"inventory_dir": str(tmp_path)})
    assert r["failed"] is True and "PyYAML" in r["msg"]
