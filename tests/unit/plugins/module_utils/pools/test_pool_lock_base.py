"""The pool lock is verified, never trusted: with ``--base REV`` (CI: the pull request's
base) the previous assignment is the lock committed at REV, a hand-edited working lock is refused
naming the nodes, and the plan names every node that changes tenant. Real git, real CLI."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hostile_cases import INV, snapshot
from render_fixtures import REPO

from ansible_collections.gpufleet.core.plugins.module_utils.pools.lock import (
    LockError,
    parse_lock,
    parse_lock_entries,
    read_lock_entries,
)

LOCK = INV / "snapshots/gpu-east/pools.lock.yaml"


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    shutil.copytree(REPO / INV, r / INV)
    shutil.copytree(REPO / "gitops", r / "gitops")
    git(r, "init", "-q", "-b", "main")
    git(r, "add", "-A")
    git(r, "commit", "-qm", "base")
    return r


def cli(repo: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO / "scripts/gpufleet.py"), "render", "--inventory", str(repo / INV), *extra],
        capture_output=True,
        text=True,
        cwd=repo,
        check=False,
        timeout=300,
    )


def swap(text: str, a: str, b: str) -> str:
    pa = next(line for line in text.splitlines() if line.startswith(f"  {a}:")).split(": ")[1]
    pb = next(line for line in text.splitlines() if line.startswith(f"  {b}:")).split(": ")[1]
    return text.replace(f"  {a}: {pa}\n", f"  {a}: {pb}\n").replace(f"  {b}: {pb}\n", f"  {b}: {pa}\n")


def test_hand_edited_lock_refused_against_base(repo: Path) -> None:
    lock = repo / LOCK
    lock.write_text(swap(lock.read_text(), "gpu003", "gpu009"))  # research <-> llm-pretrain
    before = snapshot(repo.parent)
    for extra in ((), ("--check",)):
        p = cli(repo, "--base", "HEAD", *extra)
        assert p.returncode == 2, p.stdout + p.stderr
        assert "Traceback" not in p.stderr
        assert "pools.lock.yaml: nodes: not the assignment gpufleet computes from the lock at HEAD" in p.stderr
        assert "gpu003: lock says pretrain, computed research-batch" in p.stderr
        assert "gpu009: lock says research-batch, computed pretrain" in p.stderr
    assert snapshot(repo.parent) == before


def test_without_base_the_swap_is_a_fixed_point_documented_limit(repo: Path) -> None:
    """Without --base the working lock is the only previous state: the swap renders (both pools keep
    their size). CI must pass --base; docs/threat-model.md says so. This test keeps that honest."""
    lock = repo / LOCK
    lock.write_text(swap(lock.read_text(), "gpu003", "gpu009"))
    assert cli(repo).returncode == 0


def test_stale_lock_after_a_resize_renders_and_names_the_moves(repo: Path) -> None:
    pools = repo / INV / "group_vars/all/pools.yml"
    text = pools.read_text()
    pools.write_text(text.replace("      nodes: 12\n", "      nodes: 14\n", 1))
    p = cli(repo, "--base", "HEAD", "--check")
    assert p.returncode == 1, p.stdout + p.stderr
    p = cli(repo, "--base", "HEAD")
    assert p.returncode == 0, p.stderr
    moves = [line for line in p.stdout.splitlines() if line.startswith("gpufleet: pool plan gpu-east: node ")]
    assert len(moves) == 2, p.stdout
    assert all("pool spare (tenant -) -> pool research-batch (tenant research)" in m for m in moves), moves
    # the lock now is the computed one: verified again against the same base
    assert cli(repo, "--base", "HEAD", "--check").returncode == 0


def test_bad_base_revision(repo: Path) -> None:
    for rev in ("no-such-branch", "--upload-pack=x"):
        p = cli(repo, "--base", rev)
        assert p.returncode == 2, p.stderr
        assert "--base" in p.stderr and "Traceback" not in p.stderr


def test_one_parse_gives_both_maps() -> None:
    """``read_lock_entries`` (the render's one parse) gives the node map ``parse_lock`` gives and the
    lock's owners as written."""
    text = (REPO / LOCK).read_text()
    nodes, owners = read_lock_entries(REPO / LOCK, "gpu-east") or ({}, {})
    assert nodes and owners
    assert (nodes, owners) == (parse_lock(text, "l", "gpu-east"), yaml.safe_load(text)["owners"])
    with pytest.raises(LockError, match="cluster: is 'gpu-east', expected 'other'"):
        parse_lock_entries(text, "l", "other")
