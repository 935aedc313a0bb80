"""Small helpers shared by the render modules: deep merge of Helm values, naming, header text."""

from __future__ import annotations

import copy
from typing import Any

HEADER = (
    "Rendered by gpufleet.core (gitops_render) from inventory fleet {fleet!r}. Do not edit: change the\n"
    "inventory and re-render."
)


_ATOMIC = frozenset({str, int, float, bool, type(None)})


def _deepcopy(x: Any, memo: dict[int, Any]) -> Any:
    """``copy.deepcopy(x, memo)``, the same copy (shared objects stay shared), without its dispatch
    for every value of the plain dicts, lists and scalars Helm values are made of; other types go
    to copy.deepcopy with the same memo."""
    kind = type(x)
    if kind in _ATOMIC:
        return x
    hit = memo.get(id(x))
    if hit is not None:
        return hit
    if kind is dict:
        y: Any = {}
        memo[id(x)] = y
        for k, v in x.items():
            y[k if type(k) in _ATOMIC else _deepcopy(k, memo)] = _deepcopy(v, memo)
        return y
    if kind is list:
        y = []
        memo[id(x)] = y
        y.extend(_deepcopy(v, memo) for v in x)
        return y
    return copy.deepcopy(x, memo)


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Helm-like merge: maps merge recursively, anything else (lists, scalars) in ``over`` wins."""
    out = _deepcopy(base, {})
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = _deepcopy(value, {})
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
