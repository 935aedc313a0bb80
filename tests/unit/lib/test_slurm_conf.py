"""slurm.conf / gres.conf rendering (tests/lib/gpufleet_testlib/slurm_conf.py).

That Slurm 22.05 loads this output cleanly is shown in tests/integration/slurm/.
"""

from __future__ import annotations

import pytest
from gpufleet_testlib.slurm_conf import (
    SlurmCluster,
    SlurmConfError,
    SlurmNode,
    SlurmPartition,
    render_gres_conf,
    render_node_lines,
    render_partition_lines,
    render_slurm_conf,
)


def cluster(**kw) -> SlurmCluster:
    base = dict(
        name="t1",
        control_host="ctl",
        control_port=6817,
        nodes=[
            SlurmNode("gpu[001-004]", cpus=64, memory_mb=1000, gpus=8, gpu_type="h100", features=["ib", "h100"]),
            SlurmNode("cpu[1-2]", cpus=8),
            SlurmNode("gpu005", cpus=64, memory_mb=1000, gpus=8, gpu_type="h100", features=["h100", "ib"]),
        ],
        partitions=[
            SlurmPartition("gpu", "gpu[001-005]", default=True, options={"MaxTime": "INFINITE", "State": "UP"}),
            SlurmPartition("cpu", ["cpu2", "cpu1"]),
        ],
        topology_param=["SwitchAsNodeRank"],
    )
    base.update(kw)
    return SlurmCluster(**base)


EXPECTED = """\
# slurm.conf rendered by gpufleet; edit the inventory, not this file
ClusterName=t1
SlurmctldHost=ctl
SlurmctldPort=6817
TopologyPlugin=topology/tree
TopologyParam=SwitchAsNodeRank
GresTypes=gpu
NodeName=cpu[1-2] CPUs=8
NodeName=gpu[001-005] CPUs=64 RealMemory=1000 Gres=gpu:h100:8 Features=h100,ib
PartitionName=cpu Nodes=cpu[1-2]
PartitionName=gpu Nodes=gpu[001-005] Default=YES MaxTime=INFINITE State=UP
"""


def test_full_file():
    assert render_slurm_conf(cluster()) == EXPECTED


def test_deterministic_regardless_of_input_order():
    c = cluster()
    shuffled = cluster(nodes=list(reversed(c.nodes)), partitions=list(reversed(c.partitions)))
    assert render_slurm_conf(shuffled) == render_slurm_conf(c)


def test_gres_types_always_explicit():
    out = render_slurm_conf(cluster(nodes=[SlurmNode("n1")], partitions=[SlurmPartition("p", "n1")]))
    assert "GresTypes=gpu\n" in out


def test_ports_give_one_line_per_node():
    lines = render_node_lines([SlurmNode("n2", cpus=2, port=17002), SlurmNode("n1", cpus=2, port=17001)])
    assert lines == "NodeName=n1 Port=17001 CPUs=2\nNodeName=n2 Port=17002 CPUs=2\n"


def test_options_sorted_and_checked():
    lines = render_node_lines([SlurmNode("n1", options={"Weight2": 3, "State": "CLOUD"})])
    assert lines == "NodeName=n1 State=CLOUD Weight2=3\n"
    part = render_partition_lines([SlurmPartition("p", "n1", options={"OverSubscribe": "EXCLUSIVE", "Hidden": True})])
    assert part == "PartitionName=p Nodes=n1 Hidden=YES OverSubscribe=EXCLUSIVE\n"


def test_control_addr_and_flat_topology():
    out = render_slurm_conf(cluster(control_addr="10.0.0.1", topology_plugin=None, topology_param=()))
    assert "SlurmctldHost=ctl(10.0.0.1)\n" in out
    assert "Topology" not in out


@pytest.mark.parametrize(
    ("kw", "path"),
    [
        (dict(name="Bad Name"), "name"),
        (dict(topology_plugin="topology/star"), "topology_plugin"),
        (dict(topology_param=["Nope"]), "topology_param[0]"),
        (dict(topology_param=["TopoMaxSizeUnroll"]), "topology_param[0]"),
        (dict(topology_plugin="topology/block", topology_param=["RouteTree"]), "topology_param[0]"),
        (dict(control_port=70000), "control_port"),
        (dict(gres_types=()), "gres_types"),
        (dict(options={"SlurmctldHost": "x"}), "options.SlurmctldHost"),
        (dict(options={"Foo": "a b"}), "options.Foo"),
        (dict(options={"Foo": "a\nNodeName=evil"}), "options.Foo"),
        (dict(nodes=[SlurmNode("n1"), SlurmNode("n[1-2]")]), "nodes[1].name"),
        (dict(nodes=[SlurmNode("n[2-1]")]), "nodes[0].name"),
        (dict(nodes=[SlurmNode("n1", gpus=-1)]), "nodes[0].gpus"),
        (dict(nodes=[SlurmNode("n1", gpu_type="h100")]), "nodes[0].gpu_type"),
        (dict(nodes=[SlurmNode("n[1-2]", port=7000)]), "nodes[0].port"),
        (dict(nodes=[SlurmNode("n1", cpus=0)]), "nodes[0].cpus"),
        (dict(nodes=[SlurmNode("n1", features=["a,b"])]), "nodes[0].features[0]"),
        (dict(nodes=[SlurmNode("n1", options={"Gres": "gpu:1"})]), "nodes[0].options.Gres"),
        (dict(partitions=[SlurmPartition("p", "x1")]), "partitions[0].nodes"),
        (dict(partitions=[SlurmPartition("p", "gpu001"), SlurmPartition("p", "gpu002")]), "partitions[1].name"),
        (dict(partitions=[SlurmPartition("DEFAULT", "gpu001")]), "partitions[0].name"),
        (
            dict(partitions=[SlurmPartition("a", "gpu001", default=True), SlurmPartition("b", "gpu002", default=True)]),
            "partitions",
        ),
    ],
)
def test_bad_input_names_the_key(kw, path):
    with pytest.raises(SlurmConfError) as err:
        render_slurm_conf(cluster(**kw), source="inventories/x/group_vars/all.yml")
    assert err.value.path == path
    assert str(err.value).startswith("inventories/x/group_vars/all.yml: " + path + ":")


def test_gres_conf_files():
    out = render_gres_conf(cluster().nodes, device_path="/dev/nvidia")
    assert out == "# gres.conf rendered by gpufleet\nNodeName=gpu[001-005] Name=gpu Type=h100 File=/dev/nvidia[0-7]\n"


def test_gres_conf_ignores_ports_and_cpu_nodes():
    nodes = [SlurmNode(f"g{i}", gpus=2, port=7000 + i) for i in (2, 1)] + [SlurmNode("c1")]
    assert render_gres_conf(nodes).splitlines()[1:] == ["NodeName=g[1-2] Name=gpu File=/dev/nvidia[0-1]"]


def test_gres_conf_autodetect():
    assert render_gres_conf(cluster().nodes, autodetect="nvidia").splitlines()[1:] == ["AutoDetect=nvidia"]
    with pytest.raises(SlurmConfError):
        render_gres_conf(cluster().nodes, autodetect="magic")
    with pytest.raises(SlurmConfError):
        render_gres_conf(cluster().nodes, device_path="/dev/nvidia0")
