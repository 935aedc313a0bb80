"""The MAINT reservation plan: create what is missing, update what differs, delete what was returned."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.daytwo import reservations as resv

# scontrol show reservation -o, as slurmctld prints it (Flags gains SPEC_NODES; times in controller time)
SHOWN = (
    "ReservationName=gpufleet-firmware StartTime=2026-12-01T06:00:00 EndTime=2026-12-01T10:00:00 "
    "Duration=04:00:00 Nodes=gpu[003-008] NodeCnt=6 CoreCnt=12 Features=(null) PartitionName=(null) "
    "Flags=MAINT,IGNORE_JOBS,SPEC_NODES TRES=cpu=12 Users=root Groups=(null) Accounts=(null) "
    "Licenses=(null) State=INACTIVE BurstBuffer=(null) Watts=n/a MaxStartDelay=(null)\n"
    "ReservationName=site-outage StartTime=2026-12-24T00:00:00 EndTime=2026-12-26T00:00:00 "
    "Duration=2-00:00:00 Nodes=ALL NodeCnt=20 Flags=MAINT Users=root State=INACTIVE\n"
)
FIRMWARE = resv.Reservation(
    "gpufleet-firmware",
    frozenset(f"gpu00{i}" for i in range(3, 9)),
    "2026-12-01T06:00:00",
    240,
    ("MAINT", "IGNORE_JOBS"),
)


def test_shown_reads_only_gpufleet_reservations() -> None:
    have = resv.shown(SHOWN)
    assert list(have) == ["gpufleet-firmware"]
    assert (have["gpufleet-firmware"].nodes, have["gpufleet-firmware"].minutes) == (FIRMWARE.nodes, 240)
    assert resv.shown("No reservations in the system\n") == {}


def test_plan_is_empty_when_slurm_holds_the_render() -> None:
    assert resv.plan([FIRMWARE], resv.shown(SHOWN)) == []


def test_plan_creates_updates_and_deletes() -> None:
    create = resv.plan([FIRMWARE], {})
    assert create == [
        [
            "scontrol",
            "create",
            "reservation",
            "ReservationName=gpufleet-firmware",
            "StartTime=2026-12-01T06:00:00",
            "Duration=240",
            "Nodes=gpu[003-008]",
            "Users=root",
            "Flags=MAINT,IGNORE_JOBS",
        ]
    ]
    moved = resv.Reservation(FIRMWARE.name, FIRMWARE.nodes, "2026-12-02T06:00:00", 240, FIRMWARE.flags)
    assert resv.plan([moved], resv.shown(SHOWN))[0][:3] == ["scontrol", "update", "ReservationName=gpufleet-firmware"]
    # the return: the render lists none; the site's own reservation is never touched
    assert resv.plan([], resv.shown(SHOWN)) == [["scontrol", "delete", "ReservationName=gpufleet-firmware"]]


def test_desired_reads_the_tenant_from_the_render(tmp_path: Path) -> None:
    f = tmp_path / "clusters" / "gpu-east" / "maintenance.yaml"
    f.parent.mkdir(parents=True)
    f.write_text(
        "nodes: {}\nreservations:\n"
        "- {tenant: research, name: gpufleet-firmware, nodes: 'gpu[003-008]', start: '2026-12-01T06:00:00Z',"
        " duration: 4h, flags: [MAINT, IGNORE_JOBS]}\n"
    )
    assert resv.desired(tmp_path, "gpu-east", "research") == [FIRMWARE]
    assert resv.desired(tmp_path, "gpu-east", "llm-pretrain") == []
    assert resv.desired(tmp_path, "gpu-west", "research") == []
    f.write_text("reservations: [{tenant: research, name: x}]\n")
    with pytest.raises(resv.ReservationError, match=r"maintenance\.yaml: reservations"):
        resv.desired(tmp_path, "gpu-east", "research")
