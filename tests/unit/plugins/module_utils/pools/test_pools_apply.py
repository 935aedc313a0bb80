"""Planning the node fence (pure part of the node_pools module)."""

from __future__ import annotations

import shutil

import pytest
from test_pools import make_nodes

from ansible_collections.gpufleet.core.plugins.module_utils.model import fence
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.pools import apply as pool_apply
from ansible_collections.gpufleet.core.plugins.module_utils.pools.assign import assign
from ansible_collections.gpufleet.core.plugins.module_utils.pools.lock import lock_path, render_lock

K = fence.POOL_KEY
T = fence.TENANT_KEY
SLURM_A = pool_apply.PoolRef("slurm-a", "slurm", "ta")


def node(name, labels=None, taints=None, rv="7"):
    return {
        "metadata": {"name": name, "labels": labels or {}, "resourceVersion": rv},
        "spec": {"taints": taints} if taints is not None else {},
    }


def test_plan_adds_label_and_taint_keeps_others():
    n = node("a", {"x": "1"}, [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}])
    c = pool_apply.plan_node(n, SLURM_A)
    assert c.before == {"labels": {}, "taints": []}
    assert c.after == {
        "labels": {K: "slurm-a", T: "ta"},
        "taints": [{"key": K, "value": "slurm-a", "effect": "NoSchedule"}],
    }
    assert c.patch["metadata"] == {"labels": {K: "slurm-a", T: "ta"}, "resourceVersion": "7"}
    assert c.patch["spec"]["taints"] == [
        {"key": "nvidia.com/gpu", "effect": "NoSchedule"},
        {"key": K, "value": "slurm-a", "effect": "NoSchedule"},
    ]


def test_plan_is_idempotent():
    n = node("a", {"x": "1", K: "slurm-a", T: "ta"}, [{"key": K, "value": "slurm-a", "effect": "NoSchedule"}])
    assert pool_apply.plan_node(n, SLURM_A) is None


def test_plan_removes_stale_fence():
    n = node(
        "a",
        {K: "old", T: "tx", "y": "2"},
        [{"key": K, "value": "old", "effect": "NoSchedule"}, {"key": "z", "effect": "NoExecute"}],
    )
    c = pool_apply.plan_node(n, pool_apply.PoolRef("system", "system"))
    assert c.patch["metadata"]["labels"] == {K: "system", T: None}
    assert c.patch["spec"]["taints"] == [{"key": "z", "effect": "NoExecute"}]
    gone = pool_apply.plan_node(n, None)
    assert gone.patch["metadata"]["labels"] == {K: None, T: None} and gone.after == {"labels": {}, "taints": []}


def test_plan_lists_missing_nodes_sorted():
    changes, missing = pool_apply.plan([node("b"), node("a")], {"a": SLURM_A, "zz": SLURM_A, "b": SLURM_A})
    assert [c.node for c in changes] == ["a", "b"] and missing == ["zz"]


def test_explicit_mapping():
    m = pool_apply.mapping_from_explicit({"b": "p", "a": {"pool": "q", "kind": "system"}})
    assert list(m) == ["a", "b"] and m["a"] == pool_apply.PoolRef("q", "system") and m["b"].kind is None
    for bad, match in (({"a": 3}, "expected a pool name"), ({"a": {"pool": "p", "x": 1}}, "unknown key")):
        with pytest.raises(pool_apply.ApplyError, match=match):
            pool_apply.mapping_from_explicit(bad)


def test_mapping_from_inventory(tmp_path, repo_root):
    inv = tmp_path / "inv"
    shutil.copytree(repo_root / "inventories" / "sample", inv)
    for old in inv.glob("snapshots/*/pools.lock.yaml"):  # start without a lock
        old.unlink()
    with pytest.raises(pool_apply.ApplyError, match=r"no pool lock.*render the inventory first"):
        pool_apply.mapping_from_inventory(inv, "gpu-east")
    with pytest.raises(pool_apply.ApplyError, match="cluster 'nope' is not defined"):
        pool_apply.mapping_from_inventory(inv, "nope")
    fleet = load_fleet(inv)
    nodes, group = make_nodes(8, 8, cpu_nodes=2)
    a = assign(fleet, "gpu-east", nodes, group)
    path = lock_path(fleet, "gpu-east")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_lock(a))
    mapping, got_path = pool_apply.mapping_from_inventory(inv, "gpu-east")
    assert got_path == path and {n: p.name for n, p in mapping.items()} == dict(a.pool_of)
    path.write_text(path.read_text().replace(": spare", ": ghost", 1))
    with pytest.raises(pool_apply.ApplyError, match="pool 'ghost' is not a pool of cluster"):
        pool_apply.mapping_from_inventory(inv, "gpu-east")
