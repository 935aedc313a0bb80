"""The tests' poll loop: it returns the first truthy answer, probes until the deadline and once at it, and
fails naming what it waited for, the last answer and the extra detail."""

from __future__ import annotations

import pytest
from polling import wait_for


def test_returns_the_first_truthy_answer() -> None:
    answers = iter([None, 0, [], {"ready": True}, "later"])
    assert wait_for(lambda: next(answers), 5, "ready", every=0) == {"ready": True}


def test_a_truthy_first_answer_returns_at_once() -> None:
    calls: list[int] = []
    assert wait_for(lambda: calls.append(1) or "up", 0, "up") == "up"
    assert calls == [1]


def test_fails_with_what_the_last_answer_and_the_detail() -> None:
    calls: list[int] = []

    def probe() -> dict[str, str]:
        calls.append(1)
        return {}

    with pytest.raises(AssertionError, match=r"waiting for the pods; last: \{\}\nlog tail") as err:
        wait_for(probe, 0.05, "the pods", every=0.01, detail=lambda: "log tail")
    assert "0.05s" in str(err.value)
    assert len(calls) >= 2  # probed more than once, and once more at the deadline


def test_a_harness_gets_its_own_error_and_a_probe_may_raise_at_once() -> None:
    with pytest.raises(RuntimeError, match="timed out after 0s waiting for slurmctld"):
        wait_for(lambda: None, 0, "slurmctld", error=RuntimeError)

    def exited() -> bool:
        raise RuntimeError("slurmctld exited (1)")

    with pytest.raises(RuntimeError, match="exited"):
        wait_for(exited, 60, "slurmctld")
