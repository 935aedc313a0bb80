"""node_pools against a real kube-apiserver + kube-scheduler with KWOK GPU nodes.

Inventory -> assign -> lock -> ``ansible-playbook`` running ``gpufleet.core.node_pools`` (check mode,
then for real, then again): labels and taints land, stale ones go, foreign ones stay, the second
run reports ``changed=false``. The Slinky topology annotation comes from a rendered-tree
``node-topology.yaml`` per Slurm tenant: it lands, a stale one goes, foreign annotations stay.
Then the real scheduler shows that a pod with tenant A's fence runs only on A's nodes
and a pod without it on none of the tainted pools' nodes.
"""

from __future__ import annotations

import json
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
from ansible_collections.gpufleet.core.plugins.module_utils.model.nodes import load_nodes
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.pools.assign import assign
from ansible_collections.gpufleet.core.plugins.module_utils.pools.lock import lock_path, render_lock

pytestmark = pytest.mark.kube

CLUSTER = "kwok"
NS = "node-pools"
FOREIGN_TAINT = {"key": "example.com/maintenance", "value": "planned", "effect": "PreferNoSchedule"}
TOPO = fence.TOPOLOGY_ANNOTATION
FOREIGN_ANNOTATION = ("example.com/owner", "ops")

INVENTORY = {
    "fleet.yml": {
        "gpufleet_schema_version": 1,
        "gpufleet_fleet": {"name": "np", "gitops": {"repo_url": "https://example.invalid/np.git"}},
    },
    "clusters.yml": {"gpufleet_clusters": [{"name": CLUSTER, "nodes_snapshot": f"snapshots/{CLUSTER}/nodes.yaml"}]},
    "pools.yml": {
        "gpufleet_pools": [
            {"name": "np-system", "cluster": CLUSTER, "kind": "system", "size": {"nodes": 1}},
            {"name": "np-a-k8s", "cluster": CLUSTER, "kind": "kubernetes", "size": {"gpus": 16}},
            {"name": "np-a-slurm", "cluster": CLUSTER, "kind": "slurm", "size": {"nodes": 1}},
            {"name": "np-b", "cluster": CLUSTER, "kind": "slurm", "size": {"nodes": 2}},
            {"name": "np-spare", "cluster": CLUSTER, "kind": "spare"},
        ]
    },
    "tenants.yml": {
        "gpufleet_tenants": [
            {"name": "tenant-a", "cluster": CLUSTER, "pools": ["np-a-k8s", "np-a-slurm"]},
            {"name": "tenant-b", "cluster": CLUSTER, "pools": ["np-b"]},
        ]
    },
}


def _node(name: str, gpus: int, leaf: str, labels: dict | None = None, taints: list | None = None) -> dict:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "fabric.topograph.run/tier-0": leaf,
                **({"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"} if gpus else {}),
                **(labels or {}),
            },
        },
        "status": {
            "capacity": {
                "cpu": "64",
                "memory": "512Gi",
                "pods": "110",
                **({"nvidia.com/gpu": str(gpus)} if gpus else {}),
            },
            "allocatable": {
                "cpu": "64",
                "memory": "512Gi",
                "pods": "110",
                **({"nvidia.com/gpu": str(gpus)} if gpus else {}),
            },
        },
    }
    if taints:
        node["spec"] = {"taints": taints}
    return node


def snapshot_nodes() -> list[dict]:
    stale = {fence.POOL_KEY: "ghost", fence.TENANT_KEY: "nobody"}
    stale_taint = {"key": fence.POOL_KEY, "value": "ghost", "effect": "NoSchedule"}
    nodes = [_node("np-cpu-0", 0, "leaf-np-0")]
    nodes += [_node(f"np-gpu-{i}", 8, f"leaf-np-{1 + i // 4}") for i in range(8)]
    # a node left over from an older assignment, and one with someone else's taint
    nodes[3] = _node("np-gpu-2", 8, "leaf-np-1", labels=stale, taints=[stale_taint])
    nodes[8] = _node("np-gpu-7", 8, "leaf-np-2", taints=[FOREIGN_TAINT])
    return nodes


