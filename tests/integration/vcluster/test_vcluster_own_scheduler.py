"""The host admission fence (render/tenants/host_fence.py) of a tenant whose vCluster runs its own scheduler,
on the real kube-apiserver (MutatingAdmissionPolicy / ValidatingAdmissionPolicy, Kubernetes 1.36) and
through the real vCluster 0.36.1 syncer and its virtual kube-scheduler, started from the Kubernetes
tenant's rendered values (``inference``: Kueue places by topology, so the render turns the vCluster's
scheduler on). The fence objects are the rendered ``tenants/inference/host/fence.yaml``.

With its own scheduler vCluster creates host pods already bound and checks a ``nodeName`` only against
the virtual Nodes; so the tests bind pods to another pool's node (directly on the host, and from inside
the vCluster through a virtual Node the tenant created with that node's name), give pods another pool's
selector and toleration, and check that the host refuses or re-fences every one of them.

Limit (KWOK, no kubelet): a pod that arrives bound keeps the tenant selector the policy set, and the
real kubelet refuses a bound pod whose node lacks it (NodeAffinity admission); KWOK does not, so the
tests stop at what the API server stores.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kueue_controller import KueueController  # tests/integration/kube, on the path (conftest)
from polling import wait_for
from real_vcluster import RealVCluster

from ansible_collections.gpufleet.core.plugins.module_utils.model import fence
from ansible_collections.gpufleet.core.plugins.module_utils.model.contracts import (
    CONTROLLER_MANAGER_USERS,
    KUEUE_QUEUE_LABEL,
    KUEUE_REQUIRED_TOPOLOGY,
    KUEUE_TOPOLOGY_GATE,
)
from ansible_collections.gpufleet.core.plugins.module_utils.topology.labels import SCHEMES, read_label_sets

REPO = Path(__file__).resolve().parents[3]
TENANT = "inference"
NS = f"vc-{TENANT}"
TENANT_DIR = REPO / "gitops" / "clusters" / "gpu-east" / "tenants" / TENANT
OTHER_POOL = "pretrain"  # llm-pretrain's pool


def pod(name: str, namespace: str = "default", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec},
    }


@pytest.fixture(scope="module")
def fenced(host, tmp_path_factory) -> Iterator[RealVCluster]:
    docs = [d for d in yaml.safe_load_all((TENANT_DIR / "host" / "fence.yaml").read_text()) if d]
    assert docs, "the Kubernetes tenant has no rendered host fence"
    host.kubectl("apply", "--server-side", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                                         "items": docs}))  # fmt: skip
    vc = RealVCluster(TENANT, TENANT_DIR / "vcluster" / "values.yaml", host.kubeconfig,
                      tmp_path_factory.mktemp("vc") / TENANT)  # fmt: skip
    try:
        vc.start()
        yield vc
    finally:
        vc.stop()


def _host_create(vc: RealVCluster, obj: dict, *args: str):
    return vc.kubectl("create", *args, "-f", "-", input=json.dumps(obj), check=False)


def _host_pod(vc: RealVCluster, name: str) -> dict | None:
    p = vc.kubectl("get", "pod", name, "-n", NS, "-o", "json", check=False)
    return json.loads(p.stdout) if p.returncode == 0 else None


def test_a_pod_bound_to_another_pools_node_is_refused(fenced: RealVCluster, pools: dict[str, str]) -> None:
    other = sorted(n for n, p in pools.items() if p == OTHER_POOL)[0]
    mine = sorted(n for n, p in pools.items() if p == TENANT)[0]
    refused = _host_create(fenced, pod("bound-other", NS, nodeName=other))
    assert refused.returncode != 0 and "run only on the nodes of its pools" in refused.stderr, refused.stderr
    assert _host_create(fenced, pod("bound-mine", NS, nodeName=mine)).returncode == 0
    assert _host_pod(fenced, "bound-mine")["spec"]["nodeSelector"] == {fence.TENANT_KEY: TENANT}


def test_another_pools_toleration_is_refused_and_its_selector_refenced(fenced: RealVCluster) -> None:
    tol = _host_create(fenced, pod("tol-other", NS, tolerations=[fence.toleration(OTHER_POOL)]))
    assert tol.returncode != 0 and "tolerate only the taints of its pools" in tol.stderr, tol.stderr
    wildcard = _host_create(fenced, pod("tol-all", NS, tolerations=[{"operator": "Exists"}]))
    assert wildcard.returncode != 0, wildcard.stdout
    sel = {**fence.node_selector(OTHER_POOL), fence.TENANT_KEY: "llm-pretrain"}
    assert _host_create(fenced, pod("sel-other", NS, nodeSelector=sel)).returncode == 0
    # the tenant key is overwritten with the tenant: no node carries both pretrain's pool and inference
    got = _host_pod(fenced, "sel-other")["spec"]["nodeSelector"]
    assert got[fence.TENANT_KEY] == TENANT, got
    time.sleep(5)
    assert not (_host_pod(fenced, "sel-other") or {}).get("spec", {}).get("nodeName")


def test_the_vclusters_own_control_plane_pods_are_left_alone(fenced: RealVCluster) -> None:
    user = CONTROLLER_MANAGER_USERS[-1]
    made = _host_create(fenced, pod("control-plane-like", NS, nodeSelector=fence.node_selector("system")),
                        f"--as={user}")  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert _host_pod(fenced, "control-plane-like")["spec"]["nodeSelector"] == fence.node_selector("system")


def test_a_virtual_node_named_like_another_pools_node_gets_no_host_pod(
    fenced: RealVCluster, pools: dict[str, str]
) -> None:
    other = sorted(n for n, p in pools.items() if p == OTHER_POOL)[1]
    fake = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": other}}
    fenced.vkubectl("create", "-f", "-", input=json.dumps(fake))
    fenced.vkubectl("apply", "-f", "-", input=json.dumps(pod("on-fake", nodeName=other)))
    time.sleep(15)  # the syncer retries; the host refuses every try
    hp = _host_pod(fenced, f"on-fake-x-default-x-{TENANT}")
    assert hp is None, f"a pod bound to {other} ({pools.get(other)}) reached the host"
    host_pods = json.loads(fenced.kubectl("get", "pods", "-n", NS, "-o", "json").stdout)["items"]
    assert other not in {p["spec"].get("nodeName") for p in host_pods}


def test_a_pod_the_virtual_scheduler_binds_lands_on_the_tenants_node(
    fenced: RealVCluster, pools: dict[str, str]
) -> None:
    fenced.vkubectl("apply", "-f", "-", input=json.dumps(pod("plain", tolerations=[fence.toleration(TENANT)])))
    name = f"plain-x-default-x-{TENANT}"
    node = wait_for(lambda: (_host_pod(fenced, name) or {}).get("spec", {}).get("nodeName"), 120, "host pod bound")
    assert pools[node] == TENANT, node
    assert _host_pod(fenced, name)["spec"]["nodeSelector"][fence.TENANT_KEY] == TENANT


# ---- Kueue topology placement through the syncer ----------------------------------------------------

NS_JOBS, QUEUE = "serving", "inference"  # the tenant's namespace and LocalQueue (its pool)
KUEUE_SHARE = REPO / ".build" / "share" / "kueue"


def _job(name: str, pods: int, level: str) -> dict[str, Any]:
    container = {"name": "worker", "image": "registry.example/allreduce:1",
                 "resources": {"requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "8"},
                               "limits": {"nvidia.com/gpu": "8"}}}  # fmt: skip
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NS_JOBS, "labels": {KUEUE_QUEUE_LABEL: QUEUE}},
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "completionMode": "Indexed",
            "suspend": True,  # what Kueue's Job webhook sets (its webhooks are not registered here)
            "template": {
                "metadata": {"annotations": {KUEUE_REQUIRED_TOPOLOGY: level}},
                "spec": {"restartPolicy": "Never", "containers": [container]},
            },
        },
    }


@pytest.fixture(scope="module")
def kueue_inside(fenced: RealVCluster, tmp_path_factory):
    """The real Kueue (kueue_controller.py) against the vCluster's API; the host's inference Nodes
    carry the rendered fabric labels (as the apply step sets them); the rendered objects of the tenant
    (namespaces, Topology, flavors, queues) applied inside, as Argo CD's objects app does."""
    crds = sorted((KUEUE_SHARE / "crds").glob("kueue.x-k8s.io_*.yaml"))
    if not crds:
        pytest.skip(f"no Kueue CRDs in {KUEUE_SHARE} (tools/build.sh kueue)")
    doc = yaml.safe_load((REPO / "gitops" / "clusters" / "gpu-east" / "node-labels.yaml").read_text())
    labels = read_label_sets(doc["sets"], doc["scheme"])
    for node, want in sorted(labels.items()):
        fenced.kubectl("label", "node", node, "--overwrite", *[f"{k}={v}" for k, v in sorted(want.items())])
    for crd in crds:
        fenced.vkubectl("apply", "--server-side", "-f", "-", input=crd.read_text())
    fenced.vkubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=120s")
    fenced.vkubectl("create", "namespace", "kueue-system", check=False)
    objects = [o for o in yaml.safe_load_all((TENANT_DIR / "objects" / "objects.yaml").read_text()) if o]
    fenced.vkubectl("apply", "--server-side", "-f", "-",
                    input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))  # fmt: skip
    cfg = yaml.safe_load(fenced.virtual_kubeconfig().read_text())
    for c in cfg["clusters"]:
        c["cluster"]["server"] = f"https://127.0.0.1:{fenced.port}"
    state = tmp_path_factory.mktemp("kueue-in-vc")
    (state / "kubeconfig").write_text(yaml.safe_dump(cfg))
    kueue = KueueController()
    kueue.start(state / "kubeconfig", state / "kueue")
    try:
        yield labels
    finally:
        kueue.stop()


