#!/usr/bin/env python3
"""Benchmark: pool assignment on a generated fleet (default 10,000 GPU nodes, 100 pools).

Prints a table: first assignment, re-assignment from the lock (no change), resizes by k (grow and
shrink one pool, nodes and GPUs), each with seconds and the number of node moves, plus the lock and
pool-table render times. The bar: resizing a pool by k nodes moves exactly k nodes.
Asserts nothing; exits non-zero only if a move count differs from k (a correctness failure).

    .venv/bin/python bench/bench_pools.py [--nodes 10000] [--pools 100] [--group 32] [--nvlink 0]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from checkout_path import use_checkout

use_checkout()

from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import (
    Cluster,
    FabricSource,
    Fleet,
    GitOps,
    Pool,
    TopologyConfig,
)
from ansible_collections.gpufleet.core.plugins.module_utils.model.nodes import NodeInfo
from ansible_collections.gpufleet.core.plugins.module_utils.pools.assign import assign
from ansible_collections.gpufleet.core.plugins.module_utils.pools.lock import render_lock
from ansible_collections.gpufleet.core.plugins.module_utils.pools.pool_table import render_pool_table

H100 = "NVIDIA-H100-80GB-HBM3"
B200 = "NVIDIA-B200"


def make_nodes(n: int, group_size: int, nvlink: int) -> tuple[list[NodeInfo], dict[str, str]]:
    nodes, group = [], {}
    for i in range(n):
        name = f"gpu{i:05d}"
        product = B200 if i >= n * 3 // 4 else H100  # a quarter B200
        dom = f"clique.{i // nvlink}" if nvlink and product == B200 else None
        labels = {"nvidia.com/gpu.product": product, "zone": f"z{(i // (n // 4 or 1)) % 4}"}
        if dom:
            labels["nvidia.com/gpu.clique"] = dom
        nodes.append(NodeInfo(name, 8 if product == H100 else 4, product, dom, labels))
        group[name] = f"leaf{i // group_size:04d}"
    return nodes, group


def make_fleet(n_nodes: int, n_pools: int, nvlink: int) -> Fleet:
    """n_pools pools using ~80% of the nodes: slurm and kubernetes, some by GPUs, some on B200."""
    per = max(1, int(n_nodes * 0.8) // n_pools)
    if nvlink:
        per = max(nvlink, per // nvlink * nvlink)
    b200_pools = n_pools // 5
    pools: dict[str, Pool] = {"system": Pool("system", "c1", "system", size_nodes=3)}
    for i in range(n_pools - 1):
        b200 = i < b200_pools
        kind = "kubernetes" if i % 3 == 2 else "slurm"
        if kind == "kubernetes" and not b200:
            p = Pool(f"p{i:03d}", "c1", kind, tenant=f"t{i:03d}", size_gpus=per * 8, gpu_product=H100)
        else:
            p = Pool(f"p{i:03d}", "c1", kind, tenant=f"t{i:03d}", size_nodes=per, gpu_product=B200 if b200 else H100)
        pools[p.name] = p
    pools["spare"] = Pool("spare", "c1", "spare")
    cluster = Cluster("c1", "https://x", Path("/inv/snapshots/c1/nodes.yaml"), FabricSource(), TopologyConfig(), {})
    return Fleet("bench", Path("/inv"), GitOps("https://x"), {"c1": cluster}, {}, pools)


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--pools", type=int, default=100)
    ap.add_argument("--group", type=int, default=32, help="nodes per leaf group")
    ap.add_argument("--nvlink", type=int, default=0, help="NVLink domain size of the B200 nodes (0: none)")
    args = ap.parse_args()

    nodes, group = make_nodes(args.nodes, args.group, args.nvlink)
    fleet = make_fleet(args.nodes, args.pools, args.nvlink)
    rows: list[tuple[str, float, str, str]] = []
    ok = True

    a0, t = timed(lambda: assign(fleet, "c1", nodes, group))
    spare = len(a0.members("spare"))
    rows.append(("first assignment (no lock)", t, str(len(a0.moves(None))), "-"))
    a1, t = timed(lambda: assign(fleet, "c1", nodes, group, a0.pool_of))
    n = len(a1.moves(a0.pool_of))
    ok &= n == 0
    rows.append(("re-assign from lock, no change", t, str(n), "0"))

    slurm = next(p for p in fleet.pools.values() if p.kind == "slurm" and p.gpu_product == H100)
    k8s = next(p for p in fleet.pools.values() if p.size_gpus)
    steps = [
        ("grow slurm pool by k=1 node", slurm, "size_nodes", 1, 1),
        ("grow slurm pool by k=16 nodes", slurm, "size_nodes", 16, 16),
        ("shrink slurm pool by k=16 nodes", slurm, "size_nodes", -16, 16),
        ("grow k8s pool by 64 GPUs (k=8 nodes)", k8s, "size_gpus", 64, 8),
        ("shrink k8s pool by 64 GPUs (k=8 nodes)", k8s, "size_gpus", -64, 8),
    ]
    if args.nvlink:
        b200 = next(p for p in fleet.pools.values() if p.gpu_product == B200)
        n = args.nvlink
        steps += [
            (f"grow B200 pool by one NVLink domain (k={n})", b200, "size_nodes", n, n),
            (f"shrink B200 pool by one NVLink domain (k={n})", b200, "size_nodes", -n, n),
        ]
    for label, pool, field, delta, expect in steps:
        new = dict(fleet.pools)
        new[pool.name] = replace(pool, **{field: getattr(pool, field) + delta})
        f2 = replace(fleet, pools=new)
        a2, t = timed(lambda f2=f2: assign(f2, "c1", nodes, group, a0.pool_of))
        n = len(a2.moves(a0.pool_of))
        ok &= n == expect
        rows.append((label, t, str(n), str(expect)))

    text, t = timed(lambda: render_lock(a0))
    rows.append((f"render_lock ({len(text) // 1024} KiB)", t, "-", "-"))
    text, t = timed(lambda: render_pool_table(a0))
    rows.append((f"render_pool_table ({len(text) // 1024} KiB)", t, "-", "-"))

    print(f"nodes={args.nodes} pools={len(fleet.pools)} leaf_group={args.group} nvlink={args.nvlink} spare={spare}")
    w = max(len(r[0]) for r in rows)
    print(f"| {'step':<{w}} | seconds | moves | expected |")
    print(f"|{'-' * (w + 2)}|---------|-------|----------|")
    for label, secs, moves, expect in rows:
        print(f"| {label:<{w}} | {secs:7.3f} | {moves:>5} | {expect:>8} |")
    if not ok:
        print("FAIL: a move count differs from the expected k", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
