#!/usr/bin/env python3
"""Render benchmark: a generated fleet (8-rail fat-tree fabric per cluster), 10,000 nodes and 100
tenants by default; ``--clusters N`` makes N clusters of ``--nodes`` nodes and ``--tenants`` tenants
each, every cluster with its own fabric, nodes and pools (the headline fleet: 20 x 5,000 x 25).

One cluster (the default tables):
- ``runs``: render_and_write in the states a user meets (first render, no change, --check, caches
  removed, one pool scaled, the CLI process). Bars (DESIGN): full render < 5 s; re-render with no
  change < 2 s and zero files written.
- ``stages``: where a full render spends its time.
- ``features``: render_fleet with monitoring, GPU health and the prometheus-operator monitors on and
  off (issue 13: "on" within 20 % of "off").

Several clusters (``fleet``): every measurement in a fresh child process (its own peak memory), the
parse caches off: each cluster rendered alone (a fleet of that one cluster), then the whole fleet with
one worker process (clusters one after another, each released once written) and with one per core.
Printed: the fleet's time over the sum of its clusters alone, its peak memory over the largest
cluster's, and the speed-up of the workers.

Prints tables; asserts nothing (timings depend on the machine and its load, shown in the header).

    .venv/bin/python bench/bench_render.py [--nodes 10000] [--tenants 100] [--clusters 1] [--no-fabric]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
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


def table(hdr: tuple[str, ...], rows: list[tuple]) -> None:
    print("| " + " | ".join(hdr) + " |")
    print("|" + "|".join(" --- " for _ in hdr) + "|")
    for r in rows:
        print("| " + " | ".join(f"{c:.2f}" if isinstance(c, float) else str(c) for c in r) + " |")
    print()


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


# ------------------------------------------------------------------ one cluster: the write runs


def runs_table(inv: Path, out: Path) -> None:
    import yaml

    from ansible_collections.gpufleet.core.plugins.module_utils.render import cache as rc
    from ansible_collections.gpufleet.core.plugins.module_utils.render import tree as rt

    rows: list[tuple] = []

    def run(label: str, check: bool = False) -> None:
        t, (_, _, res, rep) = timed(rt.render_and_write, inv, out, check)
        p = rep.plan
        written = len(p.added) + len(p.changed) + len(p.removed) + len(rep.locks_changed)
        mode = "fast path" if res is None else "full"
        rows.append((label, t, written, len(p.added), len(p.changed), len(p.removed), p.unchanged, mode))

    cache = rc.cache_dir(out)
    pools = inv / "group_vars" / "all" / "pools.yml"

    def scale(n: int) -> None:  # the n-th Slurm pool by 8 nodes: smaller from 16 up, else bigger (a tiny fleet)
        data = yaml.safe_load(pools.read_text())
        pool = [p for p in data["gpufleet_pools"] if p["kind"] == "slurm"][n - 1]
        pool["size"]["nodes"] += -8 if pool["size"]["nodes"] >= 16 else 8
        pools.write_text(yaml.safe_dump(data, sort_keys=False))

    run("1 first render (no tree, no lock, no cache)")
    run("2 re-render (lock now present)")
    run("3 re-render, no change")
    run("4 --check, no change", check=True)
    shutil.rmtree(cache)
    run("5 re-render, no change, caches removed")
    run("6 re-render, no change (cache rebuilt)")
    scale(1)
    run("7 resize one pool by 8 nodes")
    scale(2)
    shutil.rmtree(cache)
    run("8 resize another pool, caches removed")
    t0 = time.perf_counter()
    cmd = [sys.executable, str(REPO / "scripts" / "gpufleet.py"), "render", "-i", str(inv), "-o", str(out)]
    cp = subprocess.run(cmd, capture_output=True, text=True, check=False)
    ok = 0 if "0 added, 0 changed, 0 removed" in cp.stdout else -1
    rows.append(
        ("9 CLI process, no change (incl. start-up)", time.perf_counter() - t0, ok, 0, 0, 0, 0, cp.stdout.strip()[-40:])
    )
    table(("run", "seconds", "files written", "added", "changed", "removed", "unchanged", "mode"), rows)


def stages_table(inv: Path):
    """Where a full render spends its time (the render's own calls, parse caches off)."""
    from ansible_collections.gpufleet.core.plugins.module_utils.model.nodes import load_nodes
    from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
    from ansible_collections.gpufleet.core.plugins.module_utils.pools.assign import assign
    from ansible_collections.gpufleet.core.plugins.module_utils.pools.lock import read_lock
    from ansible_collections.gpufleet.core.plugins.module_utils.render import cache as rc
    from ansible_collections.gpufleet.core.plugins.module_utils.render import tree as rt

    fleet_t, fleet = timed(load_fleet, inv)
    c = fleet.clusters[sorted(fleet.clusters)[0]]
    nodes_t, nodes = timed(load_nodes, c.nodes_snapshot)
    topo_t, topo = timed(rc.cached_topology, c, nodes, None)
    lock = read_lock(c.snapshot_dir / "pools.lock.yaml", c.name)
    assign_t, _ = timed(assign, fleet, c.name, nodes, dict(topo.node_group) if topo else {}, lock)
    render_t, result = timed(rt.render_fleet, fleet)
    digest_t, _ = timed(rc.input_digest, fleet)
    rows = [
        ("load + validate inventory", fleet_t),
        ("parse nodes snapshot", nodes_t),
        ("fabric parse + topology", topo_t),
        ("pool assignment (with lock)", assign_t),
        ("render_fleet total (includes the three above)", render_t),
        ("input digest (fast path check)", digest_t),
    ]
    table(("stage", "seconds"), rows)
    print(f"{len(result.files)} files, {sum(map(len, result.files.values())) / 1e6:.1f} MB rendered\n")
    return fleet


def features_table(fleet) -> None:
    from ansible_collections.gpufleet.core.plugins.module_utils.render import tree as rt

    rows = []
    for label, f in (("off (as before issue 13)", features_off(fleet)), ("on (defaults)", fleet)):
        best, res = min((timed(rt.render_fleet, f) for _ in range(3)), key=lambda x: x[0])
        rows.append((label, best, len(res.files), f"{sum(map(len, res.files.values())) / 1e6:.1f}"))
    table(("observability + GPU health", "render_fleet seconds (best of 3)", "files", "MB"), rows)


# ------------------------------------------------------------------ several clusters: child processes


def child(inv: str, cluster: str, workers: int, out: str) -> int:
    """One measurement: load the fleet (not timed), render it (or one cluster of it) with the parse
    caches off and write it into an empty ``out``; prints JSON (seconds, CPU, peak memory)."""
    use_checkout()
    from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
    from ansible_collections.gpufleet.core.plugins.module_utils.render import tree as rt

    fleet = load_fleet(inv)
    if cluster:
        from render_fixtures import only_cluster

        fleet = only_cluster(fleet, cluster)
    c0, t0 = time.process_time(), time.perf_counter()
    result = rt.render_fleet(fleet, None, keep_inputs=False, workers=workers)
    rt.write_render(result, out)
    t1 = time.perf_counter()
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = time.process_time() - c0 + kids.ru_utime + kids.ru_stime
    files = len(result.files)
    print(json.dumps({"seconds": t1 - t0, "cpu": cpu, "workers_rss": kids.ru_maxrss / 1024, "files": files}))
    return 0


def measure(inv: Path, cluster: str, workers: int, tmp: Path) -> dict:
    out = tmp / "out"
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, __file__, "--child", str(inv), cluster, str(workers), str(out)]
    with tempfile.TemporaryFile() as so:
        p = subprocess.Popen(cmd, stdout=so)
        _, status, usage = os.wait4(p.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"child failed: {' '.join(cmd)}")
        so.seek(0)
        res = json.loads(so.read().decode().strip().splitlines()[-1])
    res["rss"] = usage.ru_maxrss / 1024
    return res


