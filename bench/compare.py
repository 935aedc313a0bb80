#!/usr/bin/env python3
"""Paired benchmark of this checkout against a base revision: ``make bench BASE=<rev>``.

Run it before merging a change to a hot path (fabric parsing, topology, render)::

    make bench BASE=main                  # or: .venv/bin/python bench/compare.py --base main
    make bench BASE=7a78b5b BIG=1 RUNS=7  # add the 208 MB dump; more pairs on a noisy machine

The base revision is exported (``git archive``, no worktree is registered) into a temporary
directory. Inputs are generated once, by this checkout, and both sides read the same bytes (each
side renders its own copy of the inventory, with its own cache directory). Then, pair by pair,
every figure runs in a fresh child process for the base and for this checkout in turn, the order
alternating (base-head, head-base, ...), so the drift of a shared machine hits both sides alike.

Printed per figure: the medians of both sides (wall seconds of the measured step inside the child,
and its CPU seconds), the median of the per-pair ratios head/base with their range, and the peak
memory of each side (``ru_maxrss`` of the child: interpreter, imports and inputs included). A
headline figure with a time or memory ratio above 1.2 is printed as REGRESSION and the exit status
is 1. Ratios are what to quote: absolute seconds depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(REPO / "bench"))
from checkout_path import COLLECTIONS, use_checkout

THRESHOLD = 1.2

# One figure, one child process; argv: collections dir, figure kind, its arguments. Prints JSON.
CHILD = r"""
import hashlib, json, os, shutil, sys, time
sys.path.insert(0, sys.argv[1])
kind, args = sys.argv[2], sys.argv[3:]
digest = ""  # sha256 of what the step produced: base and head must agree byte for byte
if kind == "topology":  # dump, format
    from ansible_collections.gpufleet.core.plugins.module_utils.fabric.load import load_fabric
    from ansible_collections.gpufleet.core.plugins.module_utils.topology.build import build_topology
    from ansible_collections.gpufleet.core.plugins.module_utils.topology.render import render_block, render_tree
    c0, t0 = time.process_time(), time.perf_counter()
    topo = build_topology(load_fabric(args[0], kind=args[1]))
    out = render_tree(topo) + render_block(topo)
    t1, c1 = time.perf_counter(), time.process_time()
    detail = f"{len(topo.node_group)} nodes, {len(out.splitlines())} lines"
    digest = hashlib.sha256(out.encode()).hexdigest()
elif kind == "review":  # repository, inventory, base; parse caches removed (a CI job's cold start)
    from pathlib import Path
    from ansible_collections.gpufleet.core.plugins.module_utils.render.cache import cache_dir
    from ansible_collections.gpufleet.core.plugins.module_utils.review.change import review_change
    try:
        from ansible_collections.gpufleet.core.plugins.module_utils.review.review_markdown import render_markdown
    except ImportError:  # a base revision from before the Markdown had a module of its own
        from ansible_collections.gpufleet.core.plugins.module_utils.review.change import render_markdown
    repo, inv, base = args
    shutil.rmtree(cache_dir(Path(repo) / "gitops"), ignore_errors=True)
    os.chdir(repo)
    c0, t0 = time.process_time(), time.perf_counter()
    md = render_markdown(review_change(".", base, [inv]))
    t1, c1 = time.perf_counter(), time.process_time()
    detail = md.splitlines()[0]
    digest = hashlib.sha256(md.encode()).hexdigest()
