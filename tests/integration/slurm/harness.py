"""A real Slurm cluster on this machine: munged + slurmctld + one ``slurmd -N <name>`` per emulated node.

The Slurm is the project's own build of the version the fleet deploys (tools/build-slurm.sh,
``.build/slurm``; gpufleet_testlib/slurm_build.py): its daemons are started by absolute path and
``env`` puts its bin/ and sbin/ first on ``PATH`` for every command run with it. ``require_slurm``
fails when that build says another version than the pinned one. munged is Debian's.

Given a work directory, the slurm.conf body (NodeName/PartitionName lines and any other keys, for
example the output of tests/lib/gpufleet_testlib/slurm_conf.py), topology.conf and gres.conf text, the
harness writes a complete slurm.conf around it:

* ``SlurmctldHost=localhost``, free TCP ports, ``Port=`` per node (each NodeName line is split into
  one line per node with ``NodeHostname=localhost NodeAddr=127.0.0.1 Port=<free>``; over 256 nodes
  only the nodes given a slurmd get a port of their own);
* ``%n`` in SlurmdSpoolDir/SlurmdPidFile/SlurmdLogFile, StateSaveLocation in the work dir;
* ``ProctrackType=proctrack/linuxproc``, ``TaskPlugin=task/none``, no cgroup.conf: this sandbox (gVisor)
  has cgroup v1 and a hugetlb-only cgroup2, which 26.05's cgroup/v2 refuses ("Hybrid mode is not
  supported"), so the rendered task/cgroup + cgroup/v2 cannot run here (slurmd falls back to
  cgroup/v1 and logs that it is deprecated; test_slurm_rendered_files.py loads the rendered
  cgroup.conf in slurmctld); no accounting unless
  ``accounting=AccountingDb(...)`` (accounting_db.py: mariadbd + slurmdbd, started after munged and
  before slurmctld, stopped after it) switches ``AccountingStorageType`` to slurmdbd;
* ``SlurmdParameters=config_overrides`` so the emulated nodes may claim more CPUs/memory/GPUs
  than this host has;
* ``AuthType=auth/munge`` with a private munged (own key made with dd, own socket), the default;
  ``auth="slurm"`` switches to what the Slinky chart runs: ``auth/slurm``/``cred/slurm`` with a
  random ``slurm.key`` next to slurm.conf (no munged then);
* ``jwt=True`` adds what the Slinky chart adds for slurmrestd: ``AuthAltTypes=auth/jwt`` with a random
  HS256 key (``jwt_hs256.key``, readable by SlurmUser only); ``start_slurmrestd()`` then runs the
  build's slurmrestd as ``nobody`` the way the operator's RestApi pod does (``SLURM_JWT=daemon``,
  ``-s openapi/slurmctld``), on 127.0.0.1, and ``token()`` asks ``scontrol token`` for a JWT;
* ``slurm_user="slurm"`` runs slurmctld as that user (the chart's SlurmUser): the work dir is given
  to it, so it must lie in a directory that user can reach.

Keys the harness must own (ports, paths, auth, plugins that need root-only host features) are
dropped from the given body and replaced; everything else (TopologyPlugin, TopologyParam,
GresTypes, partitions, SelectType, ...) is kept as given.

All daemons run in the foreground as children of this process (``-D``), each in its own session.
``stop()`` cancels jobs, terminates the daemons, then kills any leftover process whose environment
carries this cluster's ``GPUFLEET_SLURM_HARNESS`` marker (slurmstepd, job tasks): only processes this harness
started, found by their id. It runs on test failure too (context manager / fixture finalizer).
"""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from daemons import Daemon
from gpufleet_testlib.slurm_build import (
    SlurmBuildError,
    check_version,
    require_slurm_build,
    slurm_env,
    slurm_prefix,
    slurm_tool,
)
from lead_conftest import lead_conftest
from polling import wait_for

from ansible_collections.gpufleet.core.plugins.module_utils.hostlist import compress, expand

__all__ = ["SlurmCluster", "SlurmHarnessError", "require_slurm", "slurm_prefix"]

TOOLS = ("slurmctld", "slurmd", "scontrol", "sbatch", "squeue", "sinfo", "scancel")
AUTHS = ("munge", "slurm")
MANY_NODES = 256

