"""The writer's path check: plain relative paths pass as they are, everything else is normalised or
refused exactly as PurePosixPath reads it (the fast path skips PurePosixPath for the plain ones)."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.render import writer as tree_writer


@pytest.mark.parametrize("path", ["a", "a/b.yaml", "clusters/x/tenants/t-1/apps/10-a.yaml", "a b/ü", ".hidden/x"])
def test_plain_paths_unchanged(path: str) -> None:
    assert tree_writer._check_rel(path) == path == PurePosixPath(path).as_posix()


@pytest.mark.parametrize(("path", "normalised"), [("a//b", "a/b"), ("a/./b", "a/b"), ("a/b/", "a/b"), ("./a", "a")])
def test_paths_normalised_as_before(path: str, normalised: str) -> None:
    assert tree_writer._check_rel(path) == normalised


@pytest.mark.parametrize("path", ["", "/abs", "..", "a/../b", "a\\b", ".", "./"])
def test_bad_paths_refused(path: str) -> None:
    with pytest.raises(tree_writer.TreeError, match="bad relative path"):
        tree_writer._check_rel(path)


@pytest.mark.parametrize("path", [tree_writer.MANIFEST, f"{tree_writer.MANIFEST}/x", f"./{tree_writer.MANIFEST}"])
def test_manifest_refused(path: str) -> None:
    with pytest.raises(tree_writer.TreeError, match="may not produce"):
        tree_writer._check_rel(path)


def test_write_refuses_bad_paths_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "gitops"
    with pytest.raises(tree_writer.TreeError, match="bad relative path"):
        tree_writer.write(out, {"ok.yaml": b"x", "../escape.yaml": b"y"})
    assert not out.exists() and not (tmp_path / "escape.yaml").exists()
    plan = tree_writer.write(out, {"a/b.yaml": b"x"})
    assert plan.added == ["a/b.yaml"] and (out / "a/b.yaml").read_bytes() == b"x"
    assert tree_writer.plan(out, {"a//b.yaml": b"x"}).unchanged == 1
