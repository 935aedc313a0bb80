"""The pool fence enforced by the real vCluster syncer (vcluster 0.36.1, real_vcluster.py) started from
a tenant's rendered values, against a host control plane whose KWOK nodes carry the sample's pool
labels and taints (pools.lock.yaml) and the host's real kube-scheduler.

Shown for tenant ``research`` (pools research-batch, research-debug):
* only its pools' nodes are synced into the vCluster (``sync.fromHost.nodes.selector``);
* a pod created inside lands on one of its nodes;
* a pod created inside with another pool's nodeSelector and toleration, or another tenant's node
  name, never runs on another tenant's node;
* a Secret a pod uses by ``env`` is copied to the host namespace (docs/adr/vcluster-secrets.md).
"""

from __future__ import annotations

import json
import time
from typing import Any

from polling import wait_for
from real_vcluster import RealVCluster

from ansible_collections.gpufleet.core.plugins.module_utils.model import fence

TENANT = "research"
OTHER_POOL = "pretrain"  # llm-pretrain's pool


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec},
    }


def host_pod(vc: RealVCluster, name: str) -> dict[str, Any] | None:
    p = vc.kubectl("get", "pod", f"{name}-x-default-x-{TENANT}", "-n", vc.namespace, "-o", "json", check=False)
    return json.loads(p.stdout) if p.returncode == 0 else None


def test_only_the_tenants_nodes_are_in_its_vcluster(vcluster: RealVCluster, pools: dict[str, str]) -> None:
    mine = sorted(n for n, p in pools.items() if p.startswith("research-"))
    got = wait_for(
        lambda: sorted(n["metadata"]["name"] for n in json.loads(vc_nodes(vcluster))["items"]) == mine or None,
        120,
        "the research nodes in the vCluster",
    )
    assert got


def vc_nodes(vc: RealVCluster) -> str:
    return vc.vkubectl("get", "nodes", "-o", "json").stdout


def test_a_tenant_pod_lands_on_its_pool(vcluster: RealVCluster, pools: dict[str, str]) -> None:
    vcluster.vkubectl("apply", "-f", "-", input=json.dumps(pod("plain")))
    hp = wait_for(lambda: (host_pod(vcluster, "plain") or {}).get("spec", {}).get("nodeName"), 120, "host pod bound")
    assert pools[hp].startswith("research-"), hp
    spec = host_pod(vcluster, "plain")["spec"]
    assert spec["nodeSelector"][fence.TENANT_KEY] == TENANT


def test_another_pools_selector_and_toleration_never_reach_its_nodes(
    vcluster: RealVCluster, pools: dict[str, str]
) -> None:
    sneaky = pod(
        "sneaky",
        nodeSelector=fence.node_selector(OTHER_POOL),
        tolerations=[fence.toleration(OTHER_POOL)],
    )
    vcluster.vkubectl("apply", "-f", "-", input=json.dumps(sneaky))
    hp = wait_for(lambda: host_pod(vcluster, "sneaky"), 120, "host copy of the pod")
    assert hp["spec"]["nodeSelector"][fence.TENANT_KEY] == TENANT  # the fence label is merged in
    time.sleep(10)  # give the host scheduler time to (not) place it
    node = (host_pod(vcluster, "sneaky") or {}).get("spec", {}).get("nodeName")
    assert node is None, f"a pod asking for {OTHER_POOL} was placed on {node} ({pools.get(node)})"


def test_another_tenants_node_name_is_not_synced(vcluster: RealVCluster, pools: dict[str, str]) -> None:
    other = sorted(n for n, p in pools.items() if p == OTHER_POOL)[0]
    vcluster.vkubectl("apply", "-f", "-", input=json.dumps(pod("pinned", nodeName=other)))
    time.sleep(15)
    hp = host_pod(vcluster, "pinned")
    assert hp is None or hp["spec"].get("nodeName") != other, f"pod pinned to {other} reached the host"


def test_a_secret_a_pod_uses_by_env_is_copied_to_the_host(vcluster: RealVCluster) -> None:
    vcluster.vkubectl("create", "secret", "generic", "db", "-n", "default", "--from-literal=password=s3cret")
    env = [{"name": "P", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}]
    p = pod("uses-secret")
    p["spec"]["containers"][0]["env"] = env
    vcluster.vkubectl("apply", "-f", "-", input=json.dumps(p))
    name = f"db-x-default-x-{TENANT}"
    got = wait_for(
        lambda: vcluster.kubectl("get", "secret", name, "-n", vcluster.namespace, check=False).returncode == 0,
        120,
        f"host Secret {name}",
    )
    assert got
