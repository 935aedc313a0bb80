"""`ansible-playbook site.yml` for real, as users type it (README), on the sample inventory.

Proves: a render from scratch produces the committed gitops/ byte for byte; a second run reports
changed=0; check mode writes nothing and --diff shows what would change; a broken inventory fails
in the validation step (before any stage runs) with a clear, file/line-naming message. Timings are
in bench/bench_site.py, never asserted here.
"""

from __future__ import annotations

import filecmp
import hashlib
import importlib.util
import re
import shutil
import sys
from pathlib import Path

import pytest
from playbook_runner import playbook_env, recap_counts, run_playbook

REPO = Path(__file__).resolve().parents[2]


def require_path(path: Path, why: str = "") -> Path:
    """require_path of the lead's tests/conftest.py (skip locally, fail with CI=true), loaded by path."""
    name = "gpufleet_tests_conftest"  # the same name other tests use, so it is loaded once
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / "tests" / "conftest.py")
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name].require_path(path, why)


pytestmark = pytest.mark.ansible

SAMPLE = REPO / "inventories" / "sample"
COMMITTED = REPO / "gitops"


def playbook(inventory: str, *args: str, cwd: Path = REPO) -> tuple[int, str, dict[str, int]]:
    """``ansible-playbook -i inventory site.yml args`` as a user at the repository root types it."""
    proc = run_playbook(inventory, Path("site.yml"), *args, env=playbook_env(user=True), ok=None, cwd=cwd)
    out = proc.stdout + proc.stderr
    return proc.returncode, out, recap_counts(out)