@pytest.fixture(scope="module")
def setup(kube_cluster: LocalControlPlane, tmp_path_factory) -> dict:
    inv = tmp_path_factory.mktemp("np-inventory")
    (inv / "group_vars" / "all").mkdir(parents=True)
    for fname, data in INVENTORY.items():
        (inv / "group_vars" / "all" / fname).write_text(yaml.safe_dump(data, sort_keys=False))
    (inv / "hosts.yml").write_text("all:\n  hosts:\n    localhost:\n      ansible_connection: local\n")
    snap = inv / "snapshots" / CLUSTER / "nodes.yaml"
    snap.parent.mkdir(parents=True)
    nodes = snapshot_nodes()
    snap.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": nodes}))
    # an extra Node in the cluster but not in the snapshot/lock, carrying a stale fence
    extra = _node("np-extra", 8, "leaf-np-9", labels={fence.POOL_KEY: "np-b"})
    extra["spec"] = {"taints": [{"key": fence.POOL_KEY, "value": "np-b", "effect": "NoSchedule"}]}
    kube_cluster.create_nodes_from_snapshot([*nodes, extra], timeout=120)
    # a stale topology annotation (np-extra is in no tenant's file) next to a foreign one
    kube_cluster.kubectl("annotate", "node", "np-extra", f"{TOPO}=topo-np:block-stale", "=".join(FOREIGN_ANNOTATION))

    fleet = load_fleet(inv)
    infos = load_nodes(snap)
    groups = {n.name: n.labels["fabric.topograph.run/tier-0"] for n in infos}
    a = assign(fleet, CLUSTER, infos, groups)
    lock = lock_path(fleet, CLUSTER)
    lock.write_text(render_lock(a))
    kube_cluster.create_namespace(NS)
    # the rendered tree's node-topology.yaml of each Slurm tenant (same shape the renderer writes)
    gitops = inv / "gitops-tree"
    topology: dict[str, str] = {}
    for tenant, pool in (("tenant-a", "np-a-slurm"), ("tenant-b", "np-b")):
        values = {n: f"topo-np:block-{groups[n]}" for n in a.members(pool)}
        f = gitops / "clusters" / CLUSTER / "tenants" / tenant / "slurm" / "node-topology.yaml"
        f.parent.mkdir(parents=True)
        f.write_text(yaml.safe_dump({"annotation": TOPO, "nodes": values}))
        topology.update(values)
    assert len(topology) == 3
    # slurm-bridge on np-a-slurm: the node-name labels the renderer writes (render/tenants/bridge.py);
    # np-extra carries a stale one (its pool is not bridged)
    names = {n: n.split(".")[0] for n in a.members("np-a-slurm")}
    f = gitops / "clusters" / CLUSTER / "tenants" / "tenant-a" / "slurm-bridge" / fence.BRIDGE_NAMES_FILE
    f.parent.mkdir(parents=True)
    f.write_text(yaml.safe_dump({"label": fence.BRIDGE_NODENAME_LABEL, "nodes": names}))
    kube_cluster.kubectl("label", "node", "np-extra", f"{fence.BRIDGE_NODENAME_LABEL}=np-extra")
    return {
        "bridge_names": names,
        "inventory": inv,
        "fleet": fleet,
        "assignment": a,
        "kube": kube_cluster,
        "gitops": gitops,
        "topology": topology,
    }


def run_module(setup: dict, *flags: str, gitops_dir: Path | None = None) -> dict:
    """Run gpufleet.core.node_pools through ansible-playbook; return the task result."""
    args = {
        "inventory": str(setup["inventory"]),
        "cluster": CLUSTER,
        "kubeconfig": str(setup["kube"].kubeconfig),
        "gitops_dir": str(gitops_dir or setup["gitops"]),
    }
    play = setup["inventory"].with_name(setup["inventory"].name + "-apply.yml")  # a playbook is not inventory
    return run_task(setup["inventory"] / "hosts.yml", play, "gpufleet.core.node_pools", args, *flags)


