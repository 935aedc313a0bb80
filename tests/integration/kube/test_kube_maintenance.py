"""Maintenance on a real kube-apiserver (+ kube-scheduler, KWOK GPU nodes): the apply step cordons.

A small fleet is rendered with ``gpufleet_maintenance`` (the real renderer writes
``clusters/<cluster>/maintenance.yaml``); ``gpufleet.core.node_pools`` runs through ``ansible-playbook``:

- check mode changes nothing; a node whose window has not begun waits (listed, not cordoned);
- the due nodes get ``spec.unschedulable`` and the Slinky ``node-cordon-reason`` + ``gpufleet.io/maintenance``
  annotations in one patch; a node cordoned by someone else is left alone; the second run changes nothing;
- the real scheduler keeps a pod with the pool's fence Pending while every node of the pool is cordoned,
  and places it on a returned node after the return;
- the return (the maintenance removed, re-rendered) uncordons gpufleet's nodes and drops both annotations,
  while the foreign cordon stays.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
import yaml
from controlplane import REPO_ROOT, LocalControlPlane
from playbook_runner import run_task

COLLECTIONS = REPO_ROOT / ".build" / "collections"
if str(COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS))

from ansible_collections.gpufleet.core.plugins.module_utils.model import fence
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.pools import cordon
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_fleet, write_render

pytestmark = pytest.mark.kube

CLUSTER = "mt"
NS = "maintenance"
REASON = "PSU swap RMA-4411"
WINDOW = {"start": "2026-12-01T06:00:00Z", "duration": "4h"}
INVENTORY = {
    "fleet.yml": {
        "gpufleet_schema_version": 1,
        "gpufleet_fleet": {"name": "mt", "gitops": {"repo_url": "https://example.invalid/mt.git"}},
    },
    "clusters.yml": {"gpufleet_clusters": [{"name": CLUSTER, "nodes_snapshot": f"snapshots/{CLUSTER}/nodes.yaml"}]},
    "pools.yml": {
        "gpufleet_pools": [
            {"name": "mt-system", "cluster": CLUSTER, "kind": "system", "size": {"nodes": 1}, "pin": ["mt-cpu-0"]},
            {"name": "mt-train", "cluster": CLUSTER, "kind": "slurm", "size": {"nodes": 4}},
        ]
    },
    "tenants.yml": {"gpufleet_tenants": [{"name": "mt-a", "cluster": CLUSTER, "pools": ["mt-train"]}]},
}
MAINTENANCE = [
    {"name": "psu-swap", "cluster": CLUSTER, "nodes": "mt-gpu-[0-1]", "reason": REASON},
    {"name": "firmware", "cluster": CLUSTER, "nodes": "mt-gpu-2", "reason": "firmware 2.3", "window": WINDOW},
]


def _node(name: str, gpus: int) -> dict:
    res = {"cpu": "64", "memory": "512Gi", "pods": "110", **({"nvidia.com/gpu": str(gpus)} if gpus else {})}
    labels = {"kubernetes.io/hostname": name, **({"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"} if gpus else {})}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"capacity": res, "allocatable": res},
    }


def _render(inv: Path, gitops: Path, maintenance: list[dict]) -> None:
    """Write the maintenance list into the inventory and render the whole tree with the real renderer."""
    f = inv / "group_vars" / "all" / "maintenance.yml"
    if maintenance:
        f.write_text(yaml.safe_dump({"gpufleet_maintenance": maintenance}))
    else:
        f.unlink(missing_ok=True)
    write_render(render_fleet(load_fleet(inv)), gitops)


@pytest.fixture(scope="module")
def setup(kube_cluster: LocalControlPlane, tmp_path_factory: pytest.TempPathFactory) -> dict:
    inv = tmp_path_factory.mktemp("mt-inventory")
    (inv / "group_vars" / "all").mkdir(parents=True)
    for fname, data in INVENTORY.items():
        (inv / "group_vars" / "all" / fname).write_text(yaml.safe_dump(data, sort_keys=False))
    (inv / "hosts.yml").write_text("all:\n  hosts:\n    localhost:\n      ansible_connection: local\n")
    nodes = [_node("mt-cpu-0", 0)] + [_node(f"mt-gpu-{i}", 8) for i in range(4)]
    snap = inv / "snapshots" / CLUSTER / "nodes.yaml"
    snap.parent.mkdir(parents=True)
    snap.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": nodes}))
    kube_cluster.create_nodes_from_snapshot(nodes, timeout=120)
    kube_cluster.kubectl("cordon", "mt-gpu-3")  # someone else's cordon: never gpufleet's to lift
    kube_cluster.create_namespace(NS)
    gitops = inv.with_name(inv.name + "-gitops")
    _render(inv, gitops, MAINTENANCE)
    return {"inventory": inv, "gitops": gitops, "kube": kube_cluster}


def run_module(setup: dict, *flags: str, now: str) -> dict:
    """Run gpufleet.core.node_pools at ``now`` through ansible-playbook; return the task result."""
    args = {
        "inventory": str(setup["inventory"]),
        "cluster": CLUSTER,
        "kubeconfig": str(setup["kube"].kubeconfig),
        "gitops_dir": str(setup["gitops"]),
        "now": now,
    }
    play = setup["inventory"].with_name(setup["inventory"].name + "-apply.yml")
    return run_task(setup["inventory"] / "hosts.yml", play, "gpufleet.core.node_pools", args, *flags)


def state(kube: LocalControlPlane) -> dict[str, tuple[bool, dict]]:
    """node -> (cordoned, maintenance annotations) as the apiserver has them."""
    out = {}
    for n in kube.get_json("nodes")["items"]:
        if n["metadata"]["name"].startswith("mt-"):
            ann = n["metadata"].get("annotations") or {}
            out[n["metadata"]["name"]] = (
                bool(n.get("spec", {}).get("unschedulable")),
                {k: v for k, v in ann.items() if k in cordon.OWNED_ANNOTATIONS},
            )
    return out


BEFORE_WINDOW = "2026-12-01T05:00:00Z"
IN_WINDOW = "2026-12-01T06:30:00Z"


def test_check_mode_changes_nothing_and_the_window_waits(setup: dict) -> None:
    before = state(setup["kube"])
    r = run_module(setup, "--check", "--diff", now=BEFORE_WINDOW)
    assert r["changed"] is True
    assert r["maintenance"]["managed"] is True and r["maintenance"]["waiting"] == ["mt-gpu-2"]
    cordoned = {c["node"] for c in r["changes"] if c["after"].get("cordon", {}).get("unschedulable")}
    assert cordoned == {"mt-gpu-0", "mt-gpu-1"}
    assert state(setup["kube"]) == before


def test_apply_cordons_with_the_reason_then_is_unchanged(setup: dict) -> None:
    run_module(setup, now=BEFORE_WINDOW)
    s = state(setup["kube"])
    ours = {cordon.OWNER_ANNOTATION: "psu-swap", cordon.REASON_ANNOTATION: REASON}
    assert s["mt-gpu-0"] == (True, ours) and s["mt-gpu-1"] == (True, ours)
    assert s["mt-gpu-2"] == (False, {})  # its window has not begun
    assert s["mt-gpu-3"] == (True, {})  # someone else's cordon, untouched
    run_module(setup, now=IN_WINDOW)
    assert state(setup["kube"])["mt-gpu-2"] == (
        True,
        {cordon.OWNER_ANNOTATION: "firmware", cordon.REASON_ANNOTATION: "firmware 2.3"},
    )
    again = run_module(setup, now=IN_WINDOW)
    assert again["changed"] is False and again["changes"] == []


PROBE = "slurmd-probe"


def _probe(kube: LocalControlPlane) -> dict:
    return kube.get_json("pod", "-n", NS, PROBE)


def test_scheduler_keeps_new_pods_off_cordoned_nodes(setup: dict) -> None:
    kube = setup["kube"]
    pool = "mt-train"
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": PROBE, "namespace": NS},
        "spec": {
            "nodeSelector": {fence.POOL_KEY: pool},
            "tolerations": [{"key": fence.POOL_KEY, "operator": "Equal", "value": pool, "effect": "NoSchedule"}],
            "containers": [{"name": "c", "image": "registry.invalid/none:1"}],
        },
    }
    kube.kubectl("apply", "-f", "-", input=yaml.safe_dump(pod))
    deadline = time.monotonic() + 60
    reason = ""
    while time.monotonic() < deadline and not reason:
        conds = _probe(kube).get("status", {}).get("conditions", [])
        reason = next((c.get("message", "") for c in conds if c["type"] == "PodScheduled"), "")
        time.sleep(0.5)
    # every node of the pool is cordoned (three by gpufleet, one by someone else): the scheduler says so
    assert _probe(kube)["spec"].get("nodeName") is None
    assert "unschedulable" in reason, reason


def test_return_uncordons_only_gpufleet_nodes(setup: dict) -> None:
    _render(setup["inventory"], setup["gitops"], [])
    assert not (setup["gitops"] / "clusters" / CLUSTER / "maintenance.yaml").exists()
    r = run_module(setup, now=IN_WINDOW)
    assert sorted(c["node"] for c in r["changes"]) == ["mt-gpu-0", "mt-gpu-1", "mt-gpu-2"]
    s = state(setup["kube"])
    assert s["mt-gpu-0"] == s["mt-gpu-1"] == s["mt-gpu-2"] == (False, {})
    assert s["mt-gpu-3"] == (True, {})
    assert run_module(setup, now=IN_WINDOW)["changed"] is False
    # the pending pod now lands on a returned node, never on the foreign-cordoned one
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not _probe(setup["kube"])["spec"].get("nodeName"):
        time.sleep(0.5)
    assert _probe(setup["kube"])["spec"].get("nodeName") in {"mt-gpu-0", "mt-gpu-1", "mt-gpu-2"}
