"""CI check of a scale pull request: the tree is current, and no more nodes move than the sizes need.

``check_scale_change(repo, base, inventories)``, for each inventory (a folder in the Git work tree):

1. re-render it as it is checked out and compare with the committed GitOps tree and pool locks:
   any difference means the pull request did not re-render (or edited rendered files by hand);
2. read the inventory and its pool locks at ``base`` (``git archive``, nothing checked out) and
   compare pool by pool: the node assignments that differ between the two locks (among nodes
   present in both snapshots; hardware added or removed is not a move) must not exceed the sum,
   over the pools whose size (or existence) changed, of the change of their node count. A plan
   that reshuffles nodes it did not have to fails here.

Pure but for ``git`` (subprocess, read-only). Returns a report; the script turns it into an exit code.
"""

from __future__ import annotations

import subprocess
import tarfile
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ansible_collections.gpufleet.core.plugins.module_utils.deps import missing
from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Fleet, Pool
from ansible_collections.gpufleet.core.plugins.module_utils.model.paths import default_out
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.pools.lock import lock_path, read_lock
from ansible_collections.gpufleet.core.plugins.module_utils.pools.moves import node_moves, pool_counts
from ansible_collections.gpufleet.core.plugins.module_utils.render import tree as render_tree

try:
    import yaml
except ImportError:  # importing works without it; the first use raises a clear error
    yaml = missing("yaml", "PyYAML")


class CheckError(GpufleetError):
    """The check cannot run (not a Git work tree, unknown base revision, ...)."""


@dataclass
class ClusterCheck:
    inventory: str
    cluster: str
    resized: dict[str, tuple[str, str]] = field(default_factory=dict)  # pool -> (size before, after)
    moved: int = 0
    required: int = 0
    moves: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.moved <= self.required


@dataclass
class CheckReport:
    base: str
    problems: list[str] = field(default_factory=list)
    clusters: list[ClusterCheck] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def text(self) -> str:
        lines = []
        for c in self.clusters:
            sizes = ", ".join(f"{p} {a} -> {b}" for p, (a, b) in sorted(c.resized.items())) or "no pool resized"
            lines.append(
                f"{c.inventory} / {c.cluster}: {sizes}; {c.moved} node(s) move, the size changes need {c.required}"
            )
        lines += [f"note: {n}" for n in self.notes]
        lines += [f"FAIL: {p}" for p in self.problems]
        lines.append("OK" if self.ok else f"{len(self.problems)} problem(s)")
        return "\n".join(lines)


