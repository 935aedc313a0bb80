"""Hostlist expand/compress timings and the real-Slurm harness start/stop. Prints tables; asserts nothing.

    .venv/bin/python bench/bench_hostlist_slurm.py [--runs N] [--no-slurm]

The Slurm part needs root, the Slurm build (tools/build-slurm.sh) and Debian's munge; without
them it prints why and skips that table.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / ".build" / "collections"))
sys.path.insert(0, str(REPO / "tests" / "integration" / "slurm"))
sys.path.insert(0, str(REPO / "tests" / "lib"))

from ansible_collections.gpufleet.core.plugins.module_utils.hostlist import compress, expand


def timed(fn, runs: int) -> tuple[float, float]:
    samples = []
    for _i in range(runs):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples), max(samples)


def hostlist_table(runs: int) -> None:
    rnd = random.Random(1)
    contiguous = [f"gpu{i:05d}" for i in range(16384)]
    rnd.shuffle(contiguous)
    rails = [f"gpu{i:04d}-ib{r}" for i in range(2048) for r in range(8)]
    sparse = [f"n{rnd.randint(0, 10**6)}" for _i in range(10000)]
    mixed = [
        f"{p}{rnd.randint(0, 5000):0{rnd.choice([1, 3, 4])}d}" for p in ("a", "b-", "rack1-n") for _i in range(3000)
    ]
    cases = [
        ("compress 16k contiguous (shuffled)", lambda: compress(contiguous)),
        ("compress 2k hosts x 8 rails", lambda: compress(rails)),
        ("compress 10k sparse random", lambda: compress(sparse)),
        ("compress 9k mixed widths", lambda: compress(mixed)),
        ("compress 16k, sort=False", lambda: compress(contiguous, sort=False)),
        ("expand gpu[00001-65535]", lambda: expand("gpu[00001-65535]")),
        ("expand a[0-4095]b[0-15] (64k)", lambda: expand("a[0-4095]b[0-15]")),
    ]
    print(f"{'hostlist case':40} {'median s':>9} {'max s':>9}")
    for name, fn in cases:
        med, worst = timed(fn, runs)
        print(f"{name:40} {med:9.3f} {worst:9.3f}")


CONF = """\
TopologyPlugin=topology/tree
NodeName=n[1-{n}] CPUs=4 RealMemory=1000
PartitionName=p Nodes=n[1-{n}] Default=YES MaxTime=INFINITE State=UP
"""


def slurm_table(runs: int) -> None:
    from gpufleet_testlib.slurm_build import SlurmBuildError, slurm_tool

    missing = [t for t in ("munged",) if shutil.which(t) is None]
    try:
        slurm_tool("slurmctld")
    except SlurmBuildError:
        missing.append("the Slurm build (.build/slurm)")
    if missing or os.geteuid() != 0:
        print(f"\nSlurm harness: skipped ({'missing ' + ', '.join(missing) if missing else 'not root'})")
        return
    from harness import SlurmCluster

    print(f"\n{'emulated nodes':>14} {'start s':>8} {'job start s':>11} {'stop s':>7}")
    for n in (8, 16, 32):
        leaves = "".join(f"SwitchName=l{i} Nodes=n[{i * 8 + 1}-{i * 8 + 8}]\n" for i in range(n // 8))
        topo = leaves + f"SwitchName=top Switches=l[0-{n // 8 - 1}]\n"
        starts, jobs, stops = [], [], []
        for _i in range(runs):
            with tempfile.TemporaryDirectory(prefix="gf-bench-") as wd:
                c = SlurmCluster(Path(wd), CONF.format(n=n), topology=topo)
                t = time.perf_counter()
                c.start()
                starts.append(time.perf_counter() - t)
                try:
                    t = time.perf_counter()
                    c.wait_job(c.sbatch("-N", "4", "--exclusive", "--switches=1", wrap="sleep 30"))
                    jobs.append(time.perf_counter() - t)
                finally:
                    t = time.perf_counter()
                    c.stop()
                    stops.append(time.perf_counter() - t)
        print(
            f"{n:14d} {statistics.median(starts):8.2f} {statistics.median(jobs):11.2f} {statistics.median(stops):7.2f}"
        )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-slurm", action="store_true")
    args = ap.parse_args()
    hostlist_table(args.runs)
    if not args.no_slurm:
        slurm_table(max(1, args.runs // 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
