#!/usr/bin/env python3
"""Report sizes at scale: the rendered Markdown reports and monitoring files of bench_render's fleet.

What a reviewer reads: the cluster's REPORT.md and POOLS.md, each tenant's, and the shared files a
resize used to touch (GPU Operator values, the dcgm-exporter ServiceMonitor). Sizes in KB; the whole
pool table (all nodes in one file, as POOLS.md was before it was split by owner) for comparison.
Prints a table; asserts nothing.

    .venv/bin/python bench/bench_reports.py [--nodes 10000] [--tenants 100]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
from checkout_path import use_checkout

sys.path.insert(0, str(REPO / "tests" / "lib"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--tenants", type=int, default=100)
    args = ap.parse_args()
    use_checkout()
    from render_fixtures import make_big_inventory

    from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
    from ansible_collections.gpufleet.core.plugins.module_utils.pools.pool_table import render_pool_table
    from ansible_collections.gpufleet.core.plugins.module_utils.render import tree as rt
    from ansible_collections.gpufleet.core.plugins.module_utils.render.inputs import cluster_inputs

    tmp = Path(tempfile.mkdtemp(prefix="bench-reports-"))
    try:
        inv = make_big_inventory(tmp, args.nodes, args.tenants, True)
        fleet = load_fleet(inv)
        files = rt.render_fleet(fleet).files
        inputs = cluster_inputs(fleet, fleet.clusters["gpu-east"])
        base = "clusters/gpu-east"

        def kb(rel: str) -> str:
            return f"{len(files[rel]) / 1024:.1f}" if rel in files else "-"

        def per_tenant(name: str) -> tuple[str, str, str]:
            sizes = [len(v) / 1024 for k, v in files.items() if k.startswith(f"{base}/tenants/") and k.endswith(name)]
            return (f"{statistics.median(sizes):.1f}", f"{max(sizes):.1f}", str(len(sizes))) if sizes else ("-",) * 3

        report = files[f"{base}/REPORT.md"].decode()
        picture = report.split("```mermaid")[1].split("```")[0].count("\n") if "```mermaid" in report else 0
        print(f"# report sizes: {args.nodes} GPU nodes (+16 system), {args.tenants} tenants, ibnetdiscover fabric")
        print(f"# cluster REPORT.md: a picture of {picture} Mermaid lines")
        print()
        print("| file | KB | per-tenant median KB | per-tenant max KB | files |")
        print("| --- | ---: | ---: | ---: | ---: |")
        print(f"| {base}/REPORT.md (platform) | {kb(f'{base}/REPORT.md')} | | | 1 |")
        print(f"| {base}/POOLS.md (platform: nodes of no tenant) | {kb(f'{base}/POOLS.md')} | | | 1 |")
        print(f"| tenants/<t>/REPORT.md | | {' | '.join(per_tenant('/REPORT.md'))} |")
        print(f"| tenants/<t>/POOLS.md | | {' | '.join(per_tenant('/POOLS.md'))} |")
        whole = len(render_pool_table(inputs.assignment)) / 1024
        print(f"| the whole pool table in one file (for comparison) | {whole:.1f} | | | 1 |")
        print(
            f"| {base}/platform/gpu-operator/values.yaml | {kb(f'{base}/platform/gpu-operator/values.yaml')} | | | 1 |"
        )
        sm = f"{base}/platform/monitoring/dcgm-exporter.yaml"
        print(f"| {sm} | {kb(sm)} | | | 1 |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
