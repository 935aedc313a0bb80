#!/usr/bin/env python3
"""Benchmark: ibnetdiscover text -> Fabric -> Topology -> topology.conf, on generated fabrics.

Prints a table: hosts x rails, tiers, switches, input lines, seconds (parse, build, render, total)
and peak MiB (tracemalloc of the whole pipeline, input text excluded). Bars (DESIGN.md):
2,048 x 8 < 1 s, 16,384 x 8 < 10 s, memory < 1 GiB, near-linear growth.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / ".build" / "collections"))
link = ROOT / ".build" / "collections" / "ansible_collections" / "gpufleet" / "core"
if not link.exists():
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(ROOT, target_is_directory=True)

from ansible_collections.gpufleet.core.plugins.module_utils import fabric_gen
from ansible_collections.gpufleet.core.plugins.module_utils.fabric import load_fabric
from ansible_collections.gpufleet.core.plugins.module_utils.topology import build_topology
from ansible_collections.gpufleet.core.plugins.module_utils.topology_render import (
    render_block,
    render_tree,
)

SIZES = [(256, 8, 2), (1024, 8, 2), (2048, 8, 2), (4096, 8, 3), (16384, 8, 3)]


def run(hosts: int, rails: int, tiers: int, ports: bool, mem: bool) -> dict:
    spec = fabric_gen.GenSpec(hosts=hosts, rails=rails, su_size=32, tiers=tiers, sharp=-1, unnamed=4,
                              cut_cables=4, seed=7)
    g = fabric_gen.generate(spec)
    text = fabric_gen.render_ports(g) if ports else fabric_gen.render_ibnetdiscover(g)
    del g
    gc.collect()
    if mem:
        tracemalloc.start()
    t0 = time.perf_counter()
    fab = load_fabric(text, kind="ibnetdiscover-ports" if ports else "ibnetdiscover")
    t1 = time.perf_counter()
    topo = build_topology(fab)
    t2 = time.perf_counter()
    conf = render_tree(topo)
    render_block(topo)
    t3 = time.perf_counter()
    peak = tracemalloc.get_traced_memory()[1] / 2**20 if mem else float("nan")
    if mem:
        tracemalloc.stop()
    return {
        "hosts": hosts, "rails": rails, "tiers": tiers, "switches": len(fab.switches),
        "lines": text.count("\n"), "parse": t1 - t0, "build": t2 - t1, "render": t3 - t2, "total": t3 - t0,
        "peak": peak, "groups": len(topo.leaf_groups), "conf_lines": conf.count("\n"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ports", action="store_true", help="use the ibnetdiscover -p format")
    ap.add_argument("--max-hosts", type=int, default=16384)
    ap.add_argument("--memory", action="store_true",
                    help="measure peak MiB with tracemalloc in a second run (slows the timed run if combined)")
    a = ap.parse_args()
    print(f"{'hosts x rails':>14} {'tiers':>5} {'switches':>8} {'lines':>9} {'groups':>6} {'conf':>5} "
          f"{'parse s':>8} {'build s':>8} {'render s':>8} {'total s':>8} {'peak MiB':>9}")
    for hosts, rails, tiers in SIZES:
        if hosts > a.max_hosts:
            continue
        r = run(hosts, rails, tiers, a.ports, mem=False)
        r["peak"] = run(hosts, rails, tiers, a.ports, mem=True)["peak"] if a.memory else float("nan")
        print(f"{hosts:>7} x {rails:<4} {r['tiers']:>5} {r['switches']:>8} {r['lines']:>9} {r['groups']:>6} "
              f"{r['conf_lines']:>5} {r['parse']:>8.3f} {r['build']:>8.3f} {r['render']:>8.3f} "
              f"{r['total']:>8.3f} {r['peak']:>9.1f}", flush=True)


if __name__ == "__main__":
    main()
