"""Publish a change as a Git branch: preflight (clean tree, remote not moved), branch, commit, push.

Uses the ``git`` command line through subprocess: it is on every controller that holds the
inventory, honours the user's credential helpers, SSH config and hooks, and needs no new Python
dependency (GitPython would wrap the same binary).

The flow, in order, and nothing pushed unless every step before passed:

1. ``preflight``: the tree is clean (no tracked change anywhere, no untracked file under the paths
   the change will touch), the remote is configured, ``git fetch`` succeeded and HEAD is exactly
   ``<remote>/<base>`` (or the scale branch being re-run). Otherwise a clear refusal.
2. the caller edits and renders in the working tree;
3. ``commit_and_push``: switch to the deterministic branch, commit only the given paths, push,
   and check that the remote branch now points at the commit.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError

# git must never stop to ask: no terminal prompts, no editor, no pager, stable (C) messages.
_GIT_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_EDITOR": "true",
    "GIT_PAGER": "cat",
    "LC_ALL": "C",
    "GIT_ASKPASS": "",
    "SSH_ASKPASS": "",
}
_BRANCH_PART = re.compile(r"[^A-Za-z0-9._-]+")


class PublishError(GpufleetError):
    """Publishing refused or failed; says why and what to do. Nothing was pushed."""


@dataclass
class Git:
    """A working tree, driven through the git CLI."""

    root: Path
    timeout: float = 120.0

    def run(self, *args: str, check: bool = True, input_text: str | None = None, env: dict | None = None) -> str:
        full_env = {**os.environ, **_GIT_ENV, **(env or {})}
        try:
            proc = subprocess.run(
                ["git", *args],
                cwd=self.root,
                input=input_text,
                capture_output=True,
                text=True,
                env=full_env,
                timeout=self.timeout,
                check=False,
            )
        except FileNotFoundError:
            raise PublishError("git is not installed (the git command line is needed to publish)") from None
        except subprocess.TimeoutExpired:
            raise PublishError(f"`git {' '.join(args)}` did not finish within {self.timeout:.0f}s") from None
        if check and proc.returncode != 0:
            msg = (proc.stderr or proc.stdout).strip()
            raise PublishError(f"`git {' '.join(args)}` failed in {self.root}: {msg}")
        return proc.stdout

    def ok(self, *args: str) -> bool:
        return (
            subprocess.run(
                ["git", *args], cwd=self.root, capture_output=True, env={**os.environ, **_GIT_ENV}, check=False
            ).returncode
            == 0
        )

    def rev(self, ref: str) -> str | None:
        out = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
            cwd=self.root,
            capture_output=True,
            text=True,
            env={**os.environ, **_GIT_ENV},
            check=False,
        )
        return out.stdout.strip() or None

    def current_branch(self) -> str | None:
        out = self.run("symbolic-ref", "--quiet", "--short", "HEAD", check=False).strip()
        return out or None


def open_repo(path: str | Path) -> Git:
    """The Git working tree containing ``path``."""
    p = Path(path).resolve()
    start = p if p.is_dir() else p.parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"],
            cwd=start,
            capture_output=True,
            text=True,
            env={**os.environ, **_GIT_ENV},
            check=False,
        )
    except FileNotFoundError:
        raise PublishError("git is not installed (the git command line is needed to publish)") from None
    if out.returncode != 0:
        raise PublishError(f"{p} is not inside a Git working tree: {out.stderr.strip()}")
    return Git(Path(out.stdout.strip()))


def branch_name(pool: str, size: int, unit: str = "nodes") -> str:
    """Deterministic branch for a scale change: ``scale/<pool>-<size>`` (``-<size>gpus`` for GPU sizes)."""
    name = _BRANCH_PART.sub("-", pool).strip("-.") or "pool"
    return f"scale/{name}-{size}" + ("gpus" if unit == "gpus" else "")


@dataclass
class Preflight:
    base: str
    remote: str
    base_commit: str  # <remote>/<base> after the fetch
    head: str
    branch: str | None  # current branch


@dataclass
class PushResult:
    branch: str
    commit: str | None
    pushed: bool
    created_commit: bool
    files: list[str] = field(default_factory=list)


def dirty_entries(git: Git, paths: list[str]) -> list[str]:
    """Tracked changes anywhere, and untracked files under ``paths`` (repo-relative)."""
    out = git.run("status", "--porcelain=v1", "-z", "--untracked-files=all")
    entries = [e for e in out.split("\0") if e]
    dirty: list[str] = []
    skip = False
    for e in entries:
        if skip:  # the source path of a rename/copy entry
            skip = False
            continue
        code, name = e[:2], e[3:]
        if code[0] in "RC":
            skip = True
        if code == "??":
            if _under(name, paths) or not paths:
                dirty.append(f"?? {name}")
        else:
            dirty.append(f"{code} {name}")
    return sorted(dirty)


def _remote_ref(remote: str, base: str) -> str:
    return f"refs/remotes/{remote}/{base}"


def _under(name: str, paths: list[str]) -> bool:
    return any(name == p or name.startswith(p.rstrip("/") + "/") for p in paths)


def preflight(
    git: Git,
    remote: str,
    base: str,
    paths: list[str],
    allow_branch: str | None = None,
    allow_dirty: list[str] | None = None,
    what: str = "a scale pull request must contain only the scale change",
) -> Preflight:
    """Refuse a dirty tree or a remote that moved; fetch first. Raises PublishError, changes nothing.

    ``allow_dirty``: repo-relative paths whose changes are the change being published (publishing
    an already rendered tree); changes anywhere else are still refused.
    """
    dirty = [d for d in dirty_entries(git, paths) if not _under(d[3:], allow_dirty or [])]
    if dirty:
        shown = "\n  ".join(dirty[:20]) + ("\n  ..." if len(dirty) > 20 else "")
        raise PublishError(
            f"the working tree {git.root} has uncommitted changes; commit or stash them first ({what}):\n  {shown}"
        )
    if not git.ok("var", "GIT_COMMITTER_IDENT"):
        raise PublishError(
            f"git has no committer identity in {git.root}: set user.name and user.email "
            "(git config user.name ...; git config user.email ...) so the scale commit can be made"
        )
    remotes = git.run("remote").split()
    if remote not in remotes:
        raise PublishError(
            f"git remote {remote!r} is not configured in {git.root} (gpufleet_fleet.gitops.remote); "
            f"known remotes: {', '.join(remotes) or 'none'}. Add it with `git remote add {remote} <url>`"
        )
    git.run("fetch", "--quiet", "--no-tags", remote, f"+refs/heads/{base}:{_remote_ref(remote, base)}")
    base_commit = git.rev(_remote_ref(remote, base))
    if not base_commit:
        raise PublishError(f"branch {base!r} not found on remote {remote!r}")
    head = git.rev("HEAD")
    if not head:
        raise PublishError(f"{git.root} has no commit yet")
    branch = git.current_branch()
    behind = int(git.run("rev-list", "--count", f"HEAD..{base_commit}").strip())
    ahead = int(git.run("rev-list", "--count", f"{base_commit}..HEAD").strip())
    if behind:
        raise PublishError(
            f"the remote moved: {remote}/{base} has {behind} commit(s) that HEAD does not have "
            f"(remote {base_commit[:12]}, local {head[:12]}). Update first (`git pull --ff-only {remote} {base}`), "
            "then scale again; nothing was changed or pushed"
        )
    if ahead and not (allow_branch and branch == allow_branch):
        raise PublishError(
            f"HEAD ({branch or 'detached'}, {head[:12]}) has {ahead} commit(s) that are not on {remote}/{base}; "
            f"a scale pull request must start from {remote}/{base}: push or drop them, or switch to {base}; "
            "nothing was changed or pushed"
        )
    return Preflight(base=base, remote=remote, base_commit=base_commit, head=head, branch=branch)


def remote_branch_commit(git: Git, remote: str, branch: str) -> str | None:
    out = git.run("ls-remote", "--heads", remote, f"refs/heads/{branch}").strip()
    return out.split()[0] if out else None


def _tree(git: Git, commit: str) -> str:
    return git.run("rev-parse", f"{commit}^{{tree}}").strip()


def commit_and_push(git: Git, pre: Preflight, branch: str, paths: list[str], message: str) -> PushResult:
    """Commit ``paths`` (repo-relative; additions, changes and deletions) on ``branch`` and push it.

    The branch is created from the current HEAD (checked by ``preflight``). If the remote already
    has ``branch`` with exactly this content, nothing is pushed. If it has other content, refuse.
    """
    remote = pre.remote
    existing_remote = remote_branch_commit(git, remote, branch)
    local = git.rev(f"refs/heads/{branch}")
    if pre.branch != branch:
        if local and local != pre.head and local != existing_remote:
            raise PublishError(
                f"local branch {branch!r} already exists with other commits; delete it "
                f"(`git branch -D {branch}`) or merge it first; nothing was pushed"
            )
        git.run("switch", "--quiet", "-C", branch)
    # stage exactly our paths (deletions included), nothing else; skip paths that exist nowhere
    present = [p for p in paths if (git.root / p).exists() or git.run("ls-files", "--", p).strip()]
    if present:
        git.run("add", "--all", "--", *present)
    staged = [f for f in git.run("diff", "--cached", "--name-only", "-z").split("\0") if f]
    created = False
    if staged:
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".msg", delete=False) as fh:
            fh.write(message if message.endswith("\n") else message + "\n")
            msg_file = fh.name
        try:
            git.run("commit", "--quiet", "--no-verify", "-F", msg_file)
        finally:
            os.unlink(msg_file)
        created = True
    head = git.rev("HEAD")
    if head is None:
        raise PublishError(f"{git.root}: HEAD does not point at a commit after committing")
    if existing_remote == head:
        return PushResult(branch=branch, commit=head, pushed=False, created_commit=created, files=sorted(staged))
    if existing_remote:
        same_tree = git.ok("cat-file", "-e", existing_remote) and _tree(git, existing_remote) == _tree(git, head)
        if same_tree:
            return PushResult(branch=branch, commit=head, pushed=False, created_commit=created, files=sorted(staged))
        if not git.ok("merge-base", "--is-ancestor", existing_remote, head):
            raise PublishError(
                f"branch {branch!r} already exists on {remote} with other content ({existing_remote[:12]}); "
                "merge or close that pull request, or delete the branch, then scale again; nothing was pushed"
            )
    git.run("push", "--quiet", "--porcelain", remote, f"{head}:refs/heads/{branch}")
    git.run("branch", "--quiet", f"--set-upstream-to={remote}/{branch}", branch, check=False)
    after = remote_branch_commit(git, remote, branch)
    if after != head:
        raise PublishError(f"push of {branch!r} to {remote} did not land (remote has {after}, expected {head})")
    return PushResult(branch=branch, commit=head, pushed=True, created_commit=created, files=sorted(staged))