def cluster_nodes(kube: LocalControlPlane) -> dict[str, dict]:
    return {
        n["metadata"]["name"]: n for n in kube.get_json("nodes")["items"] if n["metadata"]["name"].startswith("np-")
    }


def owned(node: dict) -> tuple[dict, list]:
    labels = {k: v for k, v in node["metadata"].get("labels", {}).items() if k in fence.OWNED_LABEL_KEYS}
    taints = [
        {k: t[k] for k in ("key", "value", "effect") if k in t}
        for t in node.get("spec", {}).get("taints", [])
        if t["key"] in fence.OWNED_TAINT_KEYS
    ]
    return labels, taints


def test_check_mode_changes_nothing(setup):
    before = {n: owned(v) for n, v in cluster_nodes(setup["kube"]).items()}
    r = run_module(setup, "--check", "--diff")
    assert r["changed"] is True and r["changes"]
    assert {d["before_header"] for d in r["diff"]} == {c["node"] for c in r["changes"]}
    assert {n: owned(v) for n, v in cluster_nodes(setup["kube"]).items()} == before
    assert r["annotations"]["managed"] is True and len(r["annotations"]["files"]) == 2
    diffs = {d["before_header"]: d for d in r["diff"]}
    assert diffs["np-extra"]["before"]["annotations"] == {TOPO: "topo-np:block-stale"}
    assert diffs["np-extra"]["after"]["annotations"] == {}
    for name, value in setup["topology"].items():
        assert diffs[name]["after"]["annotations"] == {TOPO: value}, name
    assert cluster_nodes(setup["kube"])["np-extra"]["metadata"]["annotations"][TOPO] == "topo-np:block-stale"
    # without the rendered tree, annotations are not managed: said in the result, not an error
    r = run_module(setup, "--check", gitops_dir=setup["inventory"] / "no-such-tree")
    assert r["annotations"]["managed"] is False and "does not exist" in r["annotations"]["msg"]
    assert all("annotations" not in c["after"] for c in r["changes"])


def test_labels_and_taints_land_then_second_run_is_unchanged(setup):
    a, fleet = setup["assignment"], setup["fleet"]
    r = run_module(setup, "--diff")
    assert r["changed"] is True
    nodes = cluster_nodes(setup["kube"])
    for name in a.nodes:
        pool = fleet.pools[a.pool_of[name]]
        labels, taints = owned(nodes[name])
        assert labels == fence.node_labels(pool), name
        assert taints == fence.node_taints(pool), name
        assert nodes[name]["metadata"]["labels"]["kubernetes.io/hostname"] == name  # others untouched
    # the foreign taint survives next to ours; the extra node lost its stale fence
    assert FOREIGN_TAINT in nodes["np-gpu-7"]["spec"]["taints"]
    assert owned(nodes["np-extra"]) == ({}, [])
    assert owned(nodes["np-gpu-2"])[0][fence.POOL_KEY] != "ghost"
    # the topology annotation: set from the tenants' files, removed where no file names the node
    carried = {n: v["metadata"].get("annotations", {}).get(TOPO) for n, v in nodes.items()}
    assert {n: v for n, v in carried.items() if v is not None} == setup["topology"]
    key, value = FOREIGN_ANNOTATION
    assert nodes["np-extra"]["metadata"]["annotations"][key] == value  # foreign annotation kept
    assert all(v["metadata"]["annotations"].get("kwok.x-k8s.io/node") for v in nodes.values())
    # slurm-bridge's node-name label: on the bridged pool's Nodes only, the stale one removed
    assert r["bridge_names"]["managed"] is True and r["bridge_names"]["nodes"] == len(setup["bridge_names"]) > 0
    carried = {n: v["metadata"]["labels"].get(fence.BRIDGE_NODENAME_LABEL) for n, v in nodes.items()}
    assert {n: v for n, v in carried.items() if v is not None} == setup["bridge_names"]

    again = run_module(setup, "--diff")
    assert again["changed"] is False and again["changes"] == [] and again.get("diff", []) == []


