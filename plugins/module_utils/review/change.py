"""``gpufleet review --base REF``: the blast radius of a fleet-repository change, attributed to owners.

For each inventory the change is rendered twice in memory, the inventory as it is at the merge base of
``REF`` and ``HEAD`` (``git archive``, nothing checked out) and as it is in the work tree, with the same
renderer; then:

- every changed input file (``git diff`` against the merge base; untracked files are not part of the
  change: a stray tarball or a ``collections`` link is not reviewed), the pool locks included, and every
  rendered file that differs is attributed to its owners (:mod:`.owners`);
- node moves come from the two pool assignments, Slurm partitions, NodeSets and topology files from the
  rendered files that changed (``scale.plan.file_changes``), shared platform files are named;
- a Slurm pool that loses nodes gets drain guidance (drain, wait for the jobs, then merge);
- the committed GitOps tree must be the rendered work tree (else: re-render); a file in a rendered
  cluster folder that no render manifest lists is refused (exit 2, the render's closed tree);
- every committed file the change adds, removes or changes (inputs, the GitOps tree, pool locks) is
  listed with its owner and the CODEOWNERS rule of the base that decides who must approve it
  (:mod:`.codeowners`, GitHub's last-match-wins);
- policy: a change of tenant files only must be one tenant's (a tenant may not change another tenant's
  file together with its own, nor a platform file), and all it changes, rendered effects included, must
  lie in that tenant's rendered scope. A platform change may reach anything (its owners review it);
  the review lists what it reaches.

The result renders as Markdown for a pull-request comment; ``ok`` decides the CI exit code. Pure but for
``git`` (read-only).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.daytwo import upgrade, version_change, windows
from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError, Issue
from ansible_collections.gpufleet.core.plugins.module_utils.model import feature_gates
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Fleet
from ansible_collections.gpufleet.core.plugins.module_utils.model.inventory import shared_composes
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.pools.lock import lock_path, parse_lock
from ansible_collections.gpufleet.core.plugins.module_utils.render import cache as render_cache
from ansible_collections.gpufleet.core.plugins.module_utils.render import git_entries
from ansible_collections.gpufleet.core.plugins.module_utils.render import tree as render_tree
from ansible_collections.gpufleet.core.plugins.module_utils.render import writer as tree_writer
from ansible_collections.gpufleet.core.plugins.module_utils.review import (
    approval,
    chart_diff,
    immutable,
    incremental,
    summary,
)
from ansible_collections.gpufleet.core.plugins.module_utils.review import codeowners as co
from ansible_collections.gpufleet.core.plugins.module_utils.review import owners as own
from ansible_collections.gpufleet.core.plugins.module_utils.review.owners import PLATFORM_OWNER, Owner
from ansible_collections.gpufleet.core.plugins.module_utils.scale.check import (
    CheckError,
    _cluster_check,
    _git,
    extracting,
)
from ansible_collections.gpufleet.core.plugins.module_utils.scale.plan import (
    Move,
    ObjectChange,
    _membership,
    file_changes,
    node_moves,
    pool_counts,
)
from ansible_collections.gpufleet.core.plugins.module_utils.topology.picture import mermaid

MAX_ROWS = 200


@dataclass(frozen=True, order=True)
class FileChange:
    path: str  # repository-relative
    change: str  # added | changed | removed
    owners: tuple[Owner, ...]


@dataclass(frozen=True)
class Approval:
    """A committed file of the change, its owner and the CODEOWNERS rule that names who must approve it."""

    path: str
    change: str
    owner: Owner
    rule: co.Rule | None


@dataclass(frozen=True, order=True)
class Drain:
    tenant: str
    pool: str
    partition: str
    nodes: tuple[str, ...]
    to: tuple[str, ...]


@dataclass
class Review:
    base: str
    base_commit: str
    inputs: list[FileChange] = field(default_factory=list)
    rendered: list[FileChange] = field(default_factory=list)
    moves: list[tuple[str, Move]] = field(default_factory=list)  # (cluster, move)
    move_owners: dict[str, set[Owner]] = field(default_factory=dict)  # node -> owners of its pools
    partitions: list[ObjectChange] = field(default_factory=list)
    nodesets: list[ObjectChange] = field(default_factory=list)
    topology: list[ObjectChange] = field(default_factory=list)
    shared_platform: list[str] = field(default_factory=list)
    drains: list[Drain] = field(default_factory=list)
    plan: list[str] = field(default_factory=list)  # Markdown lines of the upgrade plan (daytwo.upgrade)
    drift: list[FileChange] = field(default_factory=list)  # committed changes the inputs do not explain
    pictures: dict[str, list[str]] = field(default_factory=dict)  # cluster -> Mermaid lines (moves marked)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    tenant_pr: str | None = None  # the tenant when only that tenant's files changed
    codeowners: co.CodeOwners = field(default_factory=co.none)
    approvals: list[Approval] = field(default_factory=list)  # every committed file the change touches
    tenant_changes: list[summary.TenantChange] = field(default_factory=list)  # per tenant, in words
    notices: list[approval.Notice] = field(default_factory=list)  # tenants told, no approval asked
    charts: list[chart_diff.ChartChange] = field(default_factory=list)  # chart/values changes, templated

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def kind(self) -> str:
        owners = {o for c in self.inputs for o in c.owners}
        if not owners:
            return "no input change"
        if self.tenant_pr:
            return f"tenant `{self.tenant_pr}` only"
        tenants = sorted(o.name for o in owners if o.kind == "tenant")
        if owners == {PLATFORM_OWNER}:
            return "platform"
        return "mixed: " + ", ".join(["platform"] * (PLATFORM_OWNER in owners) + [f"tenant `{t}`" for t in tenants])


def _changed_paths(root: Path, base_commit: str) -> dict[str, str]:
    """Repository-relative path -> added | changed | removed, tracked files of the work tree against
    ``base_commit`` (what a pull request carries; untracked files are not in it)."""
    out: dict[str, str] = {}
    raw = _git(root, "diff", "--name-status", "--no-renames", "-z", base_commit, "--").decode("utf-8", "replace")
    fields = raw.split("\0")
    for status, path in zip(fields[0::2], fields[1::2], strict=False):
        if path:
            out[path] = {"A": "added", "D": "removed"}.get(status[:1], "changed")
    return out


INSTALLED = "collections/"  # where ansible.cfg reads collections; CI installs the product elsewhere


def _refused_entries(rv: Review, root: Path, changed: dict[str, str]) -> bool:
    """Refuse, before the work tree is read, every Git entry that is not a regular file (a link, a
    submodule; :mod:`..render.git_entries`, the whole repository guarded: a link is never read through),
    a ``.gitmodules`` and a committed copy of the installed collections (CI never runs it). True: refused."""
    problems = git_entries.entry_problems(git_entries.index_entries(root), [""])
    problems += [
        f"`{p}` {c} under `{INSTALLED}`: CI installs gpufleet.core from the checksummed tarball the base"
        " pins, never a committed copy; remove it"
        for p, c in sorted(changed.items())
        if p.startswith(INSTALLED)
    ]
    rv.problems += problems
    return bool(problems)


def _assignment(fleet: Fleet, result: render_tree.RenderResult, cluster: str) -> dict[str, str]:
    path = lock_path(fleet, cluster)
    data = result.locks.get(path)
    if data is None and path.is_file():
        data = path.read_bytes()
    return parse_lock(data, str(path), cluster) if data else {}


def _pool_owner(fleet: Fleet, pool: str | None) -> Owner:
    p = fleet.pools.get(pool or "")
    return own.tenant(p.tenant) if p is not None and p.tenant else PLATFORM_OWNER


@dataclass
class _Inventory:
    """One reviewed inventory: its path and GitOps tree (repository-relative), rendered at HEAD and at
    the base (None: it does not exist or does not render there)."""

    rel: str
    gitops_rel: str
    head: render_tree.RenderResult
    base: render_tree.RenderResult | None

    @property
    def fleet(self) -> Fleet:
        return self.head.fleet

    @property
    def base_fleet(self) -> Fleet | None:
        return self.base.fleet if self.base else None


def _base_commit(root: Path, base: str) -> str:
    try:
        return _git(root, "merge-base", base, "HEAD").decode().strip()
    except CheckError:
        return _git(root, "rev-parse", "--verify", f"{base}^{{commit}}").decode().strip()


def _stale_problem(
    head: render_tree.RenderResult, out: Path, rel: str, gitops_rel: str, only: set[str] | None
) -> str | None:
    """The committed GitOps tree is not the rendered work tree (of the rendered clusters, ``only``)."""
    within = None if only is None else tuple(f"{tree_writer.CLOSED}/{c}/" for c in sorted(only))
    stale = render_tree.plan_render(head, out, within)
    if not stale.changed:
        return None
    p = stale.plan
    paths = [*p.added, *p.changed, *p.removed]
    return (
        f"`{gitops_rel}` is not the rendered `{rel}`: re-render (`gpufleet.py render --inventory {rel}`) and"
        f" commit{'; differs: ' + ', '.join(paths[:10]) if paths else ''}"
        + (f"{', ...' if len(paths) > 10 else ''}")
        + ("; pool locks differ" if stale.locks_changed else "")
    )


def _render_base(
    rv: Review,
    base_fleet: Fleet | None,
    rel: str,
    head: render_tree.RenderResult,
    memo: render_cache.Memo,
    only: set[str] | None,
) -> render_tree.RenderResult | None:
    """Render the inventory as it is at the base (``base_fleet``, loaded from where it is extracted;
    None: it does not exist there or does not load, noted), the clusters ``only`` (None: all), with its
    pool locks read in, and check that no more nodes move than the pool size changes need. ``memo``:
    the head's parses, so a snapshot the base shares is not parsed again."""
    if base_fleet is None:
        return None
    try:
        base_result = render_tree.render_fleet(base_fleet, digests=render_cache.InputDigests(memo), clusters=only)
    except GpufleetError as exc:
        rv.notes.append(f"`{rel}` at the base does not render ({exc}); every rendered file counts as new")
        return None
    for c in base_result.inputs:  # read the base locks before the folder goes away
        lp = lock_path(base_result.fleet, c)
        if lp not in base_result.locks and lp.is_file():
            base_result.locks[lp] = lp.read_bytes()
    # no more nodes move than the pool size changes need (scale.check's rule: no reshuffle)
    for c in sorted(set(head.inputs) & set(base_result.inputs)):
        names = (_node_names(base_result, c), _node_names(head, c))
        check = _cluster_check(rel, c, base_result.fleet, head.fleet, names)
        if not check.ok:
            rv.problems.append(
                f"cluster `{c}`: {check.moved} node(s) change pool but the pool size changes need"
                f" only {check.required}: a reshuffle ({'; '.join(check.moves[:10])})"
            )
    return base_result


