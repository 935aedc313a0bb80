"""The upstream CRDs (Argo CD, Slinky, GPU Operator, Soperator) install into the
local apiserver, and it validates custom resources against them."""

from __future__ import annotations

import copy

import pytest
from controlplane import LocalControlPlane

pytestmark = pytest.mark.kube

APPLICATION = {
    "apiVersion": "argoproj.io/v1alpha1",
    "kind": "Application",
    "metadata": {"name": "tenant-a-slurm", "namespace": "argocd"},
    "spec": {
        "project": "tenant-a",
        "destination": {"server": "https://tenant-a.vcluster-tenant-a:443", "namespace": "slurm"},
        "sources": [
            {
                "repoURL": "ghcr.io/slinkyproject/charts",
                "chart": "slurm",
                "targetRevision": "1.2.1",
                "helm": {"valueFiles": ["$values/gitops/tenants/tenant-a/slurm-values.yaml"]},
            },
            {"repoURL": "https://git.example.com/platform/fleet.git", "targetRevision": "main", "ref": "values"},
        ],
        "syncPolicy": {
            "automated": {"prune": True, "selfHeal": True},
            "syncOptions": ["CreateNamespace=true", "ServerSideApply=true"],
        },
        "ignoreDifferences": [{"group": "slinky.slurm.net", "kind": "NodeSet", "jsonPointers": ["/spec/replicas"]}],
    },
}

NODESET = {
    "apiVersion": "slinky.slurm.net/v1beta1",
    "kind": "NodeSet",
    "metadata": {"name": "gpu-h100", "namespace": "slurm"},
    "spec": {
        "controllerRef": {"name": "slurm"},
        "replicas": 2,
        "scalingMode": "StatefulSet",
        "partition": {"enabled": True},
        "slurmd": {
            "image": "ghcr.io/slinkyproject/slurmd:25.11-ubuntu24.04",
            "resources": {"limits": {"nvidia.com/gpu": 8}},
        },
        "template": {"spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}}},
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
    },
}


def mutate(obj: dict, path: str, value: object = None, delete: bool = False) -> dict:
    out = copy.deepcopy(obj)
    keys = path.split(".")
    cur = out
    for k in keys[:-1]:
        cur = cur[int(k)] if isinstance(cur, list) else cur[k]
    if delete:
        del cur[keys[-1]]
    else:
        cur[keys[-1]] = value
    return out


@pytest.fixture(scope="module")
def crds(kube_cluster: LocalControlPlane, upstream_crd_files) -> list[str]:
    names = kube_cluster.apply_crds(upstream_crd_files, timeout=180)
    for ns in ("argocd", "slurm"):
        kube_cluster.create_namespace(ns)
    return names


def test_all_upstream_crds_established(kube_cluster, crds, upstream_crd_files):
    assert len(crds) == len(upstream_crd_files)
    served = {c["metadata"]["name"] for c in kube_cluster.get_json("crd")["items"]}
    assert set(crds) <= served
    for must in (
        "applications.argoproj.io",
        "applicationsets.argoproj.io",
        "nodesets.slinky.slurm.net",
        "clusterpolicies.nvidia.com",
        "slurmclusters.slurm.nebius.ai",
    ):
        assert must in crds


@pytest.mark.parametrize("obj", [APPLICATION, NODESET], ids=["application", "nodeset"])
def test_valid_sample_accepted(kube_cluster, crds, obj):
    proc = kube_cluster.server_dry_run(obj)
    assert proc.returncode == 0, proc.stderr
    # dry-run: nothing persisted
    kind = obj["kind"].lower()
    ns = obj["metadata"]["namespace"]
    got = kube_cluster.kubectl("get", kind, obj["metadata"]["name"], "-n", ns, check=False)
    assert got.returncode != 0 and "NotFound" in got.stderr


INVALID = {
    "application-missing-project": (mutate(APPLICATION, "spec.project", delete=True), "spec.project"),
    "application-source-without-repourl": (
        mutate(APPLICATION, "spec.sources.1.repoURL", delete=True),
        "repoURL",
    ),
    "application-unknown-field": (mutate(APPLICATION, "spec.sources.0.repoUrl", "x"), "repoUrl"),
    "nodeset-missing-controllerref": (mutate(NODESET, "spec.controllerRef", delete=True), "controllerRef"),
    "nodeset-bad-scalingmode": (mutate(NODESET, "spec.scalingMode", "Deployment"), "scalingMode"),
    "nodeset-replicas-not-int": (mutate(NODESET, "spec.replicas", "two"), "replicas"),
    "nodeset-scheduledupdate-without-window": (
        mutate(NODESET, "spec.updateStrategy", {"type": "ScheduledUpdate"}),
        "scheduledUpdate.startTime",
    ),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_sample_rejected(kube_cluster, crds, case):
    obj, needle = INVALID[case]
    proc = kube_cluster.server_dry_run(obj)
    assert proc.returncode != 0, f"{case} was accepted: {proc.stdout}"
    assert needle in proc.stderr, proc.stderr