def fleet_table(inv: Path, clusters: list[str], runs: int, tmp: Path) -> None:
    from ansible_collections.gpufleet.core.plugins.module_utils.render.parallel import cores

    n = max(2, cores())
    alone: dict[str, list[dict]] = {c: [] for c in clusters}
    serial: list[dict] = []
    par: list[dict] = []
    measure(inv, "", n, tmp)  # warm-up, not counted: page cache, byte-code, the pool locks written
    for i in range(runs):  # the fleet and its clusters in turn, so a slow minute hits all of them
        print(f"run {i + 1}/{runs}", file=sys.stderr, flush=True)
        serial.append(measure(inv, "", 1, tmp))
        for c in clusters:
            alone[c].append(measure(inv, c, 1, tmp))
        par.append(measure(inv, "", n, tmp))
        s_alone = sum(alone[c][i]["seconds"] for c in clusters)
        big = max(alone[c][i]["rss"] for c in clusters)
        print(
            f"# run {i + 1}: sum alone {s_alone:.1f} s, fleet 1 worker {serial[i]['seconds']:.1f} s, "
            f"{n} workers {par[i]['seconds']:.1f} s; peak MiB: largest alone {big:.0f}, "
            f"fleet {serial[i]['rss']:.0f}, {n} workers {par[i]['rss']:.0f} (+ workers {par[i]['workers_rss']:.0f})",
            flush=True,
        )
    rows = []
    for i in range(runs):
        s_alone = sum(alone[c][i]["seconds"] for c in clusters)
        s_cpu = sum(alone[c][i]["cpu"] for c in clusters)
        big = max(alone[c][i]["rss"] for c in clusters)
        rows.append((serial[i]["seconds"] / s_alone, serial[i]["cpu"] / s_cpu, serial[i]["rss"] / big, big))
        rows[-1] += (serial[i]["seconds"] / par[i]["seconds"], par[i]["rss"] / big, par[i]["workers_rss"] / big)
    med = [statistics.median(r[k] for r in rows) for k in range(7)]
    sec = statistics.median(sum(alone[c][i]["seconds"] for c in clusters) for i in range(runs))
    table(
        ("figure", "median", "per run"),
        [
            ("sum of the clusters rendered alone, s", sec, ""),
            ("fleet, 1 worker, s", statistics.median(s["seconds"] for s in serial), ""),
            (f"fleet, {n} workers, s", statistics.median(s["seconds"] for s in par), ""),
            ("fleet 1 worker / sum alone (wall)", med[0], " ".join(f"{r[0]:.2f}" for r in rows)),
            ("fleet 1 worker / sum alone (CPU)", med[1], " ".join(f"{r[1]:.2f}" for r in rows)),
            ("largest cluster alone, peak MiB", med[3], ""),
            ("fleet 1 worker peak / largest alone", med[2], " ".join(f"{r[2]:.2f}" for r in rows)),
            (f"speed-up, {n} workers over 1 (wall)", med[4], " ".join(f"{r[4]:.2f}" for r in rows)),
            (f"fleet {n} workers: parent peak / largest alone", med[5], ""),
            (f"fleet {n} workers: largest worker peak / largest alone", med[6], ""),
        ],
    )


