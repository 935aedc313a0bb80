"""The accounts Job (wave 90) runs its sacctmgr script only once slurmctld and slurmdbd answer.

The Job's command is taken from the rendered sample tree and run by ``sh`` with stand-ins for the
Slurm client programs on PATH (``sackd``, ``scontrol``, ``sacctmgr``, ``sssd``) and a ``sleep`` that
returns at once. Each stand-in answers according to a state file, so the test decides when a daemon
"comes up"; that the real programs exit non-zero while their daemon is down is read from the Slurm
26.05 sources (``scontrol ping``: exit 1 unless a slurmctld answered; ``sacctmgr ping``: likewise for
slurmdbd).
"""

from __future__ import annotations

import socket
import subprocess
import threading
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[5]
TREE = REPO / "gitops" / "clusters" / "gpu-east" / "tenants"
CONF = "/run/slurm/conf/slurm.conf"
SCRIPT = "/gpufleet/accounts.sh"

STUB = """#!/bin/sh
# answers once the state file says the daemon is up (after N calls)
state="{state}/$(basename "$0")-$1"
n=$(cat "$state.calls" 2>/dev/null || echo 0); n=$((n + 1)); echo "$n" >"$state.calls"
up=$(cat "$state.up" 2>/dev/null || echo never)
if [ "$up" != never ] && [ "$n" -ge "$up" ]; then echo "$(basename "$0") $1: UP"; exit 0; fi
echo "$(basename "$0") $1: DOWN" >&2; exit 1
"""


def job_command(tenant: str) -> str:
    docs = list(yaml.safe_load_all((TREE / tenant / "accounting" / "accounts.yaml").read_text()))
    job = next(d for d in docs if d and d["kind"] == "Job")
    cmd = job["spec"]["template"]["spec"]["containers"][0]["command"]
    assert cmd[:2] == ["/bin/sh", "-c"]
    return cmd[2]


def run(tmp_path: Path, tenant: str, ctld_up: str, dbd_up: str) -> subprocess.CompletedProcess[str]:
    bin_dir, state = tmp_path / "bin", tmp_path / "state"
    bin_dir.mkdir()
    state.mkdir()
    conf = tmp_path / "slurm.conf"
    for name in ("scontrol", "sacctmgr"):
        (bin_dir / name).write_text(STUB.format(state=state))
    (state / "scontrol-ping.up").write_text(ctld_up)
    (state / "sacctmgr-ping.up").write_text(dbd_up)
    (bin_dir / "sackd").write_text(f"#!/bin/sh\necho 'ClusterName=x' >{conf}\n")
    (bin_dir / "sssd").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "sleep").write_text(f"#!/bin/sh\necho slept >>{state}/sleeps\n")
    script = tmp_path / "accounts.sh"
    script.write_text(f"echo accounts applied >{state}/applied\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    cmd = job_command(tenant).replace(CONF, str(conf)).replace(SCRIPT, str(script))
    # a directory socket the SSSD wait looks for is not there: its own loop just runs out
    return subprocess.run(
        ["/bin/sh", "-c", cmd],
        capture_output=True,
        text=True,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin"},
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("tenant", ["llm-pretrain", "research"])
def test_runs_the_script_once_both_daemons_answer(tmp_path: Path, tenant: str) -> None:
    p = run(tmp_path, tenant, ctld_up="3", dbd_up="4")
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "state" / "applied").is_file()
    assert (tmp_path / "state" / "scontrol-ping.calls").read_text().strip() == "3"
    assert (tmp_path / "state" / "sacctmgr-ping.calls").read_text().strip() == "4"


@pytest.mark.parametrize(
    ("ctld_up", "dbd_up", "who"),
    [("never", "1", "slurmctld"), ("1", "never", "slurmdbd")],
)
def test_fails_with_the_reason_while_a_daemon_is_down(tmp_path: Path, ctld_up: str, dbd_up: str, who: str) -> None:
    p = run(tmp_path, "research", ctld_up=ctld_up, dbd_up=dbd_up)
    assert p.returncode == 1
    assert not (tmp_path / "state" / "applied").exists(), "the sacctmgr script ran before the daemons answered"
    assert f"gpufleet: {who} does not answer after 60 tries" in p.stderr, p.stderr
    assert "ping: DOWN" in p.stderr


# ---- the login gate (7-slurm-ready): sshd behind the login Service, i.e. a Ready login pod


def login_command(tenant: str) -> str:
    docs = list(yaml.safe_load_all((TREE / tenant / "slurm-ready" / "login-ready.yaml").read_text()))
    (job,) = [d for d in docs if d]
    cmd = job["spec"]["template"]["spec"]["containers"][0]["command"]
    assert cmd[:2] == ["/bin/bash", "-c"] and job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    return cmd[2]


def run_login_gate(tmp_path: Path, port: int, bound: str = "0.5") -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sleep").write_text("#!/bin/sh\nexit 0\n")
    # the gate's own 10 s connect bound, shortened (each of its 60 tries against a silent peer waits that long)
    (bin_dir / "timeout").write_text(f'#!/bin/sh\nshift\nexec /usr/bin/timeout {bound} "$@"\n')
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    cmd = login_command("research")
    assert "/dev/tcp/slurm-login-main.slurm/22" in cmd
    cmd = cmd.replace("/dev/tcp/slurm-login-main.slurm/22", f"/dev/tcp/127.0.0.1/{port}")
    return subprocess.run(
        ["/bin/bash", "-c", cmd],
        capture_output=True,
        text=True,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin"},
        timeout=120,
        check=False,
    )


def serve(banner: bytes | None) -> tuple[socket.socket, threading.Thread]:
    srv = socket.create_server(("127.0.0.1", 0))
    srv.settimeout(0.2)

    def loop() -> None:
        conns = []
        while srv.fileno() != -1:
            try:
                conn, _addr = srv.accept()
            except (TimeoutError, OSError):
                continue
            conns.append(conn)  # kept open: a silent peer must not look like a closed one
            if banner is not None:
                conn.sendall(banner)

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    return srv, t


@pytest.mark.parametrize(("banner", "ok"), [(b"SSH-2.0-OpenSSH_9.6\r\n", True), (None, False)])
def test_login_gate_needs_sshd_answering(tmp_path: Path, banner: bytes | None, ok: bool) -> None:
    srv, _thread = serve(banner)
    try:
        # an answering sshd returns at once whatever the bound; a silent peer costs 60 bounds
        p = run_login_gate(tmp_path, srv.getsockname()[1], bound="5" if ok else "0.05")
    finally:
        srv.close()
    if ok:
        assert p.returncode == 0, p.stderr
    else:  # a listener that is not sshd (or a pod that accepts but hangs)
        assert p.returncode == 1 and "a Ready login pod" in p.stderr, p.stderr


def test_login_gate_fails_with_the_reason_when_no_login_pod_is_ready(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = s.getsockname()[1]  # closed again: nothing listens (no Ready endpoint)
    p = run_login_gate(tmp_path, port)
    assert p.returncode == 1
    assert "gpufleet: a Ready login pod (sshd behind Service slurm-login-main.slurm:22) does not answer" in p.stderr
