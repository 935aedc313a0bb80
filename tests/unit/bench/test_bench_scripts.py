"""Every benchmark script runs, at a tiny size, so a refactor that breaks one fails here (benches are
not run otherwise). Nothing is timed: a bench prints its tables; this only checks that it ran to the
end (exit 0, no traceback, its table printed).

The two benches that need live servers for minutes (the Argo CD bed, the local control plane) are
imported here (every name they import must exist) and run with their servers by hand
(``make bench``); the others run for real.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
BENCH = REPO / "bench"
TINY = ["--nodes", "128", "--tenants", "6"]

# script -> (arguments for a run of seconds, a line its output must contain); None: import only
RUNS: dict[str, tuple[list[str], str] | None] = {
    "bench_argocd_status.py": (["--tenants", "3", "--runs", "1", "--core-only"], "core"),
    "bench_argocd_sync.py": None,
    "bench_fabric_labels.py": (["--max-hosts", "2048"], "2048 x 8"),
    "bench_hostlist_slurm.py": (["--runs", "1", "--no-slurm"], "expand"),
    "bench_kube_controlplane.py": None,
    "bench_pools.py": (["--nodes", "256", "--pools", "8"], "|"),
    "bench_render.py": ([*TINY, "--tables", "runs,stages,features"], "| 9 CLI process, no change"),
    "bench_reports.py": (TINY, "tenants/<t>/REPORT.md"),
    "bench_scale.py": (TINY, "|"),
    "bench_site.py": (["--sizes", "64"], "    64 "),
    "bench_topology.py": (["--max-hosts", "256"], "256 x 8"),
    "bench_yaml_dump.py": ([*TINY, "--runs", "1"], "|"),
}
FLEET = ([*TINY, "--clusters", "2", "--runs", "1"], "fleet 1 worker / sum alone (wall)")


def test_every_bench_script_is_listed() -> None:
    scripts = sorted(p.name for p in BENCH.glob("bench_*.py"))
    assert scripts == sorted(RUNS), "list the new bench script in RUNS with a tiny size"


def _run(script: str, args: list[str], tmp_path: Path) -> str:
    env = {**os.environ, "GPUFLEET_CACHE_DIR": str(tmp_path / "cache"), "PYTHONDONTWRITEBYTECODE": "1"}
    p = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
        check=False,
    )
    assert p.returncode == 0 and "Traceback" not in p.stderr, f"{script} {' '.join(args)}:\n{p.stdout}\n{p.stderr}"
    return p.stdout


@pytest.mark.parametrize("script", sorted(k for k, v in RUNS.items() if v is not None))
def test_bench_runs_at_a_tiny_size(script: str, tmp_path: Path) -> None:
    args, expect = RUNS[script]  # type: ignore[misc]
    out = _run(script, args, tmp_path)
    assert expect in out, f"{script}: no {expect!r} in its output:\n{out}"


def test_fleet_bench_runs_at_a_tiny_size(tmp_path: Path) -> None:
    out = _run("bench_render.py", FLEET[0], tmp_path)
    assert FLEET[1] in out, out


@pytest.mark.parametrize("script", sorted(k for k, v in RUNS.items() if v is None))
def test_server_bench_imports(script: str) -> None:
    spec = importlib.util.spec_from_file_location(f"bench_import_{script[:-3]}", BENCH / script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # its imports resolve; main() is not run (no __main__)
    assert callable(module.main)
