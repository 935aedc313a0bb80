"""One way to build a Kubernetes API client for the modules that talk to a cluster (node pools,
Argo CD status, GPU health): a kubeconfig file/context, else in-cluster config, else the default
kubeconfig; every failure as ``error`` with the file and context named."""

from __future__ import annotations

from typing import Any


def api_client(kubeconfig: str | None, context: str | None, error: type[Exception]) -> Any:
    """A ``kubernetes.client.ApiClient``; raises ``error`` when the client or its config is missing."""
    try:
        from kubernetes import client, config
    except ImportError as exc:  # pragma: no cover - the modules report it as a missing requirement
        raise error(f"the 'kubernetes' Python client is required: {exc}") from None
    try:
        if kubeconfig or context:
            return config.new_client_from_config(config_file=kubeconfig, context=context)
        try:
            config.load_incluster_config()
            return client.ApiClient()
        except config.ConfigException:
            return config.new_client_from_config()
    except Exception as exc:  # config errors come in several types
        raise error(
            f"cannot load kubeconfig {kubeconfig or '(default)'} context {context or '(current)'}: {exc}"
        ) from None
