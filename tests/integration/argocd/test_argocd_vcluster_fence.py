"""The pool fence on the whole-fleet bed, with the real parts: each tenant's vCluster is the real
vcluster 0.36.1 process (started from the configuration the real chart renders from the tenant's
rendered values), its pods are synced by the real syncer into ``vc-<tenant>`` and placed by the
host's real kube-scheduler onto KWOK nodes labelled and tainted for their pools.

* every tenant's vCluster is the real binary (a double, or another build, fails here);
* every Slurm tenant's vCluster runs the real Slinky operator and webhook (the built binaries, as
  processes in its network namespace): the workloads they own are the operator's, and its admission
  refuses a bad NodeSet;
* every synced pod of every tenant runs only on its own pool's nodes, and each DaemonSet-mode
  NodeSet has one pod per node of its pool;
* a pod created inside a vCluster with another tenant's pool selector and toleration, or another
  tenant's node name, never runs on another tenant's node;
* the host quota refuses a claim past the rendered sum (the syncer records why on the claim).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from argocd_bed import ArgoBed, Synced, TenantAPI
from polling import wait_for
from real_vcluster import VERSION, translated

from ansible_collections.gpufleet.core.plugins.module_utils.model import fence

TENANT = "research"
OTHER = "llm-pretrain"
OTHER_POOL = "pretrain"
MANAGED_BY = "vcluster.loft.sh/managed-by"
PROBE = "gpufleet.io/fence-probe"


def node_tenants(bed: ArgoBed) -> dict[str, str | None]:
    return {
        n["metadata"]["name"]: (n["metadata"].get("labels") or {}).get(fence.TENANT_KEY)
        for n in bed.host.get_json("nodes")["items"]
    }


def pod(name: str, **spec: Any) -> str:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {PROBE: "1"}},
        "spec": {"containers": [{"name": "c", "image": "registry.invalid/probe"}], **spec},
    }
    return json.dumps(body)


def host_pod(bed: ArgoBed, name: str) -> dict[str, Any] | None:
    ns = f"vc-{TENANT}"
    p = bed.host.kubectl("get", "pod", translated(name, "default", TENANT), "-n", ns, "-o", "json", check=False)
    return json.loads(p.stdout) if p.returncode == 0 else None


@pytest.fixture
def inside(argocd_bed: ArgoBed, synced: Synced) -> Iterator[TenantAPI]:
    api = argocd_bed.tenants[TENANT]
    yield api
    # leave the bed as found: the probes and the syncer's host copies of them gone
    api.kubectl("delete", "pod,pvc", "-n", "default", "-l", PROBE, "--grace-period=0", "--force", check=False)
    ns, copies = f"vc-{TENANT}", "vcluster.loft.sh/namespace=default"
    wait_for(
        lambda: not argocd_bed.host.get_json("pods,pvc", "-n", ns, "-l", copies)["items"], 120, "the host copies gone"
    )


def test_every_tenant_runs_the_real_vcluster(argocd_bed: ArgoBed, synced: Synced) -> None:
    for t, api in argocd_bed.tenants.items():
        main, stamp = api.vc.syncer_build()
        assert main == "github.com/loft-sh/vcluster/cmd/vcluster", (t, main)
        assert stamp.startswith(f"vcluster {VERSION}+"), (t, stamp)
        synced_pods = argocd_bed.host.get_json("pods", "-n", f"vc-{t}", "-l", f"{MANAGED_BY}={t}")["items"]
        assert synced_pods and all(
            (p["metadata"].get("annotations") or {}).get("vcluster.loft.sh/object-name") for p in synced_pods
        ), t


def test_every_slurm_tenant_runs_the_real_slinky_operator(argocd_bed: ArgoBed, synced: Synced) -> None:
    assert sorted(argocd_bed.slinky) == ["llm-pretrain", "research"]
    for t, slinky in argocd_bed.slinky.items():
        assert slinky.runs_built_binaries(), (t, slinky.processes(), slinky.error)
        api = argocd_bed.tenants[t]
        owners = {}
        for kind in ("statefulsets", "deployments", "services"):
            for o in api.get_json(kind, "-n", "slurm")["items"]:
                for ref in o["metadata"].get("ownerReferences") or []:
                    owners[f"{kind}/{o['metadata']['name']}"] = f"{ref['kind']}/{ref['name']}"
        # what v1.2.1 makes of the chart's objects: slurmctld and slurmdbd StatefulSets, the login and
        # restapi Deployments, each owned by its custom resource
        for made, owner in [
            ("statefulsets/slurm-controller", "Controller/slurm"),
            ("statefulsets/slurm-accounting", "Accounting/slurm"),
            ("deployments/slurm-restapi", "RestApi/slurm"),
            ("deployments/slurm-login-main", "LoginSet/slurm-login-main"),
        ]:
            assert owners.get(made) == owner, (t, made, owners)
        pods = api.get_json("pods", "-n", "slurm", "-l", "app.kubernetes.io/name=slurmd")["items"]
        assert pods and all((p["metadata"].get("ownerReferences") or [{}])[0].get("kind") == "NodeSet" for p in pods), t


def test_the_slinky_webhook_refuses_a_bad_nodeset_inside_the_vcluster(argocd_bed: ArgoBed, synced: Synced) -> None:
    api = argocd_bed.tenants[TENANT]
    nset = api.get_json("nodesets.slinky.slurm.net", "-n", "slurm")["items"][0]
    good = {k: nset[k] for k in ("apiVersion", "kind", "spec")}
    good["metadata"] = {"name": "webhook-probe", "namespace": "slurm"}
    p = api.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(good), check=False)
    assert p.returncode == 0, p.stderr
    bad = json.loads(json.dumps(good))
    bad["spec"]["template"]["spec"]["hostname"] = "Not_A_Hostname-"
    p = api.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(bad), check=False)
    assert p.returncode != 0 and 'admission webhook "nodeset-v1beta1.kb.io" denied' in p.stderr, p.stderr


def test_every_tenant_pod_lands_only_on_its_pools_nodes(argocd_bed: ArgoBed, synced: Synced) -> None:
    owner = node_tenants(argocd_bed)
    for t in argocd_bed.tenants:
        pods = argocd_bed.host.get_json("pods", "-n", f"vc-{t}", "-l", f"{MANAGED_BY}={t}")["items"]
        placed = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in pods}
        assert placed and all(placed.values()), (t, placed)
        wrong = {name: (node, owner.get(node)) for name, node in placed.items() if owner.get(node) != t}
        assert not wrong, (t, wrong)


def test_each_nodeset_has_one_pod_per_node_of_its_pool(argocd_bed: ArgoBed, synced: Synced) -> None:
    nodes = argocd_bed.host.get_json("nodes")["items"]
    seen = 0
    for t in ("llm-pretrain", "research"):
        for nset in argocd_bed.tenants[t].get_json("nodesets.slinky.slurm.net", "-n", "slurm")["items"]:
            selector = nset["spec"]["template"]["spec"]["nodeSelector"]
            pool = [
                n["metadata"]["name"]
                for n in nodes
                if all((n["metadata"].get("labels") or {}).get(k) == v for k, v in selector.items())
            ]
            assert pool and nset["status"]["desired"] == len(pool), (t, nset["metadata"]["name"], nset["status"])
            assert nset["status"]["readyReplicas"] == len(pool), (t, nset["metadata"]["name"], nset["status"])
            seen += 1
    assert seen >= 3


def test_another_pools_selector_and_toleration_never_run_on_its_nodes(argocd_bed: ArgoBed, inside: TenantAPI) -> None:
    spec = {"nodeSelector": fence.node_selector(OTHER_POOL), "tolerations": [fence.toleration(OTHER_POOL)]}
    inside.kubectl("apply", "-f", "-", input=pod("sneaky", **spec))
    hp = wait_for(lambda: host_pod(argocd_bed, "sneaky"), 120, "the host copy of the pod")
    assert (hp["spec"].get("nodeSelector") or {}).get(fence.TENANT_KEY) == TENANT, hp["spec"]  # fence label merged in
    time.sleep(10)  # time for the host scheduler to (not) place it
    node = ((host_pod(argocd_bed, "sneaky") or {}).get("spec") or {}).get("nodeName")
    assert node is None, f"a {TENANT} pod asking for pool {OTHER_POOL} was placed on {node}"


def test_another_tenants_node_name_never_runs_there(argocd_bed: ArgoBed, inside: TenantAPI) -> None:
    other = sorted(n for n, t in node_tenants(argocd_bed).items() if t == OTHER)[0]
    inside.kubectl("apply", "-f", "-", input=pod("pinned", nodeName=other))
    time.sleep(15)
    hp = host_pod(argocd_bed, "pinned")
    assert hp is None or hp["spec"].get("nodeName") != other, f"a {TENANT} pod pinned to {other} reached it"


def test_host_quota_refuses_a_claim_past_the_rendered_sum(argocd_bed: ArgoBed, inside: TenantAPI) -> None:
    ns = f"vc-{TENANT}"
    quota = argocd_bed.host.get_json("resourcequota", ns, "-n", ns)["status"]
    assert quota["used"]["requests.storage"] == quota["hard"]["requests.storage"], quota  # the rendered sum is used
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "one-more", "namespace": "default", "labels": {PROBE: "1"}},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    inside.kubectl("apply", "-f", "-", input=json.dumps(claim))

    def refusal() -> str:
        events = inside.get_json("events", "-n", "default", "--field-selector", "involvedObject.name=one-more")
        return " ".join(e.get("message") or "" for e in events["items"] if e.get("reason") == "SyncError")

    why = wait_for(refusal, 120, "the syncer's SyncError on the claim")
    assert "exceeded quota" in why and "requests.storage" in why, why
    host = argocd_bed.host.kubectl("get", "pvc", translated("one-more", "default", TENANT), "-n", ns, check=False)
    assert host.returncode != 0, "the host took a claim past its quota"
    assert inside.get_json("pvc", "one-more", "-n", "default")["status"]["phase"] == "Pending"
