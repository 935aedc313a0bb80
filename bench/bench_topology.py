#!/usr/bin/env python
"""Benchmark: ibnetdiscover text -> Fabric -> Topology -> topology.conf, on generated fabrics.

Each size runs in a fresh child process that parses the saved ibnetdiscover output from its file
(streamed, as the modules and the renderer read it), builds the topology and renders topology.conf
(tree) and the block file, so the peak RSS column is the whole pipeline (Python interpreter
included). `make bench BASE=<rev>` compares these figures with another revision (bench/README.md).
Columns: hosts x rails, tiers, switches, input lines, leaf groups, tree lines, seconds for parse /
build / render / total (wall), CPU seconds, peak RSS MiB. Targets (issue 23): 16,384 x 8 < 3 s and
< 300 MiB; 38,912 x 8 (208 MB) < 10 s and < 600 MiB; near-linear growth.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from checkout_path import COLLECTIONS as _COLL
from checkout_path import use_checkout

ROOT = use_checkout()

SIZES = [(256, 8, 2), (1024, 8, 2), (2048, 8, 2), (4096, 8, 3), (8192, 8, 3), (16384, 8, 3), (38912, 8, 3)]

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.load import load_fabric
from ansible_collections.gpufleet.core.plugins.module_utils.topology.build import build_topology
from ansible_collections.gpufleet.core.plugins.module_utils.topology.render import render_block, render_tree
with open(sys.argv[2], "rb") as f:
    lines = sum(block.count(b"\n") for block in iter(lambda: f.read(1 << 20), b""))
c0 = time.process_time(); t0 = time.perf_counter()
fab = load_fabric(sys.argv[2], kind=sys.argv[3])  # streamed from the file
t1 = time.perf_counter()
topo = build_topology(fab)
t2 = time.perf_counter()
conf = render_tree(topo)
render_block(topo)
t3 = time.perf_counter(); c3 = time.process_time()
print(json.dumps({"switches": len(fab.switches), "lines": lines, "groups": len(topo.leaf_groups),
    "conf_lines": conf.count("\n"), "parse": t1 - t0, "build": t2 - t1, "render": t3 - t2, "total": t3 - t0,
    "cpu": c3 - c0, "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


# The dump is generated in its own process: a child's peak RSS (ru_maxrss) counts the memory its
# parent had when it forked (Linux keeps the high-water mark across exec), so this process stays small.
GEN = r"""
import sys
sys.path.insert(0, sys.argv[1])
from gpufleet_testlib import fabric_gen
hosts, rails, tiers, ports, path = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1", sys.argv[6]
spec = fabric_gen.GenSpec(hosts=hosts, rails=rails, su_size=32, tiers=tiers, sharp=-1, unnamed=4, cut_cables=4, seed=7)
g = fabric_gen.generate(spec)
with open(path, "w", encoding="utf-8") as f:
    f.write(fabric_gen.render_ports(g) if ports else fabric_gen.render_ibnetdiscover(g))
"""


def run(hosts: int, rails: int, tiers: int, ports: bool) -> dict:
    fd, path = tempfile.mkstemp(suffix=".out")
    os.close(fd)
    try:
        gen = [str(ROOT / "tests" / "lib"), str(hosts), str(rails), str(tiers), "1" if ports else "0", path]
        subprocess.run([sys.executable, "-c", GEN, *gen], check=True)
        kind = "ibnetdiscover-ports" if ports else "ibnetdiscover"
        p = subprocess.run(
            [sys.executable, "-c", CHILD, str(_COLL), path, kind], capture_output=True, text=True, check=True
        )
    finally:
        Path(path).unlink()
    return json.loads(p.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ports", action="store_true", help="use the ibnetdiscover -p format")
    ap.add_argument("--max-hosts", type=int, default=16384)
    a = ap.parse_args()
    fmt = "-p ports" if a.ports else "default"
    print(f"# ibnetdiscover {fmt} format; SU = 32 hosts; SHARP node on every switch; 4 unnamed HCAs; 4 cut cables")
    print(
        f"{'hosts x rails':>14} {'tiers':>5} {'switches':>8} {'lines':>9} {'groups':>6} {'conf':>5} "
        f"{'parse s':>8} {'build s':>8} {'render s':>8} {'total s':>8} {'cpu s':>7} {'peak MiB':>9}"
    )
    for hosts, rails, tiers in SIZES:
        if hosts > a.max_hosts:
            continue
        r = run(hosts, rails, tiers, a.ports)
        print(
            f"{hosts:>7} x {rails:<4} {tiers:>5} {r['switches']:>8} {r['lines']:>9} {r['groups']:>6} "
            f"{r['conf_lines']:>5} {r['parse']:>8.3f} {r['build']:>8.3f} {r['render']:>8.3f} "
            f"{r['total']:>8.3f} {r['cpu']:>7.3f} {r['rss']:>9.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
