"""The rollout's health gates against the real Slurm 26.05 daemons: the hook Jobs between the waves
(render/tenants/upgrade_gates.py) pass only while slurmdbd / slurmctld answer, and fail with the reason when
they do not, which fails the Argo CD sync before the next wave.

Each gate's command is taken from the rendered sample tree (the tenant's slurm chart values,
``extraObjects``) and run by ``sh`` with the Slurm build's ``sacctmgr``/``scontrol`` against the harness's
mariadbd + slurmdbd + slurmctld (``auth/slurm``, as Slinky runs). Only what the harness owns is replaced:
the daemons' addresses (its 127.0.0.1 ports instead of the Services), the key path, the gate's scratch
directory, and the number of tries (3 instead of 60, with a ``sleep`` that returns at once).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml
from accounting_db import AccountingDb, require_accounting

from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants import rollout, slurm_ready, upgrade_gates

VALUES = (
    Path(__file__).resolve().parents[3]
    / "gitops"
    / "clusters"
    / "gpu-east"
    / "tenants"
    / "research"
    / "slurm"
    / "values.yaml"
)
CONF = "NodeName=n1 CPUs=2 RealMemory=1000 State=UNKNOWN\nPartitionName=batch Nodes=n1 Default=YES MaxTime=INFINITE\n"


def _gates() -> dict[str, dict]:
    objs = yaml.safe_load(VALUES.read_text())["extraObjects"]
    return {o["metadata"]["name"]: o for o in objs if o["kind"] == "Job"}


def _run(c, job: dict, tmp: Path) -> subprocess.CompletedProcess[str]:
    script = job["spec"]["template"]["spec"]["containers"][0]["command"][2]
    conf = c.conf_path.read_text()
    ctld_port = re.search(r"^SlurmctldPort=(\d+)$", conf, re.M)[1]
    dbd_port = re.search(r"^AccountingStoragePort=(\d+)$", conf, re.M)[1]
    for old, new in (
        ("SlurmctldHost=slurm-controller-0(slurm-controller.slurm)", "SlurmctldHost=localhost"),
        ("SlurmctldPort=6817", f"SlurmctldPort={ctld_port}"),
        ("AccountingStorageHost=slurm-accounting.slurm", "AccountingStorageHost=localhost"),
        ("AccountingStoragePort=6819", f"AccountingStoragePort={dbd_port}"),
        (upgrade_gates.KEY_PATH, str(c.workdir / "slurm.key")),
        (upgrade_gates.GATE_DIR, str(tmp / "gate")),
        (f"-ge {slurm_ready.WAIT_TRIES} ]", "-ge 3 ]"),
    ):
        assert old in script, old
        script = script.replace(old, new)
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "sleep").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "sleep").chmod(0o755)
    env = {**c.env, "PATH": f"{bin_dir}:{c.env['PATH']}"}
    env.pop("SLURM_CONF", None)
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, env=env, timeout=120, check=False)


def test_gates_sit_between_the_waves() -> None:
    gates = _gates()
    waves = {name: int(job["metadata"]["annotations"][upgrade_gates.SYNC_WAVE]) for name, job in gates.items()}
    w = {k: int(v) for k, v in rollout.WAVES.items()}
    assert w["accounting"] < waves["slurm-accounting-ready"] < w["controller"]
    assert w["controller"] < waves["slurm-controller-ready"] < w["nodesets"]
    for job in gates.values():
        assert job["metadata"]["annotations"][upgrade_gates.HOOK] == "Sync"


def test_gates_follow_the_real_daemons(slurm_cluster, tmp_path: Path) -> None:
    require_accounting()
    db = AccountingDb(tmp_path / "db")
    c = slurm_cluster(CONF, accounting=db, auth="slurm", cluster_name="research")
    gates = _gates()
    acct, ctld = gates["slurm-accounting-ready"], gates["slurm-controller-ready"]

    up = _run(c, acct, tmp_path)
    assert up.returncode == 0, up.stderr + up.stdout
    assert _run(c, ctld, tmp_path).returncode == 0

    db._procs["slurmdbd"].stop(grace=30, group=False)  # the accounting is down (a failed conversion, a crash loop)
    down = _run(c, acct, tmp_path)
    assert down.returncode == 1, down.stdout
    assert "gpufleet: slurmdbd (sacctmgr ping) does not answer after 3 tries (sacctmgr ping)" in down.stderr
    assert _run(c, ctld, tmp_path).returncode == 0  # the controller's gate does not depend on it

    # an upgrade to the next release: the gate rendered for it does not pass while the running (old)
    # slurmctld answers pings, since slurmctld reports its own version (scontrol show config)
    running = re.search(r"^SLURM_VERSION\s*=\s*(\d+)\.(\d+)", c.scontrol("show", "config"), re.M)
    assert running, "no SLURM_VERSION in scontrol show config"
    nxt = f"{int(running[1]) + 1}.{running[2]}"
    (later,) = [j for j in upgrade_gates.gates(_tenant(), rollout.WAVES, f"login:{nxt}-ubuntu26.04")
                if j["metadata"]["name"] == "slurm-controller-ready"]  # fmt: skip
    old = _run(c, later, tmp_path)
    assert old.returncode == 1, old.stdout
    assert f"gpufleet: slurmctld {nxt} (scontrol ping, SLURM_VERSION) does not answer after 3 tries" in old.stderr

    c._procs["slurmctld"].stop(grace=30, group=False)
    down = _run(c, ctld, tmp_path)
    assert down.returncode == 1, down.stdout
    assert "gpufleet: slurmctld 26.05 (scontrol ping, SLURM_VERSION) does not answer after 3 tries" in down.stderr


def _tenant():
    return load_fleet(VALUES.parents[6] / "inventories" / "sample").tenants["research"]
