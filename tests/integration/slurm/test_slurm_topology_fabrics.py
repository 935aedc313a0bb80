"""Real slurmctld 26.05 reads every topology the project renders and places jobs where it says.

Fabrics, each turned into a :class:`Topology` by the project's own code:

* ``sample``: the sample inventory's cluster (its 4xNDR ibnetdiscover dump and nodes snapshot),
  through the render pipeline's inputs (render.inputs.cluster_inputs), as gitops_render sees it;
* ``gb200``: a generated GB200-style fabric: 72 compute trays of 4 GPUs on 4 rails, NVLink domains
  of 18 trays (one NVL72 rack each, ``nvidia.com/gpu.clique`` labels), scale units of 18;
* ``fleet``: a generated fleet-scale fabric: 2,048 hosts x 8 rails, 3 tiers (SUs of 32, pods of 8 SUs).

Formats, rendered by topology.render exactly as the renderer writes them: ``tree`` (topology.conf,
topology/tree), ``block`` (topology.conf, topology/block) and ``yaml`` (topology.yaml with a tree and
a block topology; one partition per topology chooses it with ``Topology=``).

Every node of the fabric is declared in slurm.conf and the whole topology is loaded: slurmctld must
log no error or warning and ``scontrol show topology`` must show exactly our groups. Then slurmd
runs for five nodes chosen across three adjacent groups so that a topology-blind placement (lowest
free nodes first) would straddle two groups: the last node of group 1 and the first two of groups 2
and 3. A 2-node job (tree: ``--switches=1``; block: the base block level) must land inside group 2
or 3, a second one inside the other; a 4-node job with ``--segment=2`` (block) must take groups 2
and 3 exactly.

The control: the same checks against a deliberately wrong file (every node name shifted by one
along the network order, so each group holds its neighbour's first node) must each report it: the
topology shown, the 2-node jobs and the ``--segment`` job all differ from what the fabric says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest
import yaml
from gpufleet_testlib import fabric_gen
from harness import SlurmCluster

from ansible_collections.gpufleet.core.plugins.module_utils.hostlist import compress, expand
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.render.inputs import cluster_inputs
from ansible_collections.gpufleet.core.plugins.module_utils.topology import render as tr
from ansible_collections.gpufleet.core.plugins.module_utils.topology.topology_load import load_topology
from ansible_collections.gpufleet.core.plugins.module_utils.topology.topology_model import Topology

pytestmark = pytest.mark.slurm

REPO = Path(__file__).resolve().parents[3]
GENERATED = {
    "gb200": fabric_gen.GenSpec(
        hosts=72, rails=4, su_size=18, nvl_domain=18, gpus=4, gpu_product="NVIDIA-GB200",
        name_format="gb{:03d}", seed=7,
    ),
    "fleet": fabric_gen.GenSpec(hosts=2048, rails=8, su_size=32, tiers=3, su_per_pod=8, seed=5),
}  # fmt: skip
FABRICS = ["sample", *GENERATED]
KINDS = ["tree", "block", "yaml"]


@cache
def fabric(name: str) -> Topology:
    if name == "sample":
        fleet = load_fleet(REPO / "inventories" / "sample")
        topo = cluster_inputs(fleet, fleet.clusters["gpu-east"]).topology
        assert topo is not None
        return topo
    g = fabric_gen.generate(GENERATED[name])
    return load_topology(text=fabric_gen.render_ibnetdiscover(g), nodes_doc=fabric_gen.nodes_snapshot(g))


@dataclass
class Check:
    """One topology's checks: the groups ``scontrol show topology`` must show, the groups a 2-node job
    must stay inside, the base blocks ``--segment=2`` must use (block, base size 2+), the nodes run."""

    part: str
    key: str  # SwitchName (tree leaves) or BlockName
    shown: dict[str, list[str]]
    units: list[list[str]]
    segments: list[list[str]] | None
    nodes: list[str] = field(default_factory=list)
    topology: str = ""  # the name in topology.yaml ("" for topology.conf)


@dataclass
class Case:
    conf: str
    files: dict[str, str]
    checks: list[Check]

    @property
    def nodes(self) -> list[str]:
        return sorted({n for ch in self.checks for n in ch.nodes})


def tree_check(topo: Topology, part: str) -> Check:
    leaves = [list(m) for _n, k, m in tr.tree_switches(topo) if k == "nodes"]
    shown = {n: list(m) for n, k, m in tr.tree_switches(topo) if k == "nodes"}
    return Check(part, "SwitchName", shown, leaves, None)


def block_check(topo: Topology, part: str) -> Check:
    blocks = [(b, list(ns)) for b, ns in topo.blocks if ns]
    sizes = tr.infer_block_sizes(blocks)
    # a job is placed inside one aggregate of the smallest block size that holds it: consecutive
    # base blocks in file order, (size / base) at a time
    per = min(s for s in sizes if s >= 2) // sizes[0]
    units = [[n for _b, ns in blocks[i : i + per] for n in ns] for i in range(0, len(blocks), per)]
    segments = [ns for _b, ns in blocks] if sizes[0] >= 2 else None
    return Check(part, "BlockName", dict(blocks), units, segments)


def case(topo: Topology, kind: str) -> Case:
    if kind == "yaml":
        text = tr.render(topo, "yaml")
        names = {next(k for k in ("tree", "block") if k in t): t["topology"] for t in yaml.safe_load(text)}
        checks, files, plugin = [tree_check(topo, "tree"), block_check(topo, "block")], {"topology.yaml": text}, ""
    else:
        names = {}
        checks = [tree_check(topo, kind) if kind == "tree" else block_check(topo, kind)]
        files, plugin = {"topology.conf": tr.render(topo, kind)}, f"TopologyPlugin=topology/{kind}\n"
    lines = [f"{plugin}NodeName={compress(topo.order)} CPUs=2 RealMemory=500"]
    for i, ch in enumerate(checks):
        g1, g2, g3 = picks(ch.units)
        ch.nodes = [g1[-1], *g2[:2], *g3[:2]]
        ch.topology = names.get(ch.part, "")
        opts = (f" Topology={ch.topology}" if ch.topology else "") + (" Default=YES" if i == 0 else "")
        lines.append(f"PartitionName={ch.part} Nodes={compress(ch.nodes)} MaxTime=INFINITE{opts}")
    return Case("\n".join(lines) + "\n", files, checks)


def shifted(text: str, order: list[str]) -> str:
    """The same file with every node name replaced by the next one along ``order`` (cyclic)."""
    nxt = dict(zip(order, order[1:] + order[:1], strict=True))

    def sub(m: re.Match) -> str:
        return m.group(1) + compress([nxt[n] for n in expand(m.group(2))])

    return re.sub(r"((?:^|\s)Nodes=|\bnodes: )(\S+)", sub, text, flags=re.M)


def picks(groups: list[list[str]]) -> tuple[list[str], list[str], list[str]]:
    """Groups 1-3 (in file order) of the groups with 2+ nodes."""
    usable = [ns for ns in groups if len(ns) >= 2]
    assert len(usable) >= 4, f"need 4 groups of 2+ nodes, have {len(usable)}"
    return usable[1], usable[2], usable[3]


def shown_groups(text: str, key: str) -> dict[str, list[str]]:
    """``scontrol show topology``: {switch or block name: nodes} for leaf switches / blocks."""
    out = {}
    for line in text.splitlines():
        f = dict(re.findall(r"(\w+)=(\S+)", line))
        if key in f and (key != "SwitchName" or f.get("Level") == "0"):
            out[f[key]] = expand(f.get("Nodes", ""))
    return out


def inside(nodes: list[str], groups: list[list[str]]) -> bool:
    return any(set(nodes) <= set(g) for g in groups)


def problems(cl: SlurmCluster, c: Case) -> list[str]:
    """Everything that differs from what the fabric says: the log, the topology shown, the jobs."""
    out = [f"slurmctld: {p}" for p in cl.ctld_problems()]
    for ch in c.checks:
        shown = shown_groups(cl.scontrol("show", "topology", *([ch.topology] if ch.topology else [])), ch.key)
        diff = sorted(g for g in set(shown) | set(ch.shown) if shown.get(g) != ch.shown.get(g))
        if diff:
            out.append(f"{ch.part}: scontrol show topology differs from the fabric in {len(diff)} groups: {diff[:4]}")
        out += placement(cl, ch)
    return out


def placement(cl: SlurmCluster, ch: Check) -> list[str]:
    out = []
    _g1, g2, g3 = picks(ch.units)
    flag = ["--switches=1"] if ch.key == "SwitchName" else []
    jobs = [cl.sbatch("-p", ch.part, "-N", "2", "--exclusive", *flag, wrap="sleep 300") for _i in range(2)]
    for job in jobs:
        j = cl.wait_evaluated(job)
        if j.state != "RUNNING" or not inside(j.nodes, [g2, g3]):
            out.append(f"{ch.part}: 2-node job {job} is {j.state} on {compress(j.nodes)}, not inside one group")
    cl.scancel(*jobs)
    cl.wait_idle(ch.nodes)
    if ch.segments:
        _s1, s2, s3 = picks(ch.segments)
        job = cl.sbatch("-p", ch.part, "-N", "4", "--exclusive", "--segment=2", wrap="sleep 300")
        j = cl.wait_evaluated(job)
        if j.state != "RUNNING" or sorted(j.nodes) != sorted([*s2[:2], *s3[:2]]):
            out.append(f"{ch.part}: --segment=2 job {job} is {j.state} on {compress(j.nodes)}")
        cl.scancel(job)
        cl.wait_idle(ch.nodes)
    return out


def run(slurm_cluster, c: Case) -> list[str]:
    files = {k: v for k, v in c.files.items() if k != "topology.conf"}
    cl = slurm_cluster(c.conf, topology=c.files.get("topology.conf"), start=False, nodes=c.nodes, files=files)
    cl.start(timeout=120)
    return problems(cl, c)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", FABRICS)
def test_rendered_topology_places_jobs(slurm_cluster, name, kind):
    assert run(slurm_cluster, case(fabric(name), kind)) == []


@pytest.mark.parametrize(("name", "kind"), [*(("sample", k) for k in KINDS), ("gb200", "block")])
def test_wrong_topology_file_is_caught(slurm_cluster, name, kind):
    topo = fabric(name)
    good = case(topo, kind)
    bad = Case(good.conf, {k: shifted(v, topo.order) for k, v in good.files.items()}, good.checks)
    assert bad.files != good.files
    found = run(slurm_cluster, bad)
    for ch in good.checks:  # each check on its own sees the wrong file: what is shown, where jobs run
        assert any(p.startswith(f"{ch.part}: scontrol show topology differs") for p in found), found
        assert any(p.startswith(f"{ch.part}: 2-node job") for p in found), found
        if ch.segments:
            assert any(p.startswith(f"{ch.part}: --segment=2 job") for p in found), found
