"""A platform team's own fleet repository, end to end, from the built collection only.

Build the tarball; install it with ``--no-deps`` into the fresh repository's (empty) collections path,
with a fresh venv made from ``requirements.txt`` (PyPI; the pip cache is reused); scaffold the
repository in a temporary directory outside the project with the *installed* CLI; render it; run the
installed playbooks through the scaffold's ``ansible.cfg`` (the snapshots are not parsed as inventory);
then run the commands of the CI templates and the pre-commit hooks, read from the scaffolded files
(GitHub Actions steps named ``gpufleet: ...``, GitLab CI jobs named ``gpufleet-...``), on a tenant's pull
request that passes and on one that reaches another tenant and fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.ansible
GIT_ID = {
    "GIT_AUTHOR_NAME": "ci",
    "GIT_AUTHOR_EMAIL": "ci@example.org",
    "GIT_COMMITTER_NAME": "ci",
    "GIT_COMMITTER_EMAIL": "ci@example.org",
    "GIT_CONFIG_GLOBAL": "/dev/null",
}


def sh(cmd: list[str] | str, cwd: Path, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(
        cmd if isinstance(cmd, list) else ["bash", "-euo", "pipefail", "-c", cmd],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if check and p.returncode != 0:
        raise AssertionError(f"{cmd!r} failed ({p.returncode}) in {cwd}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


@pytest.fixture(scope="module")
def world() -> Iterator[dict[str, object]]:
    # outside the project checkout (and outside its git work tree)
    tmp = Path(tempfile.mkdtemp(prefix="gpufleet-fleetrepo-", dir="/tmp"))
    assert not str(tmp).startswith(str(REPO))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "VIRTUAL_ENV", "PYTHON", "GIT_"))}
    base_python = Path(sys.base_prefix) / "bin" / "python3"
    venv = tmp / "venv"
    sh([str(base_python), "-m", "venv", str(venv)], tmp, env)
    env.update(
        GIT_ID,
        PATH=f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin",
        VIRTUAL_ENV=str(venv),
        ANSIBLE_HOME=str(tmp / "ansible-home"),
        HOME=os.environ.get("HOME", str(tmp)),  # the pip cache
    )
    sh(
        [str(venv / "bin/pip"), "install", "-q", "--disable-pip-version-check", "-r", str(REPO / "requirements.txt")],
        tmp,
        env,
    )
    dist = tmp / "dist"
    sh([str(venv / "bin/ansible-galaxy"), "collection", "build", "--output-path", str(dist), str(REPO)], tmp, env)
    (tarball,) = dist.glob("gpufleet-core-*.tar.gz")
    fleet = tmp / "acme-fleet"
    sh(
        [
            str(venv / "bin/ansible-galaxy"),
            "collection",
            "install",
            "--no-deps",
            "-p",
            str(fleet / "collections"),
            str(tarball),
        ],
        tmp,
        env,
    )
    installed = fleet / "collections/ansible_collections/gpufleet/core"
    assert (installed / "MANIFEST.json").is_file() and not installed.is_symlink()
    yield {"tmp": tmp, "env": env, "venv": venv, "fleet": fleet, "installed": installed}
    shutil.rmtree(tmp, ignore_errors=True)


def test_fleet_repository_from_the_built_collection(world: dict[str, object]) -> None:
    env: dict[str, str] = world["env"]  # type: ignore[assignment]
    fleet: Path = world["fleet"]  # type: ignore[assignment]
    venv: Path = world["venv"]  # type: ignore[assignment]
    installed: Path = world["installed"]  # type: ignore[assignment]
    cli = [str(venv / "bin/python"), str(installed / "scripts/gpufleet.py")]

    out = sh(
        [*cli, "init", str(fleet), "--tenant", "vision:slurm", "--tenant", "serving:kubernetes", "--org", "acme"],
        fleet,
        env,
    )
    assert "fleet repository 'acme-fleet'" in out.stdout
    sh("git init -q -b main && git add -A && git commit -qm 'gpufleet init'", fleet, env)  # collections/ is ignored
    tracked = sh(["git", "ls-files"], fleet, env).stdout.split()
    assert "CODEOWNERS" in tracked and not [f for f in tracked if f.startswith("collections/")]

    # render with the installed CLI, then with the installed playbook through the scaffold's ansible.cfg
    sh([*cli, "render", "--inventory", "inventories/prod"], fleet, env)
    assert (fleet / "gitops/clusters/gpu-1/tenants/vision/slurm/topology.conf").is_file()
    for inventory in ([], ["-i", "inventories/prod"]):  # the folder too: snapshots are not inventory
        inv = sh([str(venv / "bin/ansible-inventory"), *inventory, "--list"], fleet, env)
        assert "WARNING" not in inv.stderr and "vendid" not in inv.stdout, inv.stderr
        assert sorted(yaml.safe_load(inv.stdout)["_meta"]["hostvars"]) == ["localhost"]
    play = sh([str(venv / "bin/ansible-playbook"), "gpufleet.core.render"], fleet, env)
    assert "changed=0" in play.stdout and "failed=0" in play.stdout, play.stdout[-2000:]
    sh("git add -A && git commit -qm render && git clone -q --bare . ../origin.git", fleet, env)
    sh("git remote add origin ../origin.git && git fetch -q origin", fleet, env)

    # the CI templates' commands, read from the scaffolded files
    gh = yaml.safe_load((fleet / ".github/workflows/gpufleet.yml").read_text())
    (job,) = gh["jobs"].values()
    gh_steps = [s["run"] for s in job["steps"] if str(s.get("name", "")).startswith("gpufleet:")]
    assert len(gh_steps) == 3 and any("review" in s for s in gh_steps)
    gh_env = {**env, **job["env"], "GITHUB_BASE_REF": "main", "GITHUB_EVENT_NAME": "pull_request"}
    gl = yaml.safe_load((fleet / ".gitlab-ci.yml").read_text())
    gl_scripts = [line for name, j in gl.items() if name.startswith("gpufleet-") for line in j["script"]]
    gl_env = {**env, **gl["variables"], "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main"}
    hooks = [
        h["entry"] for r in yaml.safe_load((fleet / ".pre-commit-config.yaml").read_text())["repos"] for h in r["hooks"]
    ]

    def ci(expect: int) -> list[str]:
        results = [sh(cmd, fleet, gh_env, check=False) for cmd in gh_steps]
        results += [sh(cmd, fleet, gl_env, check=False) for cmd in gl_scripts]
        results += [sh(cmd, fleet, env, check=False) for cmd in hooks]
        codes = [r.returncode for r in results]
        if expect == 0:
            assert codes == [0] * len(codes), [r.stdout[-1500:] + r.stderr[-1500:] for r in results]
        return [r.stdout + r.stderr for r in results]

    # a tenant's pull request that edits only its own file: every check passes
    sh("git checkout -q -b vision-replicas", fleet, env)
    own = fleet / "inventories/prod/group_vars/all/tenants/vision.yml"
    own.write_text(own.read_text().replace("login_replicas: 1", "login_replicas: 2"))
    sh([*cli, "render", "--inventory", "inventories/prod"], fleet, env)
    sh("git add -A && git commit -qm 'vision: two login nodes'", fleet, env)
    logs = ci(expect=0)
    assert "## gpufleet review: ✅ passes" in (fleet / "review.md").read_text()
    assert any("change: tenant `vision` only" in log for log in logs)

    # the same tenant also edits another tenant's file: the review step fails and names the file
    other = fleet / "inventories/prod/group_vars/all/tenants/serving.yml"
    other.write_text(other.read_text().replace("namespaces: [jobs]", "namespaces: [jobs, vision-extra]"))
    sh([*cli, "render", "--inventory", "inventories/prod"], fleet, env)
    sh("git add -A && git commit -qm 'vision: and a namespace at serving'", fleet, env)
    review_steps = [s for s in gh_steps if " review " in s]
    p = sh(review_steps[0], fleet, gh_env, check=False)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "inventories/prod/group_vars/all/tenants/serving.yml` (tenant serving)" in p.stdout
    assert "❌ fails" in (fleet / "review.md").read_text()
