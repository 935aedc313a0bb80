"""The one way the test harnesses run a daemon (slurmctld, slapd, sshd, the Slinky operator, a vCluster
syncer, ...): started in its own session, so that it and every child it forks share one process group;
stdout and stderr appended to a log file; stopped with SIGTERM, then SIGKILL to the whole group after a
bounded wait, so a hung daemon never hangs a test's teardown."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from polling import wait_for


class Daemon:
    """``argv`` started in a new session, its output in ``log`` (appended unless ``append=False``).
    The parent's copy of the log file is closed at once: the daemon holds its own."""

    def __init__(
        self,
        argv: Sequence[str | Path],
        log: Path,
        *,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        append: bool = True,
    ):
        self.argv = [str(a) for a in argv]
        self.log = Path(log)
        with self.log.open("ab" if append else "wb") as out:
            self.offset = out.tell()  # where this run's output starts in the log
            self.proc = subprocess.Popen(
                self.argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                cwd=cwd,
                start_new_session=True,
            )

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def poll(self) -> int | None:
        return self.proc.poll()

    def running(self) -> bool:
        return self.proc.poll() is None

    def terminate(self, group: bool = True) -> None:
        """SIGTERM to the process group (or to the daemon alone: ``group=False``) while it runs."""
        if self.running():
            with contextlib.suppress(ProcessLookupError):
                if group:
                    os.killpg(self.proc.pid, signal.SIGTERM)
                else:
                    self.proc.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL to the whole process group (what is left of it)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def reap(self, timeout: float, kill_wait: float = 5) -> bool:
        """Wait up to ``timeout`` seconds for the daemon to exit; past that, SIGKILL its group and wait up
        to ``kill_wait``. True when it had to be killed."""
        try:
            self.proc.wait(timeout=timeout)
            return False
        except subprocess.TimeoutExpired:
            self.kill()
            self.proc.wait(timeout=kill_wait)
            return True

    def stop(self, grace: float = 10, kill_wait: float = 5, group: bool = True) -> bool:
        """SIGTERM, then SIGKILL after ``grace`` seconds; True when it had to be killed."""
        self.terminate(group)
        return self.reap(grace, kill_wait)

    def text(self) -> str:
        """What this run wrote to the log (not what an earlier run appended before it)."""
        if not self.log.exists():
            return ""
        with self.log.open("rb") as f:
            f.seek(self.offset)
            return f.read().decode(errors="replace")

    def wait_logged(self, needle: str, timeout: float, what: str, error: type[Exception] = RuntimeError) -> None:
        """Wait until the daemon logs ``needle`` (e.g. a forwarder's "ready"); ``error`` at once when it
        exits first, or after ``timeout``, with the log's tail."""

        def probe() -> bool:
            if needle in self.text():
                return True
            if not self.running():
                raise error(f"{what}: exited ({self.returncode}):\n{self.tail()}")
            return False

        wait_for(probe, timeout, what, every=0.1, detail=self.tail, error=error)

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.text().splitlines()[-lines:])


def stop_all(daemons: Iterable[Daemon], grace: float = 10, kill_wait: float = 5, group: bool = True) -> list[bool]:
    """SIGTERM to every daemon at once, then each gets up to ``grace`` seconds from that moment before
    SIGKILL (daemons that shut down together, e.g. a syncer and its forwarder). Which were killed, in order."""
    daemons = list(daemons)
    for d in daemons:
        d.terminate(group)
    deadline = time.monotonic() + grace
    return [d.reap(max(0.1, deadline - time.monotonic()), kill_wait) for d in daemons]