def _node_names(result: render_tree.RenderResult, cluster: str) -> set[str]:
    return {n.name for n in result.inputs[cluster].nodes}


def _load_base(rv: Review, root: Path, rel: str, head: Fleet, tmp: Path) -> Fleet | None:
    """The base's model, from the base's inventory extracted under ``tmp`` without the snapshots (those
    of the head's clusters: a review reads the snapshots of the clusters it renders only). None, noted:
    the inventory does not exist at the base or does not load there."""
    with extracting(root, rv.base_commit, rel, tmp, exclude=incremental.snapshot_dirs(head, rel)) as extracted:
        if not extracted():
            rv.notes.append(f"`{rel}` does not exist at the base: a new inventory")
            return None
    try:
        return load_fleet(tmp / rel)
    except GpufleetError as exc:
        rv.notes.append(f"`{rel}` at the base does not render ({exc}); every rendered file counts as new")
        return None


def _scope(
    rv: Review, root: Path, rels: tuple[str, str], changed: dict[str, str], sides: tuple[Fleet, Fleet | None]
) -> set[str] | None:
    """The clusters the review renders (None: all; review/incremental.py)."""
    head, base = sides
    if base is None:
        return None

    def committed(path: str) -> tuple[bytes | None, bytes | None]:
        old = None if changed[path] == "added" else _git(root, "show", f"{rv.base_commit}:{path}")
        return old, (root / path).read_bytes() if (root / path).is_file() else None

    return incremental.touched_clusters(changed, rels, head, base, committed)


