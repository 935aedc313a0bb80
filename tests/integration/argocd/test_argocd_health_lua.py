"""The operator CR health checks gpufleet puts in ``argocd-cm``, run by Argo CD's own Lua engine
(``argocd admin settings resource-overrides health``, offline, the binary the bed runs).

Slinky Controller/Accounting: the pinned slurm-operator v1.2.1 keeps ``status.conditions`` but sets
none (``SlurmReachable``/``Available`` come in later versions), so a CR without conditions must not
be Progressing forever (the tenant's later waves would never be created); a False condition holds
the wave, a True one releases it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from argocd_health import ARGOCD, argocd_health


def cr(kind: str, conditions: list[dict[str, str]] | None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "slinky.slurm.net/v1beta1",
        "kind": kind,
        "metadata": {"name": "slurm", "namespace": "slurm"},
        "spec": {},
    }
    if conditions is not None:
        obj["status"] = {"conditions": conditions}
    return obj


@pytest.mark.parametrize("kind", ["Controller", "Accounting"])
@pytest.mark.parametrize(
    ("conditions", "want", "message"),
    [
        (None, "Healthy", "sets no status conditions"),  # v1.2.1: never writes a status
        ([], "Healthy", "sets no status conditions"),
        ([{"type": "SlurmReachable", "status": "False", "reason": "Unreachable"}], "Progressing", "Unreachable"),
        ([{"type": "SlurmReachable", "status": "True", "message": "pong"}], "Healthy", "SlurmReachable: pong"),
        ([{"type": "X", "status": "Unknown"}], "Progressing", "no condition True"),
    ],
)
def test_slinky_cr_health(kind: str, conditions: Any, want: str, message: str) -> None:
    status, msg = argocd_health(cr(kind, conditions))
    assert (status, message in msg) == (want, True), (status, msg)


# ---- Slinky NodeSet: what the v1.2.1 operator writes (nodeset_sync_status.go: observedGeneration with every
# status, zero counts omitted); a rolling update holds the next sync wave until every pod runs the new
# template and is Ready, a window or OnDelete does not wait for pods still on the old template.

ROLLING = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}
WINDOW = {"type": "ScheduledUpdate", "scheduledUpdate": {"startTime": "2026-12-05T02:00:00Z", "duration": "4h"}}


def nodeset(strategy: dict[str, Any], status: dict[str, Any] | None, generation: int = 2) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "slinky.slurm.net/v1beta1",
        "kind": "NodeSet",
        "metadata": {"name": "slurm-worker-research-batch", "namespace": "slurm", "generation": generation},
        "spec": {"controllerRef": {"name": "slurm"}, "updateStrategy": strategy},
    }
    if status is not None:
        obj["status"] = {"nodeSetHash": "5d8f", "selector": "x=y", **status}
    return obj


DONE = {"observedGeneration": 2, "desired": 2, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2}


@pytest.mark.parametrize(
    ("strategy", "status", "want", "message"),
    [
        (ROLLING, None, "Progressing", "waiting for the operator"),
        # the template changed (generation 2), the operator has not synced it yet
        (ROLLING, {**DONE, "observedGeneration": 1}, "Progressing", "observe generation 2"),
        # first pod deleted for replacement: one Ready, none on the new template yet
        (ROLLING, {**DONE, "readyReplicas": 1, "updatedReplicas": 0}, "Progressing", "1/2 slurmd pods ready"),
        # first pod replaced and Ready, the second still on the old template
        (
            ROLLING,
            {**DONE, "updatedReplicas": 1},
            "Progressing",
            "rolling update in progress: 2/2 slurmd pods ready, 1/2 on the current template",
        ),
        (ROLLING, DONE, "Healthy", "2/2 slurmd pods ready, 2/2 on the current template"),
        # no node matches (DaemonSet mode): the operator omits desired and the other zero counts
        (ROLLING, {"observedGeneration": 2}, "Healthy", "0/0 slurmd pods ready"),
        (WINDOW, {**DONE, "updatedReplicas": 0}, "Healthy", "replaced in the update window from 2026-12-05T02:00:00Z"),
        (WINDOW, {**DONE, "readyReplicas": 1, "updatedReplicas": 1}, "Progressing", "1/2 slurmd pods ready"),
        ({"type": "OnDelete"}, {**DONE, "updatedReplicas": 1}, "Healthy", "when their pod is deleted (OnDelete)"),
    ],
)
def test_nodeset_health_holds_the_wave_during_a_rolling_update(
    strategy: dict[str, Any], status: Any, want: str, message: str
) -> None:
    got, msg = argocd_health(nodeset(strategy, status))
    assert (got, message in msg) == (want, True), (got, msg)


def mariadb(reason: str, status: str = "False", message: str = "msg") -> dict[str, Any]:
    cond = {"type": "Ready", "status": status, "reason": reason, "message": message}
    return {
        "apiVersion": "k8s.mariadb.com/v1alpha1",
        "kind": "MariaDB",
        "metadata": {"name": "accounting", "namespace": "slurm"},
        "spec": {},
        "status": {"conditions": [cond]},
    }


# reasons of mariadb-operator's Ready condition (api/v1alpha1/condition_types.go)
@pytest.mark.parametrize(
    ("reason", "want"),
    [
        ("Failed", "Degraded"),
        ("InitError", "Degraded"),
        ("ScaleOutError", "Degraded"),
        ("ReplicaRecoverError", "Degraded"),
        ("ConnectionFailed", "Degraded"),
        ("StatefulSetNotReady", "Progressing"),
        ("Initializing", "Progressing"),
        ("Updating", "Progressing"),
    ],
)
def test_mariadb_health_degraded_for_every_failing_reason(reason: str, want: str) -> None:
    status, msg = argocd_health(mariadb(reason, message="could not bootstrap"))
    assert (status, msg) == (want, f"{reason}: could not bootstrap")
    assert argocd_health(mariadb("StatefulSetReady", "True", "Running")) == ("Healthy", "StatefulSetReady: Running")


# ---- readiness gates: batch/Job health (Argo CD's built-in rules, plus the reason while a gate runs)

TENANTS = Path(__file__).resolve().parents[3] / "gitops" / "clusters" / "gpu-east" / "tenants"
WAITING = "waiting for a Ready login pod (sshd behind Service slurm-login-main.slurm:22)"


def rendered_job(rel: str) -> dict[str, Any]:
    docs = [d for d in yaml.safe_load_all((TENANTS / rel).read_text()) if d and d["kind"] == "Job"]
    assert len(docs) == 1
    return docs[0]


def with_status(job: dict[str, Any], status: dict[str, Any] | None) -> dict[str, Any]:
    job = {**job}
    if status is not None:
        job["status"] = status
    return job


FAILED = {
    "type": "Failed",
    "status": "True",
    "reason": "BackoffLimitExceeded",
    "message": "Job has reached the specified backoff limit",
}


@pytest.mark.parametrize(
    ("status", "want", "message"),
    [
        (None, "Progressing", f"{WAITING}: 0 failed attempt(s) of 7"),
        # the login pod crash-loops (a bad sssd.conf): no Ready endpoint, each gate attempt fails
        ({"active": 1, "failed": 3}, "Progressing", f"{WAITING}: 3 failed attempt(s) of 7"),
        ({"failed": 7, "conditions": [FAILED]}, "Degraded", "Job has reached the specified backoff limit"),
        ({"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}, "Healthy", ""),
    ],
)
def test_login_gate_holds_the_tenant_with_a_reason(status: Any, want: str, message: str) -> None:
    job = rendered_job("research/slurm-ready/login-ready.yaml")
    got = argocd_health(with_status(job, status))
    assert got == (want, message), got


def test_accounts_job_says_what_it_waits_for() -> None:
    job = rendered_job("research/accounting/accounts.yaml")
    status, msg = argocd_health(with_status(job, {"active": 1, "failed": 2}))
    assert (status, msg) == (
        "Progressing",
        "waiting for slurmctld (scontrol ping) and slurmdbd (sacctmgr ping): 2 failed attempt(s) of 21",
    )


@pytest.mark.parametrize(
    ("conditions", "want"),
    [
        (None, "Progressing"),
        ([FAILED], "Degraded"),
        ([{"type": "Complete", "status": "True", "message": "done"}], "Healthy"),
        ([{"type": "Suspended", "status": "True", "message": "suspended"}], "Suspended"),
    ],
)
def test_other_jobs_keep_the_builtin_health(conditions: Any, want: str) -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x", "namespace": "y"}, "spec": {}}
    status, msg = argocd_health(with_status(job, {"conditions": conditions} if conditions else None))
    assert status == want and (msg == "" if conditions is None else msg), (status, msg)


def rendered_budget(name: str) -> dict[str, Any]:
    values = yaml.safe_load((TENANTS / "research" / "slurm" / "values.yaml").read_text())
    (pdb,) = [o for o in values["extraObjects"] if o["kind"] == "PodDisruptionBudget" and o["metadata"]["name"] == name]
    return {**pdb, "metadata": {**pdb["metadata"], "namespace": "slurm", "generation": 1}}


LOGIN_BUDGET = "(PodDisruptionBudget slurm-login)"
COUNTING = "waiting for the disruption controller to count the login pods"


def counted(generation: int, expected: int, ready: int) -> dict[str, int]:
    return {"observedGeneration": generation, "expectedPods": expected, "currentHealthy": ready}


@pytest.mark.parametrize(
    ("status", "want", "message"),
    [
        (None, "Progressing", COUNTING),
        (counted(1, 0, 0), "Progressing", f"0/0 login pods Ready {LOGIN_BUDGET}"),
        # the login pod exists (LoginSet status.replicas 1) but is not Ready: a crash loop, a bad sssd.conf
        (counted(1, 1, 0), "Progressing", f"0/1 login pods Ready {LOGIN_BUDGET}"),
        (counted(1, 1, 1), "Healthy", f"1/1 login pods Ready {LOGIN_BUDGET}"),
        (counted(0, 1, 1), "Progressing", COUNTING),  # an older generation's count
    ],
)
def test_login_budget_health_is_ready_login_pods(status: Any, want: str, message: str) -> None:
    assert argocd_health(with_status(rendered_budget("slurm-login"), status)) == (want, message)


def allowed(reason: str) -> list[dict[str, str]]:
    return [{"type": "DisruptionAllowed", "status": "False", "reason": reason}]


@pytest.mark.parametrize(
    ("conditions", "want", "message"),
    [
        (None, "Progressing", "Waiting for status"),
        (allowed("InsufficientPods"), "Healthy", "PodDisruptionBudget has InsufficientPods"),
        (allowed("SyncFailed"), "Degraded", "PodDisruptionBudget has SyncFailed"),
    ],
)
def test_other_budgets_keep_the_builtin_health(conditions: Any, want: str, message: str) -> None:
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "x", "namespace": "y"}}
    assert argocd_health(with_status(pdb, {"conditions": conditions} if conditions else None)) == (want, message)


def test_the_binary_is_the_release_production_runs() -> None:
    """The bed's Argo CD (this binary, every bed test) is the release the rendered image names."""
    from ansible_collections.gpufleet.core.plugins.module_utils.versions import IMAGES

    if not ARGOCD.exists():
        pytest.skip("Argo CD; build it with tools/build.sh argocd")
    p = subprocess.run([str(ARGOCD), "version", "--client", "--short"], capture_output=True, text=True, check=True)
    assert p.stdout.strip() == f"argocd: {IMAGES['argocd']}", p.stdout
