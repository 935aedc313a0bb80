"""Slurm accounting as the renderer produces it, enforced by the real slurmctld + slurmdbd 26.05.

The inventory (the sample fleet, tenant ``llm-pretrain`` with accounts and QOS written for this
test) is rendered by the real render pipeline into a temp tree. From that tree, not from text
written here, the test takes:

* the controller ``extraConfMap`` of the tenant's slurm values (fair share, AccountingStorageEnforce,
  AccountingStorageTRES) as slurm.conf lines, the way the Slinky chart writes them;
* the ``myCnf`` of the MariaDB CR (passed to Debian's mariadbd);
* the ``sacctmgr`` script of the accounts ConfigMap (run as is, twice: it must be idempotent).

The harness runs mariadbd + slurmdbd + slurmctld + two slurmd on 127.0.0.1 (accounting_db.py).
The cluster's nodes and partition are the harness's own (the emulated host cannot be 32 H100s).
"""

from __future__ import annotations

import subprocess

import pytest
import yaml
from accounting_db import AccountingDb, require_accounting
from gpufleet_testlib.slurm_conf import (
    SlurmCluster,
    SlurmNode,
    SlurmPartition,
    render_slurm_conf,
)
from polling import wait_for

from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants.accounting import conf_lines

pytestmark = pytest.mark.slurm

TENANT = "llm-pretrain"
ACCOUNTING = {
    "fairshare": {"weights": {"fairshare": 20000, "age": 500, "qos": 3000}, "decay_half_life": "2-0"},
    "default_account": "pretrain",
    "qos": [
        {"name": "normal", "priority": 10, "max_wall": "1-00:00:00"},
        {"name": "small", "priority": 50, "max_wall": "00:10:00", "max_tres_per_job": {"node": 1, "cpu": 2}},
        {"name": "strict", "max_wall": "00:05:00", "deny_on_limit": True},
    ],
    "accounts": [
        {
            "name": "pretrain",
            "fairshare": 80,
            "qos": ["normal", "small", "strict"],
            "default_qos": "normal",
            "users": ["root"],
        },
        {"name": "evals", "fairshare": 20, "qos": ["normal"], "default_qos": "normal"},
    ],
}


def _fixtures():
    import render_fixtures  # tests/lib, on sys.path through tests/conftest.py

    return render_fixtures


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict:
    fx = _fixtures()
    root = tmp_path_factory.mktemp("acct-render")
    inv = fx.make_inventory(root)

    def set_accounting(d):
        for t in d["gpufleet_tenants"]:
            if t["name"] == TENANT:
                t.setdefault("slurm", {})["accounting"] = ACCOUNTING

    fx.edit_vars(inv, "tenants.yml", set_accounting)
    out = root / "gitops"
    fx.render_to(inv, out)
    base = out / "clusters" / "gpu-east" / "tenants" / TENANT
    values = yaml.safe_load((base / "slurm" / "values.yaml").read_text())
    cm = next(
        o
        for o in yaml.safe_load_all((base / "accounting" / "accounts.yaml").read_text())
        if o and o["kind"] == "ConfigMap"
    )
    db = next(o for o in yaml.safe_load_all((base / "accounting-db" / "mariadb.yaml").read_text()) if o)
    return {"values": values, "script": cm["data"]["accounts.sh"], "my_cnf": db["spec"]["myCnf"]}


def _conf(rendered: dict) -> str:
    extra = dict(rendered["values"]["controller"]["extraConfMap"])
    extra.pop("TopologyPlugin", None)  # the harness nodes are not on the rendered fabric
    base = render_slurm_conf(
        SlurmCluster(
            name=rendered["values"]["clusterName"],
            control_host="slurmctld",
            topology_plugin=None,
            gres_types=(),
            nodes=[SlurmNode("n[1-2]", cpus=4, memory_mb=1000)],
            partitions=[SlurmPartition("pretrain", ["n1", "n2"], default=True, options={"MaxTime": "INFINITE"})],
        )
    )
    have = {line.split("=", 1)[0].lower() for line in base.splitlines() if "=" in line}
    return base + "\n".join(line for line in conf_lines(extra) if line.split("=", 1)[0].lower() not in have) + "\n"


def _sbatch(c, *args: str, wrap: str = "sleep 60") -> subprocess.CompletedProcess:
    return subprocess.run(
        ["sbatch", "--parsable", f"--chdir={c.workdir / 'jobs'}", f"--output={c.workdir / 'jobs'}/%j.out", *args,
         "--wrap", wrap],
        capture_output=True, text=True, env=c.env, timeout=30, check=False,
    )  # fmt: skip


def _run_script(c, script: str) -> subprocess.CompletedProcess:
    path = c.workdir / "accounts.sh"
    path.write_text(script)
    return subprocess.run(["sh", str(path)], capture_output=True, text=True, env=c.env, timeout=120, check=False)


