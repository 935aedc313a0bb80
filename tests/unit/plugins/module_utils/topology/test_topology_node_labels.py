"""Node fabric labels and the Slurm topology are one build: for every fabric the suite has, a node's
Slurm leaf switch, its ancestors and its block (read back from the rendered topology.conf) are its
Kubernetes label values, and the nodes sharing a label value are exactly the nodes of that Slurm
switch or block."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from fabric_helpers import gen
from gpufleet_testlib import fabric_gen
from hypothesis import example, given, settings
from hypothesis import strategies as st
from render_fixtures import REPO
from test_topology import random_fabrics

from ansible_collections.gpufleet.core.plugins.module_utils.fabric.load import load_fabric
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.model import FabricError
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.node_labels import (
    domains_from_nodes,
    fabric_from_nodes,
)
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_inventory
from ansible_collections.gpufleet.core.plugins.module_utils.topology import labels as fl
from ansible_collections.gpufleet.core.plugins.module_utils.topology.build import build_topology
from ansible_collections.gpufleet.core.plugins.module_utils.topology.render import (
    parse_block_conf,
    parse_tree_conf,
    render_block,
    render_tree,
)
from ansible_collections.gpufleet.core.plugins.module_utils.topology.topology_model import Topology, TreeSwitch

VALUE = re.compile(r"\A(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")  # apimachinery's label value grammar
TOPOGRAPH = Path(__file__).resolve().parents[5].parent / "shared" / "upstream" / "fabric-samples" / "topograph"
MODELS = ["small-tree", "medium", "large", "nvl72", "dual-xclr-regular", "dual-xclr-irregular"]
GENERATED = {
    "2-tier-8-rails": {"hosts": 64, "rails": 8, "su_size": 8},
    "2-tier-1-rail-sharp-storage": {"hosts": 48, "rails": 1, "su_size": 8, "sharp": -1, "storage": 2},
    "3-tier-pods": {"hosts": 64, "rails": 1, "su_size": 8, "tiers": 3, "su_per_pod": 2},
    "cut-cables": {"hosts": 32, "rails": 4, "su_size": 8, "cut_cables": 3, "seed": 5},
    "nvl-domains-in-leaves": {"hosts": 32, "rails": 8, "su_size": 16, "nvl_domain": 4},
    "nvl-domains-across-leaves": {"hosts": 32, "rails": 8, "su_size": 8, "nvl_domain": 16},
}


def _generated(kw):
    g = gen(**kw)
    fab = load_fabric(fabric_gen.render_ibnetdiscover(g))
    return build_topology(fab, domains=domains_from_nodes(fabric_gen.nodes_snapshot(g)))


def slurm_paths(tree_conf: str) -> dict[str, list[str]]:
    """node -> switch names from its leaf up to the root, read from a topology/tree topology.conf."""
    parent: dict[str, str] = {}
    leaf: dict[str, str] = {}
    for name, kind, members in parse_tree_conf(tree_conf):
        for m in members:
            (leaf if kind == "nodes" else parent)[m] = name
    out = {}
    for node, sw in leaf.items():
        path = [sw]
        while path[-1] in parent:
            path.append(parent[path[-1]])
        out[node] = path
    return out


def partition(values: dict[str, str]) -> set[frozenset[str]]:
    groups: dict[str, set[str]] = {}
    for node, v in values.items():
        groups.setdefault(v, set()).add(node)
    return {frozenset(g) for g in groups.values()}


def assert_same_topology(topo, scheme: str = "gpufleet") -> None:
    sch = fl.SCHEMES[scheme]
    labels = fl.node_labels(topo, scheme)
    paths = slurm_paths(render_tree(topo))
    assert set(labels) == set(paths)
    depth = max(len(p) for p in paths.values())
    for tier in range(depth):
        key = sch.tier(tier)
        # value: the Slurm switch at that tier (the root repeated above short paths), as a label value
        want = {n: fl.label_value(p[min(tier, len(p) - 1)]) for n, p in paths.items()}
        assert {n: ls[key] for n, ls in labels.items()} == want
    for ls in labels.values():
        assert all(VALUE.match(v) and len(v) <= 63 for v in ls.values()), ls
        assert {k for k in ls if k != sch.accelerator} == {sch.tier(i) for i in range(depth)}
    # the nodes under one leaf label are the nodes of one Slurm leaf line
    leaves = {n: p[0] for n, p in paths.items()}
    assert partition({n: ls[sch.tier(0)] for n, ls in labels.items()}) == partition(leaves)
    if topo.block_source == "nvlink":
        blocks, _sizes = parse_block_conf(render_block(topo))
        block_of = {n: b for b, ns in blocks for n in ns}
        acc = {n: ls[sch.accelerator] for n, ls in labels.items() if sch.accelerator in ls}
        assert set(acc) == set(block_of) & set(labels)
        assert {n: fl.label_value(topo.block_domains[block_of[n]]) for n in acc} == acc
        assert partition(acc) == partition({n: block_of[n] for n in acc})
    else:
        assert not any(sch.accelerator in ls for ls in labels.values())
    levels = fl.levels(topo, scheme)
    assert levels[-1] == fl.HOSTNAME_LABEL and len(levels) <= fl.MAX_LEVELS
    assert all(set(levels[:-1]) <= set(ls) for ls in labels.values())


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("scheme", ["gpufleet", "topograph"])
def test_topograph_models(model, scheme):
    assert_same_topology(build_topology(load_fabric(TOPOGRAPH / "models" / f"{model}.yaml")), scheme)


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generated_fabrics(name):
    assert_same_topology(_generated(GENERATED[name]))


def test_long_switch_names_are_hashed_consistently():
    doc = (
        "switches:\n  " + "c" * 80 + ": {switches: [" + "l" * 70 + ", 'leaf two/with space']}\n"
        "  " + "l" * 70 + ": {nodes: [a, b]}\n  'leaf two/with space': {nodes: [c]}\n"
    )
    topo = build_topology(load_fabric(doc, kind="file"))
    labels = fl.node_labels(topo)
    assert_same_topology(topo)
    t0 = fl.SCHEMES["gpufleet"].tier(0)
    assert labels["a"][t0] != labels["c"][t0]
    assert all(VALUE.match(v) and len(v) <= 63 for ls in labels.values() for v in ls.values())
    # Slurm switch names may be 64 long, a label value 63: such a name is hashed, as topograph does
    assert fl.label_value("s" * 64) == fl.label_value("s" * 64) == "x" + format(_fnv("s" * 64), "016x")
    assert fl.label_value("leaf two/with space").startswith("x")


def _fnv(text: str) -> int:
    h = 0xCBF29CE484222325
    for b in text.encode():
        h = ((h ^ b) * 0x100000001B3) % (1 << 64)
    return h


def test_sample_inventory_rendered_labels_match_every_tenant_topology_conf():
    files = render_inventory(REPO / "inventories" / "sample").files
    doc = yaml.safe_load(files["clusters/gpu-east/node-labels.yaml"])
    labels = fl.read_label_sets(doc["sets"], doc["scheme"])
    confs = {p: v for p, v in files.items() if p.endswith("/slurm/topology.conf")}
    assert confs, "the sample has Slurm tenants with a topology"
    seen = 0
    for conf in confs.values():
        for node, path in slurm_paths(conf.decode()).items():
            assert labels[node]["topology.gpufleet.io/tier-0"] == fl.label_value(path[0])
            assert labels[node]["topology.gpufleet.io/tier-1"] == fl.label_value(path[-1])
            seen += 1
    assert seen == 46  # pretrain 32 + research 14
    objs = list(yaml.safe_load_all(files["clusters/gpu-east/tenants/inference/objects/objects.yaml"]))
    topo = next(o for o in objs if o["kind"] == "Topology")
    rf = next(o for o in objs if o["kind"] == "ResourceFlavor")
    assert rf["spec"]["topologyName"] == topo["metadata"]["name"]
    levels = [lv["nodeLabel"] for lv in topo["spec"]["levels"]]
    assert levels == ["topology.gpufleet.io/tier-1", "topology.gpufleet.io/tier-0", "kubernetes.io/hostname"]


@settings(max_examples=200, deadline=None)
@given(random_fabrics(), st.sampled_from(["gpufleet", "topograph"]))
def test_random_fabrics(fab, scheme):
    topo = build_topology(fab)
    if not topo.leaf_groups:
        assert fl.node_labels(topo, scheme) == {}
        return
    assert_same_topology(topo, scheme)


def test_topograph_labels_read_back_as_the_same_tree():
    """The topograph scheme is what fabric/node_labels.py reads: labels -> fabric -> the same tree."""
    topo = build_topology(load_fabric(TOPOGRAPH / "models" / "large.yaml"))
    labels = fl.node_labels(topo, "topograph")
    nodes = {"kind": "List", "items": [{"metadata": {"name": n, "labels": ls}} for n, ls in labels.items()]}
    again = build_topology(fabric_from_nodes(nodes))
    assert fl.node_labels(again, "topograph") == labels


@given(st.text(max_size=100))
@example("leaf-1\n")
@example("x" * 63 + "\n")
def test_any_name_gives_a_valid_label_value(name):
    v = fl.label_value(name)
    assert VALUE.match(v) and len(v) <= 63 and v.isascii()
    assert fl.label_value(name) == v and fl.is_label_value(v)
    if VALUE.match(name) and len(name) <= 63 and name.isascii() and name:
        assert v == name


def test_label_sets_round_trip_and_grouping():
    topo = _generated(GENERATED["nvl-domains-in-leaves"])
    sets = fl.label_sets(topo)
    assert len(sets) == 8  # 2 leaves x 4 NVLink domains of 4 nodes
    assert fl.read_label_sets(sets, "gpufleet") == fl.node_labels(topo)
    assert fl.accelerator_level(topo)
    assert fl.levels(topo)[-2:] == ["topology.gpufleet.io/accelerator", "kubernetes.io/hostname"]
    across = _generated(GENERATED["nvl-domains-across-leaves"])
    assert not fl.accelerator_level(across) and "topology.gpufleet.io/accelerator" not in fl.levels(across)


def test_too_many_levels_and_bad_prefix_are_refused():
    # 17 tiers (the builder folds such chains away; a Topology can still be handed in)
    sws = {f"s{i}": TreeSwitch(f"s{i}", 16 - i, parent=f"s{i - 1}" if i else None) for i in range(17)}
    topo = Topology(sws, ["s0"], [("s16", ["a"])], {"a": "s16"}, [], {}, "none", {}, ["a"])
    assert len(fl.node_labels(topo)["a"]) == 17
    with pytest.raises(FabricError, match="at most 16"):
        fl.levels(topo)
    with pytest.raises(FabricError, match="prefix"):
        fl.LabelScheme.from_prefix("Bad_Prefix")
    with pytest.raises(FabricError, match="unknown label scheme"):
        fl.scheme("mine")
