"""Kubernetes workloads through a tenant's own Slurm (slurm-bridge): the inventory schema and its checks.

The option has two owners, like every key that touches the fence:

* the **platform** turns it on for one tenant and says which of the tenant's Slurm pools the bridge may
  hand to pods and the Slurm partition of those nodes, in ``gpufleet_clusters[].slurm_bridge.<tenant>``
  (with a reason; platform files, platform review)::

      slurm_bridge:
        llm-pretrain: {pools: [pretrain], partition: k8s, reason: "inference next to training (ticket 789)"}

* the **tenant** says, inside those bounds, which namespaces of its vCluster are managed (their pods go
  to the bridge's scheduler) and which of its own accounts and QOS pods may be charged to, in
  ``gpufleet_tenants[].slurm.bridge``::

      slurm:
        bridge: {namespaces: [ml-jobs], accounts: [pretrain], default_account: pretrain, qos: [normal]}

Every string here ends up in the bridge's configuration, a Slurm partition line or an admission policy,
so each one has a grammar (Kubernetes namespace, Slurm partition, account and QOS names) and a bound.

``build`` gives the render (render/tenants/bridge.py) the option of one tenant as a :class:`Bridge`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import Issue
from ansible_collections.gpufleet.core.plugins.module_utils.model import grammar as g
from ansible_collections.gpufleet.core.plugins.module_utils.model.accounting_model import SLURM_NAME

DEFAULT_PARTITION = "slurm-bridge"  # the chart's schedulerConfig.partition
# what the chart's scheduler passes, fixed in helm/slurm-bridge/templates/scheduler/deployment.yaml (no value
# changes it); model/feature_gates.py judges it for every tenant with the option
SCHEDULER_FEATURE_GATES = (
    "--feature-gates=DRAExtendedResource=true,DynamicResourceAllocation=true,SchedulerPopFromBackoffQ=false"
)
MAX_NAMESPACES = 16
# namespaces inside a vCluster that are never the bridge's to manage: Kubernetes' own, the platform's
# (Slurm, the Slinky operator, cert-manager) and the bridge's own
RESERVED_NAMESPACES = (
    "default",
    "kube-node-lease",
    "kube-public",
    "kube-system",
    "slurm",
    "slinky",
    "cert-manager",
    "slurm-bridge",
)
_NAMES = {"type": "array", "items": SLURM_NAME, "uniqueItems": True, "maxItems": 64}

PLATFORM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "platform-owned: tenants whose Kubernetes workloads their own Slurm schedules (slurm-bridge),"
    " with the Slurm pools the bridge may hand to pods and their partition (model/bridge_model.py)",
    "propertyNames": {"type": "string", "pattern": g.NAME},
    "maxProperties": 100,
    "additionalProperties": {
        "type": "object",
        "additionalProperties": False,
        "required": ["pools", "reason"],
        "properties": {
            "pools": {
                "type": "array",
                "items": g.pattern(g.NAME, "a Slurm pool of the tenant"),
                "minItems": 1,
                "maxItems": 64,
                "uniqueItems": True,
            },
            "partition": g.pattern(g.PARTITION, "Slurm partition of the bridged nodes", default=DEFAULT_PARTITION),
            "reason": g.pattern(r"^[^\x00-\x1f\x7f]{1,500}$", "why (one line)"),
        },
    },
}
TENANT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Kubernetes workloads through the tenant's Slurm (slurm-bridge), once the platform turns it on"
    " in gpufleet_clusters[].slurm_bridge: the managed namespaces and what pods may be charged to",
    "additionalProperties": False,
    "required": ["namespaces"],
    "properties": {
        "namespaces": {
            "type": "array",
            "items": g.pattern(g.NAME, "namespace inside the vCluster"),
            "minItems": 1,
            "maxItems": MAX_NAMESPACES,
            "uniqueItems": True,
            "description": "namespaces inside the vCluster whose pods Slurm schedules",
        },
        "accounts": {**_NAMES, "description": "accounts of slurm.accounting pods may name (empty: the default only)"},
        "default_account": {**SLURM_NAME, "description": "the account of a pod that names none"},
        "qos": {**_NAMES, "description": "QOS of slurm.accounting pods may name"},
    },
}


@dataclass(frozen=True)
class Bridge:
    """The slurm-bridge option of one tenant, both owners' parts."""

    pools: tuple[str, ...]  # the tenant's Slurm pools whose nodes the bridge hands to pods
    partition: str  # the Slurm partition of those nodes, the bridge's default partition
    namespaces: tuple[str, ...]  # managed namespaces inside the vCluster
    accounts: tuple[str, ...] = ()
    default_account: str | None = None
    qos: tuple[str, ...] = ()


def build(platform: Any, tenant: Any) -> Bridge | None:
    """The :class:`Bridge` of a validated tenant (``platform``: its ``slurm_bridge`` entry, ``tenant``:
    its ``slurm.bridge``), None when the platform has not turned it on."""
    if not isinstance(platform, dict) or not isinstance(tenant, dict):
        return None
    return Bridge(
        pools=tuple(sorted(platform["pools"])),
        partition=platform.get("partition", DEFAULT_PARTITION),
        namespaces=tuple(sorted(tenant["namespaces"])),
        accounts=tuple(tenant.get("accounts", ())),
        default_account=tenant.get("default_account"),
        qos=tuple(tenant.get("qos", ())),
    )


