"""Kueue Topology Aware Scheduling over the fabric labels, on a real kube-apiserver + kube-scheduler
with the sample fleet's 64 KWOK GPU nodes and the real Kueue controller (``kueue_controller``).

The sample inventory is rendered; the apply step (``gpufleet.core.node_pools`` through
ansible-playbook) labels the Nodes from the rendered ``node-labels.yaml``; the Kubernetes-native
tenant ``inference`` (12 nodes of 8 GPUs: gpu049-056 under leaf su07, gpu057-060 under su08) gets the
Kueue objects rendered for its vCluster. The host API stands in for the vCluster API here: vCluster
0.36.1 copies every label of the host Nodes it syncs (``translate.ApplyMetadata`` in its node syncer)
and syncs only the Nodes matching the pool selector, which the render tests check.

Five pods outside Kueue hold gpu049-053, so su07 has 3 free nodes and su08 4. Jobs of pods of 8 GPUs:

- without the fabric labels (and so without a Topology), a Job of 4 spreads over both leaves;
- the apply step's plan shows the labels, applies them, and a second run changes nothing;
- with them, the same Job requiring one leaf (``kueue.x-k8s.io/podset-required-topology``) is
  admitted and all its pods land under su08, the one leaf with room for 4;
- a Job of 5 requiring one leaf stays suspended with Kueue's reason (no leaf has 5 free nodes,
  although the pool's quota of 96 GPUs would allow 12 such pods).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
import yaml
from controlplane import REPO_ROOT, LocalControlPlane, require_control_plane_tools
from kueue_controller import KueueController

COLLECTIONS = REPO_ROOT / ".build" / "collections"
if str(COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS))

from playbook_runner import run_task
from polling import wait_for

from ansible_collections.gpufleet.core.plugins.module_utils.model import fence
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.review import immutable
from ansible_collections.gpufleet.core.plugins.module_utils.topology.labels import SCHEMES, read_label_sets

pytestmark = pytest.mark.kube

SAMPLE = REPO_ROOT / "inventories" / "sample"
CLUSTER, TENANT, NS, QUEUE = "gpu-east", "inference", "serving", "inference"
LABELS_FILE = f"clusters/{CLUSTER}/node-labels.yaml"
OBJECTS_FILE = f"clusters/{CLUSTER}/tenants/{TENANT}/objects/objects.yaml"
LEAF = SCHEMES["gpufleet"].tier(0)
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
STAGES = REPO_ROOT / ".build" / "share" / "kwok" / "stages.yaml"
BLOCKERS = "kueue-tas-held"
HELD = ["gpu049", "gpu050", "gpu051", "gpu052", "gpu053"]  # su07 keeps gpu054-056 free, su08 all 4


def _write_tree(files: dict[str, bytes], root: Path, skip: tuple[str, ...] = ()) -> Path:
    for rel, data in files.items():
        if rel not in skip:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
    return root


def blocker(node: str) -> dict:
    """A pod outside Kueue holding all 8 GPUs of ``node`` (bound directly, stays Running)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"hold-{node}", "namespace": BLOCKERS},
        "spec": {
            "nodeName": node,
            "tolerations": [{"key": fence.POOL_KEY, "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [
                {"name": "hold", "image": "registry.example/hold:1", "resources": {"limits": {"nvidia.com/gpu": "8"}}}
            ],
        },
    }


def running_stages(state: Path) -> Path:
    """KWOK's stages without ``pod-complete``: Job pods stay Running, as training workers do, so a
    Job's pods hold their nodes at once (with it, each pod ends at once and frees its node)."""
    docs = [d for d in yaml.safe_load_all(STAGES.read_text()) if d and d["metadata"]["name"] != "pod-complete"]
    out = state / "stages.yaml"
    out.write_text(yaml.safe_dump_all(docs))
    return out


@pytest.fixture(scope="module")
def plane(tmp_path_factory):
    """A control plane of this module's own: KWOK keeps Job pods Running, and Kueue's controller
    (cluster-wide) sees no other module's Nodes and Jobs."""
    require_control_plane_tools()
    state = tmp_path_factory.mktemp("kueue-plane")
    stages = running_stages(state)
    plane = LocalControlPlane()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GPUFLEET_KWOK_STAGES", str(stages))  # read by tools/cluster.sh at start
        plane.start(state / "cluster")
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="module")
def bed(plane: LocalControlPlane, kueue_crd_files, tmp_path_factory):
    state = tmp_path_factory.mktemp("kueue-tas")
    files = render_fleet(load_fleet(SAMPLE)).files
    labels_doc = yaml.safe_load(files[LABELS_FILE])
    objects = [o for o in yaml.safe_load_all(files[OBJECTS_FILE]) if o]
    plane.create_nodes_from_snapshot(SAMPLE / "snapshots" / CLUSTER / "nodes.yaml", timeout=180)
    plane.create_namespace(BLOCKERS)
    for node in HELD:
        plane.kubectl("apply", "-f", "-", input=json.dumps(blocker(node)))
    plane.apply_crds(kueue_crd_files, timeout=240)
    plane.create_namespace("kueue-system")
    kueue = KueueController()
    kueue.start(plane.kubeconfig, state / "kueue")
    try:
        yield {
            "kube": plane,
            "kueue": kueue,
            "state": state,
            "gitops": _write_tree(files, state / "gitops"),
            "gitops_no_labels": _write_tree(files, state / "gitops-no-labels", skip=(LABELS_FILE,)),
            "labels": read_label_sets(labels_doc["sets"], labels_doc["scheme"]),
            "objects": objects,
        }
    finally:
        kueue.stop()


