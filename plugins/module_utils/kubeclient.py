"""One way to build a Kubernetes API client for the modules that talk to a cluster (node pools,
Argo CD status, GPU health): a kubeconfig file/context, else in-cluster config, else the default
kubeconfig; every failure as ``error`` with the file and context named.

The one file of the core that imports the ``kubernetes`` client (guarded like PyYAML, see deps.py).
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.deps import available, missing

try:
    from kubernetes import client, config
except ImportError:  # importing works without it; the first use raises a clear error
    client = config = missing("kubernetes", "kubernetes")


def api_client(kubeconfig: str | None, context: str | None, error: type[Exception]) -> Any:
    """A ``kubernetes.client.ApiClient``; raises ``error`` when the client or its config is missing."""
    if not available(client):
        raise error("the 'kubernetes' Python client is required on the Ansible controller: pip install kubernetes")
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


def core_v1_api(kubeconfig: str | None, context: str | None, error: type[Exception]) -> Any:
    """A ``CoreV1Api`` (Nodes) on :func:`api_client`."""
    return client.CoreV1Api(api_client(kubeconfig, context, error))


def custom_objects_api(kubeconfig: str | None, context: str | None, error: type[Exception]) -> Any:
    """A ``CustomObjectsApi`` (Argo CD Applications) on :func:`api_client`."""
    return client.CustomObjectsApi(api_client(kubeconfig, context, error))
