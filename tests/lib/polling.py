"""The one poll loop of the tests: call a probe until it returns something truthy, or fail after a timeout
with what was awaited, the probe's last answer and, when given, more detail (a daemon's log)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(
    probe: Callable[[], Any],
    timeout: float,
    what: str,
    *,
    every: float = 0.5,
    detail: Callable[[], str] | None = None,
    error: type[Exception] = AssertionError,
) -> Any:
    """``probe()``'s first truthy answer, probed every ``every`` seconds (and once more at the deadline);
    ``error`` (a harness's own exception, else AssertionError) naming ``what``, the last answer and
    ``detail()`` when none came within ``timeout``. A probe that sees the awaited thing can never come
    (its daemon exited) raises at once."""
    deadline = time.monotonic() + timeout
    while True:
        last = probe()
        if last:
            return last
        if time.monotonic() >= deadline:
            break
        time.sleep(min(every, max(0.0, deadline - time.monotonic())))
    more = f"\n{detail()}" if detail is not None else ""
    raise error(f"timed out after {timeout}s waiting for {what}; last: {last!r}{more}")