def test_accounting_enforced_by_real_slurm(slurm_cluster, rendered, tmp_path):
    require_accounting()
    conf = _conf(rendered)
    assert "PriorityType=priority/multifactor" in conf
    assert "AccountingStorageEnforce=associations,limits,qos" in conf
    db = AccountingDb(tmp_path / "db", my_cnf=rendered["my_cnf"])
    c = slurm_cluster(conf, accounting=db, cluster_name=rendered["values"]["clusterName"])

    # the rendered accounts/QOS, applied twice: the second run changes nothing and succeeds
    first = _run_script(c, rendered["script"])
    assert first.returncode == 0, first.stderr + first.stdout
    second = _run_script(c, rendered["script"])
    assert second.returncode == 0, second.stderr + second.stdout

    cluster = rendered["values"]["clusterName"]
    assoc = c._run(
        ["sacctmgr", "-n", "-P", "show", "assoc", f"cluster={cluster}", "format=Account,User,Share,QOS,DefaultQOS"]
    ).stdout
    rows = {tuple(line.split("|")[:2]): line.split("|") for line in assoc.splitlines()}
    assert rows[("pretrain", "")][2] == "80", assoc
    assert rows[("evals", "")][2] == "20", assoc
    assert sorted(rows[("pretrain", "root")][3].split(",")) == ["normal", "small", "strict"], assoc
    assert rows[("pretrain", "root")][4] == "normal", assoc
    assert ("evals", "root") not in rows
    qos = c._run(["sacctmgr", "-n", "-P", "show", "qos", "format=Name,Priority,MaxWall,MaxTRES,Flags"]).stdout
    qrows = {line.split("|")[0]: line.split("|") for line in qos.splitlines()}
    assert qrows["small"][1:4] == ["50", "00:10:00", "cpu=2,node=1"], qos
    assert "DenyOnLimit" in qrows["strict"][4], qos
    config = c.scontrol("show", "config")
    assert "priority/multifactor" in config
    assert "PriorityWeightFairShare = 20000" in config, config

    # a job under the tenant account runs, ends and is in sacct under that account and QOS
    ok = _sbatch(c, "-A", "pretrain", "--qos=normal", "-N", "1", wrap="true")
    assert ok.returncode == 0, ok.stderr
    job = ok.stdout.strip().split(";")[0]

    def in_sacct():
        out = c._run(["sacct", "-n", "-X", "-P", "-j", job, "-o", "JobID,Account,QOS,State,QOSRAW"], check=False).stdout
        return out.strip() if "COMPLETED" in out and "Unknown" not in out else None

    assert wait_for(in_sacct, 30, f"job {job} COMPLETED in sacct").split("|")[:4] == [
        job,
        "pretrain",
        "normal",
        "COMPLETED",
    ]

    # QOS limits: over MaxTRESPerJob / MaxWall the job waits with the QOS reason
    wide = _sbatch(c, "-A", "pretrain", "--qos=small", "-N", "2")
    assert wide.returncode == 0, wide.stderr
    j = c.wait_evaluated(wide.stdout.strip())
    assert (j.state, j.reason) == ("PENDING", "QOSMaxNodePerJobLimit"), j
    long = _sbatch(c, "-A", "pretrain", "--qos=small", "-N", "1", "--time=00:20:00")
    assert long.returncode == 0, long.stderr
    j = c.wait_evaluated(long.stdout.strip())
    assert (j.state, j.reason) == ("PENDING", "QOSMaxWallDurationPerJobLimit"), j
    # DenyOnLimit: refused at submission
    denied = _sbatch(c, "-A", "pretrain", "--qos=strict", "--time=00:10:00")
    assert denied.returncode != 0 and "QOS" in denied.stderr, denied
    # a QOS the association does not have, an account root is not associated with, an unknown one
    for args in (["-A", "pretrain", "--qos=debug"], ["-A", "evals"], ["-A", "nosuch"]):
        r = _sbatch(c, *args)
        assert r.returncode != 0, (args, r.stdout)
        assert "Invalid" in r.stderr, (args, r.stderr)

    # fair share: the accounts' shares as the real slurmctld computes them
    share = c._run(["sshare", "-n", "-P", "-o", "Account,User,RawShares", "-A", "pretrain,evals"]).stdout
    raw = {tuple(line.split("|")[:2]): line.split("|")[2] for line in share.splitlines()}
    assert raw[("pretrain", "")] == "80" and raw[("evals", "")] == "20", share
    problems = c.ctld_problems(allow=[r"error: Invalid qos \(debug\)"])  # the refused submission above
    assert problems == [], problems
    c.stop()
    assert c.leftover_pids() == [] and db.pids() == []
