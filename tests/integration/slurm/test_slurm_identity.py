"""Users from the directory run jobs as themselves: real slurmctld/slurmd/slurmdbd on the NSS of a real
sssd (the rendered sssd.conf) backed by a real slapd.

The sample fleet is rendered with its directory at the test's slapd (directory.py) and the
``pretrain`` pool restricted to the ``pretrain-gpu`` group (``slurm.allow_groups``). From the
rendered tree the test takes the tenant's sssd.conf, CA and mounts (as test_identity_sssd.py), the
controller ``extraConfMap`` (slurm.conf lines), the ``pretrain`` partition's configMap (with its
``AllowGroups``) and the accounts script. Then, with the system NSS answering from that sssd:

* the rendered accounts script adds alice and bob (they resolve) and reports carol (in the
  inventory, not in the directory) instead of adding her: exit 3, carol has no association;
* a job submitted as alice (her uid and groups, from the directory) runs under uid 20001 and
  ``sacct`` lists it under alice and account ``pretrain``;
* bob resolves and has an association, but is not in ``pretrain-gpu``: the partition never runs his
  job (26.05 holds it with the reason that he is not in a permitted group).

The harness owns TaskPlugin/ProctrackType (task/none, linuxproc: no cgroups in this sandbox), so the
rendered ``TaskPlugin=task/cgroup,task/affinity`` and cgroup.conf are not exercised here.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from accounting_db import AccountingDb, require_accounting
from directory import GROUPS, USERS, Slapd, SystemSssd, render_identity, require_identity_tools, sssd_files
from gpufleet_testlib.slurm_build import usable_by_every_user
from gpufleet_testlib.slurm_conf import SlurmCluster as ConfCluster
from gpufleet_testlib.slurm_conf import SlurmNode, SlurmPartition, render_slurm_conf
from harness import SlurmCluster, require_slurm
from polling import wait_for

from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants.accounting import conf_lines

pytestmark = pytest.mark.slurm


def _restrict(d):
    p = next(p for p in d["gpufleet_pools"] if p["name"] == "pretrain")
    p["slurm"]["allow_groups"] = ["pretrain-gpu"]


def _conf(values: dict) -> str:
    extra = dict(values["controller"]["extraConfMap"])
    extra.pop("TopologyPlugin", None)  # the harness nodes are not on the rendered fabric
    part = dict(values["partitions"]["pretrain"]["configMap"])
    default = part.pop("Default", "NO") == "YES"
    opts = {k: ",".join(v) if isinstance(v, list) else v for k, v in part.items()}
    base = render_slurm_conf(
        ConfCluster(
            name=values["clusterName"],
            control_host="slurmctld",
            topology_plugin=None,
            gres_types=(),
            nodes=[SlurmNode("n[1-2]", cpus=2, memory_mb=1000)],
            partitions=[SlurmPartition("pretrain", ["n1", "n2"], default=default, options=opts)],
        )
    )
    have = {line.split("=", 1)[0].lower() for line in base.splitlines() if "=" in line}
    return base + "\n".join(ln for ln in conf_lines(extra) if ln.split("=", 1)[0].lower() not in have) + "\n"


def _as_user(c: SlurmCluster, name: str, argv: list[str]) -> subprocess.CompletedProcess:
    """Run ``argv`` with the uid, gid and groups the directory gives ``name`` (through NSS: sssd)."""
    import pwd

    pw = pwd.getpwnam(name)
    groups = sorted({pw.pw_gid, *os.getgrouplist(name, pw.pw_gid)})
    env = dict(c.env, HOME=str(c.workdir / "jobs"), USER=name, LOGNAME=name)
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=30, check=False, env=env,
        user=pw.pw_uid, group=pw.pw_gid, extra_groups=groups, cwd=c.workdir / "jobs",
    )  # fmt: skip


def _sbatch(c: SlurmCluster, name: str, *args: str, wrap: str) -> subprocess.CompletedProcess:
    jobs = c.workdir / "jobs"
    return _as_user(
        c, name, ["sbatch", "--parsable", f"--chdir={jobs}", f"--output={jobs}/%j.out", *args, "--wrap", wrap]
    )


def test_directory_users_run_jobs_as_themselves(tmp_path):
    require_slurm()
    require_accounting()
    require_identity_tools()
    password = secrets.token_urlsafe(18)
    slapd = Slapd(tmp_path / "slapd", USERS, GROUPS, reader_password=password)
    node = None
    cluster = None
    # slurm.conf, the munge socket and the job directory must be reachable by the users' uids
    work = Path(tempfile.mkdtemp(prefix="gf-slurm-id-", dir="/tmp"))
    work.chmod(0o755)
    # ... and so must the Slurm build: without it their sbatch would be whatever else is on PATH
    reachable = usable_by_every_user()
    reachable.__enter__()
    try:
        slapd.start()
        tenant = render_identity(tmp_path / "render", slapd, edit_pools=_restrict)["llm-pretrain"]
        values = tenant["values"]
        assert values["partitions"]["pretrain"]["configMap"]["AllowGroups"] == ["pretrain-gpu"]
        assert values["controller"]["extraConfMap"]["TaskPlugin"] == ["task/cgroup", "task/affinity"]
        node = SystemSssd(tmp_path / "sssd", sssd_files(tenant, password))
        node.start()
        getent = ["getent", "passwd", "alice"]
        wait_for(
            lambda: subprocess.run(getent, capture_output=True, check=False).returncode == 0, 30, "alice to resolve"
        )

        conf = _conf(values)
        assert "AllowGroups=pretrain-gpu" in conf
        db = AccountingDb(tmp_path / "db")
        cluster = SlurmCluster(work / "cluster", conf, accounting=db, cluster_name=values["clusterName"])
        cluster._munge_socket().parent.chmod(0o755)
        cluster.start()
        (cluster.workdir / "jobs").chmod(0o1777)

        # the rendered accounts script: alice and bob are added, carol (not in the directory) is reported
        script = cluster.workdir / "accounts.sh"
        script.write_text(tenant["script"])
        run = subprocess.run(["sh", str(script)], capture_output=True, text=True, env=cluster.env, timeout=120,
                             check=False)  # fmt: skip
        assert run.returncode == 3, (run.returncode, run.stdout, run.stderr)
        assert "NOT added to Slurm: carol" in run.stderr, run.stderr
        assoc = cluster._run(["sacctmgr", "-n", "-P", "show", "assoc", "format=Account,User"]).stdout.split()
        assert {"pretrain|alice", "pretrain|bob"} <= set(assoc) and not any(a.endswith("|carol") for a in assoc), assoc

        # alice: runs, under her uid, accounted to her and her account
        ok = _sbatch(cluster, "alice", "-A", "pretrain", "-p", "pretrain", wrap="id -u; id -un")
        assert ok.returncode == 0, ok.stderr
        job = ok.stdout.strip().split(";")[0]

        def done():
            out = cluster._run(["sacct", "-n", "-X", "-P", "-j", job, "-o", "JobID,User,Account,State"],
                               check=False).stdout.strip()  # fmt: skip
            return out if "COMPLETED" in out else None

        assert wait_for(done, 60, f"job {job} COMPLETED").split("|") == [job, "alice", "pretrain", "COMPLETED"]
        out = (cluster.workdir / "jobs" / f"{job}.out").read_text().split()
        assert out == ["20001", "alice"], out
        assert os.stat(cluster.workdir / "jobs" / f"{job}.out").st_uid == 20001

        # bob resolves and is associated, but not in pretrain-gpu: the partition refuses him
        # (26.05 takes the job and holds it with that reason; 22.05 refused it at submission)
        refused = _sbatch(cluster, "bob", "-A", "pretrain", "-p", "pretrain", wrap="true")
        assert refused.returncode == 0, refused.stderr
        held = cluster.wait_evaluated(refused.stdout.strip())
        assert held.state == "PENDING", held
        assert "not_in_group_permitted_to_use_this_partition" in held.reason, held
        time.sleep(3)  # a few scheduler passes later it still has not run
        assert cluster.job(held.job_id).state == "PENDING"
        problems = cluster.ctld_problems(allow=[r"not permitted to use this partition", r"group"])
        assert not [p for p in problems if "error" in p.lower() and "bob" not in p and "20002" not in p], problems
    finally:
        if cluster is not None:
            cluster.stop()
        if node is not None:
            node.stop()
        slapd.stop()
        shutil.rmtree(work, ignore_errors=True)
        reachable.__exit__(None, None, None)
    assert node is not None and node.restored()
    assert cluster is not None and cluster.leftover_pids() == []
