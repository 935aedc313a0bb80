"""The topology algorithm on generated fabrics and topograph's samples."""

from __future__ import annotations

from pathlib import Path

import pytest
from fabric_helpers import canonical_tree, gen, gen_text, gen_topo
from gpufleet_testlib import fabric_gen
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.core.plugins.module_utils.fabric.load import load_fabric
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.model import FabricError
from ansible_collections.gpufleet.core.plugins.module_utils.topology.build import build_topology
from ansible_collections.gpufleet.core.plugins.module_utils.topology.render import (
    parse_block_conf,
    parse_tree_conf,
    render_block,
    render_tree,
    tree_switches,
)


@pytest.fixture(scope="module")
def topograph(shared_dir) -> Path:
    return shared_dir / "upstream" / "fabric-samples" / "topograph"


@pytest.mark.parametrize("ports", [False, True])
@pytest.mark.parametrize("rails", [1, 8])
def test_two_tier_one_root_one_group_per_su(rails, ports):
    topo = gen_topo(ports, hosts=64, rails=rails, su_size=8, tiers=2)
    assert len(topo.roots) == 1
    assert [len(ns) for _unused, ns in topo.leaf_groups] == [8] * 8
    # each leaf group is one scalable unit: gpu001-008, gpu009-016, ...
    assert topo.leaf_groups[0][1] == [f"gpu{i:03d}" for i in range(1, 9)]
    assert topo.leaf_groups[-1][1] == [f"gpu{i:03d}" for i in range(57, 65)]
    # rail leaves folded: 8 groups regardless of the rail count
    leaf = topo.switches[topo.leaf_groups[0][0]]
    assert len(leaf.members) == rails
    assert topo.health["ok"] is True
    sws = tree_switches(topo)
    assert len(sws) == 9 and sws[0][1] == "switches"


@pytest.mark.parametrize("rails", [1, 8])
def test_three_tier_pods(rails):
    topo = gen_topo(hosts=128, rails=rails, su_size=8, tiers=3, su_per_pod=4)
    assert len(topo.roots) == 1
    root = topo.switches[topo.roots[0]]
    assert len(root.children) == 4  # pods
    for pod in root.children:
        sw = topo.switches[pod]
        assert sw.tier == 1 and len(sw.children) == 4
        nodes = [n for c in sw.children for n in topo.switches[c].nodes]
        assert len(nodes) == 32
    assert [len(ns) for _unused, ns in topo.leaf_groups] == [8] * 16
    assert topo.path("gpu001")[0] == topo.roots[0] and len(topo.path("gpu001")) == 3
    assert topo.health["ok"] is True


