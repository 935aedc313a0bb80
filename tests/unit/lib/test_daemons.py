"""The harnesses' daemon runner: a daemon runs in its own session with its output in its log; stopping it
sends SIGTERM and waits, and only a daemon that ignores SIGTERM past the grace is killed, with every process
of its group."""

from __future__ import annotations

import os
import time
from pathlib import Path

from daemons import Daemon, stop_all
from polling import wait_for

# prints its pid, then its child's, and waits; with "ignore" it shrugs off SIGTERM (and so does its child)
SCRIPT = 'echo "me $$"; {trap} sleep 60 & echo "child $!"; wait'


def _start(tmp_path: Path, name: str, ignore: bool) -> Daemon:
    trap = "trap '' TERM;" if ignore else ""
    d = Daemon(["sh", "-c", SCRIPT.format(trap=trap)], tmp_path / f"{name}.log")
    wait_for(lambda: "child" in d.text(), 10, f"{name} to start", every=0.05, detail=d.text)
    return d


def _child(d: Daemon) -> int:
    return int(next(line.split()[1] for line in d.text().splitlines() if line.startswith("child ")))


def _gone(pid: int) -> bool:
    try:
        return "\nState:\tZ" in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True


def test_runs_in_its_own_session_and_logs(tmp_path: Path) -> None:
    d = _start(tmp_path, "plain", ignore=False)
    try:
        assert os.getsid(d.pid) == d.pid != os.getsid(0)
        assert os.getpgid(_child(d)) == d.pid
        assert f"me {d.pid}" in d.tail(5)
    finally:
        d.stop(grace=5)


def test_a_daemon_that_obeys_sigterm_is_not_killed(tmp_path: Path) -> None:
    d = _start(tmp_path, "obeys", ignore=False)
    child = _child(d)
    assert d.stop(grace=10) is False
    assert d.returncode is not None and not d.running()
    assert wait_for(lambda: _gone(child), 10, "the child to go", every=0.05)  # SIGTERM went to the group


def test_a_daemon_deaf_to_sigterm_is_killed_with_its_group_after_the_grace(tmp_path: Path) -> None:
    d = _start(tmp_path, "deaf", ignore=True)
    child = _child(d)
    t0 = time.monotonic()
    assert d.stop(grace=0.5) is True
    assert time.monotonic() - t0 >= 0.5
    assert d.returncode == -9
    assert wait_for(lambda: _gone(child), 10, "the child to go", every=0.05)


def test_stop_all_terms_together_and_kills_only_the_deaf(tmp_path: Path) -> None:
    obeys, deaf = _start(tmp_path, "obeys", ignore=False), _start(tmp_path, "deaf", ignore=True)
    assert stop_all([deaf, obeys], grace=0.5) == [True, False]
    assert not obeys.running() and not deaf.running()


def test_stopping_an_exited_daemon_is_a_no_op(tmp_path: Path) -> None:
    d = Daemon(["true"], tmp_path / "true.log")
    d.proc.wait(timeout=10)
    assert d.stop(grace=0.1) is False
    assert d.returncode == 0
