"""Real slurmctld/slurmd (the Slurm build): hand-written tree topology, --switches placement, renderer output.

Block topologies and topology.yaml, on the fabrics the project renders: test_slurm_topology_fabrics.py.

Each test starts its own small cluster (8 emulated nodes) through the ``slurm_cluster`` fixture.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from gpufleet_testlib.slurm_conf import (
    SlurmCluster,
    SlurmNode,
    SlurmPartition,
    render_gres_conf,
    render_slurm_conf,
)
from harness import SlurmCluster as SlurmHarness
from harness import SlurmHarnessError, leaf_of, parse_show_topology, require_slurm

from ansible_collections.gpufleet.core.plugins.module_utils.hostlist import expand

pytestmark = pytest.mark.slurm

EIGHT_NODES = """\
ClusterName=twoleaf
TopologyPlugin=topology/tree
NodeName=n[1-8] CPUs=4 RealMemory=1000
PartitionName=batch Nodes=n[1-8] Default=YES MaxTime=INFINITE State=UP
"""

TWO_LEAVES = """\
# two leaves under one spine
SwitchName=leaf1 Nodes=n[1-4]
SwitchName=leaf2 Nodes=n[5-8]
SwitchName=spine Switches=leaf[1-2]
"""


@pytest.mark.parametrize("auth", ["munge", "slurm"])
def test_two_leaf_topology_loads_clean(slurm_cluster, auth):
    # munge, and auth/slurm with a slurm.key: what the Slinky chart's slurm.conf runs
    c = slurm_cluster(EIGHT_NODES, topology=TWO_LEAVES, auth=auth)
    assert c.ctld_problems() == []
    topo = parse_show_topology(c.scontrol("show", "topology"))
    assert topo == {
        "leaf1": {"level": 0, "nodes": expand("n[1-4]"), "switches": []},
        "leaf2": {"level": 0, "nodes": expand("n[5-8]"), "switches": []},
        "spine": {"level": 1, "nodes": expand("n[1-8]"), "switches": ["leaf1", "leaf2"]},
    }
    assert set(c.node_states().values()) == {"idle"}


def test_problem_detection_can_fail(slurm_cluster):
    # n8 under no switch: 22.05 only warns; the harness must see it, or the clean checks prove nothing
    c = slurm_cluster(EIGHT_NODES, topology=TWO_LEAVES.replace("n[5-8]", "n[5-7]"))
    problems = c.ctld_problems()
    assert any("switches lack access" in p for p in problems), problems


def test_switches_1_lands_inside_one_leaf(slurm_cluster):
    c = slurm_cluster(EIGHT_NODES, topology=TWO_LEAVES)
    leaves = {k: v["nodes"] for k, v in parse_show_topology(c.scontrol("show", "topology")).items() if v["level"] == 0}
    # job A holds half of leaf1
    a = c.sbatch("-N", "2", "--exclusive", "-w", "n[1-2]", wrap="sleep 60")
    assert c.wait_job(a).nodes == ["n1", "n2"]
    # B needs 3 nodes in one leaf: only leaf2 has them
    b = c.sbatch("-N", "3", "--exclusive", "--switches=1", wrap="sleep 60")
    jb = c.wait_job(b)
    assert leaf_of(jb.nodes, leaves) == "leaf2", jb
    # C also needs 3 in one leaf: leaf1 has 2 free, leaf2 has 1: it must wait, not straddle leaves
    cj = c.sbatch("-N", "3", "--exclusive", "--switches=1", wrap="sleep 60")
    jc = c.wait_evaluated(cj)
    assert (jc.state, jc.reason) == ("PENDING", "Resources"), jc
    # freeing leaf1 lets C start there, inside one leaf
    c.scancel(a)
    jc = c.wait_job(cj)
    assert leaf_of(jc.nodes, leaves) == "leaf1", jc
    assert c.ctld_problems() == []


def test_renderer_output_with_gpu_gres_loads_clean(slurm_cluster):
    cluster = SlurmCluster(
        name="rendered",
        control_host="slurm-controller",  # replaced by the harness (localhost + free port)
        nodes=[
            SlurmNode("gpu[001-006]", cpus=8, memory_mb=2000, gpus=8, gpu_type="h100", features=["h100", "ib"]),
            SlurmNode("cpu[01-02]", cpus=4, memory_mb=1000, features=["cpu"]),
        ],
        partitions=[
            SlurmPartition("gpu", "gpu[001-006]", default=True, options={"MaxTime": "INFINITE", "State": "UP"}),
            SlurmPartition("cpu", ["cpu01", "cpu02"], options={"MaxTime": "1-00:00:00"}),
            SlurmPartition("all", "gpu[001-006],cpu[01-02]"),
        ],
        topology_plugin="topology/tree",
        topology_param=["SwitchAsNodeRank"],
    )
    conf = render_slurm_conf(cluster)
    assert "GresTypes=gpu\n" in conf
    c = slurm_cluster(conf, topology="SwitchName=s1 Nodes=gpu[001-006],cpu[01-02]\n", start=False, gpu_devices=8)
    c.gres = render_gres_conf(cluster.nodes, device_path=c.device_path)
    c.start()
    assert c.ctld_problems() == []
    for node in expand("gpu[001-006]"):
        log = c.slurmd_log(node)
        assert not re.search(r"error:.*(gres|gpu)", log, re.I), log
    # every GPU node registered 8 typed GPUs, the CPU nodes none
    gres = dict(line.split() for line in c.sinfo("-h", "-N", "-o", "%N %G").splitlines())
    assert {n: g for n, g in gres.items() if n.startswith("gpu")} == {n: "gpu:h100:8" for n in expand("gpu[001-006]")}
    assert gres["cpu01"] == gres["cpu02"] == "(null)"
    parts = {}
    for line in c.scontrol("show", "partition", "-o").splitlines():
        f = dict(re.findall(r"(\w+)=(\S+)", line))
        parts[f["PartitionName"]] = (expand(f["Nodes"]), f["Default"])
    assert parts == {
        "all": (expand("cpu[01-02],gpu[001-006]"), "NO"),
        "cpu": (["cpu01", "cpu02"], "NO"),
        "gpu": (expand("gpu[001-006]"), "YES"),
    }
    # the GPUs are schedulable: 2 nodes x 8 GPUs runs, 9 per node is refused at submit
    j = c.sbatch("-N", "2", "--gres=gpu:h100:8", wrap="sleep 30")
    assert len(c.wait_job(j).nodes) == 2
    with pytest.raises(SlurmHarnessError):
        c.sbatch("-N", "1", "--gres=gpu:9", wrap="true")


def test_teardown_kills_everything_even_when_the_test_fails(tmp_path):
    require_slurm()
    c = SlurmHarness(tmp_path / "c", EIGHT_NODES, topology=TWO_LEAVES)
    with pytest.raises(RuntimeError, match="boom"), c:
        j = c.sbatch("-N", "2", wrap="sleep 300")
        c.wait_job(j)
        pids = [p.pid for p in c._procs.values()]
        assert c.leftover_pids(), "the running job's processes carry SLURM_CONF"
        raise RuntimeError("boom")
    assert c.leftover_pids() == []
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()
