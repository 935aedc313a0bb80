"""Kubernetes side of GPU health: quarantine a Node (taint + condition) and return it to service.

A quarantined Node carries

* the taint ``gpufleet.io/gpu-unhealthy:NoSchedule``, tolerated by no pool fence, so neither
  Slinky NodeSet pods nor Kueue workloads are placed there (running pods stay: NoSchedule);
* the condition ``GpuUnhealthy=True`` (reason ``GpufleetHealth``, the message is the reason given),
  which the Slinky operator turns into a Slurm drain (``propagatedNodeConditions``);
* the annotation ``gpufleet.io/gpu-unhealthy-reason`` (the same text, readable with kubectl).

Resuming removes the taint and annotation and sets the condition ``False``. Neither touches the
pool labels/taints that ``node_pools`` owns, and the node stays in its pool: quarantine is not a
pool change, so the pool lock and the GitOps tree are untouched (see docs/health.md).

Pure planning (``plan``) plus thin API calls (``apply``) on a ``CoreV1Api``.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils import kubeclient
from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.model import fence

REASON_ANNOTATION = "gpufleet.io/gpu-unhealthy-reason"
CONDITION_REASON = "GpufleetHealth"
_REASON = re.compile(r"^[A-Za-z0-9][-A-Za-z0-9 _.,:;()/=]{0,199}$")


class HealthError(GpufleetError):
    pass


def core_api(kubeconfig: str | None = None, context: str | None = None) -> Any:
    """The ``CoreV1Api`` the health operations use (kubeclient.py); its failures as HealthError."""
    return kubeclient.core_v1_api(kubeconfig, context, HealthError)


@dataclass(frozen=True)
class NodeHealth:
    node: str
    quarantined: bool
    reason: str
    pool: str | None
    tenant: str | None
    condition: str | None  # status of the GpuUnhealthy condition, None when absent

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_reason(reason: str) -> str:
    if not isinstance(reason, str) or not _REASON.match(reason):
        raise HealthError(
            f"reason {reason!r}: 1-200 characters, letters, digits, space and -_.,:;()/= (it goes into a taint"
            " annotation, a node condition and a Slurm drain reason)"
        )
    return reason


def node_health(node: dict[str, Any]) -> NodeHealth:
    meta = node.get("metadata") or {}
    taints = (node.get("spec") or {}).get("taints") or []
    conds = [
        c for c in (node.get("status") or {}).get("conditions") or [] if c.get("type") == fence.QUARANTINE_CONDITION
    ]
    labels = meta.get("labels") or {}
    cond = conds[0] if conds else None
    reason = (meta.get("annotations") or {}).get(REASON_ANNOTATION) or (cond or {}).get("message") or ""
    return NodeHealth(
        node=meta.get("name", ""),
        quarantined=any(t.get("key") == fence.QUARANTINE_TAINT_KEY for t in taints)
        or bool(cond and cond.get("status") == "True"),
        reason=reason,
        pool=labels.get(fence.POOL_KEY),
        tenant=labels.get(fence.TENANT_KEY),
        condition=cond.get("status") if cond else None,
    )


def plan(node: dict[str, Any], state: str, reason: str = "") -> dict[str, Any] | None:
    """Patches to reach ``state`` (``quarantined`` | ``resumed``): ``{"spec": ..., "status": ...}``
    (merge patch of the Node with its resourceVersion, strategic patch of its status), or None."""
    meta = node.get("metadata") or {}
    taints = list((node.get("spec") or {}).get("taints") or [])
    annotations = meta.get("annotations") or {}
    h = node_health(node)
    has_taint = any(t.get("key") == fence.QUARANTINE_TAINT_KEY for t in taints)
    out: dict[str, Any] = {}
    if state == "quarantined":
        check_reason(reason)
        if not has_taint or annotations.get(REASON_ANNOTATION) != reason:
            kept = [t for t in taints if t.get("key") != fence.QUARANTINE_TAINT_KEY]
            out["spec"] = {
                "metadata": {
                    "resourceVersion": meta.get("resourceVersion"),
                    "annotations": {REASON_ANNOTATION: reason},
                },
                "spec": {
                    "taints": [
                        *kept,
                        {"key": fence.QUARANTINE_TAINT_KEY, "value": "true", "effect": fence.QUARANTINE_TAINT_EFFECT},
                    ]
                },
            }
        if h.condition != "True" or h.reason != reason:
            out["status"] = _condition("True", reason)
    elif state == "resumed":
        if has_taint or REASON_ANNOTATION in annotations:
            out["spec"] = {
                "metadata": {"resourceVersion": meta.get("resourceVersion"), "annotations": {REASON_ANNOTATION: None}},
                "spec": {"taints": [t for t in taints if t.get("key") != fence.QUARANTINE_TAINT_KEY] or None},
            }
        if h.condition == "True":
            out["status"] = _condition("False", "GPU health restored (gpufleet resume)")
    else:
        raise HealthError(f"state {state!r}: quarantined or resumed")
    return out or None


def _condition(status: str, message: str) -> dict[str, Any]:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "status": {
            "conditions": [
                {
                    "type": fence.QUARANTINE_CONDITION,
                    "status": status,
                    "reason": CONDITION_REASON,
                    "message": message,
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            ]
        }
    }


def _reason(exc: Exception) -> str:
    status, reason = getattr(exc, "status", None), getattr(exc, "reason", None)
    return f"HTTP {status} {reason}" if status else str(exc)


def read_node(api: Any, name: str) -> dict[str, Any]:
    try:
        return api.api_client.sanitize_for_serialization(api.read_node(name))
    except Exception as exc:
        raise HealthError(f"cannot read Node {name}: {_reason(exc)}") from None


def list_health(api: Any) -> list[NodeHealth]:
    try:
        items = api.list_node().items
    except Exception as exc:
        raise HealthError(f"cannot list Nodes: {_reason(exc)}") from None
    nodes = [node_health(api.api_client.sanitize_for_serialization(n)) for n in items]
    return sorted(nodes, key=lambda h: h.node)


def apply(api: Any, name: str, state: str, reason: str = "", check: bool = False) -> dict[str, Any]:
    """Bring Node ``name`` to ``state``; returns ``{"node", "changed", "before", "after"}``."""
    node = read_node(api, name)
    before = node_health(node)
    patch = plan(node, state, reason)
    if patch and not check:
        try:
            if "spec" in patch:
                api.patch_node(name, patch["spec"], _content_type="application/merge-patch+json")
            if "status" in patch:
                api.patch_node_status(name, patch["status"], _content_type="application/strategic-merge-patch+json")
        except Exception as exc:
            raise HealthError(f"cannot patch Node {name}: {_reason(exc)}") from None
    after = node_health(read_node(api, name)) if patch and not check else before
    if check and patch:
        after = NodeHealth(
            before.node,
            state == "quarantined",
            reason if state == "quarantined" else "",
            before.pool,
            before.tenant,
            "True" if state == "quarantined" else ("False" if before.condition else None),
        )
    return {"node": name, "changed": bool(patch), "before": before.as_dict(), "after": after.as_dict()}
