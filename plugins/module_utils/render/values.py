"""Small helpers shared by the render modules: deep merge of Helm values, naming, header text."""

from __future__ import annotations

import copy
from typing import Any

HEADER = (
    "Rendered by gpufleet.core (gitops_render) from inventory fleet {fleet!r}. Do not edit: change the\n"
    "inventory and re-render."
)


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Helm-like merge: maps merge recursively, anything else (lists, scalars) in ``over`` wins."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def header(fleet_name: str, extra: str = "") -> str:
    text = HEADER.format(fleet=fleet_name)
    return f"{text}\n{extra}" if extra else text


def vcluster_namespace(tenant: str) -> str:
    """Host namespace of a tenant's vCluster."""
    return f"vc-{tenant}"


def vcluster_server(tenant: str) -> str:
    """How Argo CD reaches the vCluster: ``https://<name>.<namespace>:443`` (the serving cert has
    no ``.svc`` SAN)."""
    return f"https://{tenant}.{vcluster_namespace(tenant)}:443"


def translated_name(name: str, namespace: str, vcluster: str) -> str:
    """Name of a vCluster-synced namespaced object on the host: ``<name>-x-<namespace>-x-<vcluster>``."""
    return f"{name}-x-{namespace}-x-{vcluster}"
