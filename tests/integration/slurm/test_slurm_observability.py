"""The rendered Slurm prolog/epilog (DCGM job mapping) and GPU health check under a real slurmd.

The scripts are taken from the sample inventory's render (the tenant ``research``'s ``slurm``
values and ``gpufleet-health`` ConfigMap), written to files and named in the harness' slurm.conf
as ``Prolog``/``Epilog``/``HealthCheckProgram`` with the rendered ``HealthCheck*`` keys.

Two honest doubles, because this machine has no GPU:

* GPUs: the harness' fake device files (``/dev/null`` symlinks in gres.conf ``File=``), so Slurm
  allocates GPU indices and hands them to the prolog in ``SLURM_JOB_GPUS`` as it would on a GPU node;
* GPU probes: per node a directory with a fake ``nvidia-smi`` and ``dmesg`` (reporting an ECC
  error and XID 79 on the failing node, all clean on the healthy one), put first on ``PATH`` (then
  the Slurm build's commands, then the system's) by a two-line wrapper that only sets the
  environment and ``exec``s the rendered script unchanged (slurmd runs these programs with a bare
  environment, so the wrapper is also what tells the script's ``scontrol`` where this cluster's
  slurm.conf is and where its job-mapping directory is).
"""

from __future__ import annotations

import re
import time
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from gpufleet_testlib.slurm_conf import (
    SlurmCluster,
    SlurmNode,
    SlurmPartition,
    render_gres_conf,
    render_slurm_conf,
)
from harness import slurm_prefix
from polling import wait_for

from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.render.platform import monitoring
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants import health
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_fleet

pytestmark = pytest.mark.slurm

ROOT = Path(__file__).resolve().parents[3]
TENANT = "research"
BASE = f"clusters/gpu-east/tenants/{TENANT}"
NODES = ["gpu-a1", "gpu-a2"]
GPUS = 4

FAKE_SMI = """#!/bin/bash
# test double of nvidia-smi ({mode} node)
case "$*" in
  *ecc.errors.uncorrected.volatile.total*)
    for i in 0 1 2 3; do
      n=0; [ "{mode}" = failing ] && [ "$i" = 2 ] && n=3
      echo "$i, $n"
    done ;;
  "nvlink --status")
    for i in 0 1 2 3; do
      echo "GPU $i: NVIDIA H100 80GB HBM3 (UUID: GPU-$i)"
      echo "	 Link 0: 26.562 GB/s"
      link1="26.562 GB/s"; [ "{mode}" = failing ] && [ "$i" = 1 ] && link1="<inactive>"
      echo "	 Link 1: $link1"
    done ;;
  *) exit 2 ;;
esac
"""
FAKE_DMESG = """#!/bin/bash
echo "[    5.0] nvidia: module loaded"
[ "{mode}" = failing ] && echo "[  812.3] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus."
[ "{mode}" = failing ] && echo "[  813.1] NVRM: Xid (PCI:0000:3b:00): 13, pid=77, Graphics Exception"
exit 0
"""


@pytest.fixture(scope="module")
def rendered() -> dict:
    fleet = load_fleet(ROOT / "inventories/sample")
    files = render_fleet(fleet).files
    values = yaml.safe_load(files[f"{BASE}/slurm/values.yaml"])
    objects = list(yaml.safe_load_all(files[f"{BASE}/objects/objects.yaml"]))
    cm = next(o for o in objects if o and o["kind"] == "ConfigMap" and o["metadata"]["name"] == health.HEALTH_CONFIGMAP)
    return {"fleet": fleet, "values": values, "health_script": cm["data"][health.HEALTH_SCRIPT]}


