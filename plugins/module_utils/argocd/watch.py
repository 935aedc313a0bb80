"""Poll Application records until every one is ready or a timeout passes, noting each change.

``fetch()`` returns the current records (from :mod:`.status`); the clock and the sleep are
arguments so the loop runs the same against a real API server and in unit tests.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ansible_collections.gpufleet.core.plugins.module_utils.argocd.status import (
    AppStatus,
    StatusError,
    changes,
    progress_line,
)


@dataclass
class WaitResult:
    records: list[AppStatus]
    ready: bool
    waited: float
    polls: int
    progress: list[str] = field(default_factory=list)


def wait_ready(
    fetch: Callable[[], list[AppStatus]],
    *,
    timeout: float,
    interval: float = 5.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    tolerate_missing_root: bool = True,
) -> WaitResult:
    """Poll until all records are ready (and there is at least one) or ``timeout`` seconds pass.

    Each change of an app's sync/health/operation phase adds one progress line. A root that does
    not exist yet is waited for while ``tolerate_missing_root`` (it was just applied).
    """
    start = clock()
    seen: dict[str, AppStatus] = {}
    progress: list[str] = []
    polls = 0
    records: list[AppStatus] = []
    last_error: StatusError | None = None
    while True:
        polls += 1
        elapsed = clock() - start
        try:
            records = fetch()
            last_error = None
        except StatusError as exc:
            if not tolerate_missing_root:
                raise
            last_error = exc
            records = []
        for rec in changes(seen, records):
            progress.append(progress_line(elapsed, rec, seen.get(rec.key)))
            seen[rec.key] = rec
        if records and all(r.ready for r in records):
            return WaitResult(records, True, elapsed, polls, progress)
        if elapsed >= timeout:
            if last_error is not None:
                raise StatusError(f"{last_error} (waited {elapsed:.0f}s)")
            return WaitResult(records, False, elapsed, polls, progress)
        sleep(max(0.0, min(interval, timeout - elapsed)))