def _render_inventory(
    rv: Review, repo: str | Path, root: Path, inv: str | Path, changed: dict[str, str], full: bool
) -> _Inventory:
    inv_path = (Path(repo) / inv).resolve() if not Path(inv).is_absolute() else Path(inv).resolve()
    if inv_path.is_file():
        inv_path = inv_path.parent
    try:
        rel = inv_path.relative_to(root).as_posix()
    except ValueError:
        raise GpufleetError(f"{inv}: the inventory is not inside the Git work tree {root}") from None
    fleet = load_fleet(inv_path)
    out = render_tree.default_out(fleet)
    gitops_rel = out.relative_to(root).as_posix() if out.is_relative_to(root) else str(out)
    notes, problems = len(rv.notes), len(rv.problems)
    with tempfile.TemporaryDirectory(prefix="gpufleet-review-") as tmp:
        base_fleet = _load_base(rv, root, rel, fleet, Path(tmp))
        only = None if full else _scope(rv, root, (rel, gitops_rel), changed, (fleet, base_fleet))
        skip = [] if base_fleet is None or only is None else incremental.snapshot_dirs(fleet, rel)
        skip = [d for d in skip if base_fleet and d not in incremental.snapshot_dirs(base_fleet, rel, only)]
        # the base's snapshots are extracted by git in its own process while the head renders
        with extracting(root, rv.base_commit, rel, Path(tmp), exclude=skip) as extracted:
            memo = render_cache.Memo()  # what the head parses, the base reuses
            digests = render_cache.InputDigests(memo)
            head = render_tree.render_fleet(fleet, render_cache.cache_dir(out), digests=digests, clusters=only)
            stale = _stale_problem(head, out, rel, gitops_rel, only)
            if base_fleet is not None:
                extracted()
        base = _render_base(rv, base_fleet, rel, head, memo, only)
    if only is not None and (base is None or _index_rows(head) != _index_rows(base)):
        # the base does not render (every file counts as new), or the fleet-wide README counts a
        # rendered cluster's nodes or tenants anew: render everything
        del rv.notes[notes:]
        rv.problems[problems:] = []
        return _render_inventory(rv, repo, root, inv, changed, True)
    if stale:
        rv.problems.append(stale)
    return _Inventory(rel, gitops_rel, head, base)