# Keys the harness writes itself; the same keys in the given body are dropped (case-insensitive).
OWNED_KEYS = {
    k.lower()
    for k in (
        "SlurmctldHost ControlMachine ControlAddr BackupController SlurmctldPort SlurmdPort SlurmUser SlurmdUser "
        "AuthType AuthInfo AuthAltTypes CredType StateSaveLocation SlurmdSpoolDir SlurmctldPidFile SlurmdPidFile "
        "SlurmctldLogFile SlurmdLogFile SlurmctldDebug SlurmdDebug ProctrackType TaskPlugin JobAcctGatherType "
        "AccountingStorageType AccountingStorageHost JobCompType SwitchType MpiDefault ReturnToService "
        "SlurmdParameters SlurmctldParameters PluginDir LaunchType PrologFlags "
        "AccountingStoragePort AccountingStoragePass AuthAltParameters"
    ).split()
}
NODE_OWNED = {"nodehostname", "nodeaddr", "port"}

# slurmctld "error:" lines that a fresh StateSaveLocation always produces (no state to recover)
FRESH_STATE_NOISE = (
    re.compile(r"error: Could not open (job|node|reservation|trigger|front_end|part|resv|assoc_mgr)\w* state file"),
    re.compile(r"error: NOTE: Trying backup state save file"),
    re.compile(r"error: No fed_mgr state file .* to recover"),  # with accounting (slurmdbd) only
)
# this sandbox (gVisor) has a slow clock call; slurmctld reports it at start-up
ENV_NOISE: tuple[re.Pattern, ...] = (re.compile(r"error: High latency for \d+ calls to gettimeofday\(\)"),)
PROBLEM = re.compile(r"\b(error|fatal|warning|WARNING)\b|\bfatal:|\berror:")


def require_slurm() -> None:
    """Skip (outside CI) or fail (CI=true) unless the Slurm build, munged and root are there; fail
    (always) when the build is another Slurm version than the pinned one."""
    import pytest

    lead = lead_conftest()
    lead.require_tool("munged", "Debian package munge")
    require_slurm_build(*TOOLS)
    if os.geteuid() != 0:
        msg = "slurmd must run as root to emulate nodes"
        if lead.IN_CI:
            pytest.fail(msg, pytrace=False)
        pytest.skip(msg)


class SlurmHarnessError(RuntimeError):
    pass


def free_ports(n: int) -> list[int]:
    """n distinct free TCP ports on 127.0.0.1 (held open together, then released)."""
    socks = []
    try:
        for _i in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _key(line: str) -> str:
    return line.split("=", 1)[0].strip().lower() if "=" in line else ""


def _split_fields(line: str) -> list[tuple[str, str]]:
    out = []
    for tok in line.split():
        k, _sep, v = tok.partition("=")
        out.append((k, v))
    return out


@dataclass
class Job:
    job_id: str
    state: str
    nodes: list[str]
    reason: str


