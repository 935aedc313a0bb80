"""Teardown leaves no process behind: explicit stop(), and owner death."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from controlplane import CLUSTER_SH, LocalControlPlane, require_control_plane_tools

pytestmark = pytest.mark.kube

COMPONENTS = {"runner", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}


def live(pid: int, marker: str) -> bool:
    """pid is a running (non-zombie) process whose command line contains marker."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z" and marker in cmdline


def procs_mentioning(marker: str) -> dict[str, int]:
    """Every live process on the machine whose command line contains marker."""
    out = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) != os.getpid() and live(int(d.name), marker):
            out[f"pid-{d.name}"] = int(d.name)
    return out


def wait_all_gone(pids: dict[str, int], marker: str, timeout: float) -> dict[str, int]:
    """Recorded pids plus any process naming the state dir that are still alive after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        alive = {n: p for n, p in pids.items() if live(p, marker)} | procs_mentioning(marker)
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.2)


def test_stop_kills_every_component_and_removes_state(tmp_path):
    require_control_plane_tools()
    plane = LocalControlPlane()
    state = tmp_path / "cluster"
    try:
        plane.start(state)
        assert plane.kubectl("get", "--raw", "/readyz").stdout == "ok"
        pids = plane.pids()
        assert COMPONENTS <= set(pids), pids
        assert all(live(p, str(state)) for p in pids.values()), pids
    finally:
        plane.stop()
    assert wait_all_gone(pids, str(state), timeout=0) == {}
    assert not state.exists()
    plane.stop()  # idempotent


CHILD = """
import json, sys, time
sys.path[:0] = [{here!r}, {lib!r}]
from controlplane import LocalControlPlane
p = LocalControlPlane()
p.start({state!r})
print(json.dumps(p.pids()), flush=True)
time.sleep(600)
"""


def test_cluster_dies_with_its_owner(tmp_path):
    """A SIGKILLed test process (no finalizers, no atexit) still leaves nothing behind."""
    require_control_plane_tools()
    state = tmp_path / "orphan"
    here = str(Path(__file__).resolve().parent)
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD.format(here=here, lib=str(Path(here).parents[1] / "lib"), state=str(state))],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = child.stdout.readline()
        assert line, "child did not start a cluster"
        pids = json.loads(line)
        assert COMPONENTS <= set(pids), pids
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
        alive = wait_all_gone(pids, str(state), timeout=30)
        assert alive == {}, f"still running after owner death: {alive}"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        subprocess.run(["bash", str(CLUSTER_SH), "down", str(state)], check=False)