else:  # render: inventory, out, mode (uncached | serial | cached | noop | alone)
    from ansible_collections.gpufleet.core.plugins.module_utils.render import tree as rt
    try:  # render/cache.py since the stage split; render/tree.py before it
        from ansible_collections.gpufleet.core.plugins.module_utils.render.cache import cache_dir
    except ImportError:
        cache_dir = rt.cache_dir
    inv, out, mode = args
    cache = cache_dir(__import__("pathlib").Path(out))
    fleet = None
    if mode == "alone":  # the first cluster alone (its tenants and pools), uncached: what a review of it costs
        from dataclasses import replace
        from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
        fleet = load_fleet(inv)
        first = sorted(fleet.clusters)[0]
        fleet = replace(
            fleet,
            clusters={first: fleet.clusters[first]},
            tenants={k: t for k, t in fleet.tenants.items() if t.cluster == first},
            pools={k: p for k, p in fleet.pools.items() if p.cluster == first},
        )
    if mode in ("uncached", "serial", "alone"):  # serial: one process (a base without workers ignores it)
        shutil.rmtree(cache, ignore_errors=True)
        if mode == "serial":
            os.environ["GPUFLEET_RENDER_WORKERS"] = "1"
    elif mode == "cached":  # parse caches kept, the no-change record dropped: a full render
        for f in cache.glob("state.json"):
            f.unlink()
    c0, t0 = time.process_time(), time.perf_counter()
    _, _, result, report = rt.render_and_write(inv, out, fleet=fleet)
    t1, c1 = time.perf_counter(), time.process_time()
    import resource  # the render's worker processes (none on a base without them): CPU and peak memory
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    c1 += kids.ru_utime + kids.ru_stime
    detail = "fast path" if result is None else f"full, {len(result.files)} files"
    if kids.ru_maxrss:
        detail += f", workers' peak {kids.ru_maxrss / 1024:.0f} MiB"
    if result is not None:
        digest = hashlib.sha256(json.dumps({k: v.hex() for k, v in result.files.items()}).encode()).hexdigest()
print(json.dumps({"seconds": t1 - t0, "cpu": c1 - c0, "detail": detail, "digest": digest}))
"""


@dataclass
class Figure:
    name: str
    kind: str
    args: dict[str, list[str]]  # side -> child arguments
    headline: bool
    runs: int
    samples: dict[str, list[dict]] = field(default_factory=lambda: {"base": [], "head": []})
    errors: dict[str, str] = field(default_factory=dict)


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, check=True, capture_output=True, text=True).stdout.strip()


def export(rev: str, dest: Path) -> tuple[str, Path]:
    """``rev`` as a plain tree under ``dest`` (git archive | tar), importable as the collection."""
    sha = _git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    tree = dest / "tree"
    tree.mkdir(parents=True)
    archive = subprocess.Popen(["git", "archive", "--format=tar", sha], cwd=REPO, stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(tree)], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        raise SystemExit(f"git archive {rev} failed")
    coll = dest / "collections"
    (coll / "ansible_collections" / "gpufleet").mkdir(parents=True)
    (coll / "ansible_collections" / "gpufleet" / "core").symlink_to(tree, target_is_directory=True)
    return sha, coll


def child(coll: Path, fig: Figure, side: str, env: dict[str, str]) -> dict:
    """Run one figure in a fresh process; its own rusage gives the peak memory (ru_maxrss)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(coll), fig.kind, *fig.args[side]],
            stdout=out,
            stderr=err,
            env=env,
            cwd=tempfile.gettempdir(),
        )
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if p.returncode != 0:
            lines = err.read().decode(errors="replace").strip().splitlines()
            raise RuntimeError(lines[-1] if lines else f"exit status {p.returncode}")
        res = json.loads(out.read().decode().strip().splitlines()[-1])
    res["rss"] = usage.ru_maxrss / 1024  # KiB on Linux
    return res


def _ratios(fig: Figure, key: str) -> list[float]:
    return [h[key] / b[key] for b, h in zip(fig.samples["base"], fig.samples["head"], strict=False) if b[key] > 0]


def _med(fig: Figure, side: str, key: str) -> float:
    return statistics.median(s[key] for s in fig.samples[side])


def _same_output(f: Figure) -> str:
    """Whether base and head produced the same bytes (every run of both sides)."""
    digests = {s.get("digest", "") for side in ("base", "head") for s in f.samples[side]}
    if digests == {""}:
        return "-"
    return "same" if len(digests) == 1 else "DIFFERENT"


