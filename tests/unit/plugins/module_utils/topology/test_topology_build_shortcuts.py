"""The shortcuts that keep the topology build linear at 16k hosts give the answers of the plain rules.

Each case is one where the obvious cheaper rule would be wrong: counting distinct leaf sets instead
of hosts, folding only switches with identical children, taking a switch's degree once, counting
peers instead of cables, sorting names as plain strings. And names with equal natural keys come in
text order, not in the order a set hands them in.
"""

from __future__ import annotations

import random

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.fabric.model import Fabric
from ansible_collections.gpufleet.core.plugins.module_utils.topology.build import build_topology
from ansible_collections.gpufleet.core.plugins.module_utils.topology.names import natural_key, natural_sorted
from ansible_collections.gpufleet.core.plugins.module_utils.topology.render import render_tree, slinky_topology_spec


def _fabric(switches: list[str], links: list[tuple[str, str, int]], hosts: dict[str, list[str]]) -> Fabric:
    """Switches by name, (a, b, cables) links, host -> the switches its HCAs (one per rail) are on."""
    fab = Fabric(source="test")
    sid = {name: f"S-{i + 1:016x}" for i, name in enumerate(switches)}
    for name, s in sid.items():
        fab.switch(s, f"MF0;{name}:X/U1")
    for a, b, n in links:
        fab.link_switches(sid[a], sid[b], n)
    k = 0
    for host, sws in hosts.items():
        for rail, name in enumerate(sws):
            k += 1
            cid = f"H-{k:016x}"
            fab.ca(cid, f"{host} mlx5_{rail}")
            fab.link_ca(cid, sid[name])
    return fab.finish()


def test_leaf_joins_the_leaf_set_most_hosts_have_not_most_sets():
    # leaf1 serves three hosts on {leaf1, leaf2} and one each on {leaf1, leaf3}, {leaf1, leaf4}:
    # counted per distinct set (1, 1, 1) the tie would go to {leaf1, leaf4}
    leaves = ["leaf1", "leaf2", "leaf3", "leaf4"]
    fab = _fabric(
        ["spine", *leaves],
        [("spine", leaf, 1) for leaf in leaves],
        {
            "h1": ["leaf1", "leaf2"],
            "h2": ["leaf1", "leaf2"],
            "h3": ["leaf1", "leaf2"],
            "h4": ["leaf1", "leaf3"],
            "h5": ["leaf1", "leaf4"],
        },
    )
    topo = build_topology(fab)
    unit = topo.switches[topo.node_group["h1"]]
    assert unit.member_names == ["leaf1", "leaf2"] and unit.nodes == ["h1", "h2", "h3"]
    assert topo.switches[topo.node_group["h4"]].member_names == ["leaf3"]
    assert topo.switches[topo.node_group["h5"]].member_names == ["leaf4"]
    assert [d["node"] for d in topo.health["hosts_outside_unit"]] == ["h4", "h5"]


def test_spines_fold_through_overlapping_children_not_only_identical_ones():
    # spine1 and spine3 reach {a, b}, spine2 reaches {b, c}: grouping identical child sets alone
    # would make two tier-1 switches; sharing b folds all three into one
    fab = _fabric(
        ["spine1", "spine2", "spine3", "leafa", "leafb", "leafc"],
        [
            ("spine1", "leafa", 1),
            ("spine1", "leafb", 1),
            ("spine3", "leafa", 1),
            ("spine3", "leafb", 1),
            ("spine2", "leafb", 1),
            ("spine2", "leafc", 1),
        ],
        {"a": ["leafa"], "b": ["leafb"], "c": ["leafc"]},
    )
    topo = build_topology(fab)
    assert len(topo.roots) == 1
    root = topo.switches[topo.roots[0]]
    assert root.tier == 1 and root.member_names == ["spine1", "spine2", "spine3"]
    assert root.children == ["leafa", "leafb", "leafc"]
    assert topo.health["asymmetric_switches"] == [
        {"switch": name, "tier": 1, "missing_children": 1} for name in ("spine1", "spine2", "spine3")
    ]


def test_switch_left_with_one_neighbour_after_two_dead_ends_go_is_dangling():
    # x has three neighbours (spine, dead1, dead2); once both dead ends are pruned it hangs off the
    # spine alone and goes too: degrees taken once at the start would keep it as a top tier
    fab = _fabric(
        ["spine", "leaf1", "leaf2", "x", "dead1", "dead2"],
        [
            ("spine", "leaf1", 1),
            ("spine", "leaf2", 1),
            ("spine", "x", 1),
            ("x", "dead1", 1),
            ("x", "dead2", 1),
        ],
        {"h1": ["leaf1"], "h2": ["leaf2"]},
    )
    topo = build_topology(fab)
    assert topo.health["dangling_switches"] == ["dead1", "dead2", "x"]
    assert topo.roots == ["spine"] and "x" not in render_tree(topo)


