"""The node_pools module owns slurm-bridge's node-name label: each Node of a bridged pool carries its Slurm
node name, read from the rendered ``tenants/<t>/slurm-bridge/node-names.yaml``; with a rendered cluster
but no such file (the bridge turned off) no Node keeps it; without a rendered tree it is left alone."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.module_utils.model import fence
from ansible_collections.gpufleet.core.plugins.module_utils.pools import apply as pool_apply

L = fence.BRIDGE_NODENAME_LABEL
POOL = pool_apply.PoolRef("pretrain", "slurm", "llm")
FENCE = {fence.POOL_KEY: "pretrain", fence.TENANT_KEY: "llm"}
TAINTS = [{"key": fence.POOL_KEY, "value": "pretrain", "effect": "NoSchedule"}]


def node(name: str = "gpu001.example.net", **labels: str) -> dict:
    return {"metadata": {"name": name, "labels": {**FENCE, **labels}, "resourceVersion": "7"},
            "spec": {"taints": list(TAINTS)}}  # fmt: skip


def write(root: Path, tenant: str, nodes: dict, label: str = L) -> Path:
    f = root / "clusters" / "c1" / "tenants" / tenant / "slurm-bridge" / fence.BRIDGE_NAMES_FILE
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(yaml.safe_dump({"label": label, "nodes": nodes}), encoding="utf-8")
    return f


def test_sets_the_label_and_is_idempotent() -> None:
    names = {"gpu001.example.net": "gpu001"}
    c = pool_apply.plan_node(node(), POOL, names=names)
    assert c.patch == {"metadata": {"labels": {L: "gpu001"}, "resourceVersion": "7"}}
    assert c.after["labels"] == {**FENCE, L: "gpu001"}
    assert pool_apply.plan_node(node(**{L: "gpu001"}), POOL, names=names) is None


def test_removes_a_stale_label_only_when_managed() -> None:
    stale = node(**{L: "old", "example.com/rack": "r1"})
    c = pool_apply.plan_node(stale, POOL, names={})
    assert c.patch["metadata"]["labels"] == {L: None}
    assert pool_apply.plan_node(stale, POOL) is None  # not managed: left alone


def test_reads_every_tenants_file(tmp_path: Path) -> None:
    write(tmp_path, "a", {"gpu001.example.net": "gpu001"})
    write(tmp_path, "b", {"gpu002": "gpu002"})
    names, msg = pool_apply.bridge_names_from_gitops(tmp_path, "c1")
    assert names == {"gpu001.example.net": "gpu001", "gpu002": "gpu002"} and "2 node(s)" in msg


def test_a_rendered_cluster_without_the_bridge_removes_the_label(tmp_path: Path) -> None:
    (tmp_path / "clusters" / "c1").mkdir(parents=True)
    assert pool_apply.bridge_names_from_gitops(tmp_path, "c1")[0] == {}
    names, msg = pool_apply.bridge_names_from_gitops(tmp_path / "nothing", "c1")
    assert names is None and "not managed" in msg


@pytest.mark.parametrize(
    ("nodes", "label", "message"),
    [
        ({"n1": "bad value!"}, L, "is not a label value"),
        ({"n1": 3}, L, "is not a label value"),
        ({"n1": "n1"}, "example.com/other", "expected label"),
        ([], L, "expected label"),
    ],
)
def test_a_bad_file_fails_naming_it(tmp_path: Path, nodes, label: str, message: str) -> None:
    f = write(tmp_path, "a", nodes, label)
    with pytest.raises(pool_apply.ApplyError) as exc:
        pool_apply.bridge_names_from_gitops(tmp_path, "c1")
    assert str(exc.value).startswith(str(f)) and message in str(exc.value)


def test_two_tenants_disagreeing_fail(tmp_path: Path) -> None:
    write(tmp_path, "a", {"n1": "n1"})
    write(tmp_path, "b", {"n1": "other"})
    with pytest.raises(pool_apply.ApplyError, match="differs from another tenant"):
        pool_apply.bridge_names_from_gitops(tmp_path, "c1")