def _index_rows(result: render_tree.RenderResult) -> dict[str, tuple[Any, Any]]:
    """What the fleet-wide README reads of each rendered cluster."""
    return {c: (s["nodes"], s["tenants"]) for c, s in result.summary.items()}


def _rendered_path(inv: _Inventory, path: str) -> bool:
    """``path`` is a file of ``inv``'s GitOps tree the render writes (at the head or the base) or a render
    manifest; any other file there (``gitops/.gitattributes``) is an input like any other: the platform's."""
    if not path.startswith(inv.gitops_rel + "/"):
        return False
    rel = path[len(inv.gitops_rel) + 1 :]
    manifest = rel == tree_writer.MANIFEST or rel == f"{tree_writer.scope(rel)}/{tree_writer.MANIFEST}"
    return manifest or rel in inv.head.files or (inv.base is not None and rel in inv.base.files)


def _input_changes(rv: Review, changed: dict[str, str], invs: list[_Inventory]) -> None:
    """Every changed file but the rendered ones, the pool locks included, with its owner; a tenant's
    change must be that tenant's alone."""
    for path, change in sorted(changed.items()):
        if any(_rendered_path(i, path) for i in invs):
            continue
        inv_rel = next((i.rel for i in invs if path.startswith(i.rel + "/")), None)
        if inv_rel is not None:
            owner = own.input_owner(path[len(inv_rel) + 1 :])
        else:
            owner = PLATFORM_OWNER
        rv.inputs.append(FileChange(path, change, (owner,)))
    input_owners = {o for c in rv.inputs for o in c.owners}
    tenants_touched = sorted(o.name for o in input_owners if o.kind == "tenant")
    if tenants_touched and (len(tenants_touched) > 1 or PLATFORM_OWNER in input_owners):
        rv.problems.append(
            "a tenant's file changes in a pull request of its own, and this one changes files of "
            f"{len(input_owners)} owners: " + ", ".join(f"`{c.path}` ({c.owners[0]})" for c in rv.inputs) + "; split it"
        )
    elif len(tenants_touched) == 1:
        rv.tenant_pr = tenants_touched[0]


