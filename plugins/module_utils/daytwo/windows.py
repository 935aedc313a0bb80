"""Update windows left in place after their time.

A tenant with an update window (``gpufleet_rollout.window`` / ``tenant_windows``) has NodeSets with
``updateStrategy: ScheduledUpdate``: the Slinky operator (v1.2.1) replaces their pods only inside the
window. Once it has ended, a later change of the NodeSets' template is applied by Argo CD and never
rolled out (the pods keep the old template; the NodeSet health says so but stays Healthy), until someone
sets a new window or removes it.

Whether a window has ended depends on the time, and the render's bytes must not: the check is not in
the render but in ``review`` (a pull request that changes the slurm values of a tenant whose window has
ended fails: its change would never reach the workers; any other change gets a note) and ``validate``
(a warning), both at an explicit ``now`` (``--now``, default the clock). A check that fails main by
itself when a date passes, with no commit, is what this avoids: a pull request is where a stale window
is both visible and fixable.

A window that has opened (its start passed, its end not yet) is the other trap: the operator makes a
window's Slurm reservation only while its start is ahead (slurm-operator 1.2.1
``internal/controller/nodeset/slurmcontrol/slurmcontrol.go`` ``SyncReservationForNodeSet``, unless the
window carries ``FORCE_START``), and Slurm 26.05 refuses ``FORCE_START`` on a one-off reservation ("FORCE_START
flag requires a reoccuring reservation", ``src/slurmctld/reservation.c``; seen on the real operator in
tests/integration/slinky). So a window that reaches the NodeSets after its start is never carried out, and
the render cannot mend it: a pull request that sets or moves a window whose start has passed fails review;
a change of its tenants' slurm values inside an open window gets a note (it rolls out only if the
reservation was made before the start).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError, Issue
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Fleet
from ansible_collections.gpufleet.core.plugins.module_utils.model.inventory import load_inventory
from ansible_collections.gpufleet.core.plugins.module_utils.model.maintenance_model import parse_start
from ansible_collections.gpufleet.core.plugins.module_utils.model.rollout_model import KEY, Window

_TIME = "%Y-%m-%d %H:%M"


@dataclass(frozen=True)
class WindowIssue:
    issue: Issue  # the file, line and key of the window, and the message
    tenants: tuple[str, ...]  # the Slurm tenants whose NodeSets it schedules


def parse_now(text: str | None) -> datetime:
    """``--now``: RFC 3339 UTC (2026-12-05T02:00:00Z); None: the clock."""
    if text is None:
        return datetime.now(UTC)
    try:
        return parse_start(text)
    except ValueError:
        raise GpufleetError(f"--now {text!r}: not a UTC time like 2026-12-05T02:00:00Z") from None


def _slurm_tenants(fleet: Fleet) -> list[str]:
    return sorted(t for t in fleet.tenants if fleet.tenant_pools(t, "slurm"))


def _scheduling(fleet: Fleet) -> list[tuple[tuple[str, ...], Window, tuple[str, ...]]]:
    """(key path, window, the Slurm tenants whose NodeSets it schedules) of every window that schedules some."""
    windows: list[tuple[tuple[str, ...], Window | None]] = [((KEY, "window"), fleet.rollout.window)]
    windows += [((KEY, "tenant_windows", t), w) for t, w in fleet.rollout.tenant_windows]
    out = []
    for path, w in windows:
        tenants = tuple(t for t in _slurm_tenants(fleet) if w is not None and fleet.rollout.window_of(t) == w)
        if w is not None and (tenants or path[-1] != "window"):  # a window-wide default no tenant uses: none
            out.append((path, w, tenants))
    return out


def _span(w: Window) -> str:
    return f"the update window {w.start_time():{_TIME}} to {w.end_time():{_TIME}} UTC"


def ended_windows(fleet: Fleet, inventory: str | Path, now: datetime) -> list[WindowIssue]:
    """Every update window of ``fleet`` (loaded from ``inventory``) that ended at or before ``now`` and
    still schedules a Slurm tenant's NodeSets."""
    raw = load_inventory(inventory)
    out = []
    for path, w, tenants in _scheduling(fleet):
        if w.end_time() > now:
            continue
        message = (
            f"{_span(w)} ended before"
            f" {now.astimezone(UTC):{_TIME}} UTC: the Slinky operator replaces the NodeSet pods of"
            f" {', '.join(tenants)} only inside it (ScheduledUpdate), so a change of their NodeSets waits for a"
            f" window that never comes; set a new window, or remove this one and the NodeSets roll"
            f" {fleet.rollout.max_unavailable_per_block} node(s) per block at a time"
        )
        out.append(WindowIssue(raw.issue(path, message), tenants))
    return out


def opened_windows(fleet: Fleet, inventory: str | Path, now: datetime) -> list[WindowIssue]:
    """Every update window of ``fleet`` open at ``now`` (started at or before it, not ended) that schedules
    a Slurm tenant's NodeSets: if it reaches them only now, the operator makes no reservation for it."""
    raw = load_inventory(inventory)
    out = []
    for path, w, tenants in _scheduling(fleet):
        if not w.start_time() <= now < w.end_time():
            continue
        message = (
            f"{_span(w)} opened before {now.astimezone(UTC):{_TIME}} UTC: the Slinky operator makes a"
            f" window's Slurm reservation only while its start is ahead (and Slurm refuses FORCE_START on a"
            f" one-off reservation), so if this window reaches the NodeSets of {', '.join(tenants)} after its"
            f" start, none of their pods is replaced while the NodeSets report Healthy; set a start far enough"
            f" ahead for the merge and Argo CD's sync"
        )
        out.append(WindowIssue(raw.issue(path, message), tenants))
    return out
