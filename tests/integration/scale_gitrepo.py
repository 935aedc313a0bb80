"""Real Git repositories on disk for the scale tests: a working clone and a bare remote (git init --bare)."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml
from lead_conftest import lead_conftest

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "inventories" / "sample"
INV = "inventories/sample"

GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "gpufleet test",
    "GIT_AUTHOR_EMAIL": "test@gpufleet.invalid",
    "GIT_COMMITTER_NAME": "gpufleet test",
    "GIT_COMMITTER_EMAIL": "test@gpufleet.invalid",
}


def require_tool(name: str, why: str = "") -> str:
    return lead_conftest().require_tool(name, why)


def git(cwd: Path, *args: str, check: bool = True) -> str:
    env = {**os.environ, **GIT_ENV, "HOME": str(cwd)}
    out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env, check=False)
    if check and out.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {out.stderr}")
    return out.stdout


@dataclass
class Repos:
    work: Path  # the working tree (what the user has checked out)
    remote: Path  # the bare repository it pushes to

    def git(self, *args: str, check: bool = True) -> str:
        return git(self.work, *args, check=check)

    def remote_git(self, *args: str) -> str:
        return git(self.remote, *args)

    def remote_branches(self) -> list[str]:
        out = self.remote_git("for-each-ref", "--format=%(refname:short)", "refs/heads")
        return sorted(out.split())

    def clone_elsewhere(self, dest: Path) -> Path:
        git(dest.parent, "clone", "--quiet", str(self.remote), str(dest))
        git(dest, "config", "user.name", "someone else")
        git(dest, "config", "user.email", "else@gpufleet.invalid")
        return dest


def make_repos(tmp: Path, populate: dict[str, Path] | None = None) -> Repos:
    """A bare remote and a working tree with ``populate`` (repo path -> source folder) committed on main."""
    remote = tmp / "remote.git"
    work = tmp / "work"
    remote.mkdir()
    git(remote, "init", "--quiet", "--bare", "--initial-branch=main")
    work.mkdir()
    git(work, "init", "--quiet", "--initial-branch=main")
    git(work, "config", "user.name", "gpufleet test")
    git(work, "config", "user.email", "test@gpufleet.invalid")
    git(work, "config", "commit.gpgsign", "false")
    for rel, src in (populate or {}).items():
        dst = work / rel
        if src.is_dir():
            shutil.copytree(src, dst, symlinks=True)
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    if not populate:
        (work / "README").write_text("fleet\n")
    git(work, "add", "--all")
    git(work, "commit", "--quiet", "-m", "initial fleet")
    git(work, "remote", "add", "origin", str(remote))
    git(work, "push", "--quiet", "origin", "main")
    git(work, "branch", "--quiet", "--set-upstream-to=origin/main", "main")
    return Repos(work=work, remote=remote)


def _prepare(src: Path, forge: dict | None = None) -> None:
    """Fill ``src`` with the sample inventory (+ snapshots) and its rendered gitops/ tree."""
    from gpufleet_testlib import fabric_gen

    from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_inventory, write_render

    shutil.copytree(SAMPLE, src / INV)
    snap = src / INV / "snapshots" / "gpu-east"
    if not (snap / "nodes.yaml").is_file():  # the sample's snapshots are another helper's; stand in
        snap.mkdir(parents=True, exist_ok=True)
        g = fabric_gen.generate(fabric_gen.GenSpec(hosts=64, rails=8, su_size=8, nvl_domain=1))
        (snap / "nodes.yaml").write_text(yaml.safe_dump(fabric_gen.nodes_snapshot(g), sort_keys=True))
        (snap / "fabric.ibnetdiscover").write_text(fabric_gen.render_ibnetdiscover(g))
    if forge is not None:
        fleet_yml = src / INV / "group_vars" / "all" / "fleet.yml"
        doc = yaml.safe_load(fleet_yml.read_text())
        doc["gpufleet_fleet"]["gitops"]["forge"] = forge
        fleet_yml.write_text(yaml.safe_dump(doc, sort_keys=False))
    committed = REPO / "gitops"
    if committed.is_dir() and (SAMPLE / "snapshots" / "gpu-east" / "nodes.yaml").is_file() and forge is None:
        shutil.copytree(committed, src / "gitops")
    write_render(render_inventory(src / INV), src / "gitops")  # no-op when the committed copy is current


def make_fleet_repos(tmp_path: Path, forge: dict | None = None) -> Repos:
    """Work tree + bare remote holding the sample inventory (with snapshots) and its rendered gitops/."""
    require_tool("git", "scale publishes through the git command line")
    src = tmp_path / "src"
    src.mkdir()
    _prepare(src, forge)
    return make_repos(tmp_path, {INV: src / INV, "gitops": src / "gitops"})
