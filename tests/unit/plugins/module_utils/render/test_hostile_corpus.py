"""Bad-input corpus: every hostile or broken edit fails closed through the real CLI.

For each case of hostile_cases.CASES, on a fresh copy of the repository (the sample inventory, the
committed gitops/ tree, an ``outside`` directory standing for the rest of the disk):

* ``scripts/gpufleet.py render`` exits 2 (a clear error, not a crash: no traceback);
* the message matches the case's expectation, which names the file and the key path or line;
* nothing at all changed: the whole copy (tree, inventory, pool locks, the outside directory,
  side directories next to the tree) is snapshotted with ``lstat`` before and after, and the
  copy's gitops/ still equals the committed gitops/ byte for byte.

The render cache (``GPUFLEET_CACHE_DIR``, outside the repository, content-addressed) is the only
place a failed run may write, and it is not part of the snapshot.

The valid variants (hostile_cases.VALID) must render (exit 0): Ansible accepts them too.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from hostile_cases import CASES, INV, VALID, snapshot
from render_fixtures import REPO

CLI = [sys.executable, str(REPO / "scripts" / "gpufleet.py"), "render"]


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    t = tmp_path_factory.mktemp("hostile-template") / "repo"
    shutil.copytree(REPO / INV, t / INV)
    shutil.copytree(REPO / "gitops", t / "gitops")
    (t / ".git").mkdir()  # marks the repository root: the tree goes to <root>/<gitops.path>
    (t / "outside").mkdir()
    (t / "outside" / "canary.txt").write_text("must stay\n")
    return t


def fresh(template: Path, tmp_path: Path) -> Path:
    root = tmp_path / "case"
    root.mkdir()
    shutil.copytree(template, root / "repo", symlinks=True)
    return root


def run_cli(repo: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*CLI, "--inventory", str(repo / INV)], capture_output=True, text=True, cwd=repo, timeout=300, check=False
    )


def test_corpus_size_and_coverage() -> None:
    by_class = Counter(c.cls for c in CASES)
    assert len(CASES) >= 100, len(CASES)
    # class 7 (tokens): test_forge_tokens.py
    assert set(by_class) >= {1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15, 16}, by_class
    assert len({c.id for c in CASES}) == len(CASES), "duplicate case ids"


def test_template_renders_unchanged(template: Path, tmp_path: Path) -> None:
    """The unmutated copy is current: a failure below is the mutation's, not the fixture's."""
    root = fresh(template, tmp_path)
    before = snapshot(root)
    p = run_cli(root / "repo")
    assert p.returncode == 0, p.stderr
    assert "0 added, 0 changed, 0 removed" in p.stdout
    assert snapshot(root) == before


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_fails_closed(case, template: Path, tmp_path: Path) -> None:
    root = fresh(template, tmp_path)
    repo = root / "repo"
    case.mutate(repo)
    gitops = repo / "gitops"
    tree_ok = gitops.is_dir() and not any(p.is_symlink() for p in [gitops, *gitops.rglob("*")])
    pre = tree_bytes(gitops) if tree_ok else None
    before = snapshot(root)
    p = run_cli(repo)
    out = p.stdout + p.stderr
    assert p.returncode == 2, f"exit {p.returncode}, expected 2:\n{out}"
    assert "Traceback" not in out, out
    assert p.stderr.startswith("gpufleet: error: "), out
    assert re.search(case.expect, p.stderr, re.S), f"message does not match {case.expect!r}:\n{p.stderr}"
    assert snapshot(root) == before, "the failed render changed files"
    if pre is not None:
        assert tree_bytes(gitops) == pre
        if not case.id.startswith(("crash-manifest", "tree-")):  # those cases edit the tree itself
            assert pre == tree_bytes(REPO / "gitops"), "the committed tree is not byte-for-byte the same"


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_variant_renders(name: str, template: Path, tmp_path: Path) -> None:
    root = fresh(template, tmp_path)
    repo = root / "repo"
    VALID[name](repo)
    p = run_cli(repo)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    if name == "allow-unmatched-hosts":
        assert "WARNING" in p.stderr and "'gpu917'" in p.stderr and "gpu017" not in p.stderr
    if name in ("vault-inline-unrelated", "vault-whole-file", "tenants-json", "hidden-and-backup-files-ignored"):
        assert "0 added, 0 changed, 0 removed" in p.stdout, p.stdout  # same model, same tree
        assert tree_bytes(repo / "gitops") == tree_bytes(REPO / "gitops")
    assert (repo / "outside" / "canary.txt").read_text() == "must stay\n"