def platform_entries(data: dict[str, Any]) -> dict[str, Any]:
    """tenant -> its ``gpufleet_clusters[].slurm_bridge`` entry, over every cluster."""
    return {
        t: spec
        for c in _list(data.get("gpufleet_clusters"))
        for t, spec in _dict(_dict(c).get("slurm_bridge")).items()
        if isinstance(t, str)
    }


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _strs(v: Any) -> set[str]:
    """The strings of a list (any other item is the schema's to report)."""
    return {x for x in _list(v) if isinstance(x, str)}


def _named(v: Any) -> dict[str, dict[str, Any]]:
    """The items of a list of mappings by their string ``name``."""
    return {x["name"]: x for x in _list(v) if isinstance(x, dict) and isinstance(x.get("name"), str)}


def _accounting(t: dict[str, Any]) -> dict[str, Any] | None:
    """The tenant's accounting mapping, or None when accounting is off."""
    spec = _dict(t.get("slurm")).get("accounting", True)
    if spec is False or (isinstance(spec, dict) and spec.get("enabled") is False):
        return None
    return _dict(spec)


def _platform_issues(raw: Any, ci: int, cname: str, tenant: str, spec: dict[str, Any], ctx: dict) -> list[Issue]:
    base = ("gpufleet_clusters", ci, "slurm_bridge", tenant)
    t = ctx["tenants"].get(tenant)
    if t is None or t[1].get("cluster") != cname:
        return [raw.issue(base, f"tenant {tenant!r} is not a tenant of cluster {cname!r}")]
    out = []
    own = _strs(t[1].get("pools"))
    partitions = {}
    for pool in ctx["pools"].values():
        part = _dict(pool.get("slurm")).get("partition", pool["name"])
        if pool["name"] in own and pool.get("kind") == "slurm" and isinstance(part, str):
            partitions[part] = pool["name"]
    for pi, p in enumerate(_list(spec.get("pools"))):
        if isinstance(p, str) and (p not in own or _dict(ctx["pools"].get(p)).get("kind") != "slurm"):
            out.append(raw.issue((*base, "pools", pi), f"{p!r} is not a Slurm pool of tenant {tenant!r}"))
    part = spec.get("partition", DEFAULT_PARTITION)
    if isinstance(part, str) and part in partitions:
        out.append(
            raw.issue(
                (*base, "partition"),
                f"partition {part!r} is already pool {partitions[part]!r}'s: the bridged"
                " nodes get a partition of their own",
            )
        )
    return out


def _tenant_issues(raw: Any, ti: int, t: dict[str, Any], enabled: bool) -> list[Issue]:
    spec = _dict(_dict(t.get("slurm")).get("bridge"))
    base = ("gpufleet_tenants", ti, "slurm", "bridge")
    if not enabled:
        return [
            raw.issue(
                base,
                "the platform has not turned slurm-bridge on for this tenant"
                f" (gpufleet_clusters[].slurm_bridge.{t.get('name')})",
            )
        ]
    out = []
    kueue = _strs(t.get("namespaces"))
    for ni, ns in enumerate(_list(spec.get("namespaces"))):
        if not isinstance(ns, str):
            continue
        if ns in RESERVED_NAMESPACES:
            out.append(raw.issue((*base, "namespaces", ni), f"{ns!r} is a system or platform namespace"))
        elif ns in kueue:
            out.append(raw.issue((*base, "namespaces", ni), f"{ns!r} is one of the tenant's Kueue namespaces"))
    acct = _accounting(t)
    named = [("accounts", a) for a in _list(spec.get("accounts"))] + [("qos", q) for q in _list(spec.get("qos"))]
    if "default_account" in spec:
        named.append(("default_account", spec["default_account"]))
    if acct is None:
        return out + ([raw.issue(base, "slurm.accounting is off: pods are charged to accounts")] if named else [])
    known = {
        "accounts": set(_named(acct.get("accounts"))),
        "qos": set(_named(acct.get("qos"))),
    }
    known["default_account"] = _strs(spec.get("accounts")) or known["accounts"]
    for key, name in named:
        if isinstance(name, str) and name not in known[key]:
            where = "slurm.bridge.accounts" if key == "default_account" else f"slurm.accounting.{key}"
            out.append(raw.issue((*base, key), f"{name!r} is not in the tenant's {where}"))
    return out


def issues(raw: Any) -> list[Issue]:
    """Every problem of the slurm-bridge option (schema-valid shapes only; the schema reports the rest)."""
    d = raw.data
    tenants = {
        t["name"]: (ti, t)
        for ti, t in enumerate(_list(d.get("gpufleet_tenants")))
        if isinstance(t, dict) and isinstance(t.get("name"), str)
    }
    ctx = {"tenants": tenants, "pools": _named(d.get("gpufleet_pools"))}
    out: list[Issue] = []
    enabled: set[str] = set()
    for ci, c in enumerate(_list(d.get("gpufleet_clusters"))):
        for tenant, spec in sorted(x for x in _dict(_dict(c).get("slurm_bridge")).items() if isinstance(x[0], str)):
            enabled.add(tenant)
            out += _platform_issues(raw, ci, _dict(c).get("name"), tenant, _dict(spec), ctx)
            t = tenants.get(tenant)
            if t is not None and "bridge" not in _dict(t[1].get("slurm")):
                out.append(
                    raw.issue(
                        ("gpufleet_clusters", ci, "slurm_bridge", tenant),
                        f"the tenant has not said which namespaces the bridge manages"
                        f" (gpufleet_tenants[{t[0]}].slurm.bridge.namespaces)",
                    )
                )
    for name, (ti, t) in sorted(tenants.items(), key=lambda kv: kv[1][0]):
        if "bridge" in _dict(t.get("slurm")):
            out += _tenant_issues(raw, ti, t, name in enabled)
    return out