# ------------------------------------------------------------------ main


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=10_000, help="GPU nodes per cluster")
    ap.add_argument("--tenants", type=int, default=100, help="tenants per cluster")
    ap.add_argument("--clusters", type=int, default=1)
    ap.add_argument("--runs", type=int, default=3, help="rounds of the fleet table (several clusters)")
    ap.add_argument("--tables", default="", help="comma-separated: runs, stages, features, fleet")
    ap.add_argument("--no-fabric", action="store_true", help="no ibnetdiscover snapshot (no topology)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("--inventory", help="a fleet generated before (--keep): measured as it is (the fleet table only)")
    return ap.parse_args()


def generate(tmp: Path, args: argparse.Namespace) -> Path:
    """The fleet, generated in a child process when the fleet table measures memory: a child's
    ru_maxrss starts at its parent's at fork time (Linux keeps the high-water mark across exec), so
    the process that starts the measured children must stay small."""
    spec = [str(tmp), str(args.nodes), str(args.tenants), str(int(not args.no_fabric)), str(args.clusters)]
    subprocess.run([sys.executable, __file__, "--generate", *spec], check=True)
    return tmp / "inv"


def main() -> int:
    if sys.argv[1:2] == ["--child"]:
        return child(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
    if sys.argv[1:2] == ["--generate"]:
        use_checkout()
        from render_fixtures import make_big_inventory

        tmp, nodes, tenants, fabric, clusters = sys.argv[2:7]
        make_big_inventory(Path(tmp), int(nodes), int(tenants), fabric == "1", int(clusters))
        return 0
    args = parse_args()
    tables = set(filter(None, args.tables.split(","))) or (
        {"fleet"} if args.clusters > 1 else {"runs", "stages", "features"}
    )
    use_checkout()
    from render_fixtures import make_big_inventory

    tmp = Path(tempfile.mkdtemp(prefix="bench-render-"))
    os.environ["GPUFLEET_CACHE_DIR"] = str(tmp / "cache")
    try:
        if args.inventory:
            t_gen, inv = 0.0, Path(args.inventory).resolve()
        elif "fleet" in tables:
            t_gen, inv = timed(generate, tmp, args)
        else:
            t_gen, inv = timed(make_big_inventory, tmp, args.nodes, args.tenants, not args.no_fabric, args.clusters)
        snaps = sorted((inv / "snapshots").iterdir())
        size = sum(p.stat().st_size for d in snaps for p in d.iterdir())
        print(
            f"# render benchmark: {args.clusters} cluster(s) x {args.nodes} GPU nodes (+16 system) x "
            f"{args.tenants} tenants, fabric={'no' if args.no_fabric else 'ibnetdiscover'}"
        )
        print(f"# machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} (timings scale with load)")
        print(f"# inputs generated in {t_gen:.1f} s: {size / 1e6:.1f} MB of snapshots\n")
        if "runs" in tables:
            runs_table(inv, tmp / "gitops")
        fleet = stages_table(inv) if tables & {"stages", "features"} else None
        if "features" in tables:
            features_table(fleet)
        if "fleet" in tables:
            fleet_table(inv, [d.name for d in snaps], args.runs, tmp)
        print(f"# load average at the end {os.getloadavg()[0]:.1f}")
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