def report(figs: list[Figure], header: str, threshold: float = THRESHOLD) -> int:
    print(header)
    print()
    print(
        "| figure | base s | head s | ratio (median, range) | cpu ratio | base peak MiB | head peak MiB "
        "| mem ratio | output | verdict |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    bad = 0
    for f in figs:
        if f.errors or not f.samples["head"] or not f.samples["base"]:
            why = "; ".join(f"{k}: {v}" for k, v in f.errors.items()) or "no runs"
            print(f"| {f.name} | | | | | | | | | not measured ({why}) |")
            continue
        r = _ratios(f, "seconds")
        rc = _ratios(f, "cpu")
        mem = _med(f, "head", "rss") / _med(f, "base", "rss")
        verdict = []
        if f.headline and statistics.median(r) > threshold:
            verdict.append("REGRESSION (time)")
        if f.headline and mem > threshold:
            verdict.append("REGRESSION (memory)")
        same = _same_output(f)
        if same == "DIFFERENT":
            verdict.append("OUTPUT DIFFERS")
        bad += bool(verdict)
        verdict_s = ", ".join(verdict) or ("ok" if f.headline else "ok (not a headline)")
        print(
            f"| {f.name} | {_med(f, 'base', 'seconds'):.2f} | {_med(f, 'head', 'seconds'):.2f} "
            f"| {statistics.median(r):.2f} ({min(r):.2f}-{max(r):.2f}) | {statistics.median(rc):.2f} "
            f"| {_med(f, 'base', 'rss'):.0f} | {_med(f, 'head', 'rss'):.0f} | {mem:.2f} | {same} | {verdict_s} |"
        )
    print()
    print(
        f"ratio = head / base, pair by pair (n = runs per side); > {threshold} on a headline figure is a "
        "regression. Seconds: wall time of the measured step inside the child (medians); peak: ru_maxrss. "
        "output: the sha256 of what the step produced (topology.conf + blocks, the rendered tree, the "
        "review's Markdown), the same on both sides and in every run."
    )
    _against_render(figs)
    return 1 if bad else 0


def _against_render(figs: list[Figure]) -> None:
    """Figures measured against another figure of the same run (pair by pair: the same minute of the
    machine), per side: the median of figure / reference over the pairs, wall and CPU. The reviews
    against the uncached render; the ports format against the default format of the same fabric."""
    modes = {f.args["head"][-1]: f for f in figs if f.kind == "render"}
    render = modes.get("alone") or modes.get("uncached")  # the reviews' changes touch the first cluster
    what_render = "render of that cluster alone" if "alone" in modes else "uncached render"
    default = next((f for f in figs if f.kind == "topology" and f.name == SIZES["16k"][0]), None)
    for ref, rel, what in (
        (render, [f for f in figs if f.kind == "review"], what_render),
        (default, [f for f in figs if f.kind == "topology" and f.name == SIZES["16k-ports"][0]], "default format"),
    ):
        if ref is None or not rel:
            continue
        print()
        print(f"| figure | base x {what} | head x {what} | head cpu x {what} cpu |")
        print("| --- | ---: | ---: | ---: |")
        for f in rel:
            cells = []
            for side, key in (("base", "seconds"), ("head", "seconds"), ("head", "cpu")):
                together = zip(f.samples[side], ref.samples[side], strict=False)
                pairs = [a[key] / b[key] for a, b in together if b[key] > 0]
                cells.append(f"{statistics.median(pairs):.2f} ({min(pairs):.2f}-{max(pairs):.2f})" if pairs else "-")
            print(f"| {f.name} | {' | '.join(cells)} |")
        print()
        print(f"x {what}: the figure's time over the {what}'s in the same pair (medians, range).")


SIZES = {  # tag -> (label, hosts, tiers, headline)
    "2k": ("topology 2,048 x 8, 2 tiers (dump -> topology.conf + blocks)", 2048, 2, False),
    "16k": ("topology 16,384 x 8, 3 tiers, 10,240 switches (90 MB dump)", 16384, 3, True),
    "16k-ports": ("topology 16,384 x 8, 3 tiers, `ibnetdiscover -p` (ports) format", 16384, 3, True),
    "38k": ("topology 38,912 x 8, 3 tiers (208 MB dump)", 38912, 3, True),
}


# Inputs are generated in child processes too: a child's ru_maxrss counts its parent's memory at
# fork time (Linux keeps the high-water mark across exec), so the parent must stay small.
GEN = r"""
import shutil, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from checkout_path import use_checkout
use_checkout()
from render_fixtures import make_big_inventory
out = Path(sys.argv[2])
src = make_big_inventory(out / "fleet", int(sys.argv[3]), int(sys.argv[4]), True, int(sys.argv[5]))
for side in ("base", "head"):  # one copy per side: a render writes pool locks into the inventory
    shutil.copytree(src, out / f"inv-{side}", symlinks=True)
"""


def make_dump(work: Path, tag: str) -> Path:
    """The dump of one size, written by bench_topology's generator (in its own process too)."""
    from bench_topology import GEN as DUMP

    _, hosts, tiers, _ = SIZES[tag]
    path = work / f"fabric-{tag}.ibnetdiscover"
    ports = "1" if tag.endswith("-ports") else "0"
    args = [str(REPO / "tests" / "lib"), str(hosts), "8", str(tiers), ports, str(path)]
    subprocess.run([sys.executable, "-c", DUMP, *args], check=True)
    return path


def make_inventories(work: Path, nodes: int, tenants: int, clusters: int = 1) -> dict[str, Path]:
    args = [str(REPO / "scripts"), str(work), str(nodes), str(tenants), str(clusters)]
    subprocess.run([sys.executable, "-c", GEN, *args], check=True)
    return {side: work / f"inv-{side}" for side in ("base", "head")}


# Git repositories for the review figures, made from the generated fleet (render_fixtures.make_review_repos)
REVIEW_GEN = r"""
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from checkout_path import use_checkout
use_checkout()
from render_fixtures import make_review_repos
make_review_repos(Path(sys.argv[2]), Path(sys.argv[3]), tuple(sys.argv[4:]))
"""


def make_review_repos(work: Path, inv: Path, changes: list[str]) -> dict[str, Path]:
    """One repository per change (``main`` and a branch ``pr`` on it); the review does not write to it,
    so both sides review the same one."""
    subprocess.run([sys.executable, "-c", REVIEW_GEN, str(REPO / "scripts"), str(work), str(inv), *changes], check=True)
    return {c: work / f"review-{c}" for c in changes}


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="git revision to compare against (e.g. main, 7a78b5b)")
    ap.add_argument("--runs", type=int, default=5, help="pairs per figure (default 5)")
    ap.add_argument("--big", action="store_true", help="add the 208 MB dump (38,912 hosts x 8)")
    ap.add_argument("--big-runs", type=int, default=2, help="pairs for the 208 MB dump (default 2)")
    ap.add_argument("--nodes", type=int, default=10_000, help="render fleet size per cluster (0: no render figures)")
    ap.add_argument("--tenants", type=int, default=100, help="tenants per cluster")
    ap.add_argument("--clusters", type=int, default=1, help="clusters of the render fleet (each its own fabric)")
    ap.add_argument(
        "--only",
        default="",
        help="figures to run, comma-separated substrings of: topology-2k, topology-16k, topology-16k-ports, "
        "topology-38k, render-uncached, render-serial, render-cached, render-noop, render-alone (with --clusters), "
        "review-tenant, review-fabric",
    )
    ap.add_argument("--threshold", type=float, default=THRESHOLD, help="regression ratio (default 1.2)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    return ap.parse_args()


def topology_figures(a: argparse.Namespace, work: Path, wanted) -> list[Figure]:
    figs = []
    for tag, (label, _hosts, _tiers, headline) in SIZES.items():
        if (tag != "38k" or a.big) and wanted(f"topology-{tag}"):
            args = [str(make_dump(work, tag)), "ibnetdiscover-ports" if tag.endswith("-ports") else "ibnetdiscover"]
            runs = a.big_runs if tag == "38k" else a.runs
            figs.append(Figure(label, "topology", {"base": args, "head": args}, headline, runs))
    return figs


def fleet_figures(a: argparse.Namespace, tmp: Path, work: Path, wanted) -> list[Figure]:
    """The render and review figures of the generated fleet (``--clusters`` x ``--nodes`` x ``--tenants``)."""
    size = f"{a.nodes:,} nodes / {a.tenants} tenants" + (f" x {a.clusters} clusters" if a.clusters > 1 else "")
    renders = [
        ("uncached", f"render {size}, uncached full render"),
        ("serial", "render, uncached, one process (GPUFLEET_RENDER_WORKERS=1)"),
        ("cached", "render, full render with parse caches"),
        ("noop", "render, no change (fast path)"),
    ]
    if a.clusters > 1:  # what the reviews of a change of the first cluster are measured against
        renders.append(("alone", "render of the first cluster alone (its tenants, pools, snapshots), uncached"))
    renders = [(m, label) for m, label in renders if a.nodes and wanted(f"render-{m}")]
    reviews = [
        ("tenant", "review --base, one tenant's change (cold parse caches)"),
        ("fabric", "review --base, a fabric snapshot change (cold parse caches)"),
    ]
    reviews = [(c, label) for c, label in reviews if a.nodes and wanted(f"review-{c}")]
    if not renders and not reviews:
        return []
    figs = []
    invs = make_inventories(work, a.nodes, a.tenants, a.clusters)
    for mode, label in renders:
        args = {s: [str(invs[s]), str(tmp / f"out-{s}-{mode}"), mode] for s in ("base", "head")}
        figs.append(Figure(label, "render", args, True, a.runs))
    repos = make_review_repos(work, work / "fleet" / "inv", [c for c, _ in reviews]) if reviews else {}
    for change, label in reviews:
        args = {s: [str(repos[change]), "inv", "main"] for s in ("base", "head")}
        figs.append(Figure(label, "review", args, True, a.runs))
    return figs


def run_pairs(figs: list[Figure], colls: dict[str, Path], envs: dict[str, dict[str, str]]) -> None:
    """A warm-up per side (not counted: byte-code, page cache, the first render's tree, lock and
    caches), then the pairs, the order alternating."""
    for f in figs:
        for s in ("base", "head"):
            try:
                child(colls[s], f, s, envs[s])
            except (RuntimeError, ValueError, OSError) as e:
                f.errors[s] = str(e)
    for i in range(max(f.runs for f in figs) if figs else 0):
        order = ("base", "head") if i % 2 == 0 else ("head", "base")
        for f in figs:
            if i >= f.runs or f.errors:
                continue
            print(f"pair {i + 1}/{f.runs}: {f.name}", file=sys.stderr, flush=True)
            for s in order:
                try:
                    f.samples[s].append(child(colls[s], f, s, envs[s]))
                except (RuntimeError, ValueError, OSError) as e:
                    f.errors[s] = str(e)


def main() -> int:
    a = parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="gpufleet-bench-"))
    try:
        t0 = time.perf_counter()
        base_sha, base_coll = export(a.base, tmp / "base")
        use_checkout()
        colls = {"base": base_coll, "head": COLLECTIONS}
        work = tmp / "inputs"
        work.mkdir()
        keys = [k.strip() for k in a.only.split(",") if k.strip()]

        def wanted(name: str) -> bool:
            return not keys or any(k in name for k in keys)

        figs = topology_figures(a, work, wanted) + fleet_figures(a, tmp, work, wanted)
        envs = {
            s: {**os.environ, "GPUFLEET_CACHE_DIR": str(tmp / f"cache-{s}"), "PYTHONDONTWRITEBYTECODE": "1"}
            for s in ("base", "head")
        }
        run_pairs(figs, colls, envs)
        dirty = " (+ uncommitted changes)" if _git("status", "--porcelain", "--untracked-files=no") else ""
        header = (
            f"# bench compare: base {a.base} ({base_sha[:10]}) vs head {_git('rev-parse', 'HEAD')[:10]}{dirty}; "
            f"pairs per figure: {a.runs} ({a.big_runs} for the 208 MB dump), order alternating; "
            f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; {time.perf_counter() - t0:.0f} s in all"
        )
        return report(figs, header, a.threshold)
    finally:
        if a.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
