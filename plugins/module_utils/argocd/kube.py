"""Read Argo CD Application objects through the Kubernetes API (the ``kubernetes`` client)."""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.argocd.status import GROUP, PLURAL, VERSION, StatusError
from ansible_collections.gpufleet.core.plugins.module_utils.kubeclient import custom_objects_api


def custom_api(kubeconfig: str | None = None, context: str | None = None) -> Any:
    """A ``CustomObjectsApi`` from a kubeconfig file/context, or in-cluster config when neither is given."""
    return custom_objects_api(kubeconfig, context, StatusError)


def list_applications(api: Any, namespace: str, label_selector: str = "") -> list[dict[str, Any]]:
    """All Applications of ``namespace`` (one LIST call), as plain dicts."""
    try:
        resp = api.list_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, label_selector=label_selector or None
        )
    except Exception as exc:
        status = getattr(exc, "status", None)
        if status == 404:
            raise StatusError(
                f"no Argo CD Application API ({GROUP}/{VERSION} {PLURAL}) on this cluster: is Argo CD installed?"
            ) from None
        reason = getattr(exc, "reason", None) or exc
        raise StatusError(f"cannot list Applications in namespace {namespace}: {reason}") from None
    return list(resp.get("items") or [])


def by_name(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {(i.get("metadata") or {}).get("name", ""): i for i in items}
