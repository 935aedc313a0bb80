"""GPU health -> drain: the Slurm ``HealthCheckProgram`` of a tenant and the Kubernetes quarantine.

Slurm side (passive checks, run by every slurmd every ``interval`` seconds, ``CYCLE`` spreads them):
uncorrected ECC errors and NVLink links down (``nvidia-smi``), fatal XIDs in the kernel log
(``dmesg``) and, on idle nodes only, ``dcgmi diag -r <level>``. A probe whose tool is absent is
skipped (a node without ``nvidia-smi`` has nothing to check). A failure drains the node with
``reason="gpufleet-health: ..."``; the script never resumes a node: a repaired node comes back
through ``playbooks/resume.yml``, so a flapping GPU cannot return itself to service.

The script is shipped in a ConfigMap (``gpufleet-health`` in the tenant's ``slurm`` namespace,
mode 0755) mounted into every slurmd container at ``HEALTH_DIR``.

Kubernetes side: a quarantined node carries the taint ``gpufleet.io/gpu-unhealthy:NoSchedule``
and the node condition ``GpuUnhealthy=True``. No pool fence tolerates the taint (see
``tolerates``; a test walks every rendered toleration), so neither Slinky NodeSet pods nor Kueue
workloads land there; the Slinky operator propagates the condition into a Slurm drain
(``propagatedNodeConditions``).
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.model.fence import (
    QUARANTINE_CONDITION,
    QUARANTINE_TAINT_EFFECT,
    QUARANTINE_TAINT_KEY,
)
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Tenant, TenantHealth

REASON_PREFIX = "gpufleet-health"
HEALTH_CONFIGMAP = "gpufleet-health"
HEALTH_VOLUME = "gpufleet-health"
HEALTH_DIR = "/etc/gpufleet/health"
HEALTH_SCRIPT = "gpu-healthcheck.sh"

_SCRIPT = r"""#!/bin/bash
# gpufleet GPU health check (Slurm HealthCheckProgram) of tenant @TENANT@.
# Rendered by gpufleet from the inventory (gpufleet_tenants[].health); do not edit, re-render.
# Drains this node with a reason when a GPU check fails. It never resumes a node:
# a repaired node returns through playbooks/resume.yml.
set -u
CHECKS="@CHECKS@"
FATAL_XIDS="@XIDS@"
DCGM_DIAG_LEVEL=@LEVEL@
NODE="${SLURMD_NODENAME:-$(hostname -s)}"
reasons=()

enabled() { case " $CHECKS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
have() { command -v "$1" >/dev/null 2>&1; }
fail() { reasons+=("$1"); }

if enabled ecc && have nvidia-smi; then
  if out=$(nvidia-smi --query-gpu=index,ecc.errors.uncorrected.volatile.total --format=csv,noheader,nounits 2>&1); then
    while IFS=', ' read -r idx count; do
      case "$count" in '' | *[!0-9]*) continue ;; esac
      [ "$count" -gt 0 ] && fail "gpu${idx} uncorrected ECC errors ${count}"
    done <<<"$out"
  else
    fail "nvidia-smi failed"
  fi
fi

if enabled nvlink && have nvidia-smi; then
  down=$(nvidia-smi nvlink --status 2>/dev/null | awk '
    /^GPU [0-9]+:/ { gpu = $2; sub(":", "", gpu) }
    /Link [0-9]+:/ && /inactive/ { n[gpu]++ }
    END { for (g in n) printf "gpu%s NVLink %d links down\n", g, n[g] }' | sort)
  while read -r line; do [ -n "$line" ] && fail "$line"; done <<<"$down"
fi

if enabled xid && have dmesg; then
  seen=$(dmesg 2>/dev/null | sed -n 's/.*NVRM: Xid (\([^)]*\)): \([0-9][0-9]*\).*/\2 \1/p' | sort -u)
  while read -r code where; do
    [ -z "$code" ] && continue
    case " $FATAL_XIDS " in *" $code "*) fail "XID ${code} ${where}" ;; esac
  done <<<"$seen"
fi

if enabled dcgm && have dcgmi; then
  # the diagnostic loads the GPUs: only on a node with no job
  if scontrol show node "$NODE" -o 2>/dev/null | grep -q 'State=IDLE[ +]'; then
    if ! out=$(dcgmi diag -r "$DCGM_DIAG_LEVEL" 2>&1) || grep -qw 'Fail' <<<"$out"; then
      fail "dcgmi diag -r ${DCGM_DIAG_LEVEL} failed"
    fi
  fi
fi

if [ "${#reasons[@]}" -gt 0 ]; then
  reason="@PREFIX@: $(IFS=';'; echo "${reasons[*]}" | tr -cd '[:alnum:] ;:,._/()-' | cut -c1-200)"
  scontrol update nodename="$NODE" state=drain reason="$reason"
fi
exit 0
"""


def health_script(tenant: Tenant) -> str:
    h = tenant.health
    return (
        _SCRIPT.replace("@TENANT@", tenant.name)
        .replace("@CHECKS@", " ".join(sorted(h.checks)))
        .replace("@XIDS@", " ".join(str(x) for x in sorted(h.xids)))
        .replace("@LEVEL@", str(int(h.dcgm_diag_level)))
        .replace("@PREFIX@", REASON_PREFIX)
    )


def slurm_conf(h: TenantHealth, program: str = f"{HEALTH_DIR}/{HEALTH_SCRIPT}") -> dict[str, Any]:
    """slurm.conf keys (``controller.extraConfMap``) that run the health check."""
    return {
        "HealthCheckProgram": program,
        "HealthCheckInterval": int(h.interval),
        "HealthCheckNodeState": [h.node_state, "CYCLE"],
    }


def configmap(tenant: Tenant, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": HEALTH_CONFIGMAP, "namespace": namespace},
        "data": {HEALTH_SCRIPT: health_script(tenant)},
    }


def add_to_nodeset(ns: dict[str, Any]) -> None:
    """Mount the health script into a NodeSet's slurmd (in place)."""
    ns["slurmd"].setdefault("volumeMounts", []).append(
        {"name": HEALTH_VOLUME, "mountPath": HEALTH_DIR, "readOnly": True}
    )
    ns["podSpec"].setdefault("volumes", []).append(
        {"name": HEALTH_VOLUME, "configMap": {"name": HEALTH_CONFIGMAP, "defaultMode": 0o755}}
    )


def operator_fragment() -> dict[str, Any]:
    """slurm-operator values: a ``GpuUnhealthy`` Node condition drains the Slurm node."""
    return {"propagatedNodeConditions": [QUARANTINE_CONDITION]}


def taint() -> dict[str, str]:
    return {"key": QUARANTINE_TAINT_KEY, "effect": QUARANTINE_TAINT_EFFECT}


def tolerates(toleration: dict[str, Any], t: dict[str, str] | None = None) -> bool:
    """Whether a pod toleration tolerates a taint (Kubernetes' ToleratesTaint rules)."""
    t = t or taint()
    effect = toleration.get("effect") or ""
    if effect and effect != t["effect"]:
        return False
    key = toleration.get("key") or ""
    op = toleration.get("operator") or "Equal"
    if not key:
        return op == "Exists"
    if key != t["key"]:
        return False
    if op == "Exists":
        return True
    return (toleration.get("value") or "") == (t.get("value") or "")
