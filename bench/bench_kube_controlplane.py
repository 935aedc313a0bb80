"""Local control plane timings: start-up to /readyz, KWOK nodes Ready, an 8-GPU pod
Running, all upstream CRDs Established, teardown. Prints a table; asserts nothing.

    .venv/bin/python bench/bench_kube_controlplane.py [--runs N] [--nodes N]

Needs the binaries from tools/build.sh; without them it prints why and exits 0.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests" / "lib"))  # lead_conftest, for controlplane
sys.path.insert(0, str(REPO / "tests" / "integration" / "kube"))

from controlplane import LocalControlPlane, load_node_snapshot, missing_binaries

SNAPSHOT = REPO / "tests" / "integration" / "kube" / "fixtures" / "nodes-small.yaml"
CRDS = REPO.parent / "shared" / "upstream" / "crds"


def scaled_nodes(n: int) -> list[dict]:
    """n nodes cycled from the test snapshot, renamed bench-000..."""
    base = load_node_snapshot(SNAPSHOT)
    out = []
    for i in range(n):
        node = json.loads(json.dumps(base[i % len(base)]))
        name = f"bench-{i:03d}"
        node["metadata"]["name"] = name
        node["metadata"].setdefault("labels", {})["kubernetes.io/hostname"] = name
        out.append(node)
    return out


def one_run(nodes: int, with_crds: bool) -> dict[str, float]:
    plane = LocalControlPlane()
    row: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="gpufleet-bench-") as tmp:
        t0 = time.monotonic()
        try:
            plane.start(Path(tmp) / "cluster")
            row["up_readyz_s"] = time.monotonic() - t0
            t1 = time.monotonic()
            plane.create_nodes_from_snapshot(scaled_nodes(nodes), timeout=300)
            row["nodes_ready_s"] = time.monotonic() - t1
            row["up_to_nodes_ready_s"] = time.monotonic() - t0
            plane.create_namespace("bench")
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "gpu8", "namespace": "bench"},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "registry.invalid/x:1", "resources": {"limits": {"nvidia.com/gpu": "8"}}}
                    ]
                },
            }
            t2 = time.monotonic()
            plane.kubectl("create", "-f", "-", input=json.dumps(pod))
            plane.wait_pod_phase("bench", "gpu8", "Running", timeout=120)
            row["gpu_pod_running_s"] = time.monotonic() - t2
            if with_crds:
                t3 = time.monotonic()
                plane.apply_crds(sorted(CRDS.glob("*/*.yaml")), timeout=300)
                row["crds_established_s"] = time.monotonic() - t3
        finally:
            t4 = time.monotonic()
            plane.stop()
            row["down_s"] = time.monotonic() - t4
    return row


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--no-crds", action="store_true")
    args = ap.parse_args()
    missing = missing_binaries()
    if missing:
        print(f"bench_kube_controlplane: skipped, missing {', '.join(missing)} (run tools/build.sh)")
        return 0
    rows = [one_run(args.nodes, not args.no_crds and CRDS.is_dir()) for _run in range(args.runs)]
    keys = list(rows[0])
    print(f"local control plane, {args.runs} runs, {args.nodes} KWOK nodes (seconds)")
    print(f"{'metric':<22}{'min':>8}{'median':>8}{'max':>8}")
    for k in keys:
        vals = [r[k] for r in rows if k in r]
        print(f"{k:<22}{min(vals):>8.2f}{statistics.median(vals):>8.2f}{max(vals):>8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
