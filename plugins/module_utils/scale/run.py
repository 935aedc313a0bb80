"""Scale a pool as a reviewed change: edit the size in place, re-render, plan, optionally publish.

``scale(inventory, pool, size, unit=None, ...) -> ScaleResult`` in order, stopping with a clear
``GpufleetError`` before anything is written or pushed when a step fails:

1. load the fleet; with ``publish``: Git preflight (clean tree, remote fetched and not moved);
2. plan the inventory edit (``inventory_edit``: only the number changes);
3. render the fleet as it is and compare with the tree on disk: a stale ``gitops/`` or pool lock
   is refused, so the change reviewed is the scale change and nothing else;
4. render the edited fleet (the pool assignment starts from the lock, so k nodes move for a
   size change of k nodes; a size the cluster cannot hold fails in ``pools.assign``);
5. build the plan (``scale.plan``) from the lock, the rendered files and the edit;
6. unless ``check``: write the tree (atomic), the lock, then the inventory file;
7. with ``publish``: branch ``scale/<pool>-<size>``, commit, push, then open the pull/merge
   request (``publish.request``) or return the compare URL.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.files import replace_file
from ansible_collections.gpufleet.core.plugins.module_utils.hostlist import compress
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Fleet
from ansible_collections.gpufleet.core.plugins.module_utils.model.inventory import load_inventory
from ansible_collections.gpufleet.core.plugins.module_utils.model.paths import default_out, inventory_root
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet, validate
from ansible_collections.gpufleet.core.plugins.module_utils.pools.lock import lock_path as lock_path_of
from ansible_collections.gpufleet.core.plugins.module_utils.pools.lock import parse_lock
from ansible_collections.gpufleet.core.plugins.module_utils.publish.git import (
    Git,
    branch_name,
    commit_and_push,
    open_repo,
    preflight,
)
from ansible_collections.gpufleet.core.plugins.module_utils.publish.request import open_fleet_pull_request
from ansible_collections.gpufleet.core.plugins.module_utils.render import cache as render_cache
from ansible_collections.gpufleet.core.plugins.module_utils.render import tree as render_tree
from ansible_collections.gpufleet.core.plugins.module_utils.render import writer as tree_writer
from ansible_collections.gpufleet.core.plugins.module_utils.scale.inventory_edit import (
    ScaleError,
    SizeEdit,
    plan_size_edit,
    unified_line_diff,
)
from ansible_collections.gpufleet.core.plugins.module_utils.scale.plan import ScalePlan, build_plan


@dataclass
class ScaleResult:
    plan: ScalePlan
    changed: bool  # bytes changed on disk (or would, in check mode), or something was pushed/opened
    check: bool
    inventory_diff: str
    edit: SizeEdit
    written: list[str] = field(default_factory=list)
    branch: str | None = None
    commit: str | None = None
    pushed: bool = False
    pull_request: dict[str, Any] | None = None
    messages: list[str] = field(default_factory=list)
    contents: dict[str, tuple[bytes | None, bytes | None]] = field(default_factory=dict, repr=False)

    def diffs(self) -> list[dict[str, str]]:
        """Ansible diff entries (before/after text) for every file the change touches, sorted by path."""
        out = []
        for path, (old, new) in sorted(self.contents.items()):
            if Path(path).name == tree_writer.MANIFEST:  # sha256 lines of the other files: no news in a diff
                continue
            out.append(
                {
                    "before_header": path if old is not None else "/dev/null",
                    "after_header": path if new is not None else "/dev/null",
                    "before": (old or b"").decode("utf-8", "replace"),
                    "after": (new or b"").decode("utf-8", "replace"),
                }
            )
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "changed": self.changed,
            "check_mode": self.check,
            "summary": self.plan.summary(),
            "plan": self.plan.as_dict(),
            "plan_markdown": self.plan.markdown(),
            "inventory_diff": self.inventory_diff,
            "written": list(self.written),
            "branch": self.branch,
            "commit": self.commit,
            "pushed": self.pushed,
            "pull_request": self.pull_request,
            "messages": list(self.messages),
        }


def _work_root(path: Path) -> Path | None:
    for cand in (path, *path.parents):
        if (cand / ".git").exists():
            return cand
    return None


def _rel(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def edited_fleet(inventory: Path, edit: SizeEdit) -> Fleet:
    """The fleet as it will be after the edit, validated like any inventory (nothing written)."""
    raw = load_inventory(inventory)
    for entry in raw.data.get("gpufleet_pools", []):
        if isinstance(entry, dict) and entry.get("name") == edit.pool:
            entry["size"] = {edit.unit: edit.size}
    return validate(raw)


def commit_message(plan: ScalePlan) -> str:
    lines = [f"scale({plan.pool}): {plan.size_text(old=True)} -> {plan.size_text()}", "", plan.summary(), ""]
    groups: dict[tuple[str, str], list[str]] = {}
    for m in plan.moves:
        groups.setdefault((m.from_pool or "unassigned", m.to_pool or "unassigned"), []).append(m.node)
    for (a, b), nodes in sorted(groups.items()):
        lines.append(f"- {a} -> {b}: {compress(nodes)}")
    if groups:
        lines.append("")
    lines.append("Generated by gpufleet (gpufleet.core.scale); the plan is in the pull request.")
    return "\n".join(lines) + "\n"


def _stale(result: render_tree.RenderResult, out: Path, root: Path) -> list[str]:
    report = render_tree.plan_render(result, out)
    p = report.plan
    files = [
        f"{_rel(out / f, root)} ({how})"
        for how, fs in (("missing", p.added), ("differs", p.changed), ("not rendered", p.removed))
        for f in fs
    ]
    files += [f"{_rel(Path(f), root)} (pool lock differs)" for f in report.locks_changed]
    return files


@dataclass
class ScaleChange:
    """What the plan step found: everything the write and publish steps need."""

    fleet: Fleet
    new_fleet: Fleet
    edit: SizeEdit
    out: Path
    root: Path
    after: render_tree.RenderResult
    report: render_tree.WriteReport
    result: ScaleResult
    inv_file_rel: str
    out_rel: str
    git: Git | None = None
    pre: Any = None  # publish.git preflight result, with publish


def _locate(inv: Path, fleet: Fleet, gitops_dir: str | os.PathLike[str] | None) -> tuple[Path, Path]:
    """(GitOps tree, work root) of the inventory."""
    work_root = _work_root(inv.resolve())
    if gitops_dir is None and work_root is None:
        raise ScaleError(
            f"{inv} is not inside a Git work tree, so where its GitOps tree is cannot be known: "
            "pass gitops_dir (or run from a clone of the fleet repository)"
        )
    out = Path(gitops_dir) if gitops_dir else default_out(fleet)
    return out, work_root or out.resolve().parent


def _refuse_stale(fleet: Fleet, out: Path, root: Path, out_rel: str, cache: Path | None) -> None:
    """A stale ``gitops/`` or pool lock is refused, so the change reviewed is the scale change alone."""
    # the tree known current for these exact inputs needs no render before the change
    if render_cache.cached_current(out, render_cache.input_digest(fleet)) is not None:
        return
    stale = _stale(render_tree.render_fleet(fleet, cache), out, root)
    if stale:
        shown = "\n  ".join(stale[:15]) + ("\n  ..." if len(stale) > 15 else "")
        raise ScaleError(
            f"{out_rel or out} is not current with the inventory before scaling ({len(stale)} file(s)); "
            f"re-render and commit first (make render), so the scale change is reviewed alone:\n  {shown}"
        )


def _changed_files(
    after: render_tree.RenderResult, report: render_tree.WriteReport, out: Path, root: Path, lock: Path
) -> tuple[dict[str, bytes | None], dict[str, bytes | None], dict[str, str], dict[str, str]]:
    """(files before, files after, old assignment, new assignment) of the rendered change."""
    before: dict[str, bytes | None] = {}
    now: dict[str, bytes | None] = {}
    for rel in (*report.plan.added, *report.plan.changed, *report.plan.removed):
        key = _rel(out / rel, root)
        before[key] = report.plan.before.get(rel)
        now[key] = after.files.get(rel)
    want = tree_writer.manifests(after.files)
    for rel in report.plan.manifests:  # the writer's ownership lists: part of the reviewed diff too
        key = _rel(out / rel, root)
        before[key] = _read(out / rel)
        now[key] = want.get(rel)
    old_assignment: dict[str, str] = {}
    new_assignment: dict[str, str] = {}
    for lock_path, data in sorted(after.locks.items()):
        old = _read(lock_path)
        if old != data:
            before[_rel(lock_path, root)] = old
            now[_rel(lock_path, root)] = data
        if lock_path == lock:
            old_assignment = parse_lock(old, str(lock_path))
            new_assignment = parse_lock(data, str(lock_path))
    return before, now, old_assignment, new_assignment


def _slurm_pools(fleet: Fleet, new_fleet: Fleet, cluster: str) -> dict[str, tuple[str, str]]:
    """Slurm pool -> (tenant/partition, tenant/NodeSet), before and after the change."""
    return {
        p.name: (f"{p.tenant}/{p.slurm.partition}", f"{p.tenant}/{p.name}")
        for p in (*fleet.cluster_pools(cluster), *new_fleet.cluster_pools(cluster))
        if p.kind == "slurm" and p.slurm is not None
    }


def plan_scale(
    inventory: str | os.PathLike[str],
    pool: str,
    size: int,
    unit: str | None = None,
    *,
    publish: bool = False,
    gitops_dir: str | os.PathLike[str] | None = None,
    remote: str | None = None,
    base: str | None = None,
    check: bool = False,
) -> ScaleChange:
    """Steps 1-5: load, preflight, plan the edit, render before/after, build the plan. Writes nothing."""
    inv = inventory_root(inventory)
    fleet = load_fleet(inv)
    if pool not in fleet.pools:
        raise ScaleError(f"unknown pool {pool!r} (known: {', '.join(sorted(fleet.pools))})")
    out, root = _locate(inv, fleet, gitops_dir)
    edit = plan_size_edit(inv, pool, size, unit)

    git: Git | None = None
    pre = None
    branch = branch_name(pool, size, edit.unit)
    if publish:
        git = open_repo(inv)
        root = git.root
        paths = [_rel(inv, root), _rel(out, root)]
        pre = preflight(git, remote or fleet.gitops.remote, base or fleet.gitops.revision, paths, allow_branch=branch)
    out_rel = _rel(out, root)

    # parsed snapshots (nodes, fabric) are cached outside the repository, as the renderer does
    cache = render_cache.cache_dir(out)
    if edit.changed:
        _refuse_stale(fleet, out, root, out_rel, cache)
    try:
        new_fleet = edited_fleet(inv, edit) if edit.changed else fleet
        after = render_tree.render_fleet(new_fleet, cache)
    except GpufleetError as exc:
        raise ScaleError(f"cannot scale pool {pool!r} to {size} {edit.unit}: {exc}") from None

    cluster = fleet.pools[pool].cluster
    report = render_tree.plan_render(after, out)
    lock = lock_path_of(fleet, cluster)
    files_before, files_after, old_assignment, new_assignment = _changed_files(after, report, out, root, lock)
    inv_file_rel = _rel(edit.file, root)
    if edit.changed:
        files_before[inv_file_rel] = edit.old_text.encode("utf-8")
        files_after[inv_file_rel] = edit.new_text.encode("utf-8")
    plan = build_plan(
        pool=pool,
        cluster=cluster,
        old_unit=edit.old_unit,
        old_size=edit.old_size,
        unit=edit.unit,
        size=edit.size,
        old_assignment=old_assignment,
        new_assignment=new_assignment,
        files_before=files_before,
        files_after=files_after,
        inventory_file=inv_file_rel,
        inventory_line=edit.line,
        slurm_pools=_slurm_pools(fleet, new_fleet, cluster),
        lock_file=_rel(lock, root),
        pool_files={
            p.name: f"{out_rel}/{values}"
            for p in (*fleet.cluster_pools(cluster), *new_fleet.cluster_pools(cluster))
            if p.kind == "slurm"
            and (values := f"clusters/{cluster}/tenants/{p.tenant}/slurm/values.yaml") in after.files
        },
    )
    result = ScaleResult(
        plan=plan,
        changed=bool(plan.files),
        check=check,
        inventory_diff=unified_line_diff(edit) if edit.changed else "",
        edit=edit,
        branch=branch if publish else None,
        contents={k: (files_before.get(k), files_after.get(k)) for k in plan.files},
    )
    return ScaleChange(fleet, new_fleet, edit, out, root, after, report, result, inv_file_rel, out_rel, git, pre)


def write_scale(change: ScaleChange) -> None:
    """Step 6: the tree (atomic swap) and the lock, then the inventory file (atomic replace)."""
    if change.report.changed:
        render_tree.write_render(change.after, change.out)
    if change.edit.changed:
        replace_file(change.edit.file, change.edit.new_text)
    change.result.written = list(change.result.plan.files)


def publish_scale(
    change: ScaleChange, *, token: str | None = None, forge_api_url: str | None = None, open_pr: bool = True
) -> None:
    """Step 7: branch ``scale/<pool>-<size>``, commit, push, open the pull/merge request."""
    result, git, pre, edit, plan = change.result, change.git, change.pre, change.edit, change.result.plan
    if git is None or pre is None:  # plan_scale sets them whenever publish is true
        raise ScaleError("internal error: publish without a Git preflight")
    branch = result.branch or branch_name(plan.pool, edit.size, edit.unit)
    if not plan.files and pre.branch != branch:
        result.messages.append(f"pool {plan.pool!r} is already {edit.size} {edit.unit}: nothing to publish")
        result.branch = None
        return
    paths = sorted({change.inv_file_rel, change.out_rel, *(_rel(p, change.root) for p in change.after.locks)})
    push = commit_and_push(git, pre, branch, paths, commit_message(plan))
    result.commit, result.pushed = push.commit, push.pushed
    result.changed = result.changed or push.pushed
    if not open_pr:
        return
    opened = open_fleet_pull_request(
        change.fleet,
        branch,
        pre.base,
        f"Scale {plan.pool} to {edit.size} {edit.unit}",
        plan.markdown(),
        remote=pre.remote,
        commit=push.commit,
        token=token,
        forge_api_url=forge_api_url,
        error=ScaleError,
    )
    result.pull_request = opened.request.as_dict()
    result.changed = result.changed or opened.request.created
    result.messages.append(opened.message)


def scale(
    inventory: str | os.PathLike[str],
    pool: str,
    size: int,
    unit: str | None = None,
    *,
    check: bool = False,
    publish: bool = False,
    gitops_dir: str | os.PathLike[str] | None = None,
    remote: str | None = None,
    base: str | None = None,
    token: str | None = None,
    forge_api_url: str | None = None,
    open_pr: bool = True,
) -> ScaleResult:
    """Scale ``pool`` to ``size`` (in ``unit``, default: the pool's own unit). See the module doc."""
    change = plan_scale(
        inventory, pool, size, unit, publish=publish, gitops_dir=gitops_dir, remote=remote, base=base, check=check
    )
    if check:
        return change.result
    write_scale(change)
    if publish:
        publish_scale(change, token=token, forge_api_url=forge_api_url, open_pr=open_pr)
    return change.result
