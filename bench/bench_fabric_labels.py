#!/usr/bin/env python
"""Benchmark: the fabric labels of every node (topology.labels) on generated fleets, up to 16,384 x 8.

Each size runs in a fresh child process that reads a generated ibnetdiscover dump and the nodes'
NVLink domains (8 nodes per domain), builds the topology once (the build the Slurm files and the
labels share; its time is bench_topology's), then times what this step adds to a render and to the
apply step:

- ``labels``: ``node_labels`` (every node's tiers and accelerator), ``label_sets`` (the grouped
  ``node-labels.yaml`` content) and ``levels`` (the Kueue Topology), i.e. the render's part;
- ``dump``: writing ``node-labels.yaml`` with the renderer's YAML dumper;
- ``read``: the apply step reading it back (``read_label_sets``: keys, values, hostlists checked);
- ``plan``: ``pools.apply.plan`` over every Node already carrying its labels and fence (the second,
  ``changed=0`` run), no API calls.

Columns: hosts x rails, tiers, label sets, file KiB, seconds for labels / dump / read / plan, peak
RSS MiB of the child. Target: the labels add a small fraction of the render budget (full render of
10,000 nodes < 5 s, re-render < 2 s; DESIGN "Bars"). Prints a table; asserts nothing.
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
SIZES = [(2048, 8, 2), (16384, 8, 3)]

GEN = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from gpufleet_testlib import fabric_gen
hosts, rails, tiers, path = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
spec = fabric_gen.GenSpec(hosts=hosts, rails=rails, su_size=32, tiers=tiers, nvl_domain=8, seed=7)
g = fabric_gen.generate(spec)
with open(path, "w", encoding="utf-8") as f:
    f.write(fabric_gen.render_ibnetdiscover(g))
with open(path + ".domains.json", "w", encoding="utf-8") as f:
    json.dump(g.domains, f)
"""

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.load import load_fabric
from ansible_collections.gpufleet.core.plugins.module_utils.model import fence
from ansible_collections.gpufleet.core.plugins.module_utils.pools import apply
from ansible_collections.gpufleet.core.plugins.module_utils.topology import labels
from ansible_collections.gpufleet.core.plugins.module_utils.topology.build import build_topology
from ansible_collections.gpufleet.core.plugins.module_utils.yaml_dump import dump_file, safe_load
with open(sys.argv[2] + ".domains.json", encoding="utf-8") as f:
    domains = json.load(f)
topo = build_topology(load_fabric(sys.argv[2], kind="ibnetdiscover"), domains=domains)
t0 = time.perf_counter()
per_node = labels.node_labels(topo)
sets = labels.label_sets(topo)
levels = labels.levels(topo)
t1 = time.perf_counter()
data = dump_file({"scheme": "gpufleet", "sets": sets}, "# bench")
t2 = time.perf_counter()
doc = safe_load(data.decode())
read = labels.read_label_sets(doc["sets"], doc["scheme"])
t3 = time.perf_counter()
pool = apply.PoolRef("bench", "kubernetes", "t")
nodes = [{"metadata": {"name": n, "labels": {**ls, **fence.node_labels(pool)}},
          "spec": {"taints": fence.node_taints(pool)}} for n, ls in read.items()]
t4 = time.perf_counter()
changes, _missing = apply.plan(nodes, dict.fromkeys(read, pool), None, fabric=(labels.SCHEMES["gpufleet"], read))
t5 = time.perf_counter()
assert read == per_node and changes == [] and len(per_node) == len(topo.node_group)
print(json.dumps({"sets": len(sets), "kib": len(data) / 1024, "levels": len(levels), "labels": t1 - t0,
    "dump": t2 - t1, "read": t3 - t2, "plan": t5 - t4,
    "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run(hosts: int, rails: int, tiers: int) -> dict:
    fd, path = tempfile.mkstemp(suffix=".out")
    os.close(fd)
    try:
        subprocess.run(
            [sys.executable, "-c", GEN, str(ROOT / "tests" / "lib"), str(hosts), str(rails), str(tiers), path],
            check=True,
        )
        p = subprocess.run([sys.executable, "-c", CHILD, str(_COLL), path], capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(f"the measuring child failed:\n{p.stderr}")
    finally:
        Path(path).unlink()
        Path(path + ".domains.json").unlink(missing_ok=True)
    return json.loads(p.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max-hosts", type=int, default=16384)
    a = ap.parse_args()
    print("# SU = 32 hosts, NVLink domains of 8 hosts; labels: node_labels + label_sets + levels")
    print(
        f"{'hosts x rails':>14} {'tiers':>5} {'levels':>6} {'sets':>6} {'file KiB':>9} "
        f"{'labels s':>8} {'dump s':>7} {'read s':>7} {'plan s':>7} {'peak MiB':>9}"
    )
    for hosts, rails, tiers in SIZES:
        if hosts > a.max_hosts:
            continue
        r = run(hosts, rails, tiers)
        print(
            f"{hosts:>7} x {rails:<4} {tiers:>5} {r['levels']:>6} {r['sets']:>6} {r['kib']:>9.0f} "
            f"{r['labels']:>8.3f} {r['dump']:>7.3f} {r['read']:>7.3f} {r['plan']:>7.3f} {r['rss']:>9.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
