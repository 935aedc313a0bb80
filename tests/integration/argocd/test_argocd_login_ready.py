"""Login readiness on the real Slinky operator: a login pod that exists but is not Ready holds the
tenant's slurm app, and ``argocd_status`` says why.

The research tenant's login pod (made by the real operator v1.2.1 from the LoginSet: a Deployment,
synced by the real vCluster syncer, run by KWOK) is annotated ``gpufleet.io/test-not-ready``: KWOK's
``pod-not-ready`` stage (real_vcluster.kubelet_like_stages) then reports it Running but not Ready, as
a kubelet does for a pod whose readiness probe fails (sackd without its socket, sshd down after a
bad sssd.conf). The operator still counts it in the LoginSet's ``status.replicas`` (the Deployment's
pods, Ready or not), so the LoginSet alone would look whole; the login PodDisruptionBudget in the same
wave counts Ready pods, and its health keeps the app Progressing with ``0/1 login pods Ready``.
Removing the annotation makes the pod Ready again and the tree Synced+Healthy.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from argocd_bed import ROOT_APP, ArgoBed, Synced, argocd_status, rendered_apps
from argocd_harness import synced_healthy
from real_vcluster import NOT_READY

TENANT = "research"
APP = f"{TENANT}-slurm"
REASON = "0/1 login pods Ready (PodDisruptionBudget slurm-login)"
WAIT = 300


def held(app: dict[str, Any]) -> bool:
    st = app.get("status") or {}
    return (st.get("health") or {}).get("status") != "Healthy" and any(
        REASON in ((r.get("health") or {}).get("message") or "") for r in st.get("resources") or []
    )


def test_a_login_pod_not_ready_holds_the_slurm_app_with_the_reason(argocd_bed: ArgoBed, synced: Synced) -> None:
    bed = argocd_bed
    api = bed.tenants[TENANT]
    pods = api.get_json("pods", "-n", "slurm", "-l", "app.kubernetes.io/name=login")["items"]
    assert len(pods) == 1, [p["metadata"]["name"] for p in pods]
    assert pods[0]["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"  # the operator's Deployment
    name = pods[0]["metadata"]["name"]
    try:
        api.kubectl("annotate", "pod", name, "-n", "slurm", f"{NOT_READY}=true")
        bed.argocd.wait([APP], held, "held by the login pod that is not Ready", timeout=WAIT)
        # what the operator writes into the LoginSet still counts the pod: not readiness
        loginset = api.get_json("loginsets.slinky.slurm.net", "slurm-login-main", "-n", "slurm")
        assert loginset["status"]["replicas"] == 1, loginset["status"]
        res = argocd_status(bed, names=[APP])
        assert res["ready"] is False, res
        assert REASON in res["apps"][0]["reason"], res["apps"][0]
    finally:
        api.kubectl("annotate", "pod", name, "-n", "slurm", f"{NOT_READY}-", check=False)
    names = [*sorted(rendered_apps(bed)), ROOT_APP]
    try:
        bed.argocd.wait(names, synced_healthy, "Synced+Healthy again", timeout=WAIT)
    except Exception as exc:  # report: the tree is what later tests read
        pytest.fail(f"did not converge back once the login pod was Ready: {exc}")
