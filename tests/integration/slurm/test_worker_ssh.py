"""Worker SSH as rendered: a directory user reaches a worker only while a job of theirs runs there.

Real slapd (alice, with an SSH key made here, in tenant llm-pretrain's login group), real sssd with
the rendered sssd.conf, the real slurmctld/slurmd of the harness with the rendered ``PrologFlags``
(two emulated nodes n1 and n2), and per node a real sshd with the rendered ``extraSshdConfig``
(keys from ``sss_ssh_authorizedkeys``) and the account stack of the slurmd image (pam_sss, then
pam_slurm_adopt with ``action_adopt_failure=deny``):

* no job: alice is refused on n1;
* a job of alice's running on n1: she is let in on n1, and her session is adopted into the job's
  extern step (the step exists only with ``PrologFlags=Contain``); she is still refused on n2;
* the same with the rendered ``PrologFlags`` removed: refused on n1 despite the job (no extern step).

This machine (gVisor) offers no cgroup hierarchy slurmd could use, so the harness keeps
``ProctrackType=proctrack/linuxproc`` and ``TaskPlugin=task/none``. pam_slurm_adopt's adoption call
succeeds (slurmstepd accepts the pid into the extern step; the module logs "adopted into job"), but
linuxproc tracks a step's processes by parentage, so the session does not show in ``scontrol
listpids`` and is not confined the way proctrack/cgroup would move it into the job's cgroup: that
is the one step not shown (the rendered ``ProctrackType=proctrack/cgroup`` is asserted, not run).
pam_slurm_adopt logs through syslog; with no logger on /dev/log the test listens there itself.
"""

from __future__ import annotations

import secrets
import subprocess
import tempfile
from pathlib import Path

import pytest
from directory import GROUPS, Slapd, SystemSssd, User, render_identity, require_identity_tools, sssd_files
from gpufleet_testlib.slurm_build import usable_by_every_user
from gpufleet_testlib.slurm_conf import SlurmCluster as ConfCluster
from gpufleet_testlib.slurm_conf import SlurmNode, SlurmPartition, render_slurm_conf
from harness import SlurmCluster, free_ports, require_slurm
from polling import wait_for
from test_slurm_identity import _sbatch
from worker_ssh import Syslog, WorkerSshd, pam_slurm_adopt_module

from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants.accounting import conf_lines

pytestmark = pytest.mark.slurm


def _require_ssh() -> None:
    from lead_conftest import lead_conftest

    lead = lead_conftest()
    lead.require_tool("sshd", "Debian package openssh-server")
    if pam_slurm_adopt_module() is None:
        lead.require_tool("pam_slurm_adopt.so", "tools/build-slurm.sh (contribs/pam_slurm_adopt of the Slurm build)")


def _conf(values: dict, contain: bool) -> str:
    adopt = {k: v for k, v in values["controller"]["extraConfMap"].items() if k in ("PrologFlags", "ProctrackType")}
    if not contain:
        adopt.pop("PrologFlags", None)
    base = render_slurm_conf(
        ConfCluster(
            name="ssh",
            control_host="slurmctld",
            topology_plugin=None,
            gres_types=(),
            nodes=[SlurmNode("n[1-2]", cpus=2, memory_mb=1000)],
            partitions=[SlurmPartition("batch", ["n1", "n2"], default=True, options={"MaxTime": "INFINITE"})],
        )
    )
    return base + "\n".join(conf_lines(adopt)) + "\n"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    require_slurm()
    require_identity_tools()
    _require_ssh()
    tmp = tmp_path_factory.mktemp("worker-ssh")
    key = tmp / "alice_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True, timeout=30)
    users = [User("alice", 20001, ["llm-pretrain"], key.with_suffix(".pub").read_text().strip())]
    groups = [g if g.name != "llm-pretrain" else type(g)(g.name, g.gid, ["alice"]) for g in GROUPS]
    password = secrets.token_urlsafe(18)
    slapd = Slapd(tmp / "slapd", users, groups, reader_password=password)
    node = None
    log = Syslog()
    reachable = usable_by_every_user()  # alice's sbatch must reach the Slurm build (under /root)
    reachable.__enter__()
    try:
        slapd.start()
        tenant = render_identity(tmp / "render", slapd)["llm-pretrain"]
        node = SystemSssd(tmp / "sssd", sssd_files(tenant, password))
        node.start()
        wait_for(
            lambda: subprocess.run(["getent", "passwd", "alice"], capture_output=True).returncode == 0, 30, "alice"
        )
        yield tenant, key, log
    finally:
        reachable.__exit__(None, None, None)
        log.stop()
        if node is not None:
            node.stop()
        slapd.stop()


def _cluster_and_sshds(values: dict, contain: bool):
    work = Path(tempfile.mkdtemp(prefix="gf-ssh-", dir="/tmp"))  # reachable by alice's uid
    work.chmod(0o755)
    cluster = SlurmCluster(work / "cluster", _conf(values, contain), keep=("PrologFlags",))
    cluster._munge_socket().parent.chmod(0o755)
    extra = values["nodesets"]["pretrain"]["ssh"]["extraSshdConfig"]
    ports = free_ports(2)
    names = ("n1", "n2")
    sshds = {n: WorkerSshd(work / f"sshd-{n}", n, p, extra, cluster.env) for n, p in zip(names, ports, strict=True)}
    return cluster, sshds


@pytest.mark.parametrize("contain", [True, False], ids=["rendered", "without-PrologFlags"])
def test_ssh_to_a_worker_only_with_a_job_there(world, contain: bool) -> None:
    tenant, key, log = world
    values = tenant["values"]
    conf = values["controller"]["extraConfMap"]
    assert conf["PrologFlags"] == ["Contain"] and conf["ProctrackType"] == "proctrack/cgroup"
    assert values["nodesets"]["pretrain"]["ssh"]["enabled"] is True
    cluster, sshds = _cluster_and_sshds(values, contain)
    try:
        cluster.start()
        (cluster.workdir / "jobs").chmod(0o1777)
        assert ("PrologFlags=Contain" in cluster.conf_path.read_text()) == contain
        for s in sshds.values():
            s.start()
        n1, n2 = sshds["n1"], sshds["n2"]
        before = n1.ssh("alice", key, "echo in")
        assert before.returncode != 0 and "in" not in before.stdout, (before, log.text()[-3000:])

        sub = _sbatch(cluster, "alice", "-w", "n1", wrap="sleep 300")
        assert sub.returncode == 0, sub.stderr
        job = sub.stdout.strip().split(";")[0]
        cluster.wait_job(job, ("RUNNING",), timeout=60)
        on_n1 = n1.ssh("alice", key, "id -un; echo in")
        on_n2 = n2.ssh("alice", key, "echo in")
        assert on_n2.returncode != 0 and "in" not in on_n2.stdout, (on_n2, n2.log()[-2000:])
        if contain:
            assert on_n1.returncode == 0 and on_n1.stdout.split() == ["alice", "in"], (on_n1, n1.log()[-3000:])
            if log.capturing:  # pam_slurm_adopt's own report: the session joined the job's extern step
                text = log.text()
                assert f"adopted into job {job}" in text and f"StepId={job}.extern" in text, text[-4000:]
        else:
            assert on_n1.returncode != 0 and "in" not in on_n1.stdout, (on_n1, log.text()[-3000:])
            if log.capturing:  # it looked for the extern step, which is not there
                assert f"StepId={job}.extern" in log.text()
        cluster.scancel(job)
    finally:
        for s in sshds.values():
            s.stop()
        cluster.stop()