def _git(repo: Path, *args: str) -> bytes:
    try:
        proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, check=False, timeout=300)
    except FileNotFoundError:
        raise CheckError("git is not installed") from None
    if proc.returncode != 0:
        raise CheckError(f"`git {' '.join(args)}` failed in {repo}: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout


def _size(p: Pool | None) -> str:
    if p is None:
        return "absent"
    if p.size_nodes is not None:
        return f"{p.size_nodes} nodes"
    if p.size_gpus is not None:
        return f"{p.size_gpus} gpus"
    return "rest"


def _snapshot_nodes(path: Path) -> set[str] | None:
    if not path.is_file():
        return None
    doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    items = doc.get("items", []) if isinstance(doc, dict) else []
    return {str(i.get("metadata", {}).get("name")) for i in items if isinstance(i, dict)}


def _extract(repo: Path, base: str, rel: str, dest: Path) -> bool:
    """Extract ``rel`` as of ``base`` into ``dest``; False when it did not exist there."""
    with extracting(repo, base, rel, dest) as finish:
        return finish()


@contextmanager
def extracting(
    repo: Path, base: str, rel: str, dest: Path, exclude: Sequence[str] = ()
) -> Iterator[Callable[[], bool]]:
    """:func:`_extract` begun now, finished by the call this yields: ``git archive`` writes the tar
    file in its own process while the caller works on (a review renders the head meanwhile), and no
    archive passes through a pipe into this process. Leaving the block stops a ``git`` still running.
    ``exclude``: repository-relative folders under ``rel`` left out (snapshots a review does not read)."""
    if not _git(repo, "ls-tree", "--name-only", base, "--", rel).strip():
        yield lambda: False
        return
    with tempfile.NamedTemporaryFile(prefix="gpufleet-base-", suffix=".tar") as tar:
        cmd = ["git", "archive", "--format=tar", f"--output={tar.name}", base, "--", rel]
        cmd += [f":(exclude,literal){e}" for e in exclude]
        # git ran just above (ls-tree), so it is installed
        with subprocess.Popen(cmd, cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as proc:

            def finish() -> bool:
                try:
                    err = proc.communicate(timeout=300)[1]
                except subprocess.TimeoutExpired:
                    raise CheckError(f"`git archive {base} -- {rel}` did not finish in 300 s in {repo}") from None
                if proc.returncode != 0:
                    why = err.decode(errors="replace").strip()
                    raise CheckError(f"`git archive {base} -- {rel}` failed in {repo}: {why}")
                with tarfile.open(tar.name) as archive:
                    archive.extractall(dest, filter="data")
                return True

            try:
                yield finish
            finally:
                if proc.poll() is None:
                    proc.kill()


def _cluster_check(
    inv_rel: str, name: str, old: Fleet, new: Fleet, names: tuple[set[str], set[str]] | None = None
) -> ClusterCheck:
    """``names``: the node names of both snapshots when the caller has parsed them (else read here)."""
    c = ClusterCheck(inventory=inv_rel, cluster=name)
    old_lock = read_lock(lock_path(old, name), name) if name in old.clusters else None
    new_lock = read_lock(lock_path(new, name), name) or {}
    old_lock = old_lock or {}
    if names is not None:
        old_nodes, new_nodes = names
    else:
        old_nodes = _snapshot_nodes(old.clusters[name].nodes_snapshot) if name in old.clusters else None
        new_nodes = _snapshot_nodes(new.clusters[name].nodes_snapshot)
    both = (old_nodes or set()) & (new_nodes or set()) if old_nodes is not None and new_nodes is not None else None
    moves = [m for m in node_moves(old_lock, new_lock) if both is None or m.node in both]
    counts = pool_counts(old_lock, new_lock)
    names = {p.name for p in old.cluster_pools(name)} | {p.name for p in new.cluster_pools(name)}
    for p in sorted(names):
        a, b = _size(old.pools.get(p)), _size(new.pools.get(p))
        if a != b:
            c.resized[p] = (a, b)
            before, after = counts.get(p, (0, 0))
            c.required += abs(after - before)
    c.moved = len(moves)
    c.moves = [f"{m.node}: {m.from_pool or '-'} -> {m.to_pool or '-'}" for m in moves]
    return c


def check_scale_change(
    repo: str | Path, base: str, inventories: list[str | Path], gitops_dir: str | Path | None = None
) -> CheckReport:
    root = Path(_git(Path(repo), "rev-parse", "--show-toplevel").decode().strip())
    base_commit = _git(root, "rev-parse", "--verify", f"{base}^{{commit}}").decode().strip()
    report = CheckReport(base=base)
    for inv in inventories:
        inv_path = (Path(repo) / inv).resolve() if not Path(inv).is_absolute() else Path(inv)
        rel = inv_path.relative_to(root).as_posix()
        result = render_tree.render_inventory(inv_path)
        out = Path(gitops_dir) if gitops_dir else default_out(result.fleet)
        stale = render_tree.plan_render(result, out)
        if stale.changed:
            p = stale.plan
            paths = [*p.added, *p.changed, *p.removed] or list(p.manifests)
            shown = ", ".join(paths[:10]) + (", ..." if len(paths) > 10 else "")
            locks = ", ".join(Path(x).relative_to(root).as_posix() for x in stale.locks_changed)
            report.problems.append(
                f"{out.relative_to(root).as_posix() if out.is_relative_to(root) else out} is stale for {rel}: "
                f"re-render (scripts/gpufleet.py render --inventory {rel}) and commit"
                + (f"; files: {shown}" if shown else "")
                + (f"; pool locks: {locks}" if locks else "")
            )
        with tempfile.TemporaryDirectory(prefix="gpufleet-base-") as tmp:
            if not _extract(root, base_commit, rel, Path(tmp)):
                report.notes.append(f"{rel} does not exist at {base}: a new inventory, no moves to compare")
                continue
            try:
                old_fleet = load_fleet(Path(tmp) / rel)
            except GpufleetError as exc:
                report.notes.append(f"{rel} at {base} does not load ({exc}); moves not compared")
                continue
            new_fleet = result.fleet
            for name in sorted(new_fleet.clusters):
                c = _cluster_check(rel, name, old_fleet, new_fleet)
                report.clusters.append(c)
                if not c.ok:
                    report.problems.append(
                        f"{rel} cluster {name}: {c.moved} node(s) change pool but the size changes "
                        f"({', '.join(f'{p} {a} -> {b}' for p, (a, b) in sorted(c.resized.items())) or 'none'}) "
                        f"need only {c.required}: {'; '.join(c.moves[:20])}"
                    )
    return report
