"""Slurm accounting for the test harness: Debian's ``mariadbd`` and the Slurm build's ``slurmdbd`` as plain processes.

``AccountingDb(workdir, my_cnf=..., dbd_conf=...)`` is handed to ``harness.SlurmCluster(accounting=...)``,
which starts it after munged and before slurmctld and stops it after slurmctld:

* MariaDB: ``mariadb-install-db`` into ``<workdir>/mariadb`` (no system tables outside it), then
  ``mariadbd --no-defaults`` on 127.0.0.1 and a free port, with a unix socket in a short temp dir
  for root (socket auth: the harness runs as root). The ``[mariadb]`` options the renderer puts
  into the MariaDB CR's ``myCnf`` are passed on, except the ones that only make sense on a database
  server (``bind-address``, buffer pool size: this machine is shared, 64M is enough).
* The slurmdbd database user gets a random password, written only into slurmdbd.conf (0600).
* slurmdbd (of the Slurm build, gpufleet_testlib/slurm_build.py): ``-D`` with its own slurmdbd.conf
  (DbdHost=localhost, free DbdPort, the cluster's auth: its munge socket or its slurm.key);
  ``dbd_conf`` lines (e.g. the chart's ``accounting.extraConfMap`` rendering) are added.

Everything runs in its own session and is stopped by ``stop()`` (TERM, then KILL by pid).
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from daemons import Daemon
from polling import wait_for

if TYPE_CHECKING:
    from harness import SlurmCluster

TOOLS = ("mariadbd", "mariadb-install-db", "mariadb")
SLURM_TOOLS = ("slurmdbd", "sacctmgr", "sacct", "sshare")
# options of the rendered myCnf that the harness replaces (its own bind address, small memory)
HARNESS_MYCNF = {"bind-address", "bind_address", "innodb_buffer_pool_size", "innodb-buffer-pool-size"}


def require_accounting() -> None:
    from gpufleet_testlib.slurm_build import require_slurm_build
    from harness import require_slurm
    from lead_conftest import lead_conftest

    require_slurm()
    lead = lead_conftest()
    for tool in TOOLS:
        lead.require_tool(tool, "Debian package mariadb-server")
    require_slurm_build(*SLURM_TOOLS)


def mycnf_options(my_cnf: str) -> list[str]:
    """``[mariadb]``/``[mysqld]`` options of a my.cnf text as ``--key=value`` arguments."""
    out, section = [], None
    for raw in my_cnf.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]").strip()
            continue
        if section not in ("mariadb", "mysqld", "server"):
            continue
        key, _sep, value = line.partition("=")
        if key.strip() in HARNESS_MYCNF:
            continue
        out.append(f"--{key.strip()}={value.strip()}" if _sep else f"--{key.strip()}")
    return out


class AccountingDb:
    def __init__(
        self, workdir: Path, my_cnf: str = "", dbd_conf: list[str] | None = None, database: str = "slurm_acct_db"
    ):
        self.workdir = Path(workdir)
        self.my_cnf = my_cnf
        self.dbd_conf = list(dbd_conf or [])
        self.database = database
        self.db_user = "slurm"
        self._procs: dict[str, Daemon] = {}
        self._sockdir: Path | None = None
        self.db_port = 0
        self.dbd_port = 0

    # ------------------------------------------------------------------ helpers

    def _spawn(self, cluster: SlurmCluster, key: str, argv: list[str]) -> Daemon:
        proc = Daemon(argv, cluster.log_dir / f"{key}.out", env=cluster.env, cwd=self.workdir)
        self._procs[key] = proc
        return proc

    def _wait(self, cond, timeout: float, what: str, key: str, log: Path) -> None:
        def probe() -> bool:
            if cond():
                return True
            if self._procs[key].poll() is not None:
                raise RuntimeError(f"{key} exited ({self._procs[key].returncode}) waiting for {what}:\n{_tail(log)}")
            return False

        wait_for(probe, timeout, what, every=0.2, detail=lambda: _tail(log), error=RuntimeError)

    @property
    def socket(self) -> Path:
        assert self._sockdir is not None
        return self._sockdir / "mariadb.sock"

    def sql(self, statement: str) -> str:
        r = subprocess.run(
            ["mariadb", "--no-defaults", f"--socket={self.socket}", "-u", "root", "-N", "-B", "-e", statement],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if r.returncode != 0:
            raise RuntimeError(f"mariadb -e {statement!r}: {r.stderr.strip()}")
        return r.stdout

    # ------------------------------------------------------------------ start / stop

    def start(self, cluster: SlurmCluster, timeout: float = 90) -> None:
        from gpufleet_testlib.slurm_build import slurm_tool
        from harness import free_ports

        wd = self.workdir
        wd.mkdir(parents=True, exist_ok=True)
        self._sockdir = Path(tempfile.mkdtemp(prefix="gf-db-", dir="/tmp"))
        self.dbd_port = self.dbd_port or free_ports(1)[0]  # the harness sets it when writing slurm.conf
        self.db_port = next(p for p in free_ports(2) if p != self.dbd_port)
        data = wd / "mariadb"
        if not (data / "mysql").exists():
            r = subprocess.run(
                [
                    "mariadb-install-db",
                    "--no-defaults",
                    f"--datadir={data}",
                    "--user=root",
                    "--auth-root-authentication-method=socket",
                    "--skip-test-db",
                ],
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            if r.returncode != 0:
                raise RuntimeError(f"mariadb-install-db failed: {r.stdout[-2000:]}{r.stderr[-2000:]}")
        err_log = cluster.log_dir / "mariadb.err"
        self._spawn(
            cluster,
            "mariadbd",
            [
                shutil.which("mariadbd") or "mariadbd",
                "--no-defaults",
                f"--datadir={data}",
                "--user=root",
                "--bind-address=127.0.0.1",
                f"--port={self.db_port}",
                f"--socket={self.socket}",
                f"--pid-file={self._sockdir / 'mariadb.pid'}",
                f"--log-error={err_log}",
                "--innodb-buffer-pool-size=64M",
                "--skip-name-resolve",
                *mycnf_options(self.my_cnf),
            ],
        )
        self._wait(self.socket.exists, timeout, "mariadbd socket", "mariadbd", err_log)
        self._wait(lambda: _ok(lambda: self.sql("SELECT 1")), timeout, "mariadbd queries", "mariadbd", err_log)
        password = secrets.token_hex(16)
        self.sql(
            f"CREATE USER IF NOT EXISTS '{self.db_user}'@'127.0.0.1' IDENTIFIED BY '{password}'; "
            f"ALTER USER '{self.db_user}'@'127.0.0.1' IDENTIFIED BY '{password}'; "
            f"GRANT ALL ON `{self.database}`.* TO '{self.db_user}'@'127.0.0.1';"
        )
        conf = cluster.workdir / "slurmdbd.conf"
        lines = [
            "# written by tests/integration/slurm/accounting_db.py",
            *cluster.dbd_auth_lines(),
            "DbdHost=localhost",
            "DbdAddr=127.0.0.1",
            f"DbdPort={self.dbd_port}",
            "SlurmUser=root",
            f"PidFile={wd / 'slurmdbd.pid'}",
            f"LogFile={cluster.log_dir / 'slurmdbd.log'}",
            f"DebugLevel={cluster.debug}",
            "StorageType=accounting_storage/mysql",
            "StorageHost=127.0.0.1",
            f"StoragePort={self.db_port}",
            f"StorageUser={self.db_user}",
            f"StoragePass={password}",
            f"StorageLoc={self.database}",
            *self.dbd_conf,
        ]
        conf.write_text("\n".join(lines) + "\n")
        conf.chmod(0o600)
        self.conf_path = conf
        self._spawn(cluster, "slurmdbd", [slurm_tool("slurmdbd"), "-D", "-n", "0"])
        # slurmdbd reads slurmdbd.conf next to SLURM_CONF (the cluster's work dir)
        dbd_log = cluster.log_dir / "slurmdbd.log"
        self._wait(
            lambda: "slurmdbd version" in _read(dbd_log) and "started" in _read(dbd_log),
            timeout,
            "slurmdbd start",
            "slurmdbd",
            dbd_log,
        )

    def stop(self) -> None:
        for key in ("slurmdbd", "mariadbd"):
            proc = self._procs.get(key)
            if proc is not None:
                proc.stop(grace=20, group=False)
        self._procs.clear()
        if self._sockdir is not None:
            shutil.rmtree(self._sockdir, ignore_errors=True)
            self._sockdir = None

    def pids(self) -> list[int]:
        return [p.pid for p in self._procs.values() if p.poll() is None]


def _ok(fn) -> bool:
    try:
        fn()
        return True
    except Exception:
        return False


def _read(p: Path) -> str:
    return p.read_text(errors="replace") if p.exists() else ""


def _tail(p: Path, n: int = 30) -> str:
    return "\n".join(_read(p).splitlines()[-n:])