def _tenant_names(inv: _Inventory) -> set[str]:
    return set(inv.fleet.tenants) | set(inv.base_fleet.tenants if inv.base_fleet else ())


def _rendered_changes(rv: Review, inv: _Inventory) -> None:
    """Every rendered file that differs from the base's, with its owners and the Slurm objects it changes."""
    before = inv.base.files if inv.base else {}
    for path in sorted(set(before) | set(inv.head.files)):
        a, b = before.get(path), inv.head.files.get(path)
        if a == b:
            continue
        owners = own.rendered_owners(path, a, b, _tenant_names(inv))
        if not owners:
            continue
        full = f"{inv.gitops_rel}/{path}"
        rv.rendered.append(
            FileChange(full, "added" if a is None else "removed" if b is None else "changed", tuple(sorted(owners)))
        )
        rv.problems += immutable.refusals(full, a, b)
        parts, nsets, topo = file_changes(full, a, b)
        rv.partitions += parts
        rv.nodesets += nsets
        rv.topology += topo
        if PLATFORM_OWNER in owners and own.is_shared_platform_file(path):
            rv.shared_platform.append(full)


def _drift(rv: Review, root: Path, changed: dict[str, str], inv: _Inventory) -> None:
    """What Argo CD will see is the committed tree: a committed change the inputs do not explain (the
    base's tree was not its rendered inputs, e.g. after a gpufleet upgrade) is named too."""
    before = inv.base.files if inv.base else {}
    for full in sorted(p for p in changed if p.startswith(inv.gitops_rel + "/")):
        path = full[len(inv.gitops_rel) + 1 :]
        if own.is_manifest(path):
            continue
        committed = None if changed[full] == "added" else _git(root, "show", f"{rv.base_commit}:{full}")
        if committed != before.get(path):
            owners = own.rendered_owners(path, committed, inv.head.files.get(path), _tenant_names(inv))
            rv.drift.append(FileChange(full, changed[full], tuple(sorted(owners or {PLATFORM_OWNER}))))


def _membership_changes(
    rv: Review, inv: _Inventory, base_fleet: Fleet, cluster: str, moves: list[Move], counts: dict[str, tuple[int, int]]
) -> None:
    """The Slurm partitions and NodeSets whose members change, and drain guidance for the pools that lose nodes."""
    fleet = inv.fleet
    for pool in sorted(counts):
        p = fleet.pools.get(pool) or base_fleet.pools.get(pool)
        fields = _membership(pool, moves, counts)
        if p is not None and p.kind == "slurm" and p.slurm is not None and fields:
            values = f"clusters/{cluster}/tenants/{p.tenant}/slurm/values.yaml"
            where = f"{inv.gitops_rel}/{values}" if values in inv.head.files else f"{inv.gitops_rel}/clusters/{cluster}"
            rv.partitions.append(ObjectChange(f"{p.tenant}/{p.slurm.partition or pool}", where, "changed", fields))
            rv.nodesets.append(ObjectChange(f"{p.tenant}/{pool}", where, "changed", fields))
    for pool in sorted(counts):
        p = base_fleet.pools.get(pool)
        leaving = sorted(m.node for m in moves if m.from_pool == pool)
        if p is None or p.kind != "slurm" or not leaving:
            continue
        rv.drains.append(
            Drain(
                tenant=p.tenant or "-",
                pool=pool,
                partition=p.slurm.partition if p.slurm and p.slurm.partition else pool,
                nodes=tuple(leaving),
                to=tuple(sorted({m.to_pool or "-" for m in moves if m.from_pool == pool})),
            )
        )


