"""Property tests of the pool assignment (hypothesis): partition, sizes, stability, determinism, NVLink."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_pools import CLUSTER, make_fleet, make_nodes

from ansible_collections.gpufleet.core.plugins.module_utils.model.nodes import NodeInfo
from ansible_collections.gpufleet.core.plugins.module_utils.pools.assign import assign
from ansible_collections.gpufleet.core.plugins.module_utils.pools.lock import render_lock
from ansible_collections.gpufleet.core.plugins.module_utils.pools.pool_table import render_pool_table

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def fleets(draw, with_domains: bool | None = None):
    """A feasible fleet: leaf groups of GPU nodes (maybe NVLink domains), pools whose sizes fit."""
    dom = (
        draw(st.sampled_from([0, 2, 4]))
        if with_domains is None
        else (draw(st.sampled_from([2, 4])) if with_domains else 0)
    )
    per_group = draw(st.integers(1, 4)) * (dom or 1) if dom else draw(st.integers(1, 9))
    groups = draw(st.integers(1, 6))
    gpus = draw(st.sampled_from([4, 8]))
    nodes, group = make_nodes(groups, per_group, gpus=gpus, domain_size=dom)
    total = len(nodes)
    unit = dom or 1
    n_pools = draw(st.integers(1, 5))
    free_units = total // unit
    pools = []
    for i in range(n_pools):
        units = draw(st.integers(0, free_units))
        free_units -= units
        kind = draw(st.sampled_from(["slurm", "kubernetes"]))
        by_gpus = not dom and draw(st.booleans())
        spec = {"name": f"p{i}", "kind": kind}
        if by_gpus:
            spec["size_gpus"] = max(0, units * gpus - draw(st.integers(0, gpus - 1)))
        else:
            spec["size_nodes"] = units * unit
        pools.append(spec)
    if dom:  # pools that may split NVLink domains come after (inventory order breaks ties), any size
        free_nodes = free_units * unit
        for i in range(draw(st.integers(0, 2))):
            size = draw(st.integers(0, free_nodes))
            free_nodes -= size
            pools.append({"name": f"q{i}", "kind": "slurm", "size_nodes": size, "split_nvlink_domains": True})
    pools.append({"name": "spare", "kind": "spare"})
    return nodes, group, pools


def _check_sizes(a, pools, nodes):
    gpn = nodes[0].gpus
    for spec in pools:
        members = a.members(spec["name"])
        if "size_nodes" in spec:
            assert len(members) == spec["size_nodes"], spec
        elif "size_gpus" in spec:
            assert a.gpus(spec["name"]) >= spec["size_gpus"]
            assert len(members) == -(-spec["size_gpus"] // gpn)  # fewest nodes covering it


def _domains_whole(a, nodes, pools):
    """A pool without split_nvlink_domains shares none of its NVLink domains with another pool."""
    splitters = {p["name"] for p in pools if p.get("split_nvlink_domains")} | {"spare"}
    for d in {n.nvlink_domain for n in nodes} - {None}:
        owners = {a.pool_of.get(n.name) for n in nodes if n.nvlink_domain == d}
        if owners - splitters:
            assert len(owners) == 1, (d, owners)


@SETTINGS
@given(fleets())
def test_partition_sizes_and_domains(case):
    nodes, group, pools = case
    a = assign(make_fleet(pools), CLUSTER, nodes, group)
    # every node in exactly one pool (a spare pool takes the rest)
    assert sorted(a.pool_of) == sorted(n.name for n in nodes)
    assert sum(len(a.members(p)) for p in a.pools) == len(nodes)
    _check_sizes(a, pools, nodes)
    _domains_whole(a, nodes, pools)


@SETTINGS
@given(fleets(), st.randoms(use_true_random=False))
def test_same_inputs_same_bytes(case, rnd: random.Random):
    nodes, group, pools = case
    fleet = make_fleet(pools)
    a = assign(fleet, CLUSTER, nodes, group)
    shuffled = list(nodes)
    rnd.shuffle(shuffled)
    items = list(group.items())
    rnd.shuffle(items)
    b = assign(fleet, CLUSTER, shuffled, dict(items))
    assert render_pool_table(a) == render_pool_table(b)
    assert render_lock(a) == render_lock(b)
    # re-running from its own lock changes nothing
    assert assign(fleet, CLUSTER, nodes, group, a.pool_of).moves(a.pool_of) == []


@SETTINGS
@given(fleets(), st.data())
def test_resize_by_k_moves_exactly_k(case, data):
    nodes, group, pools = case
    a0 = assign(make_fleet(pools), CLUSTER, nodes, group)
    sized = [p for p in pools if "size_nodes" in p]
    if not sized:
        return
    target = data.draw(st.sampled_from(sized))
    unit = next((len([m for m in nodes if m.nvlink_domain == n.nvlink_domain]) for n in nodes if n.nvlink_domain), 1)
    if target.get("split_nvlink_domains"):
        unit, spare = 1, len(a0.members("spare"))
    else:  # a pool that keeps domains whole can only take domains the spare pool holds entirely
        spare = sum(
            1
            for d in {n.nvlink_domain for n in nodes}
            if all(a0.pool_of[m.name] == "spare" for m in nodes if m.nvlink_domain == d)
        )
        spare = spare if unit > 1 else len(a0.members("spare"))
    mine = target["size_nodes"] // unit
    k_units = data.draw(st.integers(-mine, spare))
    new = [dict(p) for p in pools]
    spec = next(p for p in new if p["name"] == target["name"])
    spec["size_nodes"] += k_units * unit
    a1 = assign(make_fleet(new), CLUSTER, nodes, group, a0.pool_of)
    moves = a1.moves(a0.pool_of)
    assert len(moves) == abs(k_units) * unit
    for m in moves:
        assert {m.before, m.after} == {"spare", target["name"]}
    _check_sizes(a1, new, nodes)
    _domains_whole(a1, nodes, new)


@SETTINGS
@given(fleets(with_domains=False), st.data())
def test_resize_gpus_moves_only_the_needed_nodes(case, data):
    nodes, group, pools = case
    a0 = assign(make_fleet(pools), CLUSTER, nodes, group)
    by_gpus = [p for p in pools if "size_gpus" in p]
    if not by_gpus:
        return
    target = data.draw(st.sampled_from(by_gpus))
    gpn = nodes[0].gpus
    k = data.draw(st.integers(-(target["size_gpus"] // gpn), len(a0.members("spare"))))
    new = [dict(p) for p in pools]
    spec = next(p for p in new if p["name"] == target["name"])
    spec["size_gpus"] = max(0, spec["size_gpus"] + k * gpn)
    a1 = assign(make_fleet(new), CLUSTER, nodes, group, a0.pool_of)
    before, after = len(a0.members(target["name"])), len(a1.members(target["name"]))
    assert len(a1.moves(a0.pool_of)) == abs(after - before)
    _check_sizes(a1, new, nodes)


@SETTINGS
@given(st.integers(1, 6), st.integers(1, 8), st.integers(0, 40), st.integers(0, 40))
def test_new_and_vanished_nodes(groups, per_group, size, extra):
    nodes, group = make_nodes(groups, per_group)
    size = min(size, len(nodes))
    fleet = make_fleet([{"name": "a", "kind": "slurm", "size_nodes": size}, {"name": "spare", "kind": "spare"}])
    a0 = assign(fleet, CLUSTER, nodes, group)
    gone = set(a0.members("a")[:1]) | set(a0.members("spare")[:1])
    now = [n for n in nodes if n.name not in gone] + [NodeInfo(f"x{i:03d}", 8) for i in range(extra)]
    if size > len(now):
        return  # not feasible any more: covered by test_impossible_requests
    a1 = assign(fleet, CLUSTER, now, group, a0.pool_of)
    kept = set(a0.members("a")) - gone
    assert kept <= set(a1.members("a"))
    assert len(a1.members("a")) == size
    assert all(a1.pool_of.get(f"x{i:03d}") in ("spare", "a") for i in range(extra))
