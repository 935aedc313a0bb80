#!/usr/bin/env python3
"""Benchmark: wall time of `ansible-playbook site.yml` (offline discover + render) on generated fleets.

For each size a fresh inventory is generated: the sample fleet's group_vars with pool sizes scaled
to the node count, and snapshots (ibnetdiscover + Nodes) from fabric_gen (8 rails, deterministic).
Each size runs site.yml three times, as users would:

    first   render into an empty tree
    again   the same inputs again (changed=0, nothing written)
    check   --check --diff after one tenant description changed (shows the diff, writes nothing)

and `broken`: the run on an inventory with an unknown pool, i.e. the time until the validation error.
Columns are wall seconds of the whole ansible-playbook process; `render s` is the part spent in the
render task (the gitops_render module, from the profile_tasks callback), the rest is the playbook's
own overhead (start-up, validation, snapshot checks, skipped stages); `files` is the rendered tree
size; `chg` the changed count of the play recap. Bars: render of 10,000 nodes < 5 s
(the module; the playbook adds ansible start-up), re-render without change < 2 s and zero files
written.

Usage: bench/bench_site.py [--sizes 64,1000,10000]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from checkout_path import COLLECTIONS as _COLL
from checkout_path import use_checkout

ROOT = use_checkout()

SAMPLE = ROOT / "inventories" / "sample"
RECAP = re.compile(r"^localhost\s+:\s+ok=\d+\s+changed=(\d+)\s+unreachable=\d+\s+failed=(\d+)", re.M)
RENDER_TASK = re.compile(r"Render the fleet into the GitOps tree -+ ([0-9.]+)s")
SYSTEM_NODES = 2


def cpu_node(name: str) -> dict:
    res = {"cpu": "64", "memory": "263835340Ki", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}},
        "status": {"allocatable": dict(res), "capacity": dict(res)},
    }


def make_inventory(root: Path, hosts: int) -> Path:
    from gpufleet_testlib import fabric_gen

    inv = root / "inv"
    shutil.copytree(SAMPLE / "group_vars", inv / "group_vars")
    shutil.copy(SAMPLE / "hosts.yml", inv / "hosts.yml")
    snap = inv / "snapshots" / "gpu-east"
    snap.mkdir(parents=True)
    tiers = 2 if hosts <= 2048 else 3
    fab = fabric_gen.generate(fabric_gen.GenSpec(hosts=hosts, rails=8, su_size=8 if hosts <= 64 else 32, tiers=tiers))
    (snap / "fabric.ibnetdiscover").write_text(fabric_gen.render_ibnetdiscover(fab), encoding="utf-8")
    nodes = fabric_gen.nodes_snapshot(fab)
    for item in nodes["items"]:
        item["metadata"]["labels"].pop("nvidia.com/gpu.clique", None)
    nodes["items"] += [cpu_node(f"sys{i:02d}") for i in range(1, SYSTEM_NODES + 1)]
    (snap / "nodes.yaml").write_text(yaml.safe_dump(nodes, sort_keys=True), encoding="utf-8")
    # scale the sample's pools with the fleet (sample: 64 GPU nodes, 32/12/2 Slurm nodes, 96 GPUs)
    pools_file = inv / "group_vars" / "all" / "pools.yml"
    pools = yaml.safe_load(pools_file.read_text(encoding="utf-8"))
    factor = hosts / 64
    for p in pools["gpufleet_pools"]:
        size = p.get("size", {})
        if p["kind"] == "system":
            continue
        for key in ("nodes", "gpus"):
            if key in size:
                size[key] = max(1, int(size[key] * factor))
    pools_file.write_text(yaml.safe_dump(pools, sort_keys=False), encoding="utf-8")
    return inv


def site(inv: Path, out: Path, *extra: str) -> tuple[float, int, int, float]:
    """(wall seconds, changed count, return code, seconds of the render task itself)."""
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=str(_COLL),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_CALLBACKS_ENABLED="ansible.posix.profile_tasks",
    )
    env.pop("ANSIBLE_CONFIG", None)
    exe = ROOT / ".venv" / "bin" / "ansible-playbook"
    cmd = [str(exe), "-i", str(inv), "site.yml", "-e", f"gpufleet_gitops_dir={out}", *extra]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    m = RECAP.search(proc.stdout)
    if not m:
        raise SystemExit(f"no recap from {' '.join(cmd)}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    r = RENDER_TASK.search(proc.stdout)
    return wall, int(m.group(1)), proc.returncode, float(r.group(1)) if r else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="64,1000,10000")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    cols = [("nodes", 6), ("files", 6), ("first s", 8), ("render s", 8), ("again s", 8), ("render s", 8)]
    cols += [("chg", 4), ("check s", 8), ("chg", 4), ("broken s", 9)]
    print(" ".join(f"{name:>{width}}" for name, width in cols))
    for hosts in sizes:
        with tempfile.TemporaryDirectory(prefix="bench-site-") as tmp:
            root = Path(tmp)
            inv = make_inventory(root, hosts)
            out = root / "gitops"
            first, _chg, rc, first_task = site(inv, out)
            if rc:
                raise SystemExit(f"site.yml failed on {hosts} nodes (rc {rc})")
            files = sum(1 for p in out.rglob("*") if p.is_file())
            again, again_changed, _rc, again_task = site(inv, out)
            tenants = inv / "group_vars" / "all" / "tenants.yml"
            tenants.write_text(tenants.read_text().replace("Research group", "Research team"))
            check, check_changed, _rc, _task = site(inv, out, "--check", "--diff")
            tenants.write_text(tenants.read_text().replace("pools: [pretrain]", "pools: [pretrian]"))
            broken, _chg, rc, _task = site(inv, out)
            assert rc != 0, "the broken inventory did not fail"
        print(
            f"{hosts:>6} {files:>6} {first:>8.2f} {first_task:>8.2f} {again:>8.2f} {again_task:>8.2f} "
            f"{again_changed:>4} {check:>8.2f} {check_changed:>4} {broken:>9.2f}"
        )


if __name__ == "__main__":
    main()
