"""Readiness gates of a Slurm tenant: Jobs inside the tenant's vCluster that finish only once the
Slurm daemons really answer, so the tenant's last wave is Progressing (then Degraded, with the
reason) until then.

Why Jobs: the pinned slurm-operator (1.2.1) writes no status conditions on a Controller or an
Accounting, and a LoginSet's status has only ``replicas`` (its Deployment's ``status.replicas``:
pods that exist, crash-looping ones included); Argo CD judges a resource only by its own object.
A Job is judged by Argo CD's built-in Job health: Progressing while it runs (its pod restarting),
Healthy once complete, Degraded with the Job's failure reason once past ``backoffLimit``.

* ``wait_for``: the shell helper of every gate (also the accounts Job's, render/tenants/accounting.py).
  One attempt waits WAIT_TRIES x WAIT_SECONDS; a failed attempt is a failed pod (``restartPolicy:
  Never``), counted in the Job's ``status.failed``. The gates carry ``gpufleet.io/waits-for``; the
  Job health check gpufleet puts in ``argocd-cm`` (render/argocd.py) prints it with that count while
  the Job runs (Argo CD's built-in Job health has no message then), and is the built-in otherwise.
* The login gate: a TCP connection to the login Service that reads the SSH banner. A Service sends
  only to Ready pods, and the operator's login pods are Ready once sackd has its socket (readiness
  probe ``test -S`` in slurm-operator 1.2.1 ``internal/builder/loginbuilder``), so it answers only
  when at least one login pod is Ready with sshd up. Named after a hash of the tenant's ``slurm``
  chart values: a change that restarts the login pods (sssd.conf, image, replicas) is a new Job,
  held until they answer again.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.model.exposure import LOGIN_PORT
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Tenant
from ansible_collections.gpufleet.core.plugins.module_utils.render.apps import App
from ansible_collections.gpufleet.core.plugins.module_utils.render.shared_names import SLURM_NAMESPACE
from ansible_collections.gpufleet.core.plugins.module_utils.versions import CHARTS, slinky_slurm_tag

WAIT_TRIES = 60
WAIT_SECONDS = 5
LOGIN_BACKOFF_LIMIT = 6  # ~40 min of 5-minute attempts and the Job's back-off, then Degraded
WAITS_FOR = "gpufleet.io/waits-for"
# ``wait_for WHAT CMD...``: runs CMD until it exits 0 (its output printed), at most WAIT_TRIES times
# WAIT_SECONDS apart; then fails the pod with WHAT, the command and its last output on stderr.
WAIT_FOR = f"""set -eu
wait_for() {{
  what="$1"; shift; n=0
  until out=$("$@" 2>&1); do
    n=$((n + 1))
    if [ "$n" -ge {WAIT_TRIES} ]; then
      printf 'gpufleet: %s does not answer after %s tries (%s): %s\\n' "$what" "$n" "$*" "$out" >&2
      exit 1
    fi
    sleep {WAIT_SECONDS}
  done
  printf '%s\\n' "$out"
}}
"""
LOGINSET = "main"  # the tenant's LoginSet key in the slurm chart values (render/tenants/slurm.py)
LOGIN_GATE = "slurm-login-ready"


def login_image(chart_version: str | None = None) -> str:
    """The login image of the Slurm the ``slurm`` chart ``chart_version`` runs (default: the pinned
    chart): the gates' clients are the release the daemons run, never an older or newer one."""
    version = chart_version or CHARTS["slurm"]["version"]
    tag = slinky_slurm_tag(version)
    if tag is None:
        raise GpufleetError(
            f"gpufleet_versions.slurm.version {version}: no known Slurm image for this slurm chart line"
            " (versions.SLINKY_SLURM_TAG); the upgrade gates and the accounts Job run that chart's Slurm"
        )
    return f"ghcr.io/slinkyproject/login:{tag}"


def login_service() -> str:
    """The login Service of the chart's LoginSet ``main`` (``<release>-login-<key>``, release
    ``slurm``; the operator names the Service after the LoginSet)."""
    return f"slurm-login-{LOGINSET}.{SLURM_NAMESPACE}"


def login_gate(tenant: Tenant, slurm_values: dict[str, Any], image: str | None = None) -> dict[str, Any]:
    host = login_service()
    what = f"a Ready login pod (sshd behind Service {host}:{LOGIN_PORT})"
    probe = f"exec 3<>/dev/tcp/{host}/{LOGIN_PORT} && head -c 4 <&3 | grep -q SSH-"
    runner = WAIT_FOR + (f"wait_for {shlex.quote(what)} timeout 10 bash -c {shlex.quote(probe)}\n")
    digest = hashlib.sha256(json.dumps(slurm_values, sort_keys=True).encode()).hexdigest()[:10]
    return wait_job(
        tenant,
        {
            "name": f"{LOGIN_GATE}-{digest}",
            "namespace": SLURM_NAMESPACE,
            "annotations": {"gpufleet.io/slurm-values-sha256": digest, WAITS_FOR: what},
        },
        LOGIN_BACKOFF_LIMIT,
        {"name": "wait", "image": image or login_image(), "command": ["/bin/bash", "-c", runner]},
    )


def wait_job(
    tenant: Tenant,
    metadata: dict[str, Any],
    backoff: int,
    container: dict[str, Any],
    volumes: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A Job of one container that waits for something and fails past ``backoff`` tries (the login gate,
    the upgrade gates): the tenant's labels on the Job and its pod, no restart in place, no
    service-account token."""
    labels = {"app.kubernetes.io/managed-by": "gpufleet", "gpufleet.io/tenant": tenant.name}
    pod: dict[str, Any] = {"restartPolicy": "Never", "automountServiceAccountToken": False, "containers": [container]}
    if volumes:
        pod["volumes"] = volumes
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {**metadata, "labels": labels},
        "spec": {"backoffLimit": backoff, "template": {"metadata": {"labels": labels}, "spec": pod}},
    }


def app_rows(tenant: Tenant, slurm_values: dict[str, Any], image: str | None = None) -> list[App]:
    """The gate app, last wave of a Slurm tenant with login pods."""
    if tenant.login_replicas <= 0:
        return []
    return [
        App(
            "7-slurm-ready.yaml",
            "slurm-ready",
            "tenant-accounting",
            SLURM_NAMESPACE,
            manifests={"login-ready.yaml": [login_gate(tenant, slurm_values, image)]},
            create_namespace=False,
        )
    ]
