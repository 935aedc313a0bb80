"""Publish an already rendered tree: the inventory and gitops/ changes in the work tree become a
branch, a commit, a push and a pull/merge request (the ``publish`` stage of site.yml).

``publish_tree(inventory, ...)``, refusing before anything is committed or pushed when:

- something outside the inventory folder and the GitOps tree is modified (those two are what is
  published; anything else would ride along unreviewed);
- the GitOps tree or a pool lock is not what rendering the inventory gives (render first);
- the remote moved (``git fetch``, then HEAD must be ``<remote>/<base>``).

The branch name is deterministic: ``gpufleet/render-<hash>`` where the hash covers the changed
paths and their new bytes, so publishing the same change twice finds the same branch and the same
open request. The request body lists the files and the node moves of the pool locks.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.hostlist import compress
from ansible_collections.gpufleet.core.plugins.module_utils.model.paths import default_out, inventory_root
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.pools.lock import parse_lock
from ansible_collections.gpufleet.core.plugins.module_utils.pools.moves import node_moves, pool_counts
from ansible_collections.gpufleet.core.plugins.module_utils.publish.git import (
    PublishError,
    commit_and_push,
    open_repo,
    preflight,
)
from ansible_collections.gpufleet.core.plugins.module_utils.publish.request import open_fleet_pull_request
from ansible_collections.gpufleet.core.plugins.module_utils.render import tree as render_tree


@dataclass
class TreePublish:
    files: list[tuple[str, str]] = field(default_factory=list)  # (status, path), git status letters
    moves: dict[str, list[tuple[str, str | None, str | None]]] = field(default_factory=dict)  # lock -> moves
    counts: dict[str, dict[str, tuple[int, int]]] = field(default_factory=dict)
    branch: str | None = None
    commit: str | None = None
    pushed: bool = False
    pull_request: dict[str, Any] | None = None
    messages: list[str] = field(default_factory=list)
    check: bool = False

    @property
    def changed(self) -> bool:
        return self.pushed or bool(self.pull_request and self.pull_request.get("created"))

    def markdown(self) -> str:
        lines = [f"## Rendered GitOps change ({len(self.files)} file{'s' if len(self.files) != 1 else ''})", ""]
        for lock, moves in sorted(self.moves.items()):
            lines += [f"### Node moves in `{lock}` ({len(moves)})", ""]
            groups: dict[tuple[str, str], list[str]] = {}
            for node, a, b in moves:
                groups.setdefault((a or "unassigned", b or "unassigned"), []).append(node)
            lines += ["| from pool | to pool | nodes | count |", "| --- | --- | --- | --- |"]
            lines += [f"| `{a}` | `{b}` | `{compress(ns)}` | {len(ns)} |" for (a, b), ns in sorted(groups.items())]
            lines.append("")
            if self.counts.get(lock):
                lines += ["| pool | before | after |", "| --- | --- | --- |"]
                lines += [f"| `{p}` | {x} | {y} |" for p, (x, y) in sorted(self.counts[lock].items())]
                lines.append("")
        lines += ["### Files", "", "| file | change |", "| --- | --- |"]
        names = {"A": "added", "M": "changed", "D": "removed", "R": "renamed", "T": "type changed"}
        lines += [f"| `{p}` | {names.get(s, s)} |" for s, p in self.files]
        lines.append("")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {
            "changed": self.changed,
            "check_mode": self.check,
            "files": [{"path": p, "status": s} for s, p in self.files],
            "moves": {
                lock: [{"node": n, "from": a, "to": b} for n, a, b in moves] for lock, moves in self.moves.items()
            },
            "branch": self.branch,
            "commit": self.commit,
            "pushed": self.pushed,
            "pull_request": self.pull_request,
            "body": self.markdown(),
            "messages": list(self.messages),
        }


def _rel(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        raise PublishError(f"{path} is not inside the Git work tree {root}") from None


def publish_tree(
    inventory: str | os.PathLike[str],
    *,
    gitops_dir: str | os.PathLike[str] | None = None,
    branch: str | None = None,
    title: str | None = None,
    remote: str | None = None,
    base: str | None = None,
    token: str | None = None,
    forge_api_url: str | None = None,
    open_pr: bool = True,
    check: bool = False,
) -> TreePublish:
    inv = inventory_root(inventory)
    fleet = load_fleet(inv)
    out = Path(gitops_dir) if gitops_dir else default_out(fleet)
    git = open_repo(inv)
    inv_rel, out_rel = _rel(inv, git.root), _rel(out, git.root)
    paths = [inv_rel, out_rel]
    result = TreePublish(check=check)
    pre = preflight(
        git,
        remote or fleet.gitops.remote,
        base or fleet.gitops.revision,
        paths,
        allow_branch=branch,
        allow_dirty=paths,
        what="only the inventory and the rendered tree are published",
    )
    rendered = render_tree.render_fleet(fleet)
    stale = render_tree.plan_render(rendered, out)
    if stale.changed:
        p = stale.plan
        listed = [*p.added, *p.changed, *p.removed] + [_rel(Path(x), git.root) for x in stale.locks_changed]
        raise PublishError(
            f"{out_rel} is not what rendering {inv_rel} gives ({', '.join(listed[:10]) or '.gpufleet-manifest'}"
            f"{', ...' if len(listed) > 10 else ''}); render first (gpufleet.core.render), then publish"
        )
    result.files = _changed_files(git, paths)
    _lock_moves(git, rendered.locks, result)
    if not result.files:
        result.messages.append("nothing to publish: the inventory and the rendered tree are committed already")
        if not (branch and pre.branch == branch):  # re-run on the branch: still push and open the request
            return result
    digest = hashlib.sha256()
    for _s, name in result.files:
        digest.update(name.encode() + b"\0")
        f = git.root / name
        digest.update(hashlib.sha256(f.read_bytes()).digest() if f.is_file() else b"-")
    result.branch = branch or f"gpufleet/render-{digest.hexdigest()[:10]}"
    if check:
        return result
    title = title or f"Render {fleet.name}: {len(result.files)} file(s) in {out_rel}"
    message = f"{title}\n\n" + "\n".join(f"{s} {p}" for s, p in result.files) + "\n"
    push = commit_and_push(git, pre, result.branch, paths, message)
    result.commit, result.pushed = push.commit, push.pushed
    if open_pr:
        opened = open_fleet_pull_request(
            fleet,
            result.branch,
            pre.base,
            title,
            result.markdown(),
            remote=pre.remote,
            token=token,
            forge_api_url=forge_api_url,
        )
        result.pull_request = opened.request.as_dict()
        result.messages.append(opened.message)
    return result


def _changed_files(git: Any, paths: list[str]) -> list[tuple[str, str]]:
    """(status letter A/M/D/R, path) of every change under ``paths``, by path (``git status -z``)."""
    status = git.run("status", "--porcelain=v1", "-z", "--untracked-files=all", "--", *paths)
    files: list[tuple[str, str]] = []
    skip = False
    for e in (e for e in status.split("\0") if e):
        if skip:
            skip = False
            continue
        code, name = e[:2], e[3:]
        skip = code[0] in "RC"
        letter = "A" if code == "??" else (code[0] if code[0] != " " else code[1])
        files.append((letter, name))
    return sorted(files, key=lambda x: x[1])


def _lock_moves(git: Any, locks: Any, result: TreePublish) -> None:
    """Per changed pool lock, the node moves and pool counts against HEAD (into ``result``)."""
    for lock in sorted(locks):
        rel = _rel(lock, git.root)
        if not any(name == rel for _s, name in result.files):
            continue
        old = git.run("show", f"HEAD:{rel}", check=False) if git.ok("cat-file", "-e", f"HEAD:{rel}") else None
        new = lock.read_text(encoding="utf-8") if lock.is_file() else None
        a, b = parse_lock(old, f"HEAD:{rel}"), parse_lock(new, str(lock))
        result.moves[rel] = [(m.node, m.from_pool, m.to_pool) for m in node_moves(a, b)]
        result.counts[rel] = pool_counts(a, b)