def node_pools(bed: dict, gitops: Path, *flags: str) -> dict:
    """Run gpufleet.core.node_pools (the apply step) through ansible-playbook; return the task result."""
    hosts = bed["state"] / "hosts.yml"
    hosts.write_text("all:\n  hosts:\n    localhost:\n      ansible_connection: local\n")
    task = {
        "inventory": str(SAMPLE),
        "cluster": CLUSTER,
        "kubeconfig": str(bed["kube"].kubeconfig),
        "gitops_dir": str(gitops),
    }
    return run_task(hosts, bed["state"] / "apply.yml", "gpufleet.core.node_pools", task, *flags)


def apply_objects(kube: LocalControlPlane, objects: list[dict]) -> None:
    doc = {"apiVersion": "v1", "kind": "List", "items": objects}
    # --force-conflicts as Argo CD's server-side apply: Kueue's controller also writes the ClusterQueue spec
    kube.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=gpufleet-tests",
        "-f",
        "-",
        input=json.dumps(doc),
    )


def without_topology(objects: list[dict]) -> list[dict]:
    """The tenant's Kueue objects as rendered for a cluster without fabric labels."""
    out = []
    for o in objects:
        if o["kind"] == "Topology":
            continue
        o = json.loads(json.dumps(o))
        o.get("spec", {}).pop("topologyName", None)
        out.append(o)
    return out


def job(name: str, pods: int, level: str | None, preferred: bool = False) -> dict:
    annotations = {(PREFERRED if preferred else REQUIRED): level} if level else {}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NS, "labels": {"kueue.x-k8s.io/queue-name": QUEUE}},
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "completionMode": "Indexed",
            "suspend": True,  # what Kueue's Job webhook sets (webhooks are not registered here)
            "template": {
                "metadata": {"annotations": annotations},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "worker",
                            "image": "registry.example/allreduce:1",
                            "resources": {
                                "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "8"},
                                "limits": {"nvidia.com/gpu": "8"},
                            },
                        }
                    ],
                },
            },
        },
    }


def placed(kube: LocalControlPlane, name: str, count: int):
    pods = kube.get_json("pods", "-n", NS, "-l", f"batch.kubernetes.io/job-name={name}")["items"]
    nodes = [p["spec"].get("nodeName") for p in pods]
    return nodes if len(nodes) == count and all(nodes) else None


def workload(kube: LocalControlPlane, name: str) -> dict | None:
    for w in kube.get_json("workloads.kueue.x-k8s.io", "-n", NS)["items"]:
        if any(r.get("name") == name for r in w["metadata"].get("ownerReferences", [])):
            return w
    return None


def condition(w: dict | None, kind: str) -> dict | None:
    return next((c for c in ((w or {}).get("status") or {}).get("conditions", []) if c["type"] == kind), None)


def delete_job(kube: LocalControlPlane, name: str) -> None:
    kube.kubectl("delete", "job", name, "-n", NS, "--cascade=foreground", "--wait=true", "--timeout=120s")
    wait_for(lambda: not kube.get_json("pods", "-n", NS)["items"], 180, f"pods of {name} gone")


def leaves(bed: dict, nodes: list[str]) -> set[str]:
    return {bed["labels"][n][LEAF] for n in nodes}


def test_without_fabric_labels_the_job_spreads_over_both_leaves(bed):
    kube = bed["kube"]
    result = node_pools(bed, bed["gitops_no_labels"])
    assert result["fabric_labels"]["managed"] is False, result["fabric_labels"]
    apply_objects(kube, without_topology(bed["objects"]))
    kube.kubectl("apply", "-f", "-", input=json.dumps(job("spread", 4, None)))
    nodes = wait_for(lambda: placed(kube, "spread", 4), 180, "4 pods placed", detail=bed["kueue"].tail)
    pools = {n: kube.get_json("node", n)["metadata"]["labels"].get(fence.POOL_KEY) for n in nodes}
    assert set(pools.values()) == {"inference"}, pools  # Kueue's flavor keeps the pods on the pool's nodes
    # kube-scheduler breaks equal scores by its heap order, here the node names (gpu054-057); were it
    # random, 4 of the 7 free nodes would all be su08's once in C(7, 4) = 35
    assert leaves(bed, nodes) == {"su07-leaf", "su08-leaf"}, sorted(nodes)
    delete_job(kube, "spread")