def _node_moves(rv: Review, inv: _Inventory, cluster: str) -> None:
    """The nodes that change pool in ``cluster`` (with a picture of the fabric and their owners)."""
    fleet, base_fleet = inv.fleet, inv.base_fleet
    new = _assignment(fleet, inv.head, cluster)
    old = _assignment(base_fleet, inv.base, cluster) if base_fleet and inv.base else {}
    if base_fleet is None or cluster not in base_fleet.clusters:
        return
    moves = node_moves(old, new)
    rv.moves += [(cluster, m) for m in moves]
    if moves:
        topo = inv.head.inputs[cluster].topology
        if topo is not None:
            rv.pictures[cluster] = mermaid(
                topo,
                new,
                {p.name: (p.kind, p.tenant) for p in fleet.cluster_pools(cluster)},
                moved={m.node: m.from_pool or "" for m in moves},
            )
    for m in moves:
        rv.move_owners[m.node] = {_pool_owner(base_fleet, m.from_pool), _pool_owner(fleet, m.to_pool)}
    _membership_changes(rv, inv, base_fleet, cluster, moves, pool_counts(old, new))


def _read_codeowners(rv: Review, root: Path) -> None:
    """The CODEOWNERS of the base commit (GitHub reads the base branch's)."""
    for loc in co.LOCATIONS:
        if _git(root, "ls-tree", "--name-only", rv.base_commit, "--", loc).strip():
            data = _git(root, "show", f"{rv.base_commit}:{loc}").decode("utf-8", "replace")
            rv.codeowners = co.parse(data, loc)
            rv.notes += rv.codeowners.skipped
            return
    rv.notes.append(
        "the base has no CODEOWNERS: no change needs a code owner's approval; the platform must add one"
        " and turn on code-owner review (docs/threat-model.md)"
    )


def _approvals(rv: Review, changed: dict[str, str], invs: list[_Inventory]) -> None:
    """Every committed file of the change (inputs, GitOps trees, pool locks), its owner and approvers."""
    for path, change in sorted(changed.items()):
        inv = next((i for i in invs if path.startswith(i.gitops_rel + "/")), None)
        if inv is not None:
            owner = own.rendered_scope(path[len(inv.gitops_rel) + 1 :], _tenant_names(inv)) or PLATFORM_OWNER
        else:
            inv_rel = next((i.rel for i in invs if path.startswith(i.rel + "/")), None)
            sub = path[len(inv_rel) + 1 :] if inv_rel is not None else ""
            owner = own.input_owner(sub) if inv_rel is not None and not own.is_lock(sub) else PLATFORM_OWNER
        rv.approvals.append(Approval(path, change, owner, rv.codeowners.match(path)))


def _tenant_scope_problems(rv: Review) -> None:
    """A tenant's change stays in its rendered scope: nothing of another owner, no drift, no node move."""
    mine = own.tenant(rv.tenant_pr or "")
    for c in rv.rendered:
        others = [o for o in c.owners if o != mine]
        if others:
            rv.problems.append(
                f"`{c.path}` {c.change} (owned by {', '.join(str(o) for o in others)}): tenant"
                f" `{rv.tenant_pr}`'s change reaches outside its rendered scope"
            )
    for c in rv.drift:
        if [o for o in c.owners if o != mine]:
            rv.problems.append(
                f"`{c.path}` {c.change} in the committed tree though no input of this change alters it: the base"
                " branch's tree is not its rendered inventory (a gpufleet upgrade?); re-render the base branch"
                " in a platform pull request first"
            )
    for cluster, m in rv.moves:
        rv.problems.append(
            f"node `{m.node}` ({cluster}) moves from pool `{m.from_pool or '-'}` to `{m.to_pool or '-'}`: a"
            f" tenant's change never moves nodes (pool sizes are the platform's)"
        )


def _in_repo(issue: Issue, root: Path) -> Issue:
    """``issue`` with its file relative to the repository's root (as the pull request shows it)."""
    where = Path(issue.file)
    return replace(issue, file=where.relative_to(root).as_posix() if where.is_relative_to(root) else str(where))


def _version_rules(rv: Review, root: Path, inv: _Inventory) -> None:
    """The data-protecting version rules (daytwo.rules): a refusal is a problem, flags and notes are notes;
    each names the inventory file, line and key it is about."""
    for f in version_change.check(inv.base_fleet, inv.fleet):
        issue = f.issue(inv.fleet)
        text = str(_in_repo(issue, root)) if issue else f"`{inv.rel}`: {f.line()}"
        (rv.problems if f.action == "refuse" else rv.notes).append(text)
    if inv.base_fleet is not None:
        rv.plan += upgrade.upgrade_plan(inv.base_fleet, inv.fleet)


