"""The node_pools module owns the fabric labels: planning them beside the fence, reading the rendered file."""

from __future__ import annotations

import copy

import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.module_utils.model import fence
from ansible_collections.gpufleet.core.plugins.module_utils.pools import apply as pool_apply
from ansible_collections.gpufleet.core.plugins.module_utils.topology.labels import SCHEMES

K = fence.POOL_KEY
G = SCHEMES["gpufleet"]
T0, T1, ACC = G.tier(0), G.tier(1), G.accelerator
POOL = pool_apply.PoolRef("inf", "kubernetes", "ta")
FENCE = {K: "inf", fence.TENANT_KEY: "ta"}
TAINTS = [{"key": K, "value": "inf", "effect": "NoSchedule"}]
FOREIGN = {"fabric.topograph.run/tier-0": "other", "example.com/rack": "r1"}


def node(name="a", labels=None, rv="3"):
    meta = {"name": name, "labels": {**FENCE, **(labels or {})}, "resourceVersion": rv}
    return {"metadata": meta, "spec": {"taints": list(TAINTS)}}


def fabric(**per_node):
    return G, per_node


def patched(n, change):
    """The Node after the JSON merge patch of ``change`` (what the API server does)."""
    out = copy.deepcopy(n)
    labels = out["metadata"]["labels"]
    for k, v in change.patch["metadata"]["labels"].items():
        if v is None:
            labels.pop(k, None)
        else:
            labels[k] = v
    if "spec" in change.patch:
        out["spec"] = {**out["spec"], **change.patch["spec"]}
    return out


def test_sets_the_fabric_labels_and_shows_them_in_the_plan():
    want = {T0: "su07-leaf", T1: "spine"}
    c = pool_apply.plan_node(node(labels=FOREIGN), POOL, None, fabric=fabric(a=want))
    assert c.before["labels"] == FENCE and c.after["labels"] == {**FENCE, **want}
    assert c.patch == {"metadata": {"labels": want, "resourceVersion": "3"}}
    assert pool_apply.plan_node(patched(node(labels=FOREIGN), c), POOL, None, fabric=fabric(a=want)) is None


def test_changes_stale_and_removes_extra_tiers_but_not_foreign_keys():
    n = node(labels={T0: "old-leaf", T1: "spine", G.tier(2): "core", ACC: "nvl-1", **FOREIGN})
    c = pool_apply.plan_node(n, POOL, None, fabric=fabric(a={T0: "su07-leaf", T1: "spine"}))
    assert c.patch["metadata"]["labels"] == {T0: "su07-leaf", G.tier(2): None, ACC: None}
    after = patched(n, c)
    assert {k: after["metadata"]["labels"][k] for k in FOREIGN} == FOREIGN
    assert pool_apply.plan_node(after, POOL, None, fabric=fabric(a={T0: "su07-leaf", T1: "spine"})) is None


def test_a_node_without_an_entry_loses_them_and_none_leaves_them_alone():
    n = node(labels={T0: "su07-leaf"})
    c = pool_apply.plan_node(n, POOL, None, fabric=fabric())
    assert c.patch["metadata"]["labels"] == {T0: None}
    assert pool_apply.plan_node(n, POOL, None, fabric=None) is None  # not managed: not in the view
    assert T0 not in (pool_apply.plan_node(node("b"), None).before["labels"])


def test_fence_labels_cannot_be_smuggled_in_through_the_fabric_map():
    # only the scheme's keys are taken from the fabric map; the pool's fence wins
    want = {T0: "leaf", K: "other-pool", "example.com/x": "1"}
    c = pool_apply.plan_node(node(), POOL, None, fabric=fabric(a=want))
    assert c.patch["metadata"]["labels"] == {T0: "leaf"}


def test_plan_and_second_run_idempotent():
    nodes = [node("a"), node("b", {T0: "l2"}), node("c", {T0: "gone"})]
    fab = fabric(a={T0: "l1"}, b={T0: "l2"})
    changes, missing = pool_apply.plan(nodes, {n: POOL for n in "abc"}, None, fabric=fab)
    assert [c.node for c in changes] == ["a", "c"] and missing == []
    by = {c.node: c for c in changes}
    again = [patched(n, by[n["metadata"]["name"]]) if n["metadata"]["name"] in by else n for n in nodes]
    assert pool_apply.plan(again, {n: POOL for n in "abc"}, None, fabric=fab)[0] == []


def _write(root, doc):
    p = root / "clusters" / "c1" / "node-labels.yaml"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    return p


def test_reads_the_rendered_file(tmp_path):
    doc = {"scheme": "topograph", "sets": [{"labels": {"fabric.topograph.run/tier-0": "l1"}, "nodes": "gpu[1-2]"}]}
    path = _write(tmp_path, doc)
    (scheme, per_node), got, msg = pool_apply.fabric_labels_from_gitops(tmp_path, "c1")
    assert scheme is SCHEMES["topograph"] and got == path and "2 node(s)" in msg
    assert per_node == {"gpu1": {"fabric.topograph.run/tier-0": "l1"}, "gpu2": {"fabric.topograph.run/tier-0": "l1"}}


def test_missing_tree_or_file_means_not_managed(tmp_path):
    assert pool_apply.fabric_labels_from_gitops(None, "c1")[0] is None
    assert pool_apply.fabric_labels_from_gitops(tmp_path / "nope", "c1")[0] is None
    fab, path, msg = pool_apply.fabric_labels_from_gitops(tmp_path, "c1")
    assert fab is None and path is None and "not managed" in msg


@pytest.mark.parametrize(
    "doc, match",
    [
        ("scheme: [", "cannot read"),
        ({"scheme": "gpufleet"}, "exactly scheme and sets"),
        ({"scheme": "mine", "sets": []}, "unknown label scheme"),
        ({"scheme": "gpufleet", "sets": {}}, "expected a list"),
        ({"scheme": "gpufleet", "sets": [{"labels": {K: "x"}, "nodes": "a"}]}, "not a gpufleet fabric label key"),
        ({"scheme": "gpufleet", "sets": [{"labels": {T0: "-bad"}, "nodes": "a"}]}, "not a valid label value"),
        ({"scheme": "gpufleet", "sets": [{"labels": {T0: "x" * 64}, "nodes": "a"}]}, "not a valid label value"),
        ({"scheme": "gpufleet", "sets": [{"labels": {T0: "leaf\n"}, "nodes": "a"}]}, "not a valid label value"),
        ({"scheme": "gpufleet", "sets": [{"labels": {T0: "l"}, "nodes": "a[1-"}]}, r"sets\[0\]\.nodes"),
        ({"scheme": "gpufleet", "sets": [{"labels": {T0: "l"}, "nodes": ["a"]}]}, "hostlist string"),
        (
            {"scheme": "gpufleet", "sets": [{"labels": {T0: "l"}, "nodes": "a"}, {"labels": {T0: "m"}, "nodes": "a"}]},
            r"sets\[1\]\.nodes: a is in an earlier set",
        ),
    ],
)
def test_hostile_file_is_refused_naming_the_entry(tmp_path, doc, match):
    path = _write(tmp_path, doc)
    with pytest.raises(pool_apply.ApplyError, match=match) as exc:
        pool_apply.fabric_labels_from_gitops(tmp_path, "c1")
    assert str(path) in str(exc.value)
