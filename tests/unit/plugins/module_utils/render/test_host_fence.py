"""render/tenants/host_fence.py on the sample: the Kubernetes tenant places by Kueue topology, so its vCluster
runs its own scheduler and its host namespace gets the admission fence over exactly its nodes (from the
pool lock); the Slurm tenants, whose syncer is the fence, get none. The policies are exercised on a real
kube-apiserver and through a real vCluster in tests/integration/vcluster/test_vcluster_own_scheduler.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.pools.lock import parse_lock
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants import host_fence
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_fleet

REPO = Path(__file__).resolve().parents[5]
SAMPLE = REPO / "inventories" / "sample"
TENANTS = "clusters/gpu-east/tenants"


@pytest.fixture(scope="module")
def files() -> dict[str, str]:
    return render_fleet(load_fleet(SAMPLE)).files


def test_own_scheduler_is_either_vcluster_value() -> None:
    assert not host_fence.runs_own_scheduler({})
    assert not host_fence.runs_own_scheduler({"controlPlane": {"distro": {"k8s": {"scheduler": {"enabled": "true"}}}}})
    assert host_fence.runs_own_scheduler({"controlPlane": {"distro": {"k8s": {"scheduler": {"enabled": True}}}}})
    assert host_fence.runs_own_scheduler({"controlPlane": {"advanced": {"virtualScheduler": {"enabled": True}}}})
    assert host_fence.objects("t", "vc-t", {}, {"p": ["n1"]}) == []


def test_kubernetes_tenant_with_topology_gets_the_fence(files: dict[str, str]) -> None:
    values = yaml.safe_load(files[f"{TENANTS}/inference/vcluster/values.yaml"])
    assert host_fence.runs_own_scheduler(values)
    fence_docs = list(yaml.safe_load_all(files[f"{TENANTS}/inference/host/fence.yaml"]))
    kinds = [d["kind"] for d in fence_docs]
    assert kinds == ["MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding", "ValidatingAdmissionPolicy",
                     "ValidatingAdmissionPolicyBinding"]  # fmt: skip
    lock = parse_lock((SAMPLE / "snapshots" / "gpu-east" / "pools.lock.yaml").read_text(), cluster="gpu-east")
    mine = sorted(n for n, p in lock.items() if p == "inference")
    others = sorted(n for n, p in lock.items() if p != "inference")
    nodes_rule = fence_docs[2]["spec"]["validations"][0]["expression"]
    assert mine and all(f'"{n}"' in nodes_rule for n in mine), nodes_rule
    assert not any(f'"{n}"' in nodes_rule for n in others), nodes_rule
    scope = {d["spec"]["matchConstraints"]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
             for d in fence_docs if "matchConstraints" in d["spec"]}  # fmt: skip
    assert scope == {"vc-inference"}
    # the host app's project may create exactly those cluster-scoped kinds
    project = yaml.safe_load(files["clusters/gpu-east/apps/tenant-inference-0-host-project.yaml"])
    allowed = {(k["group"], k["kind"]) for k in project["spec"]["clusterResourceWhitelist"]}
    assert {("admissionregistration.k8s.io", k) for k in kinds} <= allowed


@pytest.mark.parametrize("tenant", ["research", "llm-pretrain"])
def test_tenants_without_own_scheduler_get_no_admission_fence(files: dict[str, str], tenant: str) -> None:
    assert not host_fence.runs_own_scheduler(yaml.safe_load(files[f"{TENANTS}/{tenant}/vcluster/values.yaml"]))
    assert f"{TENANTS}/{tenant}/host/fence.yaml" not in files
