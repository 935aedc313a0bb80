"""Coupling. Each tenant has its own root Application (an unhealthy tenant never
holds back another tenant's waves); the CNI, CRD-bearing charts and Argo CD itself are never
deleted with their Application (no resources-finalizer, ``Delete=false``).

Fails on the tree before the fix: every tenant child app sat in the cluster root's ``apps/`` with
global waves, and Cilium/cert-manager/GPU Operator carried ``resources-finalizer``.
"""

from __future__ import annotations

import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.module_utils.render import argocd as argo

C = "clusters/gpu-east"
TENANTS = ("inference", "llm-pretrain", "research")


def docs(files: dict[str, bytes], rel: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(files[rel]) if d]


def cluster_apps(files: dict[str, bytes]) -> dict[str, dict]:
    out = {}
    for rel in files:
        if rel.startswith(f"{C}/apps/"):
            for d in docs(files, rel):
                if d["kind"] == "Application":
                    out[d["metadata"]["name"]] = d
    return out


def test_cluster_root_holds_only_platform_apps_and_one_root_per_tenant(files) -> None:
    apps = cluster_apps(files)
    tenant_apps = {n: a for n, a in apps.items() if argo.LABEL_TENANT in a["metadata"]["labels"]}
    assert sorted(tenant_apps) == sorted(f"{t}-root" for t in TENANTS)
    waves = {argo.WAVES["tenants"]} | {int(a["metadata"]["annotations"][argo.WAVE]) for a in tenant_apps.values()}
    assert len(waves) == 1, "all tenant roots start together, in one wave"
    platform_waves = [int(a["metadata"]["annotations"][argo.WAVE]) for n, a in apps.items() if n not in tenant_apps]
    assert max(platform_waves) < argo.WAVES["tenants"], "tenants start after the platform is healthy"
    for t in TENANTS:
        root = apps[f"{t}-root"]
        assert root["spec"]["source"]["path"] == f"gitops/{C}/tenants/{t}/apps"
        assert not root["spec"]["source"].get("directory", {}).get("recurse"), "one directory, not recursive"


def test_tenant_child_apps_live_under_the_tenant_root_only(files) -> None:
    owner: dict[str, str] = {}
    for rel in files:
        if rel.startswith(f"{C}/tenants/") and "/apps/" in rel:
            t = rel.split("/")[3]
            for d in docs(files, rel):
                assert d["kind"] == "Application"
                assert d["metadata"]["labels"][argo.LABEL_TENANT] == t, rel
                owner[d["metadata"]["name"]] = t
    assert {"research-vcluster", "research-slurm", "llm-pretrain-slurm", "inference-kueue"} <= set(owner)
    # no child app of a tenant is left in the cluster root's directory
    assert not set(owner) & set(cluster_apps(files))


@pytest.mark.parametrize("app", ["gpu-east-cilium", "gpu-east-cert-manager", "gpu-east-gpu-operator"])
def test_cni_and_crd_charts_are_never_deleted_with_their_app(files, app) -> None:
    a = cluster_apps(files)[app]
    assert "finalizers" not in a["metadata"], f"{app}: resources-finalizer would cascade-delete it"
    assert a["metadata"]["annotations"][argo.SYNC_OPTIONS] == "Delete=false"
    assert "Delete=false" in a["spec"]["syncPolicy"]["syncOptions"]


def test_tenant_crds_are_kept_and_other_apps_still_cascade(files) -> None:
    for t in ("research", "llm-pretrain"):
        (crds,) = docs(files, f"{C}/tenants/{t}/apps/3-slurm-operator-crds.yaml")
        assert "finalizers" not in crds["metadata"]
        assert "Delete=false" in crds["spec"]["syncPolicy"]["syncOptions"]
        (slurm,) = docs(files, f"{C}/tenants/{t}/apps/6-slurm.yaml")
        assert slurm["metadata"]["finalizers"] == [argo.FINALIZER]
