"""`gpufleet.py maintenance list`: every maintenance with its rendered nodes, window and state."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ansible_collections.gpufleet.core.plugins.module_utils.scaffold import fleet_repo

REPO = Path(__file__).resolve().parents[5]
CLI = REPO / "scripts" / "gpufleet.py"


def run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    inv = ["-i", str(root / "inventories/prod")]
    return subprocess.run(
        [sys.executable, str(CLI), *args, *inv], capture_output=True, text=True, check=False, cwd=root
    )


def test_list_states_over_time(tmp_path: Path) -> None:
    root = tmp_path / "lab"
    fleet_repo.scaffold(root, fleet_repo.options(root, org="lab", tenants=["vision:slurm"]))
    (root / ".git").mkdir()  # the repository: gitops/ beside the inventory
    assert run(root, "render").returncode == 0
    assert run(root, "maintenance", "list").stdout.strip() == "No maintenance."
    start = ["maintenance", "start", "--name", "psu", "--cluster", "gpu-1", "--nodes", "gpu[001-002]"]
    p = run(root, *start, "--reason", "PSU", "--start", "2026-12-05T06:00:00Z", "--duration", "4h")
    assert p.returncode == 0, p.stderr
    row = "| `psu` | `gpu-1` | `gpu[001-002]` (2) | PSU | 2026-12-05T06:00:00Z for 4h | {} |"
    for now, state in (
        ("2026-12-05T05:59:59Z", "pending"),
        ("2026-12-05T06:00:00Z", "due"),
        ("2026-12-05T10:00:00Z", "ended"),
    ):
        p = run(root, "maintenance", "list", "--now", now)
        assert p.returncode == 0 and row.format(state) in p.stdout, (now, p.stdout, p.stderr)
    assert "psu" not in run(root, "maintenance", "list", "--name", "other").stdout
    p = run(root, "maintenance", "end")
    assert p.returncode == 2 and "end needs --name" in p.stderr