def test_cut_cable_host_stays_in_its_unit_and_is_reported():
    g = gen(hosts=64, rails=8, su_size=8, cut_cables=3, seed=5)
    topo = build_topology(load_fabric(fabric_gen.render_ibnetdiscover(g)))
    assert [len(ns) for _unused, ns in topo.leaf_groups] == [8] * 8
    cut_hosts = sorted({h for h, _unused in g.cut})
    reported = sorted(d["node"] for d in topo.health["hosts_missing_rails"])
    assert reported == cut_hosts
    for h in cut_hosts:
        idx = int(h[3:]) - 1
        assert topo.node_group[h] == topo.leaf_groups[idx // 8][0]
    assert topo.health["ok"] is False


def test_all_rails_but_one_cut_in_one_host():
    g = gen(hosts=16, rails=8, su_size=8)
    text = fabric_gen.render_ibnetdiscover(g)
    # drop 7 of gpu003's 8 HCAs: it must still land in su01
    lines = text.splitlines(keepends=True)
    drop = {f'"gpu003 mlx5_{r}"' for r in range(1, 8)}
    kept = [ln for ln in lines if not any(d in ln for d in drop)]
    topo = build_topology(load_fabric("".join(kept)))
    assert topo.node_group["gpu003"] == topo.node_group["gpu001"]
    miss = topo.health["hosts_missing_rails"]
    assert miss[0]["node"] == "gpu003" and miss[0]["rails"] == 1


def test_sharp_and_unnamed_hcas_are_not_hosts():
    g = gen(hosts=64, rails=8, su_size=8, sharp=-1, unnamed=2, seed=3)
    fab = load_fabric(fabric_gen.render_ibnetdiscover(g))
    s = fab.summary()
    assert s["sharp_nodes"] == len(fab.switches)
    assert s["unnamed_hcas"] == 2
    topo = build_topology(fab)
    assert "Mellanox" not in topo.node_group
    assert len(topo.roots) == 1  # SHARP nodes on spines do not make spines leaves
    assert topo.health["unnamed_hcas_count"] == 2
    assert {d["description"] for d in topo.health["unnamed_hcas"]} == {fabric_gen.FIRMWARE_DESC}
    # the host whose HCA lost its name shows as missing that rail
    assert sorted(d["node"] for d in topo.health["hosts_missing_rails"]) == sorted(h for h, _unused in g.unnamed)


def test_storage_leaf_excluded_by_pattern_or_node_list():
    text = gen_text(hosts=32, rails=8, su_size=8, storage=4)
    fab = load_fabric(text)
    full = build_topology(fab)
    assert any(n.startswith("stor") for n in full.node_group)
    ex = build_topology(fab, exclude=["storage-leaf-*"])
    assert not any(n.startswith("stor") for n in ex.node_group)
    assert ex.health["excluded"]["switches"] == ["storage-leaf-01"]
    ex2 = build_topology(fab, exclude=["stor* mlx5_0"])
    assert not any(n.startswith("stor") for n in ex2.node_group)
    sub = build_topology(fab, nodes="gpu[001-032]")
    assert sorted(sub.node_group) == [f"gpu{i:03d}" for i in range(1, 33)]
    assert "storage" not in render_tree(sub)
    assert sub.health["fabric_not_in_nodes"] == ["stor01", "stor02", "stor03", "stor04"]


def test_node_list_reports_both_directions():
    topo = gen_topo(hosts=16, rails=1, su_size=8, build_kw={"nodes": ["gpu[001-008]", "gpu099"]})
    assert topo.health["nodes_not_in_fabric"] == ["gpu099"]
    assert topo.health["fabric_not_in_nodes"][0] == "gpu009"
    assert [g for g, _unused in topo.leaf_groups] == [topo.node_group["gpu001"]]
    assert topo.health["ok"] is False


def test_node_map_regex_and_dict():
    text = gen_text(hosts=16, rails=2, su_size=8)
    fab = load_fabric(text)
    t = build_topology(fab, node_map={"pattern": r"gpu(\d+)", "replacement": r"slinky-\1"})
    assert "slinky-001" in t.node_group and "gpu001" not in t.node_group
    t2 = build_topology(fab, node_map={"gpu001": "node-a", "gpu002": None})
    assert "node-a" in t2.node_group and "gpu002" not in t2.node_group
    assert t2.health["unmapped_hosts"] == ["gpu002"]
    with pytest.raises(FabricError):
        build_topology(fab, node_map={"pattern": "(", "replacement": "x"})


def test_missing_spine_cable_is_reported_and_tree_stays_single_rooted():
    g = gen(hosts=64, rails=1, su_size=8)
    text = fabric_gen.render_ibnetdiscover(g)
    # remove one leaf<->spine link (both ends)
    lines = text.splitlines(keepends=True)
    a = next(i for i, ln in enumerate(lines) if '"MF0;spine-r1-01' in ln and ln.startswith("[1]\t"))
    leaf_line = lines[a]
    del lines[a]
    b = next(i for i, ln in enumerate(lines) if ln.startswith("[1]\t") and '"MF0;su01-leaf-r1' in ln)
    del lines[b]
    assert leaf_line
    topo = build_topology(load_fabric("".join(lines)))
    assert len(topo.roots) == 1
    assert any(d["direction"] == "up" for d in topo.health["uplink_anomalies"])


def test_disconnected_fabrics_get_one_root_each():
    a = gen_text(hosts=16, rails=1, su_size=8, seed=1)
    g2 = fabric_gen.generate(fabric_gen.GenSpec(hosts=16, rails=1, su_size=8, name_format="cpu{:03d}"))
    # shift GUIDs of the second fabric so they do not collide
    b = (
        fabric_gen.render_ibnetdiscover(g2)
        .replace('"S-2c5eab03', '"S-2c5eab13')
        .replace('"H-e09d7303', '"H-e09d7313')
        .replace("MF0;", "MF0;b-")
    )
    topo = build_topology(load_fabric([a, b]))
    assert len(topo.roots) == 2
    assert topo.health["summary"]["fabrics"] == 2


def test_lateral_tops_get_a_synthetic_root():
    doc = "switches:\n  a: {nodes: [n1, n2]}\n  b: {nodes: [n3, n4], switches: [a]}\n"
    topo = build_topology(load_fabric(doc, kind="file"))
    assert len(topo.roots) == 1
    assert topo.health["synthetic_roots"] == ["root"]
    assert render_tree(topo).count("SwitchName=") == 3


def test_deterministic_and_stable_names():
    t1 = render_tree(gen_topo(hosts=64, rails=8, su_size=8, seed=1, cut_cables=2))
    t2 = render_tree(gen_topo(hosts=64, rails=8, su_size=8, seed=1, cut_cables=2))
    t3 = render_tree(gen_topo(hosts=64, rails=8, su_size=8, seed=9, cut_cables=2))
    assert t1 == t2
    # a different cut cable changes nothing in the tree
    assert t1 == t3


def test_long_and_digit_tail_switch_names_are_made_safe():
    long = "x" * 80
    tail = "leaf018446744073709551615"
    doc = f"switches:\n  {long}: {{switches: [{tail}]}}\n  {tail}: {{nodes: [n1]}}\n"
    topo = build_topology(load_fabric(doc, kind="file"))
    for name in topo.switches:
        assert len(name) <= 64
        digits = len(name) - len(name.rstrip("0123456789"))
        assert digits <= 18
    render_tree(topo)  # validates


def test_topograph_large_tree_matches_golden(topograph):
    topo = build_topology(load_fabric(topograph / "models" / "large.yaml"))
    ours = canonical_tree(tree_switches(topo))
    golden = canonical_tree(parse_tree_conf((topograph / "ci" / "expected.slinky-oci-sim-tree.conf").read_text()))
    assert ours == golden
    # and the BFS order of leaves matches (leaf lines in the same node order)
    ours_leaves = [m for _unused, k, m in parse_tree_conf(render_tree(topo)) if k == "nodes"]
    gold_leaves = [
        m
        for _unused, k, m in parse_tree_conf((topograph / "ci" / "expected.slinky-oci-sim-tree.conf").read_text())
        if k == "nodes"
    ]
    assert ours_leaves == gold_leaves


def test_topograph_large_block_matches_golden(topograph):
    topo = build_topology(load_fabric(topograph / "models" / "large.yaml"))
    ours, sizes = parse_block_conf(render_block(topo, block_sizes=[8, 16, 32]))
    gold, gsizes = parse_block_conf((topograph / "ci" / "expected.slinky-dra-block.conf").read_text())
    assert [ns for _unused, ns in ours] == [ns for _unused, ns in gold]
    assert sizes == gsizes == [8, 16, 32]
    # the comment keeps the domain id, as topograph's "# rack11=nvl-1-1"
    assert topo.block_domains[ours[0][0]] == "nvl-1-1"


@pytest.mark.parametrize(
    "model", ["small-tree", "medium", "large", "nvl72", "dual-xclr-regular", "dual-xclr-irregular"]
)
def test_topograph_models_render(topograph, model):
    topo = build_topology(load_fabric(topograph / "models" / f"{model}.yaml"))
    assert len(topo.roots) == 1
    render_tree(topo)
    render_block(topo)


def test_medium_block_sizes_from_payload(topograph):
    topo = build_topology(load_fabric(topograph / "models" / "medium.yaml"))
    blocks, sizes = parse_block_conf(render_block(topo, block_sizes=[2, 4]))
    assert [b for b, _unused in blocks] == ["nvl1", "nvl2", "nvl3", "nvl4"]
    assert sizes == [2, 4]


def test_example_bad_has_no_topology(topograph):
    fab = load_fabric(topograph / "output" / "ibnetdiscover" / "example-bad.out")
    assert fab.summary()["switches"] == 0 and len(fab.cas) == 1
    ca = next(iter(fab.cas.values()))
    assert (ca.host, ca.device) == ("dgx-gb200-n01-c1", "HCA-1")
    topo = build_topology(fab)
    assert topo.leaf_groups == []
    with pytest.raises(FabricError, match="no switches"):
        render_tree(topo)


def test_empty_leaf_does_not_pose_as_a_top_tier():
    g = gen(hosts=64, rails=1, su_size=8, radix=16)
    text = fabric_gen.render_ibnetdiscover(g)
    # unplug every host of the last SU: its leaf still hangs off all 4 spines, with no hosts
    drop = tuple(f'"gpu{i:03d} mlx5_0"' for i in range(57, 65))
    text = "".join(ln for ln in text.splitlines(keepends=True) if not any(d in ln for d in drop))
    topo = build_topology(load_fabric(text))
    assert topo.roots == ["spine-r1"]
    assert topo.switches["spine-r1"].tier == 1 and len(topo.switches["spine-r1"].children) == 7
    assert "su08" not in render_tree(topo)


def test_dangling_switch_is_pruned_and_reported():
    doc = (
        "switches:\n  core: {switches: [s1, s2, spare]}\n  s1: {nodes: [a]}\n  s2: {nodes: [b]}\n"
        "  spare: {switches: [spare2]}\n"
    )
    topo = build_topology(load_fabric(doc, kind="file"))
    assert topo.roots == ["core"] and topo.switches["core"].children == ["s1", "s2"]
    assert topo.health["dangling_switches"] == ["spare", "spare2"]


@pytest.mark.parametrize("ports", [False, True])
def test_one_dump_per_rail_plane_merges_to_the_same_topology(ports):
    g = gen(hosts=64, rails=8, su_size=8, sharp=-1, cut_cables=1, seed=2)
    whole = build_topology(load_fabric(fabric_gen.render_ibnetdiscover(g)))
    planes = fabric_gen.planes(g)
    assert len(planes) == 8
    render = fabric_gen.render_ports if ports else fabric_gen.render_ibnetdiscover
    dumps = [render(g, p) for p in planes]
    merged = build_topology(load_fabric(dumps))
    assert render_tree(merged) == render_tree(whole)
    # concatenated output (one file from several runs) parses the same
    assert render_tree(build_topology(load_fabric("".join(dumps)))) == render_tree(whole)
    # a single plane alone: every host on one leaf per SU, still 8 groups
    one = build_topology(load_fabric(dumps[0]))
    assert [len(ns) for _unused, ns in one.leaf_groups] == [8] * 8 or sum(
        len(ns) for _unused, ns in one.leaf_groups
    ) == 63


@st.composite
def random_fabrics(draw):
    from ansible_collections.gpufleet.core.plugins.module_utils.fabric.model import Fabric

    n_sw = draw(st.integers(1, 12))
    fab = Fabric(source="hyp")
    ids = [f"S-{i:016x}" for i in range(n_sw)]
    for i, sid in enumerate(ids):
        fab.switch(sid, f"MF0;sw{i}:X/U1")
    for a, b in draw(st.lists(st.tuples(st.integers(0, n_sw - 1), st.integers(0, n_sw - 1)), max_size=30)):
        if a != b:
            fab.link_switches(ids[a], ids[b])
    n_host = draw(st.integers(0, 10))
    k = 0
    for h in range(n_host):
        for leaf in draw(st.lists(st.integers(0, n_sw - 1), min_size=1, max_size=3, unique=True)):
            cid = f"H-{k:016x}"
            k += 1
            fab.ca(cid, f"h{h:02d} mlx5_{leaf}")
            fab.link_ca(cid, ids[leaf])
    return fab.finish()


@settings(max_examples=400, deadline=None)
@given(random_fabrics())
def test_random_fabrics_give_valid_trees(fab):
    topo = build_topology(fab)
    hosts = set(fab.hosts())
    assert set(topo.node_group) == hosts
    if not hosts:
        assert topo.leaf_groups == []
        return
    sws = tree_switches(topo)
    render_tree(topo)  # raises on anything Slurm rejects
    leaf_nodes = [n for _unused, k, m in sws if k == "nodes" for n in m]
    assert sorted(leaf_nodes) == sorted(hosts)  # every host exactly once
    assert len(topo.roots) == topo.health["summary"]["fabrics"]
    for node in hosts:
        path = topo.path(node)
        assert path[0] in topo.roots and path[-1] == topo.node_group[node]
    half = sorted(hosts)[::2]
    sub = [n for _unused, k, m in tree_switches(topo, nodes=half) if k == "nodes" for n in m]
    assert sorted(sub) == half
    render_tree(topo, nodes=half)
    render_block(topo)
