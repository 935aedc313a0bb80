"""The node_pools module owns the Slinky topology annotation: planning and reading it from the tree."""

from __future__ import annotations

import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.module_utils.model import fence
from ansible_collections.gpufleet.core.plugins.module_utils.pools import apply as pool_apply

K = fence.POOL_KEY
A = fence.TOPOLOGY_ANNOTATION
SLURM_A = pool_apply.PoolRef("slurm-a", "slurm", "ta")
FENCED_LABELS = {K: "slurm-a", fence.TENANT_KEY: "ta"}
FENCED_TAINTS = [{"key": K, "value": "slurm-a", "effect": "NoSchedule"}]


def node(name="a", annotations=None, fenced=True, rv="7"):
    meta = {"name": name, "labels": dict(FENCED_LABELS) if fenced else {}, "resourceVersion": rv}
    if annotations is not None:
        meta["annotations"] = annotations
    return {"metadata": meta, "spec": {"taints": list(FENCED_TAINTS)} if fenced else {}}


def test_sets_the_annotation_on_a_fenced_node():
    c = pool_apply.plan_node(node(annotations={"other.io/x": "1"}), SLURM_A, {A: "topo:blk-0"})
    assert c.before["annotations"] == {} and c.after["annotations"] == {A: "topo:blk-0"}
    assert c.before["labels"] == c.after["labels"] == FENCED_LABELS
    assert c.patch == {"metadata": {"labels": {}, "annotations": {A: "topo:blk-0"}, "resourceVersion": "7"}}


def test_changes_a_stale_value():
    c = pool_apply.plan_node(node(annotations={A: "old"}), SLURM_A, {A: "new"})
    assert (c.before["annotations"], c.after["annotations"]) == ({A: "old"}, {A: "new"})
    assert c.patch["metadata"]["annotations"] == {A: "new"}


def test_removes_it_when_the_node_has_no_value():
    n = node(annotations={A: "old", "other.io/x": "1"})
    c = pool_apply.plan_node(n, SLURM_A, {})
    assert (c.before["annotations"], c.after["annotations"]) == ({A: "old"}, {})
    assert c.patch["metadata"]["annotations"] == {A: None}  # merge patch: null deletes, others not sent
    assert "spec" not in c.patch


def test_foreign_annotations_are_untouched_and_ignored():
    n = node(annotations={"other.io/x": "1", A: "v"})
    # a foreign key in the wanted set is not ours to write
    assert pool_apply.plan_node(n, SLURM_A, {A: "v", "other.io/x": "2"}) is None
    c = pool_apply.plan_node(n, SLURM_A, {A: "w"})
    assert "other.io/x" not in c.patch["metadata"]["annotations"]
    assert "other.io/x" not in c.before["annotations"] and "other.io/x" not in c.after["annotations"]


def test_no_op_when_equal_and_unmanaged_when_none():
    assert pool_apply.plan_node(node(annotations={A: "v"}), SLURM_A, {A: "v"}) is None
    # None: annotations not managed at all, not in the view, the stale value stays
    assert pool_apply.plan_node(node(annotations={A: "stale"}), SLURM_A, None) is None
    c = pool_apply.plan_node(node(annotations={A: "stale"}, fenced=False), SLURM_A)
    assert "annotations" not in c.before and "annotations" not in c.patch["metadata"]


def test_labels_and_annotation_in_one_patch():
    c = pool_apply.plan_node(node(fenced=False), SLURM_A, {A: "v"})
    assert c.patch["metadata"]["labels"] == FENCED_LABELS
    assert c.patch["metadata"]["annotations"] == {A: "v"} and c.patch["spec"]["taints"] == FENCED_TAINTS
    assert pool_apply.plan_node(node(annotations={A: "v"}), SLURM_A, {A: "v"}) is None


def test_plan_passes_annotations_per_node():
    nodes = [node("a", {A: "x"}), node("b"), node("c", {A: "gone"})]
    changes = pool_apply.plan(nodes, {n: SLURM_A for n in "abc"}, {"a": {A: "x"}, "b": {A: "y"}})[0]
    assert {c.node: c.after["annotations"] for c in changes} == {"b": {A: "y"}, "c": {}}
    assert pool_apply.plan(nodes, {n: SLURM_A for n in "abc"})[0] == []


def _write(root, tenant, nodes, annotation=A):
    p = root / "clusters" / "c1" / "tenants" / tenant / "slurm" / "node-topology.yaml"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(yaml.safe_dump({"annotation": annotation, "nodes": nodes}))
    return p


def test_annotations_from_gitops(tmp_path):
    ann, files, msg = pool_apply.annotations_from_gitops(tmp_path / "nope", "c1")
    assert ann is None and files == [] and "does not exist" in msg
    ann, files, msg = pool_apply.annotations_from_gitops(tmp_path, "c1")
    assert ann is None and "node-topology.yaml" in msg
    assert pool_apply.annotations_from_gitops(None, "c1")[0] is None
    p1 = _write(tmp_path, "t1", {"n2": "topo:b1", "n1": "topo:b0"})
    p2 = _write(tmp_path, "t2", {"n3": "topo:b2"})
    ann, files, msg = pool_apply.annotations_from_gitops(tmp_path, "c1")
    assert ann == {"n1": {A: "topo:b0"}, "n2": {A: "topo:b1"}, "n3": {A: "topo:b2"}}
    assert files == [p1, p2] and "2 file(s)" in msg


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("annotation: [", "cannot read"),
        ("- a", "expected a mapping"),
        (yaml.safe_dump({"annotation": "other.io/x", "nodes": {}}), "not an annotation gpufleet manages"),
        (yaml.safe_dump({"annotation": A, "nodes": ["n1"]}), "nodes: expected a mapping"),
        (yaml.safe_dump({"annotation": A, "nodes": {"n1": 3}}), r"nodes\.n1: expected a string"),
    ],
)
def test_bad_topology_file(tmp_path, content, match):
    p = _write(tmp_path, "t1", {})
    p.write_text(content)
    with pytest.raises(pool_apply.ApplyError, match=match) as exc:
        pool_apply.annotations_from_gitops(tmp_path, "c1")
    assert str(p) in str(exc.value)


def test_conflicting_values_between_tenants(tmp_path):
    _write(tmp_path, "t1", {"n1": "x"})
    _write(tmp_path, "t2", {"n1": "y"})
    with pytest.raises(pool_apply.ApplyError, match="differs from another tenant"):
        pool_apply.annotations_from_gitops(tmp_path, "c1")
