#!/usr/bin/env python3
"""Benchmark: the argocd_status read for a fleet of 100 tenants' Applications.

The fleet is a root app-of-apps with the platform apps and 7 apps per tenant (project, host,
vCluster, Slinky CRDs, operator, objects, Slurm): 708 Applications for 100 tenants, each with a
status in the shape Argo CD's application controller writes (tests/lib/argocd_apps.py).

Rows (median of --runs):
  core          tree walk + records + table + failure text on the objects in memory
  api read      one LIST of the Applications from the real kube-apiserver + the core (what one
                poll of the module costs), with the kubernetes client
  module        gpufleet.core.argocd_status through ansible-playbook (one read, no wait), wall time
  baseline      the same ansible-playbook run with ansible.builtin.ping instead (start-up cost)

The api/module rows need the control plane binaries (tools/build.sh) and the Argo CD CRD; without
them only the core row is printed. Asserts nothing.

    .venv/bin/python bench/bench_argocd_status.py [--tenants 100] [--runs 5] [--core-only]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
from checkout_path import use_checkout

use_checkout()
sys.path.insert(0, str(REPO / "tests" / "lib"))
sys.path.insert(0, str(REPO / "tests" / "integration" / "kube"))

from argocd_apps import fleet_apps

from ansible_collections.gpufleet.core.plugins.module_utils.argocd import kube, status

CRD = REPO.parent / "shared" / "upstream" / "crds" / "argocd" / "application-crd.yaml"
NS = "argocd"
ROOT = "gpu-east-root"


def timed(fn, runs: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def core_row(apps: list[dict], runs: int) -> tuple[float, int]:
    by_name = kube.by_name(apps)

    def once():
        recs = status.tree(ROOT, NS, lambda _ns: by_name)
        status.table(recs)
        status.failure_message(recs)
        return recs

    secs, recs = timed(once, runs)
    return secs, len(recs)


def kube_rows(apps: list[dict], runs: int) -> list[tuple[str, float, int]]:
    from controlplane import LocalControlPlane, missing_binaries

    if missing_binaries() or not CRD.is_file():
        print(f"(api and module rows skipped: binaries {missing_binaries()} / CRD {CRD.is_file()})")
        return []
    plane = LocalControlPlane()
    rows = []
    with tempfile.TemporaryDirectory(prefix="gpufleet-bench-argocd-") as tmp:
        try:
            plane.start(Path(tmp) / "cluster")
            plane.kubectl("apply", "--server-side", "-f", str(CRD))
            for _ in range(100):
                if plane.kubectl("get", "applications", "-A", check=False).returncode == 0:
                    break
                time.sleep(0.2)
            plane.create_namespace(NS)
            # the CRD has no status subresource: create keeps .status, as the controller's patches would
            for i in range(0, len(apps), 200):
                doc = {"apiVersion": "v1", "kind": "List", "items": apps[i : i + 200]}
                plane.kubectl("create", "-f", "-", input=json.dumps(doc), timeout=300)
            api = kube.custom_api(str(plane.kubeconfig))

            def once():
                return status.tree(ROOT, NS, lambda ns: kube.by_name(kube.list_applications(api, ns)))

            secs, recs = timed(once, runs)
            rows.append(("api read (LIST + core)", secs, len(recs)))
            rows.append(module_row(Path(tmp), plane.kubeconfig, max(1, runs // 2)))
            rows.append(module_row(Path(tmp), plane.kubeconfig, max(1, runs // 2), baseline=True))
        finally:
            plane.stop()
    return rows


def module_row(tmp: Path, kubeconfig: Path, runs: int, baseline: bool = False) -> tuple[str, float, int]:
    play = tmp / ("ping.yml" if baseline else "play.yml")
    task = (
        {"ansible.builtin.ping": {}}
        if baseline
        else {"gpufleet.core.argocd_status": {"root": ROOT, "kubeconfig": str(kubeconfig)}}
    )
    play.write_text(
        json.dumps(
            [
                {
                    "hosts": "localhost",
                    "gather_facts": False,
                    "tasks": [{**task, "register": "r"}],
                }
            ]
        )
    )
    env = dict(os.environ)
    env.update(
        ANSIBLE_COLLECTIONS_PATH=str(REPO / ".build" / "collections"),
        ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
        ANSIBLE_LOCALHOST_WARNING="False",
        ANSIBLE_PYTHON_INTERPRETER=sys.executable,
    )
    cmd = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local", str(play)]

    def once():
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False, timeout=600)
        if proc.returncode != 0:
            raise SystemExit(f"module run failed:\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}")
        result = json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
        return 0 if baseline else result["summary"]["total"]

    secs, total = timed(once, runs)
    return ("baseline (ping, same run)" if baseline else "module (ansible-playbook)", secs, int(total))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tenants", type=int, default=100)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--core-only", action="store_true")
    args = ap.parse_args()
    apps = fleet_apps(args.tenants)
    secs, n = core_row(apps, args.runs)
    rows = [("core (tree + table)", secs, n)]
    if not args.core_only:
        rows += kube_rows(apps, args.runs)
    print(f"argocd_status, {args.tenants} tenants, {len(apps)} Applications, median of {args.runs} runs")
    print(f"{'step':<28} {'apps':>6} {'seconds':>9} {'ms/app':>8}")
    for name, s, count in rows:
        per_app = f"{1000 * s / count:.3f}" if count else "-"
        print(f"{name:<28} {count or '-':>6} {s:>9.3f} {per_app:>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