def tree(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture()
def work(tmp_path: Path) -> Path:
    """A copy of the sample inventory (render writes pool locks next to it) and an empty tree dir."""
    require_path(COMMITTED / "README.md", "the committed sample gitops/ tree")
    shutil.copytree(SAMPLE, tmp_path / "inv")
    return tmp_path


def site(work: Path, *extra: str) -> tuple[int, str, dict[str, int]]:
    return playbook(str(work / "inv"), "-e", f"gpufleet_gitops_dir={work / 'gitops'}", *extra)


def test_render_from_scratch_is_the_committed_tree_then_idempotent(work: Path):
    rc, out, recap = site(work)
    assert rc == 0, out
    assert recap["failed"] == 0 and recap["changed"] >= 1, out
    rendered, committed = tree(work / "gitops"), tree(COMMITTED)
    assert sorted(rendered) == sorted(committed), "file sets differ"
    mismatch = [f for f in committed if not filecmp.cmp(work / "gitops" / f, COMMITTED / f, shallow=False)]
    assert mismatch == [], f"bytes differ from the committed gitops/: {mismatch}"
    assert "apply skipped" in out and "publish skipped" in out  # offline by default

    rc, out, recap = site(work)
    assert rc == 0, out
    assert recap["changed"] == 0, out
    assert tree(work / "gitops") == rendered


def test_readme_command_in_check_mode_finds_the_committed_tree_current():
    before = tree(COMMITTED)
    rc, out, recap = playbook("inventories/sample", "--check", "--diff")
    assert rc == 0, out
    assert recap["changed"] == 0, f"committed gitops/ is stale (re-render and commit):\n{out}"
    assert tree(COMMITTED) == before


def test_check_mode_writes_nothing_and_diff_shows_the_change(work: Path):
    assert site(work)[0] == 0
    before = tree(work / "gitops")
    tenants = work / "inv" / "group_vars" / "all" / "tenants.yml"
    text = tenants.read_text()
    new = "Research group, now with a renamed description (check-mode test)"
    tenants.write_text(text.replace("Research group with a batch partition and a debug partition (Slurm)", new))
    assert tenants.read_text() != text

    rc, out, recap = site(work, "--check", "--diff")
    assert rc == 0, out
    assert recap["changed"] >= 1, out
    assert tree(work / "gitops") == before, "check mode wrote files"
    assert new in out, "the diff does not show the new description"
    assert re.search(r"^\+.*" + re.escape(new), out, re.M), out

    rc, out, recap = site(work)
    assert rc == 0 and recap["changed"] >= 1, out
    changed = {f for f, h in tree(work / "gitops").items() if before.get(f) != h}
    # only the file that carries the description is rewritten, the tenant's own report, and the
    # tenant's own part of the render manifest (the root manifest is untouched)
    assert changed == {
        "clusters/gpu-east/tenants/research/REPORT.md",
        "clusters/gpu-east/tenants/research/.gpufleet-manifest",
    }, changed
    assert site(work)[2]["changed"] == 0


def test_broken_inventory_fails_first_with_every_problem(work: Path):
    tenants = work / "inv" / "group_vars" / "all" / "tenants.yml"
    tenants.write_text(tenants.read_text().replace("pools: [pretrain]", "pools: [pretrian]"))
    pools = work / "inv" / "group_vars" / "all" / "pools.yml"
    pools.write_text(pools.read_text().replace("kind: spare", "kind: sparse"))

    rc, out, recap = site(work)
    assert rc != 0
    assert recap.get("failed") == 1, out
    assert "Validate the fleet model" in out  # failed in the first step, before discover/render
    assert "Render the fleet" not in out and not (work / "gitops").exists()
    assert re.search(r"\d+ problems? in the fleet inventory", out), out
    assert re.search(r"tenants\.yml:\d+: gpufleet_tenants\[0\]\.pools\[0\]: pool 'pretrian'", out) or re.search(
        r"pools\.yml:\d+: gpufleet_pools\[5\]\.kind", out
    ), out
    # one message per line, not a JSON string with \n escapes
    assert "\\n  - " not in out


def test_string_booleans_from_the_command_line(work: Path):
    rc, out, _recap = site(work, "--tags", "render", "-e", "gpufleet_apply=maybe")
    assert rc != 0 and "gpufleet_apply must be true or false" in out, out
    rc, out, _recap = site(work, "-e", "gpufleet_apply=false")
    assert rc == 0 and "apply skipped" in out, out


def apply_play(work: Path, *extra: str) -> tuple[int, str]:
    """``ansible-playbook -i inv playbooks/apply.yml`` with apply on, on the copy of the tree at work/gitops;
    the clusters' kubeconfig does not exist, so whatever reaches a cluster fails."""
    proc = run_playbook(
        str(work / "inv"),
        Path("playbooks/apply.yml"),
        "-e",
        f"gpufleet_gitops_dir={work / 'gitops'}",
        "-e",
        "gpufleet_apply=true",
        "-e",
        f"gpufleet_kubeconfig={work / 'no-such-kubeconfig'}",
        *extra,
        env=playbook_env(user=True),
        ok=None,
        cwd=REPO,
    )
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize(
    "planted",
    [
        "clusters/gpu-east/tenants/research/host/.argocd-source-gpu-east-research-host.yaml",
        "clusters/gpu-east/apps/.argocd-source.yaml",
        ".hidden/.argocd-source.yaml",  # anywhere under the tree, hidden folders too
    ],
)
def test_apply_refuses_an_argocd_parameter_override_file_before_anything(work: Path, planted: str):
    shutil.copytree(COMMITTED, work / "gitops")
    rc, out = apply_play(work, "-e", '{"gpufleet_apply_clusters": []}')  # the clean tree passes the check
    assert rc == 0 and "apply refused" not in out, out

    bad = work / "gitops" / planted
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_text("directory:\n  include: '*.yaml'\n", encoding="utf-8")
    rc, out = apply_play(work)
    assert rc != 0 and "apply refused: Argo CD parameter-override file" in out, out
    assert str(bad) in out, out
    # refused before the first cluster task: nothing was installed, applied or labelled
    assert "Work out access and paths" not in out and "Apply the root Application" not in out, out
