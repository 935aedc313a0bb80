"""Update windows left in place after their time, and windows already open: found at an explicit time
(never the render's clock), named by file, line and key; ``validate --now`` warns of both."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.daytwo.windows import (
    ended_windows,
    opened_windows,
    parse_now,
)
from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_fleet

REPO = Path(__file__).resolve().parents[5]
SAMPLE = REPO / "inventories" / "sample"
ROLLOUT = (
    "gpufleet_rollout:\n"
    "  window: {start: '2026-12-05T02:00:00Z', duration: 4h}\n"
    "  tenant_windows:\n"
    "    llm-pretrain: {start: '2026-12-10T02:00:00Z', duration: 2h}\n"
)


@pytest.fixture(scope="module")
def inventory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    inv = tmp_path_factory.mktemp("windows") / "inv"
    shutil.copytree(SAMPLE, inv)
    (inv / "group_vars" / "all" / "rollout.yml").write_text(ROLLOUT)
    return inv


def _ended(inv: Path, now: str) -> list[tuple[str, tuple[str, ...]]]:
    return [(w.issue.path, w.tenants) for w in ended_windows(load_fleet(inv), inv, parse_now(now))]


def test_windows_end_at_their_end(inventory: Path) -> None:
    assert _ended(inventory, "2026-12-05T05:59:59Z") == []  # still open
    # the cluster-wide window schedules research only: llm-pretrain has its own
    assert _ended(inventory, "2026-12-05T06:00:00Z") == [("gpufleet_rollout.window", ("research",))]
    assert _ended(inventory, "2026-12-10T04:00:00Z") == [
        ("gpufleet_rollout.window", ("research",)),
        ("gpufleet_rollout.tenant_windows.llm-pretrain", ("llm-pretrain",)),
    ]


def test_an_ended_window_names_file_line_key_and_what_to_do(inventory: Path) -> None:
    (w,) = ended_windows(load_fleet(inventory), inventory, parse_now("2026-12-07T00:00:00Z"))
    assert (w.issue.file, w.issue.line) == (str(inventory / "group_vars" / "all" / "rollout.yml"), 2)
    assert str(w.issue).endswith(
        "gpufleet_rollout.window: the update window 2026-12-05 02:00 to 2026-12-05 06:00 UTC ended before"
        " 2026-12-07 00:00 UTC: the Slinky operator replaces the NodeSet pods of research only inside it"
        " (ScheduledUpdate), so a change of their NodeSets waits for a window that never comes; set a new"
        " window, or remove this one and the NodeSets roll 1 node(s) per block at a time"
    )


def _opened(inv: Path, now: str) -> list[tuple[str, tuple[str, ...]]]:
    return [(w.issue.path, w.tenants) for w in opened_windows(load_fleet(inv), inv, parse_now(now))]


def test_windows_are_open_from_their_start_to_their_end(inventory: Path) -> None:
    assert _opened(inventory, "2026-12-05T01:59:59Z") == []  # the start still ahead: the operator reserves
    assert _opened(inventory, "2026-12-05T02:00:00Z") == [("gpufleet_rollout.window", ("research",))]
    assert _opened(inventory, "2026-12-05T05:59:59Z") == [("gpufleet_rollout.window", ("research",))]
    assert _opened(inventory, "2026-12-05T06:00:00Z") == []  # ended: ended_windows' business
    assert _opened(inventory, "2026-12-10T03:00:00Z") == [
        ("gpufleet_rollout.tenant_windows.llm-pretrain", ("llm-pretrain",))
    ]


def test_an_open_window_says_why_it_may_never_roll(inventory: Path) -> None:
    (w,) = opened_windows(load_fleet(inventory), inventory, parse_now("2026-12-05T03:00:00Z"))
    assert (w.issue.file, w.issue.line) == (str(inventory / "group_vars" / "all" / "rollout.yml"), 2)
    assert "the update window 2026-12-05 02:00 to 2026-12-05 06:00 UTC opened before 2026-12-05 03:00 UTC" in str(
        w.issue
    )
    assert "reservation only while its start is ahead" in str(w.issue) and "FORCE_START" in str(w.issue)


def test_the_render_sets_no_reservation_flag(inventory: Path) -> None:
    """Slurm 26.05 refuses FORCE_START on a one-off reservation: a window carrying it is never reserved."""
    values = render_fleet(load_fleet(inventory)).files["clusters/gpu-east/tenants/research/slurm/values.yaml"]
    assert b"startTime: '2026-12-05T02:00:00Z'" in values and b"flags" not in values


def test_the_render_keeps_an_ended_window(inventory: Path) -> None:
    """The render does not judge windows (its bytes may not depend on the clock): review and validate do."""
    files = render_fleet(load_fleet(inventory)).files
    assert b"startTime: '2026-12-05T02:00:00Z'" in files["clusters/gpu-east/tenants/research/slurm/values.yaml"]


def test_now_must_be_a_utc_time() -> None:
    with pytest.raises(GpufleetError, match="--now '2026-12-07 00:00': not a UTC time"):
        parse_now("2026-12-07 00:00")


def test_validate_warns_at_now(inventory: Path) -> None:
    cli = [sys.executable, str(REPO / "scripts" / "gpufleet.py"), "validate", "--inventory", str(inventory)]
    late = subprocess.run([*cli, "--now", "2026-12-07T00:00:00Z"], capture_output=True, text=True, check=False)
    assert late.returncode == 0, late.stderr
    assert "gpufleet: WARNING: " in late.stderr and "gpufleet_rollout.window: the update window" in late.stderr
    inside = subprocess.run([*cli, "--now", "2026-12-05T03:00:00Z"], capture_output=True, text=True, check=False)
    assert inside.returncode == 0, inside.stderr
    assert "gpufleet: WARNING: " in inside.stderr and "opened before 2026-12-05 03:00 UTC" in inside.stderr
    early = subprocess.run([*cli, "--now", "2026-12-01T00:00:00Z"], capture_output=True, text=True, check=False)
    assert (early.returncode, early.stderr) == (0, "")