def _exe(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def _setup(tmp_path: Path, rendered: dict, interval: int = 10) -> tuple[str, dict[str, Path]]:
    """slurm.conf body with the rendered scripts wired in; returns (body, paths)."""
    v = rendered["values"]
    name = monitoring.JOB_MAPPING_SCRIPT
    scripts = tmp_path / "scripts"
    prolog = _exe(scripts / f"prolog-{name}", v["prologScripts"][name])
    epilog = _exe(scripts / f"epilog-{name}", v["epilogScripts"][name])
    hc = _exe(scripts / health.HEALTH_SCRIPT, rendered["health_script"])
    mapping = tmp_path / "job-mapping"
    fakebin = tmp_path / "fakebin"
    conf_path = tmp_path / "cluster0" / "slurm.conf"
    env = f'export DCGM_HPC_JOB_MAPPING_DIR="{mapping}/$SLURMD_NODENAME"\n'
    wrap_prolog = _exe(scripts / "prolog-wrapper.sh", f"#!/bin/bash\n{env}exec {prolog}\n")
    wrap_epilog = _exe(scripts / "epilog-wrapper.sh", f"#!/bin/bash\n{env}exec {epilog}\n")
    slurm_bin = slurm_prefix() / "bin"
    wrap_hc = _exe(
        scripts / "healthcheck-wrapper.sh",
        f'#!/bin/bash\nexport PATH="{fakebin}/$SLURMD_NODENAME:{slurm_bin}:/usr/sbin:/usr/bin:/sbin:/bin"\n'
        f'export SLURM_CONF="{conf_path}"\nexec {hc}\n',
    )
    for node in NODES:
        set_probes(fakebin, node, "healthy")
    # the HealthCheck* keys as rendered (only the program path is the wrapper's, the interval the test's)
    hc_keys = health.slurm_conf(replace(rendered["fleet"].tenants[TENANT].health, interval=interval), str(wrap_hc))
    rendered_keys = v["controller"]["extraConfMap"]
    assert rendered_keys["HealthCheckProgram"] == f"{health.HEALTH_DIR}/{health.HEALTH_SCRIPT}"
    assert rendered_keys["HealthCheckNodeState"] == hc_keys["HealthCheckNodeState"]
    cluster = SlurmCluster(
        name="obs",
        control_host="slurmctld",
        nodes=[SlurmNode("gpu-a[1-2]", cpus=4, memory_mb=1000, gpus=GPUS, gpu_type="h100")],
        partitions=[SlurmPartition("batch", NODES, default=True, options={"MaxTime": "INFINITE"})],
        topology_plugin=None,
        options={
            "SelectType": "select/cons_tres",
            "SelectTypeParameters": "CR_Core",
            "Prolog": str(wrap_prolog),
            "Epilog": str(wrap_epilog),
            "HealthCheckProgram": hc_keys["HealthCheckProgram"],
            "HealthCheckInterval": hc_keys["HealthCheckInterval"],
            "HealthCheckNodeState": ",".join(hc_keys["HealthCheckNodeState"]),
        },
    )
    return render_slurm_conf(cluster), {"mapping": mapping, "fakebin": fakebin}


def set_probes(fakebin: Path, node: str, mode: str) -> None:
    _exe(fakebin / node / "nvidia-smi", FAKE_SMI.replace("{mode}", mode))
    _exe(fakebin / node / "dmesg", FAKE_DMESG.replace("{mode}", mode))


def _gpu_indices(c, job_id: str) -> list[str]:
    text = c.scontrol("show", "job", "-d", job_id)
    m = re.search(r"GRES=gpu(?::\w+)?:\d+\(IDX:([-0-9,]+)\)", text)
    assert m, text
    out: list[str] = []
    for part in m.group(1).split(","):
        a, _, b = part.partition("-")
        out += [str(i) for i in range(int(a), int(b or a) + 1)]
    return out


def _mapping(d: Path) -> dict[str, list[str]]:
    if not d.exists():
        return {}
    return {p.name: p.read_text().split() for p in sorted(d.iterdir())}


def test_prolog_epilog_write_dcgm_job_mapping(slurm_cluster, tmp_path, rendered):
    body, paths = _setup(tmp_path, rendered, interval=3600)
    c = slurm_cluster(body, start=False, gpu_devices=GPUS)
    c.gres = render_gres_conf([SlurmNode("gpu-a[1-2]", gpus=GPUS, gpu_type="h100")], device_path=c.device_path)
    c.start()
    node_dir = paths["mapping"] / "gpu-a1"

    j1 = c.sbatch("-w", "gpu-a1", "--gres=gpu:2", wrap="sleep 300")
    c.wait_job(j1)
    g1 = _gpu_indices(c, j1)
    assert len(g1) == 2
    wait_for(lambda: _mapping(node_dir) == {g: [j1] for g in g1}, 20, "prolog mapping of job 1")

    j2 = c.sbatch("-w", "gpu-a1", "--gres=gpu:2", wrap="sleep 300")
    c.wait_job(j2)
    g2 = _gpu_indices(c, j2)
    assert set(g1).isdisjoint(g2)
    want = {**{g: [j1] for g in g1}, **{g: [j2] for g in g2}}
    wait_for(lambda: _mapping(node_dir) == want, 20, "prolog mapping of both jobs")
    # a job without GPUs writes nothing
    j3 = c.sbatch("-w", "gpu-a2", wrap="sleep 300")
    c.wait_job(j3)
    assert _mapping(paths["mapping"] / "gpu-a2") == {}

    c.scancel(j1)
    wait_for(lambda: _mapping(node_dir) == {g: [j2] for g in g2}, 20, "epilog removing job 1")
    c.scancel(j2, j3)
    wait_for(lambda: _mapping(node_dir) == {}, 20, "epilog removing job 2")
    # slurmd drains a node whose prolog/epilog fails: both nodes stay in service
    assert set(c.node_states().values()) <= {"idle", "completing"}, c.node_states()
    assert c.ctld_problems() == []


def _reasons(c) -> dict[str, str]:
    out = {}
    for line in c.sinfo("-R", "-h", "-N", "-o", "%N|%E").splitlines():
        node, _, reason = line.partition("|")
        out[node.strip()] = reason.strip()
    return out


def test_health_check_drains_failing_gpu_node_and_resume(slurm_cluster, tmp_path, rendered):
    body, paths = _setup(tmp_path, rendered, interval=10)
    set_probes(paths["fakebin"], "gpu-a1", "failing")
    c = slurm_cluster(body, start=False, gpu_devices=GPUS)
    c.gres = render_gres_conf([SlurmNode("gpu-a[1-2]", gpus=GPUS, gpu_type="h100")], device_path=c.device_path)
    # slurmd runs the health check at start: the failing node may drain before it is ever idle
    c.write_config()
    c.nodes = ["gpu-a2"]
    c.start()
    c._spawn("slurmd-gpu-a1", ["slurmd", "-D", "-N", "gpu-a1"])
    c.nodes = list(NODES)

    reasons = wait_for(lambda: _reasons(c) if "gpu-a1" in _reasons(c) else None, 60, "gpu-a1 drained")
    reason = reasons["gpu-a1"]
    assert reason.startswith(f"{health.REASON_PREFIX}: "), reason
    assert "gpu2 uncorrected ECC errors 3" in reason
    assert "gpu1 NVLink 1 links down" in reason
    assert "XID 79 PCI:0000:3b:00" in reason
    assert "XID 13" not in reason  # not in the fatal list of the inventory
    assert "gpu-a2" not in reasons  # the healthy node is never drained
    assert c.node_states()["gpu-a1"] in ("drained", "draining")

    # work does not land on the drained node: one whole-node job runs on gpu-a2, the next waits
    first = c.sbatch("-N", "1", "--exclusive", wrap="sleep 300")
    assert c.wait_job(first).nodes == ["gpu-a2"]
    second = c.sbatch("-N", "1", "--exclusive", wrap="sleep 300")
    j = c.wait_evaluated(second)
    assert j.state == "PENDING" and j.nodes == [], j

    # repaired (probes clean again) + resume, as playbooks/resume.yml does: the job lands there
    set_probes(paths["fakebin"], "gpu-a1", "healthy")
    c.scontrol("update", "nodename=gpu-a1", "state=resume")
    assert c.wait_job(second, timeout=60).nodes == ["gpu-a1"]
    time.sleep(12)  # one more health check interval: a healthy node stays in service
    assert "gpu-a1" not in _reasons(c)
    c.scancel(first, second)
    assert c.ctld_problems() == []
