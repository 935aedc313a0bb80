"""A worker's sshd as the slurmd image runs it: Debian's OpenSSH ``sshd`` with PAM, pam_sss and
pam_slurm_adopt, keys from the directory (the rendered ``extraSshdConfig``), on loopback.

sshd takes its PAM service name from the name it is run by, so each ``WorkerSshd`` runs
``/usr/sbin/sshd`` through a symlink ``gpufleet-sshd-<node>`` and gets its own
``/etc/pam.d/gpufleet-sshd-<node>`` (removed on ``stop()``), leaving the system's ``sshd`` service
alone. The account stack is what the slurmd image's entrypoint sets up: pam_sss (the directory's
access rules) then ``pam_slurm_adopt action_adopt_failure=deny action_generic_failure=deny``, with
``nodename=<node>`` because every emulated node runs on this one host and ``service=<the service>``
(the module acts for ``sshd`` only by default, the image's name).
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from pathlib import Path

from daemons import Daemon

PAM_DIR = Path("/etc/pam.d")
SSHD = "/usr/sbin/sshd"


def pam_slurm_adopt_module() -> Path | None:
    """The pam_slurm_adopt.so built from the same Slurm source as the harness's daemons
    (tools/build-slurm.sh builds contribs/pam_slurm_adopt into the prefix); None when absent."""
    from gpufleet_testlib.slurm_build import SlurmBuildError, slurm_prefix

    try:
        module = slurm_prefix() / "lib" / "security" / "pam_slurm_adopt.so"
    except SlurmBuildError:
        return None
    return module if module.is_file() else None


class Syslog:
    """PAM modules log through syslog(3): a datagram socket at /dev/log (when none is there) keeps
    their lines for the test's messages; removed on ``stop()``."""

    PATH = Path("/dev/log")

    def __init__(self) -> None:
        import socket
        import threading

        self.lines: list[str] = []
        self.sock = None
        if self.PATH.exists() or self.PATH.is_symlink():
            return
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(self.PATH))
        self.PATH.chmod(0o666)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while self.sock is not None:
            try:
                self.lines.append(self.sock.recv(65536).decode(errors="replace"))
            except OSError:
                return

    @property
    def capturing(self) -> bool:
        return self.sock is not None

    def text(self) -> str:
        return "\n".join(self.lines)

    def stop(self) -> None:
        if self.sock is not None:
            sock, self.sock = self.sock, None
            sock.close()
            with contextlib.suppress(FileNotFoundError):
                self.PATH.unlink()


class WorkerSshd:
    def __init__(self, workdir: Path, node: str, port: int, extra_config: str, env: dict[str, str]):
        self.workdir = Path(workdir)
        self.node = node
        self.port = port
        self.extra_config = extra_config
        self.env = env  # SLURM_CONF for pam_slurm_adopt
        self.service = f"gpufleet-sshd-{node}"
        self.proc: Daemon | None = None

    def _pam(self) -> str:
        module = pam_slurm_adopt_module()
        return (
            "auth required pam_permit.so\n"  # publickey authentication is sshd's; PAM auth is not asked
            "account required pam_sss.so\n"
            f"account required {module} nodename={self.node} service={self.service}"
            " action_adopt_failure=deny action_generic_failure=deny log_level=debug\n"
            "session required pam_permit.so\n"
            "password required pam_deny.so\n"
        )

    def start(self, timeout: float = 20) -> WorkerSshd:
        wd = self.workdir
        wd.mkdir(parents=True, exist_ok=True)
        key = wd / "host_ed25519"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True, timeout=30)
        (wd / "sshd_config").write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {key}\nPidFile {wd / 'sshd.pid'}\n"
            "UsePAM yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
            "AuthorizedKeysFile none\nStrictModes no\nLogLevel DEBUG1\n" + self.extra_config
        )
        link = wd / self.service
        if not link.is_symlink():
            link.symlink_to(SSHD)
        (PAM_DIR / self.service).write_text(self._pam())
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation directory
        self.proc = Daemon([link, "-D", "-e", "-f", wd / "sshd_config"], wd / "sshd.log", env=self.env)
        end = time.monotonic() + timeout
        while not (wd / "sshd.pid").exists():
            if self.proc.poll() is not None or time.monotonic() > end:
                raise RuntimeError(f"sshd did not start:\n{self.log()[-3000:]}")
            time.sleep(0.1)
        return self

    def log(self) -> str:
        p = self.workdir / "sshd.log"
        return p.read_text(errors="replace") if p.exists() else ""

    def ssh(self, user: str, key: Path, command: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["ssh", "-i", str(key), "-p", str(self.port), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
             "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", f"{user}@127.0.0.1", command],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop(grace=10)
            self.proc = None
        with contextlib.suppress(FileNotFoundError):
            (PAM_DIR / self.service).unlink()