def test_apply_step_plans_sets_and_keeps_the_labels(bed):
    kube = bed["kube"]
    plan = node_pools(bed, bed["gitops"], "--check", "--diff")
    assert plan["changed"] and plan["fabric_labels"]["managed"], plan["fabric_labels"]
    shown = {c["node"]: c["after"]["labels"] for c in plan["changes"]}
    assert shown["gpu049"][LEAF] == "su07-leaf" and LEAF not in kube.get_json("node", "gpu049")["metadata"]["labels"]
    first = node_pools(bed, bed["gitops"])
    assert first["changed"] and len(first["changes"]) == 64
    for node in kube.get_json("nodes")["items"]:
        name = node["metadata"]["name"]
        if name in bed["labels"]:
            got = {k: v for k, v in node["metadata"]["labels"].items() if SCHEMES["gpufleet"].owns(k)}
            assert got == bed["labels"][name], name
    second = node_pools(bed, bed["gitops"])
    assert second["changed"] is False and second["changes"] == []


def test_job_requiring_one_leaf_lands_under_one_leaf(bed):
    kube = bed["kube"]
    apply_objects(kube, bed["objects"])  # the Topology, and the flavor pointing at it
    kube.kubectl("apply", "-f", "-", input=json.dumps(job("one-leaf", 4, LEAF)))
    nodes = wait_for(lambda: placed(kube, "one-leaf", 4), 180, "4 pods placed", detail=bed["kueue"].tail)
    assert leaves(bed, nodes) == {"su08-leaf"}, sorted(nodes)
    assignment = workload(kube, "one-leaf")["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    # Kueue chose the nodes (down to the hostname level) at admission, and ungated the pods onto them
    assert assignment["levels"][-1] == "kubernetes.io/hostname", assignment
    delete_job(kube, "one-leaf")


def test_job_that_fits_no_leaf_stays_suspended_with_kueues_reason(bed):
    kube = bed["kube"]
    kube.kubectl("apply", "-f", "-", input=json.dumps(job("too-big", 5, LEAF)))
    reserved = wait_for(
        lambda: condition(workload(kube, "too-big"), "QuotaReserved"),
        180,
        "a QuotaReserved=False condition",
        detail=bed["kueue"].tail,
    )
    assert reserved["status"] == "False" and "topology" in reserved["message"].lower(), reserved
    time.sleep(10)  # Kueue keeps retrying; it still does not admit
    assert kube.get_json("job", "too-big", "-n", NS)["spec"]["suspend"] is True
    admitted = condition(workload(kube, "too-big"), "Admitted")
    assert admitted is None or admitted["status"] == "False", admitted
    assert not kube.get_json("pods", "-n", NS, "-l", "batch.kubernetes.io/job-name=too-big")["items"]
    print(f"Kueue's reason: {reserved['reason']}: {reserved['message']}")
    # the same 5 pods only preferring one leaf are admitted, over both leaves of the spine
    kube.kubectl("delete", "job", "too-big", "-n", NS)
    kube.kubectl("apply", "-f", "-", input=json.dumps(job("prefer", 5, LEAF, preferred=True)))
    nodes = wait_for(lambda: placed(kube, "prefer", 5), 180, "5 pods placed", detail=bed["kueue"].tail)
    assert leaves(bed, nodes) == {"su07-leaf", "su08-leaf"}, sorted(nodes)
    delete_job(kube, "prefer")


def test_review_refuses_the_flavor_change_the_api_server_refuses(bed):
    """review/immutable.py's rule for a ResourceFlavor with ``topologyName``, against Kueue's own CRD on the
    real kube-apiserver: a change of its ``nodeLabels`` is refused by both; a change the CRD allows (its
    ``nodeTaints``) by neither."""
    kube = bed["kube"]
    flavor = next(o for o in bed["objects"] if o["kind"] == "ResourceFlavor" and o["spec"].get("topologyName"))
    apply_objects(kube, [flavor])
    before = yaml.safe_dump(flavor).encode()
    relabelled = json.loads(json.dumps(flavor))
    relabelled["spec"]["nodeLabels"] = {**relabelled["spec"]["nodeLabels"], "gpufleet.test/other": "x"}
    tainted = json.loads(json.dumps(flavor))
    tainted["spec"]["nodeTaints"] = [{"key": "gpufleet.test/t", "value": "x", "effect": "NoSchedule"}]
    for changed, refused in ((relabelled, "nodeLabels are immutable when topologyName is set"), (tainted, None)):
        dry = kube.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=gpufleet-tests",
                           "--dry-run=server", "-f", "-", input=json.dumps(changed), check=False)  # fmt: skip
        review = immutable.refusals(OBJECTS_FILE, before, yaml.safe_dump(changed).encode())
        if refused:
            assert dry.returncode != 0 and refused in dry.stderr, dry.stderr
            assert len(review) == 1 and "spec.nodeLabels" in review[0], review
        else:
            assert dry.returncode == 0, dry.stderr
            assert review == [], review