class SlurmCluster:
    """See the module docstring. Use as a context manager or call start()/stop()."""

    def __init__(
        self,
        workdir: Path,
        conf: str,
        topology: str | None = None,
        gres: str | None = None,
        nodes: Iterable[str] | None = None,
        auth: str = "munge",
        cluster_name: str | None = None,
        debug: str = "info",
        gpu_devices: int = 0,
        accounting=None,
        keep: Iterable[str] = (),
        files: dict[str, str] | None = None,
        jwt: bool = False,
        slurm_user: str = "root",
    ):
        """``keep``: owned keys to take from ``conf`` after all (e.g. PrologFlags, when the test
        brings what it needs)."""
        self.workdir = Path(workdir).resolve()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.auth = auth
        self.jwt = jwt
        self.slurm_user = slurm_user
        self.restd_port: int | None = None
        self.debug = debug
        self.gpu_devices = gpu_devices
        self.accounting = accounting  # accounting_db.AccountingDb or None
        self.owned = OWNED_KEYS - {k.lower() for k in keep}
        # further config files next to slurm.conf, where slurmctld/slurmd look for them
        # (topology.yaml, cgroup.conf, ...): name -> text
        self.files = dict(files or {})
        self._procs: dict[str, Daemon] = {}
        self._sockdir: Path | None = None
        self.body = conf
        self.topology = topology
        self.gres = gres
        self.cluster_name = cluster_name
        self.conf_path = self.workdir / "slurm.conf"
        self.log_dir = self.workdir / "log"
        self.all_nodes = [n for line in conf.splitlines() if _key(line) == "nodename" for n in self._line_nodes(line)]
        self.nodes = list(nodes) if nodes is not None else list(self.all_nodes)
        unknown = sorted(set(self.nodes) - set(self.all_nodes))
        if unknown:
            raise SlurmHarnessError(f"nodes not in any NodeName line: {compress(unknown)}")
        # GPUFLEET_SLURM_HARNESS marks every process of this cluster (daemons, slurmstepd, job
        # tasks, whatever their SLURM_CONF) so stop() can find leftovers by their environment
        self.env = slurm_env(os.environ) | dict(
            SLURM_CONF=str(self.conf_path), TERM="dumb", GPUFLEET_SLURM_HARNESS=str(self.workdir)
        )
        self.env.pop("SLURM_JOB_ID", None)
        self.timings: dict[str, float] = {}

    @staticmethod
    def _line_nodes(line: str) -> list[str]:
        name = _split_fields(line)[0][1]
        return [] if name.upper() == "DEFAULT" else expand(name)

    # ------------------------------------------------------------------ config

    def _device_dir(self) -> Path:
        return self.workdir / "dev"

    def write_config(self) -> None:
        wd = self.workdir
        for d in ("state", "log", "jobs"):
            (wd / d).mkdir(exist_ok=True)
        self._spool().mkdir(exist_ok=True)
        # fleet-sized configs: only the nodes that get a slurmd need a port of their own (the rest
        # keep SlurmdPort, where nothing listens: they stay down)
        with_port = self.all_nodes if len(self.all_nodes) <= MANY_NODES else self.nodes
        ports = free_ports(2 + len(with_port))
        self.ctld_port, self.slurmd_port = ports[0], ports[1]
        self.node_ports = dict(zip(with_port, ports[2:], strict=True))
        kept: list[str] = []
        node_lines: list[str] = []
        name = self.cluster_name
        for raw in self.body.splitlines():
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            key = _key(line)
            if key in self.owned:
                continue
            if key == "clustername":
                name = name or line.split("=", 1)[1].strip()
                continue
            if key == "nodename":
                fields = _split_fields(line)
                if fields[0][1].upper() == "DEFAULT":
                    node_lines.append(line)
                    continue
                rest = " ".join(f"{k}={v}" for k, v in fields[1:] if k.lower() not in NODE_OWNED)
                for node in expand(fields[0][1]):
                    port = self.node_ports.get(node, self.slurmd_port)
                    where = f"NodeHostname=localhost NodeAddr=127.0.0.1 Port={port}"
                    node_lines.append(f"NodeName={node} {where} {rest}".rstrip())
                continue
            kept.append(line)
        if self.auth == "munge":
            auth = [
                "AuthType=auth/munge",
                f"AuthInfo=socket={self._munge_socket()}",
                "CredType=cred/munge",
            ]
        elif self.auth == "slurm":
            auth = ["AuthType=auth/slurm", "CredType=cred/slurm"]
            self._write_slurm_key()
        else:
            raise SlurmHarnessError(f"unknown auth {self.auth!r} (known: {', '.join(AUTHS)})")
        if self.jwt:
            auth += ["AuthAltTypes=auth/jwt", f"AuthAltParameters=jwt_key={self.jwt_key_path}"]
        head = [
            f"ClusterName={name or 'harness'}",
            "SlurmctldHost=localhost",
            f"SlurmctldPort={self.ctld_port}",
            f"SlurmdPort={self.slurmd_port}",
            f"SlurmUser={self.slurm_user}",
            "SlurmdUser=root",
            *auth,
            f"StateSaveLocation={wd / 'state'}",
            f"SlurmdSpoolDir={self._spool()}/%n",
            f"SlurmctldPidFile={wd / 'slurmctld.pid'}",
            f"SlurmdPidFile={self._spool()}/slurmd-%n.pid",
            f"SlurmctldLogFile={self.log_dir / 'slurmctld.log'}",
            f"SlurmdLogFile={self.log_dir}/slurmd-%n.log",
            f"SlurmctldDebug={self.debug}",
            f"SlurmdDebug={self.debug}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            *self._accounting_lines(),
            "SwitchType=switch/none",
            "MpiDefault=none",
            "ReturnToService=2",
            "SlurmdParameters=config_overrides",
            "MailProg=/bin/true",
        ]
        if not any(_key(line) == "schedulerparameters" for line in kept):
            # batch jobs start ~1 s after submit instead of ~3 s (timing only, not placement)
            head.append("SchedulerParameters=batch_sched_delay=0")
        text = "# written by tests/integration/slurm/harness.py\n" + "\n".join([*head, *kept, *node_lines]) + "\n"
        self.conf_path.write_text(text)
        topo = wd / "topology.conf"
        if self.topology is not None:
            topo.write_text(self.topology)
        elif topo.exists():
            topo.unlink()
        for name, text in self.files.items():
            if "/" in name or name in ("slurm.conf", "topology.conf", "gres.conf", "slurm.key"):
                raise SlurmHarnessError(f"files: {name!r} is not a plain extra config file name")
            (wd / name).write_text(text)
        gres = wd / "gres.conf"
        if self.gres is not None:
            gres.write_text(self.gres)
        elif gres.exists():
            gres.unlink()
        if self.gpu_devices:
            # fake GPU device files: symlinks to /dev/null (a character device, so slurmd accepts them)
            dev = self._device_dir()
            dev.mkdir(exist_ok=True)
            for i in range(self.gpu_devices):
                p = dev / f"nvidia{i}"
                if not p.is_symlink():
                    p.symlink_to("/dev/null")
        for node in self.nodes:
            (self._spool() / node).mkdir(parents=True, exist_ok=True)
        if self.jwt and not self.jwt_key_path.exists():
            self.jwt_key_path.touch(0o600)
            self.jwt_key_path.write_bytes(secrets.token_bytes(32))
        if self.slurm_user != "root":
            # slurmctld runs as SlurmUser: its state, logs, pid file and the JWT key are its own
            for path in (wd, wd / "state", self.log_dir, *([self.jwt_key_path] if self.jwt else [])):
                shutil.chown(path, self.slurm_user, self.slurm_user)
            if self.auth == "munge":
                self._munge_socket().parent.chmod(0o755)

    @property
    def jwt_key_path(self) -> Path:
        """The HS256 key slurmctld checks JWTs with (the chart's ``jwtKeyRef`` Secret)."""
        return self.workdir / "jwt_hs256.key"

    def _accounting_lines(self) -> list[str]:
        if self.accounting is None:
            return ["AccountingStorageType=accounting_storage/none"]
        if not self.accounting.dbd_port:
            self.accounting.dbd_port = free_ports(1)[0]
        return [
            "AccountingStorageType=accounting_storage/slurmdbd",
            "AccountingStorageHost=localhost",
            f"AccountingStoragePort={self.accounting.dbd_port}",
            # the munge socket for slurmdbd connections (AuthInfo covers only slurmctld/slurmd)
            *([f"AccountingStoragePass={self._munge_socket()}"] if self.auth == "munge" else []),
        ]

    def _write_slurm_key(self) -> None:
        """auth/slurm reads ``slurm.key`` next to slurm.conf (slurmdbd: next to slurmdbd.conf, the same dir)."""
        key = self.workdir / "slurm.key"
        if not key.exists():
            key.touch(0o600)
            key.write_bytes(secrets.token_bytes(1024))

    def dbd_auth_lines(self) -> list[str]:
        """The auth keys of slurmdbd.conf that match this cluster's slurm.conf."""
        if self.auth == "munge":
            return ["AuthType=auth/munge", f"AuthInfo=socket={self._munge_socket()}"]
        return ["AuthType=auth/slurm"]

    @property
    def device_path(self) -> str:
        """``device_path`` for slurm_conf.render_gres_conf pointing at the fake GPU devices."""
        return str(self._device_dir() / "nvidia")

    def _short_dir(self) -> Path:
        """A directory with a short path, outside the work dir, for what holds unix sockets (munged's,
        slurmstepd's in the spool): their paths are limited to 107 bytes, and a work dir under a
        pytest-xdist worker's base temp dir is long."""
        if self._sockdir is None:
            self._sockdir = Path(tempfile.mkdtemp(prefix="gf-slurm-", dir="/tmp"))
        return self._sockdir

    def _spool(self) -> Path:
        return self._short_dir() / "spool"

    def _munge_socket(self) -> Path:
        return self._short_dir() / "munge.sock"

    # ------------------------------------------------------------------ processes

    def _spawn(self, key: str, argv: Sequence[str], env: dict[str, str] | None = None) -> Daemon:
        proc = Daemon(argv, self.log_dir / f"{key}.out", env=self.env if env is None else env, cwd=self.workdir)
        self._procs[key] = proc
        return proc

    def _start_munge(self) -> None:
        sock = self._munge_socket()
        key = self._sockdir / "munge.key"
        subprocess.run(
            ["dd", "if=/dev/urandom", f"of={key}", "bs=1024", "count=1"],
            check=True,
            capture_output=True,
        )
        key.chmod(0o600)
        self._spawn(
            "munged",
            [
                shutil.which("munged") or "munged",
                "-F",
                "-f",
                f"--socket={sock}",
                f"--key-file={key}",
                f"--pid-file={self._sockdir / 'munged.pid'}",
                f"--log-file={self.log_dir / 'munged.log'}",
                f"--seed-file={self._sockdir / 'munged.seed'}",
                "--num-threads=4",
            ],
        )
        self._wait(sock.exists, 10, "munged socket", "munged")

    def _wait(self, cond, timeout: float, what: str, proc_key: str | None = None) -> None:
        def probe() -> bool:
            if cond():
                return True
            if proc_key and self._procs[proc_key].poll() is not None:
                raise SlurmHarnessError(
                    f"{proc_key} exited ({self._procs[proc_key].returncode}) waiting for {what}:\n{self.tail(proc_key)}"
                )
            return False

        wait_for(probe, timeout, what, every=0.1, detail=lambda: self.tail("slurmctld"), error=SlurmHarnessError)

    def tail(self, key: str, lines: int = 30) -> str:
        texts = []
        for p in (self.log_dir / f"{key}.out", self.log_dir / f"{key}.log"):
            if p.exists():
                texts.append("\n".join(p.read_text(errors="replace").splitlines()[-lines:]))
        return "\n".join(texts)

    def start(self, timeout: float = 60) -> SlurmCluster:
        t0 = time.monotonic()
        try:
            check_version()
        except SlurmBuildError as e:
            raise SlurmHarnessError(str(e)) from None
        self.write_config()
        if self.auth == "munge":
            self._start_munge()
        if self.accounting is not None:
            self.accounting.start(self, timeout)
            self.timings["slurmdbd"] = time.monotonic() - t0
        self._spawn("slurmctld", [slurm_tool("slurmctld"), "-D", "-i"])
        self._wait(
            lambda: self._run(["scontrol", "ping"], check=False).returncode == 0, timeout, "slurmctld", "slurmctld"
        )
        self.timings["slurmctld"] = time.monotonic() - t0
        for node in self.nodes:
            self.start_slurmd(node)
        self.wait_idle(self.nodes, timeout)
        self.timings["start"] = time.monotonic() - t0
        return self

    def start_slurmd(self, node: str) -> None:
        """Start the slurmd of one node of slurm.conf (also later, for a node left out of ``nodes``)."""
        if node not in self.all_nodes:
            raise SlurmHarnessError(f"{node} is not in any NodeName line")
        (self._spool() / node).mkdir(parents=True, exist_ok=True)
        self._spawn(f"slurmd-{node}", [slurm_tool("slurmd"), "-D", "-N", node])

    def start_slurmrestd(self, port: int | None = None, timeout: float = 30) -> str:
        """Run the build's slurmrestd as the Slinky RestApi pod runs it: user ``nobody``, its own auth to
        slurmctld is the caller's JWT (``SLURM_JWT=daemon``), only the slurmctld plugin (no accounting).
        Returns the base URL. Needs ``jwt=True``; the build and slurm.conf must be reachable by nobody."""
        if not self.jwt:
            raise SlurmHarnessError("slurmrestd needs jwt=True (AuthAltTypes=auth/jwt)")
        self.restd_port = port or free_ports(1)[0]
        env = self.env | dict(SLURM_JWT="daemon", SLURMRESTD_SECURITY="disable_unshare_files,disable_unshare_sysv")
        ids = [str(pwd.getpwnam("nobody").pw_uid), str(grp.getgrnam("nogroup").gr_gid)]  # it takes numbers only
        argv = [slurm_tool("slurmrestd"), "-u", ids[0], "-g", ids[1], "-s", "openapi/slurmctld"]
        self._spawn("slurmrestd", [*argv, f"127.0.0.1:{self.restd_port}"], env=env)

        def listening() -> bool:
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", self.restd_port)) == 0

        self._wait(listening, timeout, "slurmrestd to listen", "slurmrestd")
        return f"http://127.0.0.1:{self.restd_port}"

    def token(self, username: str = "slurm", lifespan: int = 600) -> str:
        """A JWT from ``scontrol token`` (as root, the one user allowed to name another user)."""
        out = self.scontrol("token", f"username={username}", f"lifespan={lifespan}").strip()
        if not out.startswith("SLURM_JWT="):
            raise SlurmHarnessError(f"scontrol token said {out!r}")
        return out.split("=", 1)[1]

    def wait_idle(self, nodes: Iterable[str], timeout: float = 60) -> None:
        want = set(nodes)

        def idle() -> bool:
            states = self.node_states()
            return all(states.get(n) == "idle" for n in want)

        try:
            self._wait(idle, timeout, f"nodes {compress(want)} idle")
        except SlurmHarnessError as e:
            raise SlurmHarnessError(f"{e}\nnode states: {self.node_states()}") from None

    def node_states(self) -> dict[str, str]:
        r = self._run(["sinfo", "-h", "-N", "-o", "%N %T"], check=False)
        out = {}
        for line in r.stdout.splitlines():
            parts = line.split()
            if len(parts) == 2:
                out[parts[0]] = parts[1]
        return out

    def stop(self) -> None:
        if self._procs.get("slurmctld") is not None and self._procs["slurmctld"].poll() is None:
            with contextlib.suppress(Exception):
                t0 = time.monotonic()
                self._run(["scancel", "--quiet", "--user=root"], check=False, timeout=10)
                # let the steps end so slurmd exits promptly on SIGTERM
                end = time.monotonic() + 10
                while time.monotonic() < end and self._run(["squeue", "-h", "-o", "%i"], check=False).stdout.strip():
                    time.sleep(0.2)
                self.timings["stop-drain"] = time.monotonic() - t0
        order = ["slurmrestd"] + [k for k in self._procs if k.startswith("slurmd-")] + ["slurmctld", "munged"]
        for key in order:
            if key in self._procs:
                self._procs[key].terminate(group=False)
        deadline = time.monotonic() + 5
        for key in order:
            proc = self._procs.get(key)
            if proc is None:
                continue
            t = time.monotonic()
            if proc.reap(max(0.1, deadline - time.monotonic())):
                self.timings[f"killed-{key}"] = 1
            else:
                self.timings[f"stop-{key}"] = time.monotonic() - t
            if key == "slurmctld" and self.accounting is not None:
                self.accounting.stop()
        if self.accounting is not None:
            self.accounting.stop()  # also when slurmctld never started
        self._kill_leftovers()
        self._procs.clear()
        if self._sockdir is not None:
            shutil.rmtree(self._sockdir, ignore_errors=True)
            self._sockdir = None

    def leftover_pids(self) -> list[int]:
        """Live processes (not this one) whose environment carries this cluster's marker."""
        marker = f"GPUFLEET_SLURM_HARNESS={self.workdir}".encode()
        me = os.getpid()
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == me:
                continue
            try:
                env = (entry / "environ").read_bytes()
                if marker in env.split(b"\0") and "\nState:\tZ" not in (entry / "status").read_text():
                    found.append(int(entry.name))
            except OSError:
                continue
        return found

    def _kill_leftovers(self) -> None:
        """Kill slurmstepd/job processes of *this* cluster: their environment holds our SLURM_CONF."""
        for _i in range(3):
            found = self.leftover_pids()
            if not found:
                return
            for pid in found:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.2)

    def __enter__(self) -> SlurmCluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()

    # ------------------------------------------------------------------ commands

    def _run(self, argv: Sequence[str], check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
        r = subprocess.run(list(argv), capture_output=True, text=True, env=self.env, timeout=timeout, check=False)
        if check and r.returncode != 0:
            raise SlurmHarnessError(f"{' '.join(argv)} failed ({r.returncode}): {r.stderr.strip()}")
        return r

    def scontrol(self, *args: str) -> str:
        return self._run(["scontrol", *args]).stdout

    def sinfo(self, *args: str) -> str:
        return self._run(["sinfo", *args]).stdout

    def squeue(self, *args: str) -> str:
        return self._run(["squeue", *args]).stdout

    def sbatch(self, *args: str, wrap: str = "sleep 30") -> str:
        """Submit; returns the job id. Output goes to <workdir>/jobs/."""
        out = self._run(
            [
                "sbatch",
                "--parsable",
                f"--chdir={self.workdir / 'jobs'}",
                f"--output={self.workdir / 'jobs'}/%j.out",
                *args,
                "--wrap",
                wrap,
            ]
        ).stdout.strip()
        return out.split(";")[0]

    def scancel(self, *job_ids: str) -> None:
        self._run(["scancel", *job_ids])

    def job(self, job_id: str) -> Job:
        text = self.scontrol("show", "job", "-o", job_id)
        fields = dict(re.findall(r"(\w+)=(\S*)", text))
        nodes = fields.get("NodeList", "")
        return Job(
            job_id,
            fields.get("JobState", ""),
            [] if nodes in ("", "(null)") else expand(nodes),
            fields.get("Reason", ""),
        )

    def wait_job(self, job_id: str, states: Iterable[str] = ("RUNNING",), timeout: float = 30) -> Job:
        want = set(states)
        result: list[Job] = []

        def ok() -> bool:
            j = self.job(job_id)
            result[:] = [j]
            return j.state in want

        try:
            self._wait(ok, timeout, f"job {job_id} in {sorted(want)}")
        except SlurmHarnessError:
            raise SlurmHarnessError(f"job {job_id} is {result[-1] if result else '?'}, wanted {sorted(want)}") from None
        return result[-1]

    def wait_evaluated(self, job_id: str, timeout: float = 20) -> Job:
        """Wait until the scheduler has looked at a job: it runs, or it pends with a reason."""
        result: list[Job] = []

        def seen() -> bool:
            j = self.job(job_id)
            result[:] = [j]
            return j.state != "PENDING" or j.reason not in ("", "None")

        self._wait(seen, timeout, f"scheduler to evaluate job {job_id}")
        return result[-1]

    # ------------------------------------------------------------------ logs

    def ctld_log(self) -> str:
        p = self.log_dir / "slurmctld.log"
        return p.read_text(errors="replace") if p.exists() else ""

    def ctld_problems(self, allow: Iterable[str] = ()) -> list[str]:
        """slurmctld log lines with error/fatal/warning, minus fresh-state noise and ``allow`` regexes."""
        extra = [re.compile(a) for a in allow]
        out = []
        for line in self.ctld_log().splitlines():
            if not PROBLEM.search(line):
                continue
            if any(p.search(line) for p in (*FRESH_STATE_NOISE, *ENV_NOISE, *extra)):
                continue
            out.append(line)
        return out

    def slurmd_log(self, node: str) -> str:
        p = self.log_dir / f"slurmd-{node}.log"
        return p.read_text(errors="replace") if p.exists() else ""


# ---------------------------------------------------------------------- parsing helpers for tests


def parse_show_topology(text: str) -> dict[str, dict[str, object]]:
    """``scontrol show topology`` -> {switch: {level, nodes, switches}} (hostlists expanded)."""
    out = {}
    for line in text.splitlines():
        fields = dict(re.findall(r"(\w+)=(\S+)", line))
        if "SwitchName" not in fields:
            continue
        out[fields["SwitchName"]] = {
            "level": int(fields["Level"]),
            "nodes": expand(fields.get("Nodes", "")),
            "switches": expand(fields.get("Switches", "")),
        }
    return out


def leaf_of(nodes: list[str], leaves: dict[str, list[str]]) -> str | None:
    """The one leaf holding all ``nodes``, else None."""
    for name, members in leaves.items():
        if set(nodes) <= set(members):
            return name
    return None