def _window_issue(root: Path, w: windows.WindowIssue) -> str:
    return str(_in_repo(w.issue, root))


def _stale_windows(rv: Review, root: Path, inv: _Inventory, now: datetime) -> None:
    """An update window that has ended (daytwo.windows) fails a change of its tenants' slurm values (it
    would never reach their workers) and is a note otherwise. A window open at ``now`` fails the change that
    sets or moves it for a tenant (the operator makes no reservation for a start already past) and is a note
    to a change of its tenants' slurm values otherwise."""
    changed = {c.path for c in rv.rendered}
    tenants = inv.fleet.tenants
    values = {t: f"{inv.gitops_rel}/clusters/{tenants[t].cluster}/tenants/{t}/slurm/values.yaml" for t in tenants}
    for w in windows.ended_windows(inv.fleet, root / inv.rel, now):
        stuck = [t for t in w.tenants if values[t] in changed]
        if stuck:
            rv.problems.append(f"{_window_issue(root, w)}; this change alters the slurm values of {', '.join(stuck)}")
        else:
            rv.notes.append(_window_issue(root, w))
    base = inv.base_fleet
    for w in windows.opened_windows(inv.fleet, root / inv.rel, now):
        moved = [t for t in w.tenants if base is None or base.rollout.window_of(t) != inv.fleet.rollout.window_of(t)]
        if moved:
            rv.problems.append(f"{_window_issue(root, w)}; this change sets it for {', '.join(moved)}")
        elif any(values[t] in changed for t in w.tenants):
            rv.notes.append(_window_issue(root, w))


def review_change(
    repo: str | Path,
    base: str,
    inventories: list[str | Path],
    now: datetime | None = None,
    charts_dir: str | Path | None = None,
    full: bool = False,
) -> Review:
    """Review the work tree of ``repo`` against the merge base of ``base``; ``now``: the time an update
    window is judged at (default the clock); ``charts_dir``: where the charts are for the rendered-manifest
    diff. Every changed path is part of the change; Git entries no fleet repository may hold fail the
    review before any file of the work tree is read. ``full``: render every cluster, not only those
    the change touches (review/incremental.py; the Markdown is the same when the base's tree is current)."""
    root = Path(_git(Path(repo), "rev-parse", "--show-toplevel").decode().strip())
    rv = Review(base=base, base_commit=_base_commit(root, base))
    changed = _changed_paths(root, rv.base_commit)
    if _refused_entries(rv, root, changed):
        _read_codeowners(rv, root)
        _approvals(rv, changed, [])
        return rv
    with shared_composes():  # the base and the head share every vars file the change leaves alone
        invs = [_render_inventory(rv, repo, root, inv, changed, full) for inv in inventories]
    _read_codeowners(rv, root)
    _approvals(rv, changed, invs)
    _input_changes(rv, changed, invs)
    for inv in invs:
        _version_rules(rv, root, inv)
        _rendered_changes(rv, inv)
        _drift(rv, root, changed, inv)
        _stale_windows(rv, root, inv, now or windows.parse_now(None))
        rv.notes += feature_gates.alpha_in_use(inv.fleet)  # each allowed by the platform: name it anyway
        for cluster in sorted(inv.fleet.clusters):
            if cluster in inv.head.inputs:  # a cluster the review did not render moves no node
                _node_moves(rv, inv, cluster)
            allowed = inv.fleet.clusters[cluster].allow_node_moves  # a one-off permission: it must not stay
            if allowed:
                rv.notes.append(
                    f"cluster `{cluster}` has `allow_node_moves` ({', '.join(allowed)}): once the move is merged,"
                    " remove it in a platform pull request, or a pin can move these nodes again"
                )
    rv.partitions.sort()
    rv.nodesets.sort()
    if rv.tenant_pr:
        _tenant_scope_problems(rv)
    for inv in invs:
        rv.tenant_changes += summary.all_tenant_changes(inv.base, inv.head)
        rv.notices += approval.tenant_notices(rv, inv.rel, inv.base, inv.head)
        rv.charts += chart_diff.chart_changes(inv.base, inv.head, inv.gitops_rel, charts_dir)
    return rv