def test_uplinks_are_counted_in_cables_not_peers():
    # spine1 and spine2 have two cables up to the core, spine3 one: counted per peer all have one
    fab = _fabric(
        ["core", "spine1", "spine2", "spine3", "leaf1", "leaf2", "leaf3"],
        [("core", "spine1", 2), ("core", "spine2", 2), ("core", "spine3", 1)]
        + [(s, leaf, 1) for s in ("spine1", "spine2", "spine3") for leaf in ("leaf1", "leaf2", "leaf3")],
        {"h1": ["leaf1"], "h2": ["leaf2"], "h3": ["leaf3"]},
    )
    topo = build_topology(fab)
    assert topo.health["uplink_anomalies"] == [
        {"switch": "spine3", "tier": 1, "direction": "up", "links": 1, "expected": 2}
    ]


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["gpu1000", "gpu999", "gpu0998"], ["gpu0998", "gpu999", "gpu1000"]),  # widths differ: natural
        (["n1", "n01"], ["n1", "n01"]),  # equal keys keep their order (a plain sort would swap them)
        (["a10b2", "a09b3", "a10b1"], ["a09b3", "a10b1", "a10b2"]),  # one shape: plain order is natural
        (["x٣1", "x٣0"], ["x٣0", "x٣1"]),  # a non-ASCII digit in the same place in both
        (["su2-leaf-r10", "su2-leaf-r9"], ["su2-leaf-r9", "su2-leaf-r10"]),
        ([], []),
        (["only"], ["only"]),
    ],
)
def test_natural_sorted_cases(names, expected):
    assert natural_sorted(names) == expected == sorted(names, key=natural_key)


def test_natural_sorted_matches_natural_key_on_random_names():
    rnd = random.Random(23)
    for _round in range(2000):
        width = rnd.choice([1, 2, 3])
        names = [
            rnd.choice(["n", "gpu", "a-", "b."]) + rnd.choice(["", "0"]) + f"{rnd.randrange(10**width)}"
            for _name in range(rnd.randint(0, 8))
        ]
        assert natural_sorted(names) == sorted(names, key=natural_key)


@pytest.mark.parametrize("join", ["spines", "leaves", "host"])
def test_two_trees_joined_by_a_same_tier_cable_or_a_host_are_one_fabric(join):
    # two spines with their own leaves fold into two trees; a cable between the spines (or between two
    # leaves, or a host on a leaf of each) makes them one fabric, so one root goes above both
    links = [("spinea", "leafa1", 1), ("spinea", "leafa2", 1), ("spineb", "leafb1", 1), ("spineb", "leafb2", 1)]
    hosts = {"a1": ["leafa1"], "a2": ["leafa2"], "b1": ["leafb1"], "b2": ["leafb2"]}
    if join == "spines":
        links.append(("spinea", "spineb", 1))
    elif join == "leaves":
        links.append(("leafa2", "leafb1", 1))
    else:  # more hosts on each leaf than the bridging one: the leaves stay in their own units
        hosts.update({"a3": ["leafa2"], "b3": ["leafb1"], "x": ["leafa2", "leafb1"]})
    fab = _fabric(["spinea", "spineb", "leafa1", "leafa2", "leafb1", "leafb2"], links, hosts)
    topo = build_topology(fab)
    assert topo.health["summary"]["fabrics"] == 1
    assert topo.roots == ["root"] and topo.switches["root"].children == ["spinea", "spineb"]


def test_separate_trees_stay_separate_fabrics():
    fab = _fabric(
        ["spinea", "spineb", "leafa1", "leafa2", "leafb1", "leafb2"],
        [("spinea", "leafa1", 1), ("spinea", "leafa2", 1), ("spineb", "leafb1", 1), ("spineb", "leafb2", 1)],
        {"a1": ["leafa1"], "a2": ["leafa2"], "b1": ["leafb1"], "b2": ["leafb2"]},
    )
    topo = build_topology(fab)
    assert topo.health["summary"]["fabrics"] == 2 and topo.roots == ["spinea", "spineb"]


def test_names_with_equal_natural_keys_come_in_text_order_not_set_order():
    # n2 and n02 have the same natural key: sorted out of a set they came in hash order, which
    # changes with PYTHONHASHSEED; they come in text order now
    fab = _fabric(
        ["spine", "leaf1", "leaf2"],
        [("spine", "leaf1", 1), ("spine", "leaf2", 1)],
        {"n2": ["leaf1"], "n02": ["leaf2"], "n002": ["leaf1"], "m1": ["leaf2"]},
    )
    topo = build_topology(fab)
    assert list(slinky_topology_spec(topo)) == ["m1", "n002", "n02", "n2"]
    sub = topo.subset(["n2", "x3", "x03", "x003"])
    assert sub.health["nodes_not_in_fabric"] == ["x003", "x03", "x3"]
    assert sub.health["fabric_not_in_nodes"] == ["m1", "n002", "n02"]
