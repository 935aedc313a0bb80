#!/usr/bin/env python3
"""Render benchmark: a generated 10,000-node, 100-tenant fleet (8-rail fat-tree fabric).

Targets (DESIGN "Bars"): full render < 5 s; re-render with no change < 2 s and zero files written.
The generated fleet has monitoring and GPU health on for every tenant (the defaults) and the
prometheus-operator CRDs declared; a last table compares render_fleet with them on and off
(issue 13 target: "on" within 20% of "off").
Prints tables; asserts nothing (timings depend on the machine and its load, shown in the header).

    .venv/bin/python bench/bench_render.py [--nodes 10000] [--tenants 100] [--no-fabric]
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


def timed(fn, *a, **kw):
    t0 = time.perf_counter()
    out = fn(*a, **kw)
    return time.perf_counter() - t0, out


def features_off(fleet):
    """The same fleet with monitoring, GPU health and the prometheus-operator monitors off."""
    from dataclasses import replace

    from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import (
        ClusterMonitoring,
        TenantHealth,
        TenantMonitoring,
    )

    tenants = {
        n: replace(t, monitoring=TenantMonitoring(enabled=False), health=TenantHealth(enabled=False))
        for n, t in fleet.tenants.items()
    }
    clusters = {n: replace(c, monitoring=ClusterMonitoring()) for n, c in fleet.clusters.items()}
    return replace(fleet, tenants=tenants, clusters=clusters)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--tenants", type=int, default=100)
    ap.add_argument("--no-fabric", action="store_true", help="no ibnetdiscover snapshot (no topology)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()
    use_checkout()
    from render_fixtures import make_big_inventory

    from ansible_collections.gpufleet.core.plugins.module_utils.model.nodes import load_nodes
    from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
    from ansible_collections.gpufleet.core.plugins.module_utils.pools.assign import assign
    from ansible_collections.gpufleet.core.plugins.module_utils.pools.lock import read_lock
    from ansible_collections.gpufleet.core.plugins.module_utils.render import cache as rc
    from ansible_collections.gpufleet.core.plugins.module_utils.render import inputs as ri
    from ansible_collections.gpufleet.core.plugins.module_utils.render import tree as rt

    tmp = Path(tempfile.mkdtemp(prefix="bench-render-"))
    os.environ["GPUFLEET_CACHE_DIR"] = str(tmp / "cache")
    try:
        t_gen, inv = timed(make_big_inventory, tmp, args.nodes, args.tenants, not args.no_fabric)
        out = tmp / "gitops"
        snap = inv / "snapshots" / "gpu-east"
        sizes = {p.name: p.stat().st_size for p in snap.iterdir()}
        print(
            f"# render benchmark: {args.nodes} GPU nodes (+16 system), {args.tenants} tenants, "
            f"fabric={'no' if args.no_fabric else 'ibnetdiscover'}"
        )
        print(f"# machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} (timings scale with load)")
        print(
            f"# inputs generated in {t_gen:.1f} s: "
            + ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in sorted(sizes.items()))
        )
        print()
        rows = []

        def run(label: str, check: bool = False) -> None:
            t, (_, _, res, rep) = timed(rt.render_and_write, inv, out, check)
            p = rep.plan
            written = len(p.added) + len(p.changed) + len(p.removed) + len(rep.locks_changed)
            rows.append(
                (
                    label,
                    t,
                    written,
                    len(p.added),
                    len(p.changed),
                    len(p.removed),
                    p.unchanged,
                    "fast path" if res is None else "full",
                )
            )

        cache = rc.cache_dir(out)
        pools = inv / "group_vars" / "all" / "pools.yml"

        def scale(n: int) -> None:  # shrink the n-th Slurm pool of 56 nodes by 8 nodes
            text = pools.read_text()
            pos = -1
            for _ in range(n):
                pos = text.index("nodes: 56\n", pos + 1)
            pools.write_text(text[:pos] + "nodes: 48\n" + text[pos + len("nodes: 56\n") :])

        run("1 first render (no tree, no lock, no cache)")
        run("2 re-render (lock now present)")
        run("3 re-render, no change")
        run("4 --check, no change", check=True)
        shutil.rmtree(cache)
        run("5 re-render, no change, caches removed")
        run("6 re-render, no change (cache rebuilt)")
        scale(1)
        run("7 scale one pool by 8 nodes")
        scale(2)
        shutil.rmtree(cache)
        run("8 scale another pool, caches removed")
        t_cli0 = time.perf_counter()
        cp = subprocess.run(
            [sys.executable, str(REPO / "scripts" / "gpufleet.py"), "render", "-i", str(inv), "-o", str(out)],
            capture_output=True,
            text=True,
            check=False,
        )
        rows.append(
            (
                "9 CLI process, no change (incl. start-up)",
                time.perf_counter() - t_cli0,
                0 if "0 added, 0 changed, 0 removed" in cp.stdout else -1,
                0,
                0,
                0,
                0,
                cp.stdout.strip()[-40:],
            )
        )

        hdr = ("run", "seconds", "files written", "added", "changed", "removed", "unchanged", "mode")
        w = [max(len(str(r[i])) if i != 1 else 7 for r in [hdr, *rows]) for i in range(len(hdr))]
        print(" | ".join(h.ljust(w[i]) for i, h in enumerate(hdr)))
        print("-|-".join("-" * x for x in w))
        for r in rows:
            cells = [r[0], f"{r[1]:.2f}", *map(str, r[2:])]
            print(" | ".join(c.ljust(w[i]) for i, c in enumerate(cells)))

        # where a full render spends its time
        print()
        fleet_t, fleet = timed(load_fleet, inv)
        c = fleet.clusters["gpu-east"]
        nodes_t, nodes = timed(load_nodes, c.nodes_snapshot)
        topo_t, topo = timed(ri.load_topology, c, nodes)
        lock = read_lock(c.snapshot_dir / "pools.lock.yaml", c.name)
        assign_t, _ = timed(assign, fleet, c.name, nodes, dict(topo.node_group) if topo else {}, lock)
        render_t, result = timed(rt.render_fleet, fleet)
        digest_t, _ = timed(rc.input_digest, fleet)
        print("stage | seconds")
        print("---|---")
        for label, t in (
            ("load + validate inventory", fleet_t),
            ("parse nodes snapshot", nodes_t),
            ("fabric parse + topology", topo_t),
            ("pool assignment (with lock)", assign_t),
            ("render_fleet total (includes the three above)", render_t),
            ("input digest (fast path check)", digest_t),
        ):
            print(f"{label} | {t:.2f}")
        print(f"\n{len(result.files)} files, {sum(map(len, result.files.values())) / 1e6:.1f} MB rendered")
        print()
        print("observability + GPU health | render_fleet seconds (best of 3) | files | MB")
        print("---|---|---|---")
        for label, f in (("off (as before issue 13)", features_off(fleet)), ("on (defaults)", fleet)):
            best, res = min((timed(rt.render_fleet, f) for _ in range(3)), key=lambda x: x[0])
            size = sum(map(len, res.files.values())) / 1e6
            print(f"{label} | {best:.2f} | {len(res.files)} | {size:.1f}")
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
