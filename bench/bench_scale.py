#!/usr/bin/env python3
"""Scale benchmark: scaling a pool of a generated 10,000-node, 100-tenant fleet by k nodes.

Bar (DESIGN "Bars"): scaling a pool by k nodes moves exactly k node assignments (no reshuffle).
For each k the plan is computed in check mode (edit in memory, render before and after, plan) and
the table shows the node moves against k; then one change is written and published to a bare Git
remote on disk, timed. Prints tables; asserts nothing.

    .venv/bin/python bench/bench_scale.py [--nodes 10000] [--tenants 100]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
from checkout_path import use_checkout

sys.path.insert(0, str(REPO / "tests" / "lib"))


def _git(cwd: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@gpufleet.invalid",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@gpufleet.invalid",
    }
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--tenants", type=int, default=100)
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()
    use_checkout()
    from render_fixtures import make_big_inventory

    from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
    from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_inventory, write_render
    from ansible_collections.gpufleet.core.plugins.module_utils.scale.run import scale

    tmp = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    try:
        work = tmp / "work"
        work.mkdir()
        inv = make_big_inventory(work, args.nodes, args.tenants, True)
        _git(work, "init", "-q", "-b", "main")  # the work tree scale() finds gitops/ in
        t0 = time.perf_counter()
        first = render_inventory(inv)
        write_render(first, work / "gitops")
        t_render = time.perf_counter() - t0
        free = first.summary["gpu-east"]["pools"].get("spare", 0)
        fleet = load_fleet(inv)
        pool = "team000-a"
        base = fleet.pools[pool].size_nodes or 0
        print(
            f"# bench_scale: {args.nodes} GPU nodes, {args.tenants} tenants, {len(fleet.pools)} pools; "
            f"pool {pool} = {base} nodes; first render {t_render:.1f} s; "
            f"cpus={os.cpu_count()} load={os.getloadavg()[0]:.1f}"
        )
        print()
        print("| k (nodes) | new size | node moves | moves needed | files changed | plan time (s) |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: |")
        # the steps the spare nodes allow (a small fleet has few)
        steps = [k for k in (8, 64, 256, -8, -48) if k <= free and base + k > 0]
        for k in steps:
            t0 = time.perf_counter()
            res = scale(inv, pool, base + k, check=True)
            dt = time.perf_counter() - t0
            p = res.plan
            print(f"| {k:+d} | {base + k} | {len(p.moves)} | {p.required_moves} | {len(p.files)} | {dt:.2f} |")
        print()
        _git(work, "add", "-A")
        _git(work, "commit", "-q", "-m", "fleet")
        remote = tmp / "remote.git"
        _git(tmp, "init", "-q", "--bare", "-b", "main", str(remote))
        _git(work, "remote", "add", "origin", str(remote))
        _git(work, "push", "-q", "origin", "main")
        t0 = time.perf_counter()
        grow = max(steps)
        res = scale(inv, pool, base + grow, publish=True, token=None)
        dt = time.perf_counter() - t0
        print("| step | seconds | detail |")
        print("| --- | ---: | --- |")
        print(
            f"| scale {grow:+d} nodes: edit, render x2, plan, write, commit, push | {dt:.2f} | "
            f"{len(res.plan.moves)} moves, {len(res.plan.files)} files, branch {res.branch} |"
        )
        t0 = time.perf_counter()
        again = scale(inv, pool, base + grow, publish=True, token=None)
        dt = time.perf_counter() - t0
        print(f"| same scale again (no change, nothing pushed) | {dt:.2f} | pushed={again.pushed} |")
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
