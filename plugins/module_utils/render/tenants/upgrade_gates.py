"""Health gates between the waves of a Slurm tenant's rollout: accounting, then controller, then workers.

The waves of ``render/tenants/rollout.py`` order the Slinky objects, but the pinned operator (v1.2.1) writes no
status on an ``Accounting`` or a ``Controller``, so Argo CD would find them Healthy as soon as they are
applied and start the next wave while slurmdbd still converts its database. Between the waves sit two
Argo CD ``Sync`` hooks (Jobs in the ``slurm`` chart's ``extraObjects``):

* wave ``accounting-ready`` (after the Accounting): ``sacctmgr ping`` until slurmdbd answers, for up to
  ``ACCOUNTING_GATE_BACKOFF_LIMIT`` + 1 attempts (2 h: a database conversion takes tens of minutes);
* wave ``controller-ready`` (after the Controller): ``scontrol ping`` until slurmctld answers *and*
  reports the Slurm release the chart runs (``controller_check``), so an old slurmctld that still
  answers while the operator has not rolled it yet does not open the workers' waves.

The accounting gate cannot tell an old slurmdbd from a new one: no Slurm client reports slurmdbd's
version (``sacctmgr show config`` prints its own, src/sacctmgr/config_functions.c; slurmdbd's config
key pairs carry none, src/slurmdbd/read_config.c) and the operator writes no status on an Accounting
(``accounting_sync_status.go``). The review flags a Slurm release change for that reason
(``daytwo/upgrade.py``).

A hook of a wave runs in that wave of every sync and the sync goes on to the next wave only once it
completed; a hook that fails (each attempt is ``slurm_ready.WAIT_TRIES`` tries ``WAIT_SECONDS`` apart,
``GATE_BACKOFF_LIMIT`` + 1 attempts) fails the sync, so the controller and the workers are not touched.
``BeforeHookCreation``: the previous run stays for inspection until the next sync replaces it.

The Jobs cannot use the operator's ``slurm.conf`` (it exists only once the Controller is reconciled, a
wave later), so each writes a client ``slurm.conf`` naming the daemons the way the operator's does
(``slurm-operator`` v1.2.1 ``internal/builder/controllerbuilder/controller_config.go``: Services
``<release>-controller`` / ``<release>-accounting``, ports 6817 / 6819, ``auth/slurm``) and reads the
cluster's ``slurm.key`` (auth/slurm looks for it next to slurm.conf, so it is copied there).
"""

from __future__ import annotations

import shlex
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.model.contracts import HOOK, SYNC_WAVE
from ansible_collections.gpufleet.core.plugins.module_utils.model.contracts import HOOK_DELETE_POLICY as HOOK_DELETE
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Tenant
from ansible_collections.gpufleet.core.plugins.module_utils.render.shared_names import SLURM_NAMESPACE
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants import slurm_ready

RELEASE = "slurm"  # the slurm chart's release: the Controller and Accounting are named after it
GATE_DIR = "/tmp/gpufleet-gate"
KEY_PATH = "/etc/slurm/slurm.key"
GATE_BACKOFF_LIMIT = 2  # three attempts of WAIT_TRIES x WAIT_SECONDS (5 min) each, then the sync fails
# slurmdbd converts its database on the first start of a new release, which "can take tens of minutes"
# (Slurm 26.05 doc/html/upgrades.shtml): 24 attempts of 5 min (2 h, plus the Job's back-off) before the
# sync fails
ACCOUNTING_GATE_BACKOFF_LIMIT = 23


def client_conf(tenant: Tenant) -> str:
    """The client ``slurm.conf`` of the gates (no secret: the key is a mounted file)."""
    ctld = f"{RELEASE}-controller"
    return "\n".join(
        (
            f"ClusterName={tenant.name.replace('-', '_')}",
            f"SlurmctldHost={ctld}-0({ctld}.{SLURM_NAMESPACE})",
            "SlurmctldPort=6817",
            "AuthType=auth/slurm",
            "CredType=cred/slurm",
            "AccountingStorageType=accounting_storage/slurmdbd",
            f"AccountingStorageHost={RELEASE}-accounting.{SLURM_NAMESPACE}",
            "AccountingStoragePort=6819",
        )
    )


def gate_script(tenant: Tenant, what: str, command: str) -> str:
    return (
        slurm_ready.WAIT_FOR
        + f'd={GATE_DIR}\nmkdir -p "$d"\n'
        + f'install -m 600 {KEY_PATH} "$d/slurm.key"\n'
        + f"cat >\"$d/slurm.conf\" <<'CONF'\n{client_conf(tenant)}\nCONF\n"
        + 'export SLURM_CONF="$d/slurm.conf"\n'
        + f"wait_for '{what}' {command}\n"
    )


def controller_check(release: str) -> str:
    """slurmctld answers and is the release the chart runs: ``scontrol show config`` prints the
    controller's own ``SLURM_VERSION`` (Slurm 26.05 src/api/config_info.c, the ``version`` of the
    configuration slurmctld sends), so the old slurmctld still answering a ping does not pass."""
    pattern = "^SLURM_VERSION *= *" + release.replace(".", "[.]") + "([.]|$)"
    return "sh -c " + shlex.quote(f"scontrol ping && scontrol show config | grep -Eq '{pattern}'")


def gate_job(
    tenant: Tenant, name: str, wave: str, what: str, command: str, image: str, backoff: int = GATE_BACKOFF_LIMIT
) -> dict[str, Any]:
    key = {"secret": {"name": f"{RELEASE}-auth-slurm", "items": [{"key": "slurm.key", "path": "slurm.key"}]}}
    annotations = {HOOK: "Sync", HOOK_DELETE: "BeforeHookCreation", SYNC_WAVE: wave, slurm_ready.WAITS_FOR: what}
    return slurm_ready.wait_job(
        tenant,
        {"name": name, "annotations": annotations},
        backoff,
        {
            "name": "gate",
            "image": image,
            "command": ["/bin/sh", "-c", gate_script(tenant, what, command)],
            "volumeMounts": [{"name": "slurm-key", "mountPath": "/etc/slurm/slurm.key", "subPath": "slurm.key"}],
        },
        [{"name": "slurm-key", "projected": {"defaultMode": 0o600, "sources": [key]}}],
    )


def gates(tenant: Tenant, waves: dict[str, str], image: str | None = None) -> list[dict[str, Any]]:
    """The gate Jobs of ``tenant`` (the accounting one only with accounting on), run from ``image`` (the
    login image of the Slurm the chart runs: ``slurm_ready.login_image``)."""
    image = image or slurm_ready.login_image()
    release = image.rsplit(":", 1)[1].split("-")[0]  # the Slurm release of the image tag (26.05-ubuntu26.04)
    out = []
    if tenant.accounting.enabled:
        out.append(
            gate_job(
                tenant,
                f"{RELEASE}-accounting-ready",
                waves["accounting-ready"],
                "slurmdbd (sacctmgr ping)",
                "sacctmgr ping",
                image,
                ACCOUNTING_GATE_BACKOFF_LIMIT,
            )
        )
    out.append(
        gate_job(
            tenant,
            f"{RELEASE}-controller-ready",
            waves["controller-ready"],
            f"slurmctld {release} (scontrol ping, SLURM_VERSION)",
            controller_check(release),
            image,
        )
    )
    return out