def test_a_job_kueue_admits_inside_the_vcluster_lands_under_one_leaf(
    fenced: RealVCluster, kueue_inside: dict[str, dict[str, str]], pools: dict[str, str]
) -> None:
    """Kueue (inside the vCluster) admits the Job, gates its pods and its ungater adds the chosen leaf's
    node selector; the vCluster's scheduler binds them there and the syncer creates the host pods bound:
    all four land under one leaf switch, on the tenant's nodes, with the tenant selector on the host."""
    leaf = SCHEMES["gpufleet"].tier(0)
    fenced.vkubectl("apply", "-f", "-", input=json.dumps(_job("allreduce", 4, leaf)))

    def host_pods() -> list[dict] | None:
        items = json.loads(fenced.kubectl("get", "pods", "-n", NS, "-o", "json").stdout)["items"]
        mine = [p for p in items if p["metadata"]["name"].startswith("allreduce-") and p["spec"].get("nodeName")]
        return mine if len(mine) == 4 else None

    placed = wait_for(host_pods, 480, "the Job's four pods bound on the host")
    nodes = [p["spec"]["nodeName"] for p in placed]
    assert {pools[n] for n in nodes} == {TENANT}, nodes
    assert len({kueue_inside[n][leaf] for n in nodes}) == 1, {n: kueue_inside[n][leaf] for n in nodes}
    assert all(p["spec"]["nodeSelector"][fence.TENANT_KEY] == TENANT for p in placed)
    # inside, the pods carry the selector Kueue's ungater added (the one vCluster does not copy to the
    # host): the rendered Topology's lowest level, naming the node the virtual scheduler bound each to
    objects = yaml.safe_load_all((TENANT_DIR / "objects" / "objects.yaml").read_text())
    topology = next(o for o in objects if o and o["kind"] == "Topology")
    lowest = topology["spec"]["levels"][-1]["nodeLabel"]
    inside = json.loads(fenced.vkubectl("get", "pods", "-n", NS_JOBS, "-o", "json").stdout)["items"]
    assert inside and all((p["spec"].get("nodeSelector") or {}).get(lowest) == p["spec"]["nodeName"] for p in inside), [
        (p["spec"].get("nodeName"), p["spec"].get("nodeSelector")) for p in inside
    ]
    gates = [g["name"] for p in inside for g in p["spec"].get("schedulingGates") or []]
    assert KUEUE_TOPOLOGY_GATE not in gates, gates
