"""The cgroup.conf and gres.conf the renderer puts into each Slurm tenant's chart values, on 26.05.

* cgroup.conf: slurmctld 26.05 parses it at start-up (and is fatal on a key it does not know, which
  the control case shows); the rendered file must load with no error or warning in its log.
  slurmd cannot use it here: this sandbox (gVisor) mounts cgroup v1 with only a hugetlb cgroup2
  beside it, and 26.05's cgroup/v2 refuses that ("Hybrid mode is not supported"), so the harness
  runs slurmd with its own settings (no cgroup.conf, ``TaskPlugin=task/none``,
  ``ProctrackType=proctrack/linuxproc``).
* gres.conf (``AutoDetect=nvidia``): slurmd 26.05 loads it with no unknown key and runs the
  gpu/nvidia autodetection; this machine has no NVIDIA driver, so it finds no GPU and slurmctld
  holds the node out for the GPUs its NodeName line declares (the other Slurm tests give slurmd a
  gres.conf with ``File=`` lines on fake devices instead).
"""

from __future__ import annotations

import re

import pytest
import yaml
from harness import SlurmHarnessError

from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_fleet

pytestmark = pytest.mark.slurm
CONF = "TopologyPlugin=topology/flat\nGresTypes=gpu\nNodeName=n[1-2] CPUs=2 RealMemory=500 Gres=gpu:8\n"
CONF += "PartitionName=p Nodes=n[1-2] Default=YES MaxTime=INFINITE\n"


def rendered_files() -> dict[str, dict[str, str]]:
    from gpufleet_testlib.slurm_build import REPO

    files = render_fleet(load_fleet(REPO / "inventories" / "sample")).files
    out = {}
    for path, text in sorted(files.items()):
        if re.fullmatch(r"clusters/[^/]+/tenants/[^/]+/slurm/values\.yaml", path):
            values = yaml.safe_load(text)
            out[path.split("/")[3]] = {k: values["configFiles"][k] for k in ("cgroup.conf", "gres.conf")}
    assert out, "no Slurm tenant rendered"
    return out


@pytest.mark.parametrize("tenant", sorted(rendered_files()))
def test_rendered_cgroup_conf_loads_in_slurmctld(slurm_cluster, tenant):
    cg = rendered_files()[tenant]["cgroup.conf"]
    assert "CgroupPlugin=cgroup/v2" in cg
    c = slurm_cluster(CONF, nodes=[], files={"cgroup.conf": cg})
    assert c.ctld_problems() == []
    assert "cgroup.conf" not in c.ctld_log()  # read, not reported missing or wrong


def test_unknown_cgroup_key_is_fatal(slurm_cluster):
    cg = next(iter(rendered_files().values()))["cgroup.conf"] + "ConstrainSwapSpacee=yes\n"
    c = slurm_cluster(CONF, nodes=[], files={"cgroup.conf": cg}, start=False)
    with pytest.raises(SlurmHarnessError):
        c.start(timeout=20)
    assert "unrecognized key: ConstrainSwapSpacee" in c.ctld_log()


def _slurmd_with_gres(slurm_cluster, gres: str):
    """slurmctld and one slurmd (n1) reading ``gres``: (cluster, slurmd log). The node never becomes
    idle here (no GPU), so the start is cut short once slurmd had its time to register."""
    c = slurm_cluster(CONF, gres=gres, nodes=["n1"], start=False)
    with pytest.raises(SlurmHarnessError):
        c.start(timeout=20)
    return c, c.slurmd_log("n1")


@pytest.mark.parametrize("tenant", sorted(rendered_files()))
def test_rendered_gres_conf_loads_in_slurmd(slurm_cluster, tenant):
    gres = rendered_files()[tenant]["gres.conf"]
    assert gres.strip() == "AutoDetect=nvidia"
    c, log = _slurmd_with_gres(slurm_cluster, gres)
    assert not re.search(r"unrecognized key|Parsing error|fatal", log), log
    # gpu/nvidia autodetection ran and, with no NVIDIA driver on this machine, found nothing; the
    # controller then holds the node out for its missing GPUs (on a GPU node it registers them)
    assert "System GPU detection failed" in log, log
    assert "gres/gpu count reported lower than configured (0 < 8)" in c.ctld_log()


def test_unknown_gres_key_is_refused(slurm_cluster):
    _c, log = _slurmd_with_gres(slurm_cluster, "AutoDetect=nvidia\nAutoDetekt=nvml\n")
    assert "unrecognized key: AutoDetekt" in log, log
