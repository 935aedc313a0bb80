"""Read Argo CD Application objects through the Kubernetes API (the ``kubernetes`` client)."""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.argocd.status import GROUP, PLURAL, VERSION, StatusError


def custom_api(kubeconfig: str | None = None, context: str | None = None) -> Any:
    """A ``CustomObjectsApi`` from a kubeconfig file/context, or in-cluster config when neither is given."""
    try:
        from kubernetes import client, config
    except ImportError as exc:  # pragma: no cover - the module reports it as a missing requirement
        raise StatusError(f"the 'kubernetes' Python client is required: {exc}") from None
    try:
        if kubeconfig or context:
            api_client = config.new_client_from_config(config_file=kubeconfig, context=context)
        else:
            try:
                config.load_incluster_config()
                api_client = client.ApiClient()
            except config.ConfigException:
                api_client = config.new_client_from_config()
    except Exception as exc:  # config errors come in several types
        raise StatusError(
            f"cannot load kubeconfig {kubeconfig or '(default)'} context {context or '(current)'}: {exc}"
        ) from None
    return client.CustomObjectsApi(api_client)


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
