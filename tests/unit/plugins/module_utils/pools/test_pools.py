"""Pool assignment, lock file, pool table and nodes snapshot: example-based tests."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import (
    Cluster,
    FabricSource,
    Fleet,
    GitOps,
    Pool,
    TopologyConfig,
)
from ansible_collections.gpufleet.core.plugins.module_utils.model.nodes import NodeInfo, NodesError, load_nodes
from ansible_collections.gpufleet.core.plugins.module_utils.pools.assign import assign
from ansible_collections.gpufleet.core.plugins.module_utils.pools.assignment import PoolError
from ansible_collections.gpufleet.core.plugins.module_utils.pools.lock import (
    HEADER,
    LockError,
    lock_path,
    read_lock,
    render_lock,
)
from ansible_collections.gpufleet.core.plugins.module_utils.pools.pool_table import render_pool_table

H100 = "NVIDIA-H100-80GB-HBM3"
B200 = "NVIDIA-B200"
CLUSTER = "c1"


# ---------------------------------------------------------------- helpers (also used by test_pools_*.py)
def make_fleet(pools: list[dict], inventory: Path = Path("/inv")) -> Fleet:
    cluster = Cluster(
        name=CLUSTER,
        server="https://kubernetes.default.svc",
        nodes_snapshot=inventory / "snapshots" / CLUSTER / "nodes.yaml",
        fabric=FabricSource(),
        topology=TopologyConfig(),
        components={},
    )
    objs = {}
    for spec in pools:
        spec = dict(spec)
        spec.setdefault("cluster", CLUSTER)
        if spec["kind"] in ("slurm", "kubernetes"):
            spec.setdefault("tenant", "t-" + spec["name"])
        objs[spec["name"]] = Pool(**spec)
    return Fleet(
        name="f",
        inventory_dir=inventory,
        gitops=GitOps(repo_url="https://example.invalid/x.git"),
        clusters={CLUSTER: cluster},
        tenants={},
        pools=objs,
    )


def make_nodes(
    groups: int,
    per_group: int,
    gpus: int = 8,
    product: str | None = H100,
    domain_size: int = 0,
    prefix: str = "n",
    cpu_nodes: int = 0,
) -> tuple[list[NodeInfo], dict[str, str]]:
    """``groups`` leaf groups of ``per_group`` GPU nodes (optionally NVLink domains of ``domain_size``
    consecutive nodes inside each group), plus ``cpu_nodes`` nodes without GPUs or group."""
    nodes, group = [], {}
    i = 0
    for g in range(groups):
        for k in range(per_group):
            i += 1
            name = f"{prefix}{i:04d}"
            dom = f"uuid.{g}-{k // domain_size}" if domain_size else None
            labels = {"nvidia.com/gpu.product": product} if product else {}
            if dom:
                labels["nvidia.com/gpu.clique"] = dom
            nodes.append(NodeInfo(name, gpus, product, dom, labels))
            group[name] = f"leaf{g:02d}"
    for c in range(cpu_nodes):
        nodes.append(NodeInfo(f"cpu{c:02d}", 0, None, None, {}))
    return nodes, group


def sizes(a) -> dict[str, int]:
    return {p: len(a.members(p)) for p in a.pools}


def groups_of(a, pool) -> set[str]:
    return {a.node_group.get(n) for n in a.members(pool)}


SAMPLE_POOLS = [
    {"name": "system", "kind": "system", "size_nodes": 2},
    {"name": "pretrain", "kind": "slurm", "gpu_product": H100, "size_nodes": 32},
    {"name": "batch", "kind": "slurm", "size_nodes": 12},
    {"name": "debug", "kind": "slurm", "size_nodes": 2},
    {"name": "inference", "kind": "kubernetes", "size_gpus": 96},
    {"name": "spare", "kind": "spare"},
]


# ---------------------------------------------------------------- assignment
def test_sample_like_fleet_partitions_every_node():
    nodes, group = make_nodes(8, 8, cpu_nodes=2)
    a = assign(make_fleet(SAMPLE_POOLS), CLUSTER, nodes, group)
    assert sizes(a) == {"system": 2, "pretrain": 32, "batch": 12, "debug": 2, "inference": 12, "spare": 6}
    assert set(a.pool_of) == {n.name for n in nodes} and a.unassigned == ()
    assert set(a.members("system")) == {"cpu00", "cpu01"}  # system prefers nodes without GPUs
    assert len(groups_of(a, "pretrain")) == 4  # 32 nodes in 4 whole leaf groups of 8
    assert len(groups_of(a, "batch")) == 2 and len(groups_of(a, "inference")) == 2
    assert a.gpus("inference") == 96


def test_pool_stays_in_one_group_when_it_fits():
    nodes, group = make_nodes(4, 16)
    fleet = make_fleet(
        [{"name": "a", "kind": "slurm", "size_nodes": 6}, {"name": "b", "kind": "slurm", "size_nodes": 10}]
    )
    a = assign(fleet, CLUSTER, nodes, group)
    assert len(groups_of(a, "a")) == 1 and len(groups_of(a, "b")) == 1
    assert groups_of(a, "a") == groups_of(a, "b")  # best fit: b fills the rest of a's group


@pytest.mark.parametrize("delta", [1, 3, 8, 17])
def test_grow_and_shrink_move_exactly_k(delta):
    nodes, group = make_nodes(8, 8, cpu_nodes=2)
    fleet = make_fleet(SAMPLE_POOLS)
    a0 = assign(fleet, CLUSTER, nodes, group)
    for sign in (1, -1):
        pools = [dict(p) for p in SAMPLE_POOLS]
        pools[2]["size_nodes"] += sign * min(delta, 6 if sign > 0 else 12)
        k = abs(pools[2]["size_nodes"] - 12)
        a1 = assign(make_fleet(pools), CLUSTER, nodes, group, previous=a0.pool_of)
        moves = a1.moves(a0.pool_of)
        assert len(moves) == k
        assert {(m.before, m.after) for m in moves} == {("spare", "batch") if sign > 0 else ("batch", "spare")}


def test_shrink_releases_least_filled_group_first():
    nodes, group = make_nodes(2, 8)
    a0 = assign(
        make_fleet([{"name": "a", "kind": "slurm", "size_nodes": 10}, {"name": "s", "kind": "spare"}]),
        CLUSTER,
        nodes,
        group,
    )
    assert sorted(len([n for n in a0.members("a") if group[n] == g]) for g in ("leaf00", "leaf01")) == [2, 8]
    a1 = assign(
        make_fleet([{"name": "a", "kind": "slurm", "size_nodes": 8}, {"name": "s", "kind": "spare"}]),
        CLUSTER,
        nodes,
        group,
        a0.pool_of,
    )
    assert len(groups_of(a1, "a")) == 1 and len(a1.moves(a0.pool_of)) == 2


def test_grow_prefers_the_pools_own_group():
    nodes, group = make_nodes(3, 8)
    base = [{"name": "a", "kind": "slurm", "size_nodes": 4}, {"name": "s", "kind": "spare"}]
    a0 = assign(make_fleet(base), CLUSTER, nodes, group)
    base[0]["size_nodes"] = 8
    a1 = assign(make_fleet(base), CLUSTER, nodes, group, a0.pool_of)
    assert len(groups_of(a1, "a")) == 1


def test_same_assignment_again_moves_nothing():
    nodes, group = make_nodes(8, 8, cpu_nodes=2)
    fleet = make_fleet(SAMPLE_POOLS)
    a0 = assign(fleet, CLUSTER, nodes, group)
    a1 = assign(fleet, CLUSTER, nodes, group, a0.pool_of)
    assert a1.moves(a0.pool_of) == [] and render_pool_table(a1) == render_pool_table(a0)


def test_vanished_nodes_drop_out_and_new_nodes_go_spare():
    nodes, group = make_nodes(4, 8)
    fleet = make_fleet([{"name": "a", "kind": "slurm", "size_nodes": 10}, {"name": "s", "kind": "spare"}])
    a0 = assign(fleet, CLUSTER, nodes, group)
    gone = a0.members("a")[0]
    newcomer = NodeInfo("z9999", 8, H100, None, {})
    now = [n for n in nodes if n.name != gone] + [newcomer]
    a1 = assign(fleet, CLUSTER, now, group, a0.pool_of)
    moves = a1.moves(a0.pool_of)
    assert len(a1.members("a")) == 10 and a1.pool_of["z9999"] in ("s", "a")
    # the vanished node, one replacement taken from spare, and the newcomer appearing
    assert len(moves) == 3 and any(m.node == gone and m.after is None for m in moves)


def test_gpu_size_takes_fewest_nodes():
    nodes, _unused = make_nodes(1, 4, gpus=4, prefix="s")
    big, group = make_nodes(1, 4, gpus=8, prefix="b")
    fleet = make_fleet([{"name": "k", "kind": "kubernetes", "size_gpus": 20}, {"name": "s", "kind": "spare"}])
    a = assign(fleet, CLUSTER, nodes + big, group)
    assert a.gpus("k") >= 20 and len(a.members("k")) == 3


def test_gpu_product_and_node_selector_constraints():
    h, g1 = make_nodes(2, 4, product=H100, prefix="h")
    b, g2 = make_nodes(2, 4, product=B200, prefix="b")
    b = [
        NodeInfo(n.name, n.gpus, n.gpu_product, None, {**n.labels, "zone": "z1" if i % 2 else "z2"})
        for i, n in enumerate(b)
    ]
    fleet = make_fleet(
        [
            {"name": "hh", "kind": "slurm", "gpu_product": H100, "size_nodes": 5},
            {"name": "bz", "kind": "slurm", "node_selector": {"zone": "z1"}, "size_nodes": 4},
            {"name": "s", "kind": "spare"},
        ]
    )
    a = assign(fleet, CLUSTER, h + b, {**g1, **g2})
    assert all(a.nodes[n].gpu_product == H100 for n in a.members("hh"))
    assert all(a.nodes[n].labels["zone"] == "z1" for n in a.members("bz"))


def test_not_enough_nodes_of_a_product_names_pool_and_key():
    nodes, group = make_nodes(1, 4)
    fleet = make_fleet([{"name": "x", "kind": "slurm", "gpu_product": B200, "size_nodes": 2}])
    with pytest.raises(PoolError, match=r"pool 'x'.*gpufleet_pools\[0\]\.size.*NVIDIA-B200"):
        assign(fleet, CLUSTER, nodes, group)


def test_pins_and_exclude():
    nodes, group = make_nodes(2, 8)
    fleet = make_fleet(
        [
            {"name": "a", "kind": "slurm", "size_nodes": 4, "pin": ("n[0013-0014]",), "exclude": ("n[0001-0008]",)},
            {"name": "b", "kind": "slurm", "size_nodes": 3, "pin": ("n0001",)},
            {"name": "s", "kind": "spare"},
        ]
    )
    a = assign(fleet, CLUSTER, nodes, group)
    assert {"n0013", "n0014"} <= set(a.members("a")) and "n0001" in a.members("b")
    assert not set(a.members("a")) & {f"n{i:04d}" for i in range(1, 9)}
    # shrinking never releases pinned nodes
    fleet2 = make_fleet(
        [
            {"name": "a", "kind": "slurm", "size_nodes": 2, "pin": ("n[0013-0014]",)},
            {"name": "b", "kind": "slurm", "size_nodes": 3, "pin": ("n0001",)},
            {"name": "s", "kind": "spare"},
        ]
    )
    a2 = assign(fleet2, CLUSTER, nodes, group, a.pool_of)
    assert a2.members("a") == ("n0013", "n0014")


@pytest.mark.parametrize(
    ("pools", "match"),
    [
        (
            [
                {"name": "a", "kind": "slurm", "size_nodes": 2, "pin": ("n[0001-0002]",)},
                {"name": "b", "kind": "slurm", "size_nodes": 2, "pin": ("n0002",)},
            ],
            r"pool 'b'.*gpufleet_pools\[1\]\.pin.*'n0002' is also pinned by pool 'a'",
        ),
        (
            [{"name": "a", "kind": "slurm", "size_nodes": 2, "pin": ("x[1-2]",)}],
            r"pool 'a'.*\.pin.*not in the nodes snapshot: x1, x2",
        ),
        (
            [{"name": "a", "kind": "slurm", "size_nodes": 1, "pin": ("n[0001-0002]",)}],
            r"pins 2 nodes but size.nodes is 1",
        ),
        (
            [{"name": "a", "kind": "slurm", "size_nodes": 1, "gpu_product": B200, "pin": ("n0001",)}],
            r"pinned node 'n0001' cannot be in the pool: its gpu product",
        ),
        ([{"name": "a", "kind": "slurm", "size_nodes": 1, "pin": ("n[1-",)}], r"pool 'a'.*\.pin.*bad hostlist"),
        ([{"name": "a", "kind": "slurm", "size_nodes": 99}], r"pool 'a'.*\.size.*needs 99 more nodes"),
    ],
)
def test_impossible_requests(pools, match):
    nodes, group = make_nodes(2, 4)
    with pytest.raises(PoolError, match=match):
        assign(make_fleet(pools), CLUSTER, nodes, group)


def test_nvlink_domains_are_not_split():
    nodes, group = make_nodes(2, 8, domain_size=4)
    fleet = make_fleet(
        [
            {"name": "a", "kind": "slurm", "size_nodes": 8},
            {"name": "b", "kind": "slurm", "size_nodes": 4},
            {"name": "s", "kind": "spare"},
        ]
    )
    a = assign(fleet, CLUSTER, nodes, group)
    for dom in {n.nvlink_domain for n in nodes}:
        assert len({a.pool_of[n.name] for n in nodes if n.nvlink_domain == dom}) == 1
    with pytest.raises(PoolError, match=r"pool 'a'.*whole NVLink domains only"):
        assign(make_fleet([{"name": "a", "kind": "slurm", "size_nodes": 6}]), CLUSTER, nodes, group)
    # allowed when the pool says so
    ok = assign(
        make_fleet([{"name": "a", "kind": "slurm", "size_nodes": 6, "split_nvlink_domains": True}]),
        CLUSTER,
        nodes,
        group,
    )
    assert len(ok.members("a")) == 6 and len({a.nodes[n].nvlink_domain for n in ok.members("a")}) == 2


def test_nvlink_domain_spanning_groups_is_one_unit():
    nodes, group = make_nodes(1, 8, domain_size=4)
    group = {n.name: ("g1" if i in (3, 4) else "g0") for i, n in enumerate(nodes)}  # domains straddle groups
    a = assign(
        make_fleet([{"name": "a", "kind": "slurm", "size_nodes": 4}, {"name": "s", "kind": "spare"}]),
        CLUSTER,
        nodes,
        group,
    )
    assert len({a.nodes[n].nvlink_domain for n in a.members("a")}) == 1


def test_without_a_rest_pool_nodes_stay_unassigned():
    nodes, group = make_nodes(1, 4)
    a = assign(make_fleet([{"name": "a", "kind": "slurm", "size_nodes": 3}]), CLUSTER, nodes, group)
    assert len(a.unassigned) == 1 and sum(r.pool is None for r in a.rows()) == 1
    assert "| - | unassigned | - | 1 | 8 |" in render_pool_table(a)


def test_nodes_without_topology_share_one_group():
    nodes, _unused = make_nodes(1, 6)
    a = assign(
        make_fleet([{"name": "a", "kind": "slurm", "size_nodes": 3}, {"name": "s", "kind": "spare"}]),
        CLUSTER,
        nodes,
        {},
    )
    assert a.members("a") == ("n0001", "n0002", "n0003")


# ---------------------------------------------------------------- table, rows, lock
def test_rows_and_table_are_sorted_and_stable():
    nodes, group = make_nodes(8, 8, cpu_nodes=2)
    fleet = make_fleet(SAMPLE_POOLS)
    a = assign(fleet, CLUSTER, nodes, group)
    b = assign(fleet, CLUSTER, list(reversed(nodes)), dict(reversed(list(group.items()))))
    assert render_pool_table(a) == render_pool_table(b)
    rows = a.rows()
    assert [r.node for r in rows] == sorted(n.name for n in nodes)
    r = next(r for r in rows if r.pool == "pretrain")
    assert (r.kind, r.tenant, r.gpu_product, r.gpus) == ("slurm", "t-pretrain", H100, 8) and r.leaf_group
    table = render_pool_table(a).splitlines()
    node_lines = [ln for ln in table if ln.startswith("| n0") or ln.startswith("| cpu")]
    assert len(node_lines) == len(nodes)


def test_table_diff_shows_exactly_the_moved_nodes():
    nodes, group = make_nodes(8, 8, cpu_nodes=2)
    a0 = assign(make_fleet(SAMPLE_POOLS), CLUSTER, nodes, group)
    pools = [dict(p) for p in SAMPLE_POOLS]
    pools[2]["size_nodes"] = 14
    a1 = assign(make_fleet(pools), CLUSTER, nodes, group, a0.pool_of)
    t0, t1 = set(render_pool_table(a0).splitlines()), set(render_pool_table(a1).splitlines())
    moved = {m.node for m in a1.moves(a0.pool_of)}
    changed_nodes = {ln.split(" | ")[0][2:] for ln in t1 - t0 if ln.startswith("| n")}
    assert changed_nodes == moved and len(moved) == 2


def test_lock_round_trip(tmp_path):
    nodes, group = make_nodes(8, 8, cpu_nodes=2)
    fleet = make_fleet(SAMPLE_POOLS, inventory=tmp_path)
    a = assign(fleet, CLUSTER, nodes, group)
    text = render_lock(a)
    assert text.startswith(HEADER) and text == render_lock(assign(fleet, CLUSTER, nodes, group))
    path = lock_path(fleet, CLUSTER)
    assert path == tmp_path / "snapshots" / CLUSTER / "pools.lock.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    assert read_lock(path, CLUSTER) == dict(a.pool_of)
    assert yaml.safe_load(text)["cluster"] == CLUSTER
    assert read_lock(tmp_path / "missing.yaml") is None


def test_lock_quotes_ambiguous_scalars(tmp_path):
    nodes = [NodeInfo("yes", 8), NodeInfo("0123", 8), NodeInfo("1e3", 8)]
    a = assign(make_fleet([{"name": "s", "kind": "spare"}]), CLUSTER, nodes, {})
    p = tmp_path / "l.yaml"
    p.write_text(render_lock(a))
    assert read_lock(p) == {"0123": "s", "1e3": "s", "yes": "s"}


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("nodes: [a, b]\n", "nodes: expected a mapping"),
        ("cluster: other\nnodes: {}\n", "cluster: is 'other', expected 'c1'"),
        ("nodes: {a: 3}\n", "nodes.a: expected a node name mapped to a pool name"),
        ("bogus: 1\n", "unknown key"),
        ("nodes: {a: [\n", r"l.yaml:\d+: not valid YAML"),
    ],
)
def test_bad_lock(tmp_path, text, match):
    p = tmp_path / "l.yaml"
    p.write_text(text)
    with pytest.raises(LockError, match=match):
        read_lock(p, CLUSTER)


# ---------------------------------------------------------------- nodes snapshot
def _node(name, gpus=None, labels=None):
    n = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}}}
    if gpus is not None:
        n["status"] = {"capacity": {"nvidia.com/gpu": gpus, "cpu": "64"}}
    return n


def test_load_nodes(tmp_path):
    p = tmp_path / "nodes.yaml"
    items = [
        _node("b", "8", {"nvidia.com/gpu.product": H100, "nvidia.com/gpu.clique": "u.1"}),
        _node("a", 4),
        _node("c"),
    ]
    p.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    nodes = load_nodes(p)
    assert [n.name for n in nodes] == ["a", "b", "c"]
    assert nodes[1] == NodeInfo("b", 8, H100, "u.1", {})
    assert nodes[1].labels["nvidia.com/gpu.product"] == H100 and nodes[2].gpus == 0


@pytest.mark.parametrize(
    ("doc", "match"),
    [
        ({"kind": "Node", "metadata": {"name": "a"}}, "expected a 'kind: List'"),
        (
            {"kind": "List", "items": [_node("a"), {"kind": "Pod", "metadata": {"name": "p"}}]},
            r"items\[1\]: kind is 'Pod'",
        ),
        ({"kind": "List", "items": [{"kind": "Node", "metadata": {}}]}, r"items\[0\]: metadata.name is missing"),
        (
            {"kind": "List", "items": [_node("a", "eight")]},
            r"items\[0\] \(a\): status.capacity\['nvidia.com/gpu'\] is 'eight'",
        ),
        ({"kind": "List", "items": [_node("a"), _node("a")]}, r"items\[1\]: duplicate node name 'a'"),
    ],
)
def test_bad_nodes_snapshot_names_file_and_item(tmp_path, doc, match):
    p = tmp_path / "nodes.yaml"
    p.write_text(yaml.safe_dump(doc))
    with pytest.raises(NodesError, match=match) as exc:
        load_nodes(p)
    assert str(p) in str(exc.value)


def test_nodes_snapshot_invalid_yaml_and_missing(tmp_path):
    p = tmp_path / "nodes.yaml"
    p.write_text("kind: List\nitems: [\n")
    with pytest.raises(NodesError, match=r"nodes.yaml:\d+: not valid YAML"):
        load_nodes(p)
    with pytest.raises(NodesError, match="cannot read"):
        load_nodes(tmp_path / "nope.yaml")


def test_sample_inventory_assigns(repo_root):
    from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet

    fleet = load_fleet(repo_root / "inventories" / "sample")
    snap = fleet.clusters["gpu-east"].nodes_snapshot
    if snap.exists():
        nodes = load_nodes(snap)
        group: dict[str, str] = {}
    else:  # the topology helper writes the real snapshot; until then a synthetic 64-node fleet
        nodes, group = make_nodes(8, 8, cpu_nodes=2)
    a = assign(fleet, "gpu-east", nodes, group)
    assert len(a.members("pretrain")) == 32 and a.gpus("inference") >= 96
    assert set(a.pool_of) | set(a.unassigned) == {n.name for n in nodes}


def test_remainder_of_a_split_domain_is_not_taken_by_a_whole_domain_pool():
    nodes, group = make_nodes(1, 8, domain_size=4)
    base = [
        {"name": "a", "kind": "slurm", "size_nodes": 0},
        {"name": "q", "kind": "slurm", "size_nodes": 6, "split_nvlink_domains": True},
        {"name": "s", "kind": "spare"},
    ]
    a0 = assign(make_fleet(base), CLUSTER, nodes, group)
    assert len(a0.members("s")) == 2  # the rest of a domain q splits
    base[0]["size_nodes"] = 2
    with pytest.raises(PoolError, match=r"pool 'a'.*whole NVLink domains only"):
        assign(make_fleet(base), CLUSTER, nodes, group, a0.pool_of)


@pytest.mark.parametrize(
    ("raw", "millis"),
    [("190", 190_000), ("500m", 500), (64, 64_000), ("1.5", 1500), ("2k", 2_000_000), ("1e3", 1_000_000)],
)
def test_cpu_quantities(tmp_path, raw, millis):
    p = tmp_path / "nodes.yaml"
    node = _node("a", 8)
    node["status"]["allocatable"] = {"cpu": raw, "memory": "1990Gi"}
    p.write_text(yaml.safe_dump({"kind": "List", "items": [node]}))
    (n,) = load_nodes(p)
    assert n.cpu_millis == millis and n.memory_bytes == 1990 * 2**30


def test_bad_quantity_names_item(tmp_path):
    p = tmp_path / "nodes.yaml"
    node = _node("a", 8)
    node["status"]["allocatable"] = {"memory": "lots"}
    p.write_text(yaml.safe_dump({"kind": "List", "items": [node]}))
    with pytest.raises(NodesError, match=r"items\[0\] \(a\): status.allocatable.memory is 'lots'"):
        load_nodes(p)


def test_pool_resources_for_kueue():
    nodes = [
        NodeInfo(f"n{i}", 8, H100, None, {}, cpu_millis=190_000 + 500 * (i == 0), memory_bytes=1990 * 2**30)
        for i in range(3)
    ]
    a = assign(
        make_fleet([{"name": "k", "kind": "kubernetes", "size_nodes": 2}, {"name": "s", "kind": "spare"}]),
        CLUSTER,
        nodes,
        {},
    )
    assert a.resources("k") == {"cpu": "380500m", "memory": "3980Gi", "nvidia.com/gpu": 16}
    assert a.resources("s") == {"cpu": 190, "memory": "1990Gi", "nvidia.com/gpu": 8}
