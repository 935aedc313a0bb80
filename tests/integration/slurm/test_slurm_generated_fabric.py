"""A generated fabric through the whole chain into a real slurmctld 26.05.

fabric_gen (rail-optimized 2-tier fat tree with SHARP aggregation nodes on every switch, cut
cables, an HCA with its firmware description) -> ibnetdiscover text -> load_fabric ->
build_topology -> render_tree -> topology.conf; slurm_conf.render_slurm_conf/render_gres_conf ->
slurm.conf/gres.conf. Slurm must load it with no error or warning, show exactly our leaf groups,
and place ``--switches=1`` jobs inside one leaf group while other jobs hold part of the fabric.
"""

from __future__ import annotations

import pytest
from gpufleet_testlib import fabric_gen
from gpufleet_testlib.slurm_conf import (
    SlurmCluster,
    SlurmNode,
    SlurmPartition,
    render_gres_conf,
    render_slurm_conf,
)
from harness import leaf_of, parse_show_topology

from ansible_collections.gpufleet.core.plugins.module_utils.fabric.load import load_fabric
from ansible_collections.gpufleet.core.plugins.module_utils.hostlist import compress, expand
from ansible_collections.gpufleet.core.plugins.module_utils.topology.build import build_topology
from ansible_collections.gpufleet.core.plugins.module_utils.topology.render import (
    render_tree,
    tree_switches,
    validate_tree,
)

pytestmark = pytest.mark.slurm

SPECS = {
    "24x4rails": fabric_gen.GenSpec(hosts=24, rails=4, su_size=8, tiers=2, sharp=-1, cut_cables=1, seed=11),
    "32x8rails": fabric_gen.GenSpec(hosts=32, rails=8, su_size=8, tiers=2, sharp=-1, cut_cables=2, unnamed=1, seed=3),
}


@pytest.mark.parametrize("spec", list(SPECS.values()), ids=list(SPECS))
def test_generated_fabric_in_real_slurm(slurm_cluster, spec):
    g = fabric_gen.generate(spec)
    assert g.cut, "the spec must cut cables"
    topo = build_topology(load_fabric(fabric_gen.render_ibnetdiscover(g)))
    topology_conf = render_tree(topo)
    assert validate_tree(tree_switches(topo)) == []
    groups = dict(topo.leaf_groups)
    hosts = sorted(g.host_names)
    # SHARP aggregation nodes and the unnamed HCA are not hosts; cut-cable hosts keep their unit
    assert sorted(n for ns in groups.values() for n in ns) == hosts
    assert all(len(ns) == spec.su_size for ns in groups.values())

    cluster = SlurmCluster(
        name="generated",
        control_host="slurmctld",
        nodes=[SlurmNode(compress(hosts), cpus=4, memory_mb=1000, gpus=8, gpu_type="h100")],
        partitions=[SlurmPartition("gpu", hosts, default=True, options={"MaxTime": "INFINITE"})],
        topology_plugin="topology/tree",
    )
    c = slurm_cluster(render_slurm_conf(cluster), topology=topology_conf, start=False, gpu_devices=8)
    c.gres = render_gres_conf(cluster.nodes, device_path=c.device_path)
    c.start()
    assert c.ctld_problems() == []

    shown = parse_show_topology(c.scontrol("show", "topology"))
    leaves = {k: v["nodes"] for k, v in shown.items() if v["level"] == 0}
    assert leaves == groups
    roots = [k for k, v in shown.items() if v["level"] == max(x["level"] for x in shown.values())]
    assert len(roots) == 1 and shown[roots[0]]["nodes"] == expand(compress(hosts))

    # hold 3 nodes of the first group; every 6-node --switches=1 job must fit inside one group
    names = list(groups)
    first = groups[names[0]]
    hold = c.sbatch("-N", "3", "--exclusive", "-w", ",".join(first[:3]), wrap="sleep 120")
    c.wait_job(hold)
    placed = {}
    for _i in names[1:]:
        j = c.sbatch("-N", "6", "--exclusive", "--switches=1", wrap="sleep 120")
        job = c.wait_job(j)
        leaf = leaf_of(job.nodes, groups)
        assert leaf is not None and leaf != names[0], job
        placed[j] = leaf
    assert len(set(placed.values())) == len(names) - 1  # one job per free group
    # the first group has 5 free nodes and the others 2 each: a further job waits
    waiting = c.sbatch("-N", "6", "--exclusive", "--switches=1", wrap="sleep 120")
    jw = c.wait_evaluated(waiting)
    assert (jw.state, jw.reason) == ("PENDING", "Resources"), jw
    c.scancel(hold)
    job = c.wait_job(waiting)
    assert leaf_of(job.nodes, groups) == names[0], job
    assert c.ctld_problems() == []
