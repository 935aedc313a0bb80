"""slurm_reservations in-process: the reservations come from a tree the renderer wrote, scontrol is
reached through ``exec_prefix``.

The prefix here is a recorder standing in for the tenant's controller (no slurmctld in a unit test): it
answers ``scontrol show reservation -o`` from a file, as slurmctld prints it (the line of
tests/unit/plugins/module_utils/daytwo/test_reservations.py), and logs every other command. The real
slurmctld runs the same module in tests/integration/slurm/test_slurm_maintenance.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from module_harness import run_module
from render_fixtures import copy_sample, edit_vars, render_to

RECORDER = """
import json, pathlib, sys
state, log, argv = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3:]
if argv[:3] == ["scontrol", "show", "reservation"]:
    sys.stdout.write(state.read_text() if state.exists() else "No reservations in the system\\n")
elif (state.parent / "refuse").exists():
    sys.stderr.write("slurm_create_reservation error: Requested nodes are busy\\n")
    sys.exit(1)
else:
    with log.open("a") as f:
        f.write(json.dumps(argv) + "\\n")
"""
WINDOW = {"start": "2030-12-01T06:00:00Z", "duration": "4h"}
# what slurmctld shows once it holds the rendered reservation (Flags gains SPEC_NODES)
HELD = (
    "ReservationName=gpufleet-firmware StartTime=2030-12-01T06:00:00 EndTime=2030-12-01T10:00:00 "
    "Duration=04:00:00 Nodes={nodes} NodeCnt=2 Flags=MAINT,IGNORE_JOBS,SPEC_NODES Users=root State=INACTIVE\n"
)


@pytest.fixture
def gitops(tmp_path: Path) -> Path:
    """A tree rendered from the sample with one maintenance window on two of research's Slurm nodes."""
    inv = copy_sample(tmp_path, snapshots=True)

    def add(data: dict) -> None:
        data["gpufleet_maintenance"] = [
            {
                "name": "firmware",
                "cluster": "gpu-east",
                "nodes": "gpu[003-004]",
                "reason": "BMC firmware",
                "window": WINDOW,
            }
        ]

    edit_vars(inv, "fleet.yml", add)
    out = tmp_path / "gitops"
    render_to(inv, out)
    return out


def _module(gitops: Path, tmp_path: Path, tenant: str) -> dict:
    recorder = tmp_path / "scontrol_recorder.py"
    recorder.write_text(RECORDER, encoding="utf-8")
    prefix = [sys.executable, str(recorder), str(tmp_path / "state"), str(tmp_path / "log")]
    return {"gitops_dir": str(gitops), "cluster": "gpu-east", "tenant": tenant, "exec_prefix": prefix}


def _logged(tmp_path: Path) -> list[list[str]]:
    log = tmp_path / "log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_slurm_reservations(gitops: Path, tmp_path: Path) -> None:
    rendered = yaml.safe_load((gitops / "clusters/gpu-east/maintenance.yaml").read_text())["reservations"]
    mine = [r for r in rendered if r["name"] == "gpufleet-firmware"]
    assert len(mine) == 1, rendered
    args = _module(gitops, tmp_path, mine[0]["tenant"])

    r = run_module("slurm_reservations", args, check=True, diff=True)
    create = r["commands"]
    assert r["changed"] is True and create[0][:4] == [
        "scontrol",
        "create",
        "reservation",
        "ReservationName=gpufleet-firmware",
    ]
    assert f"Nodes={mine[0]['nodes']}" in create[0] and "Flags=MAINT,IGNORE_JOBS" in create[0]
    assert r["diff"]["before"] == {} and list(r["diff"]["after"]) == ["gpufleet-firmware"]
    assert _logged(tmp_path) == []  # check mode ran nothing but the read

    r = run_module("slurm_reservations", args)
    assert r["changed"] is True and _logged(tmp_path) == create

    (tmp_path / "state").write_text(HELD.format(nodes=mine[0]["nodes"]))
    again = run_module("slurm_reservations", args)
    assert again["changed"] is False and again["commands"] == [] and len(_logged(tmp_path)) == 1

    other = run_module("slurm_reservations", {**args, "tenant": "no-such-tenant"})
    assert other["commands"] == [["scontrol", "delete", "ReservationName=gpufleet-firmware"]]

    (tmp_path / "state").unlink()
    (tmp_path / "refuse").touch()
    failed = run_module("slurm_reservations", args)
    assert failed["failed"] is True and "exit 1" in failed["msg"] and "Requested nodes are busy" in failed["msg"]
