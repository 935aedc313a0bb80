"""The pool fence: one key, consistent label/taint/selector/toleration fragments everywhere."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.model import fence
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Pool, Tenant

A = Pool(name="k8s-a", cluster="c", kind="kubernetes", tenant="ta", size_gpus=16, gpu_product="NVIDIA-H100-80GB-HBM3")
A2 = Pool(name="slurm-a", cluster="c", kind="slurm", tenant="ta", size_nodes=4)
B = Pool(name="slurm-b", cluster="c", kind="slurm", tenant="tb", size_nodes=4)
SYS = Pool(name="system", cluster="c", kind="system", size_nodes=2)
SPARE = Pool(name="spare", cluster="c", kind="spare")


def test_key_is_restricted_from_kubelets():
    assert fence.POOL_KEY.startswith("node-restriction.kubernetes.io/")
    assert fence.TENANT_KEY.startswith("node-restriction.kubernetes.io/")


def test_label_and_taint_share_key_and_value():
    assert fence.node_labels(B) == {fence.POOL_KEY: "slurm-b", fence.TENANT_KEY: "tb"}
    assert fence.node_taints(B) == [{"key": fence.POOL_KEY, "value": "slurm-b", "effect": "NoSchedule"}]
    assert fence.node_labels(SPARE) == {fence.POOL_KEY: "spare"}
    assert fence.node_taints(SPARE)[0]["value"] == "spare"
    assert fence.node_taints("by-name") == [{"key": fence.POOL_KEY, "value": "by-name", "effect": "NoSchedule"}]


def test_system_pool_is_labelled_not_tainted():
    assert fence.node_labels(SYS) == {fence.POOL_KEY: "system"}
    assert fence.node_taints(SYS) == [] and fence.tolerations([SYS]) == []


def test_selector_and_tolerations_match_the_node_fence():
    for p in (A, A2, B, SPARE):
        sel = fence.node_selector(p)
        assert sel.items() <= fence.node_labels(p).items()
        (tol,) = fence.tolerations([p])
        (taint,) = fence.node_taints(p)
        assert (tol["key"], tol["value"], tol["effect"], tol["operator"]) == (
            taint["key"],
            taint["value"],
            taint["effect"],
            "Equal",
        )
    assert [t["value"] for t in fence.tolerations([B, A, A, SYS])] == ["k8s-a", "slurm-b"]


def test_vcluster_fragment_one_pool():
    frag = fence.vcluster_sync_fragment([A])
    assert frag == {
        "sync": {
            "fromHost": {"nodes": {"selector": {"labels": {fence.POOL_KEY: "k8s-a"}}}},
            "toHost": {"pods": {"enforceTolerations": [f"{fence.POOL_KEY}=k8s-a:NoSchedule"]}},
        }
    }


def test_vcluster_fragment_several_pools_of_one_tenant_selects_by_tenant():
    frag = fence.vcluster_sync_fragment(iter([A2, A]))
    assert frag["sync"]["fromHost"]["nodes"]["selector"]["labels"] == {fence.TENANT_KEY: "ta"}
    assert frag["sync"]["toHost"]["pods"]["enforceTolerations"] == [
        f"{fence.POOL_KEY}=k8s-a:NoSchedule",
        f"{fence.POOL_KEY}=slurm-a:NoSchedule",
    ]
    with pytest.raises(fence.FenceError, match="one tenant"):
        fence.vcluster_sync_fragment([A, B])
    with pytest.raises(fence.FenceError, match="no pools"):
        fence.vcluster_sync_fragment([])


def test_slinky_nodeset_fragment():
    assert fence.slinky_nodeset_fragment(B) == {
        "podSpec": {
            "nodeSelector": {fence.POOL_KEY: "slurm-b"},
            "tolerations": [{"key": fence.POOL_KEY, "operator": "Equal", "value": "slurm-b", "effect": "NoSchedule"}],
        }
    }


def test_kueue_only_for_kubernetes_pools():
    rf = fence.kueue_resource_flavor(A)
    assert rf["kind"] == "ResourceFlavor" and rf["metadata"]["name"] == "k8s-a"
    assert rf["spec"]["nodeLabels"] == {fence.POOL_KEY: "k8s-a", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    assert rf["spec"]["tolerations"] == fence.tolerations([A])
    cq = fence.kueue_cluster_queue(A, Tenant(name="ta", cluster="c", pools=("k8s-a",)), gpus=16, cpu=512, memory="4Ti")
    spec = cq["spec"]
    assert spec["cohortName"] == fence.KUEUE_COHORT
    assert spec["namespaceSelector"] == {"matchLabels": {fence.NAMESPACE_TENANT_LABEL: "ta"}}
    (rg,) = spec["resourceGroups"]
    assert rg["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu"]
    assert rg["flavors"][0]["name"] == "k8s-a"
    assert rg["flavors"][0]["resources"][-1] == {"name": "nvidia.com/gpu", "nominalQuota": 16, "borrowingLimit": 0}
    for p in (B, SYS, SPARE, "name-only"):
        with pytest.raises(fence.FenceError, match="only kubernetes pools"):
            fence.kueue_resource_flavor(p)
        with pytest.raises(fence.FenceError, match="only kubernetes pools"):
            fence.kueue_cluster_queue(p, "ta", gpus=1)
    with pytest.raises(fence.FenceError, match="belongs to tenant 'ta'"):
        fence.kueue_cluster_queue(A, "tb", gpus=1)


def test_daemonset_tolerations_cover_every_pool():
    tols = fence.daemonset_tolerations([A, B, SYS, SPARE])
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in tols
    pool_tol = {"key": fence.POOL_KEY, "operator": "Exists", "effect": "NoSchedule"}
    assert pool_tol in tols
    assert fence.daemonset_tolerations(gpu_default=False) == [pool_tol]
    for p in (A, B, SPARE):  # every taint is tolerated
        for t in fence.node_taints(p):
            assert any(x["key"] == t["key"] and x["effect"] == t["effect"] for x in tols)


def _tolerates(tols, taint):
    for t in tols:
        if t["key"] != taint["key"] or t.get("effect", taint["effect"]) != taint["effect"]:
            continue
        if t["operator"] == "Exists" or t.get("value") == taint["value"]:
            return True
    return False


@pytest.mark.parametrize("pod_pool", [A, A2, B, SPARE])
def test_a_pods_fence_reaches_only_its_pool(pod_pool):
    """Simulate the scheduler's taint/selector filter for every pool's node."""
    sel, tols = fence.node_selector(pod_pool), fence.tolerations([pod_pool])
    for node_pool in (A, A2, B, SYS, SPARE):
        labels, taints = fence.node_labels(node_pool), fence.node_taints(node_pool)
        fits = sel.items() <= labels.items() and all(_tolerates(tols, t) for t in taints)
        assert fits == (node_pool is pod_pool)
    # without the fence only the untainted system pool is reachable
    reachable = [p for p in (A, A2, B, SYS, SPARE) if not fence.node_taints(p)]
    assert reachable == [SYS]