def _pod(name: str, selector: dict | None, tolerations: list | None, gpus: int = 1) -> dict:
    spec: dict = {
        "terminationGracePeriodSeconds": 0,
        "containers": [
            {"name": "c", "image": "registry.invalid/x:1", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}
        ],
    }
    if selector:
        spec["nodeSelector"] = selector
    if tolerations:
        spec["tolerations"] = tolerations
    if not gpus:
        spec["containers"][0]["resources"] = {}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS}, "spec": spec}


def _wait_unschedulable(kube: LocalControlPlane, name: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    pod: dict = {}
    while time.monotonic() < deadline:
        pod = kube.get_json("pod", name, "-n", NS)
        for c in pod["status"].get("conditions", []):
            if c["type"] == "PodScheduled" and c["status"] == "False" and c.get("reason") == "Unschedulable":
                return c
        time.sleep(0.25)
    raise AssertionError(f"pod {name} not Unschedulable: {pod.get('status')}")


def test_scheduler_keeps_tenants_in_their_pools(setup):
    kube, a, fleet = setup["kube"], setup["assignment"], setup["fleet"]
    run_module(setup)  # idempotent; makes this test independent of the order
    a_k8s = fleet.pools["np-a-k8s"]
    tainted = {n for n, p in a.pool_of.items() if fence.node_taints(fleet.pools[p])}  # np-extra: fence removed
    mine = set(a.members("np-a-k8s"))
    assert len(mine) == 2

    # tenant A's fence (selector + tolerations): every pod lands on A's nodes, until they are full
    fenced = [_pod(f"a-{i}", fence.node_selector(a_k8s), fence.tolerations([a_k8s]), gpus=4) for i in range(4)]
    for p in fenced:
        kube.kubectl("create", "-f", "-", input=json.dumps(p))
    placed = {
        p["metadata"]["name"]: kube.wait_pod_phase(NS, p["metadata"]["name"], "Running", 90)["spec"]["nodeName"]
        for p in fenced
    }
    assert set(placed.values()) == mine, placed
    kube.kubectl(
        "create",
        "-f",
        "-",
        input=json.dumps(_pod("a-full", fence.node_selector(a_k8s), fence.tolerations([a_k8s]), gpus=4)),
    )
    _wait_unschedulable(kube, "a-full")  # A's 16 GPUs are used; it does not spill into other pools

    # the vCluster fence of tenant A (tenant selector + enforced tolerations) reaches only A's pools
    frag = fence.vcluster_sync_fragment([a_k8s, fleet.pools["np-a-slurm"]])["sync"]
    tols = []
    for s in frag["toHost"]["pods"]["enforceTolerations"]:
        kv, effect = s.rsplit(":", 1)
        key, value = kv.split("=", 1)
        tols.append({"key": key, "operator": "Equal", "value": value, "effect": effect})
    kube.kubectl(
        "create",
        "-f",
        "-",
        input=json.dumps(_pod("a-vc", frag["fromHost"]["nodes"]["selector"]["labels"], tols, gpus=8)),
    )
    node = kube.wait_pod_phase(NS, "a-vc", "Running", 90)["spec"]["nodeName"]
    assert node in a.members("np-a-slurm"), node

    # A's tolerations do not open B's nodes
    b = fleet.pools["np-b"]
    kube.kubectl(
        "create", "-f", "-", input=json.dumps(_pod("a-to-b", fence.node_selector(b), fence.tolerations([a_k8s])))
    )
    cond = _wait_unschedulable(kube, "a-to-b")
    assert "taint" in cond.get("message", "") or "untolerated" in cond.get("message", ""), cond

    # the selector alone does not get a pod in: the taint keeps it out
    kube.kubectl("create", "-f", "-", input=json.dumps(_pod("plain-to-a", fence.node_selector(a_k8s), None, gpus=0)))
    _wait_unschedulable(kube, "plain-to-a")

    # a pod without any fence never lands on a tainted pool node
    for i in range(3):
        kube.kubectl("create", "-f", "-", input=json.dumps(_pod(f"plain-{i}", None, None, gpus=0)))
    for i in range(3):
        node = kube.wait_pod_phase(NS, f"plain-{i}", "Running", 90)["spec"]["nodeName"]
        assert node not in tainted, node
