"""What a tenant may set in the Helm values of its own charts: an explicit allow-list per chart.

``gpufleet_tenants[].vcluster.values`` and ``gpufleet_tenants[].slurm.values`` come from a tenant's
pull request. The vcluster chart is deployed on the *host* by the platform project, so its values
decide the fence itself: which host nodes the tenant's pods land on (``sync.fromHost.nodes.selector``,
``sync.toHost.pods.enforceTolerations``), the RBAC the chart grants on the host, what is synced
either way, the quota, the control plane's image and placement. Deny by default: every key path a
tenant may set is listed here, with its type and bounds (JSON Schema, ``additionalProperties:
false`` at every level); anything else is an error naming the file and key. The schema is part of
``docs/fleet.schema.json``, so the allow-list is published and reviewable.

The allow-list was reviewed against one chart version (:data:`REVIEWED`): when the platform pins
another version in ``gpufleet_versions``, tenant values of that chart are refused until the list is
reviewed again. Keys outside the list are the platform's: it sets them for one tenant in its own
file, ``gpufleet_clusters[].tenant_overrides.<tenant>.<chart>.values`` (with a ``reason``), where
CODEOWNERS and reviewers see them.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import Issue

# Chart versions the allow-lists were reviewed against (a test keeps them equal to versions.CHARTS).
REVIEWED = {"vcluster": "0.36.1", "slurm": "1.2.1"}
MARK = "x-gpufleet-tenant-values"  # schema marker: an object of a tenant values allow-list

# Kubernetes quantities: a bounded decimal and an optional suffix (no exponent, no sign).
CPU = r"^([0-9]{1,3}(\.[0-9]{1,3})?|[0-9]{1,6}m)$"
MEMORY = r"^[0-9]{1,6}(Ki|Mi|Gi|k|M|G)?$"
# One slurm.conf option value: no whitespace, '#', quotes or control characters (a space would
# start a new option, '#' a comment).
SLURM_WORD = r"^[-A-Za-z0-9_.,:=+/@%]{1,256}$"

_DECIMAL = re.compile(r"[0-9]{1,16}(\.[0-9]{1,6})?")
_SUFFIX = {
    "": 1,
    "m": Decimal("0.001"),
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
}


def quantity(text: str) -> Decimal | None:
    """A Kubernetes quantity (the bounded forms above) as a number, or None."""
    if len(text) > 32:
        return None
    for suffix in ("Ki", "Mi", "Gi", "m", "k", "M", "G"):
        if text.endswith(suffix):
            num, mult = text[: -len(suffix)], _SUFFIX[suffix]
            break
    else:
        num, mult = text, 1
    if not _DECIMAL.fullmatch(num):  # ASCII digits only (no Unicode digits, exponents or signs)
        return None
    try:
        return Decimal(num) * mult
    except InvalidOperation:
        return None


def _obj(props: dict[str, Any], description: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "additionalProperties": False, "properties": props, MARK: True}
    if description:
        out["description"] = description
    return out


def _qty(regex: str, maximum: str, what: str) -> dict[str, Any]:
    return {"type": "string", "pattern": regex, "maxQuantity": maximum, "description": f"{what}, at most {maximum}"}


def _resources(cpu_max: str, mem_max: str) -> dict[str, Any]:
    pair = _obj({"cpu": _qty(CPU, cpu_max, "CPU"), "memory": _qty(MEMORY, mem_max, "memory")})
    return _obj({"requests": pair, "limits": pair}, "container resources (bounded)")


_INT = {"type": "integer"}

VCLUSTER: dict[str, Any] = _obj(
    {
        "controlPlane": _obj(
            {
                "statefulSet": _obj({"resources": _resources("8", "16Gi")}),
                "coredns": _obj({"deployment": _obj({"replicas": {**_INT, "minimum": 1, "maximum": 3}})}),
            }
        ),
        "telemetry": _obj({"enabled": {"type": "boolean"}}),
        "logging": _obj({"encoding": {"enum": ["console", "json"]}}),
    },
    "vcluster chart values a tenant may set (allow-list; everything else is the platform's:"
    " gpufleet_clusters[].tenant_overrides)",
)

# slurm.conf options a tenant may add (those gpufleet renders are not here: GresTypes, topology,
# accounting, health check, prolog/epilog; a tenant cannot override them).
SLURM_CONF_OPTIONS = (
    "DebugFlags",
    "DefMemPerCPU",
    "KillWait",
    "MaxArraySize",
    "MaxJobCount",
    "MessageTimeout",
    "MinJobAge",
    "SchedulerParameters",
    "SlurmctldDebug",
    "SlurmdDebug",
)
_SLURM_VALUE = {
    "anyOf": [
        {"type": "string", "pattern": SLURM_WORD},
        {"type": "integer", "minimum": 0, "maximum": 2**31 - 1},
    ]
}

SLURM: dict[str, Any] = _obj(
    {
        "controller": _obj(
            {
                "slurmctld": _obj({"resources": _resources("16", "64Gi")}),
                "extraConfMap": _obj({k: _SLURM_VALUE for k in SLURM_CONF_OPTIONS}, "extra slurm.conf options"),
            }
        ),
        "loginsets": _obj({"main": _obj({"login": _obj({"resources": _resources("16", "64Gi")})})}),
    },
    "slurm chart values a tenant may set (allow-list; everything else is the platform's:"
    " gpufleet_clusters[].tenant_overrides)",
)

ALLOW = {"vcluster": VCLUSTER, "slurm": SLURM}
# where each chart's tenant values sit in a tenant entry
TENANT_KEY = {"vcluster": ("vcluster", "values"), "slurm": ("slurm", "values")}

OVERRIDES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "platform-owned: chart values for one tenant that its own entry may not set"
    " (outside the allow-list); merged over the tenant's values. Reviewers read these.",
    "propertyNames": {"type": "string", "pattern": r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$"},
    "additionalProperties": {
        "type": "object",
        "additionalProperties": False,
        "required": ["reason"],
        "properties": {
            "reason": {"type": "string", "pattern": r"^[^\x00-\x1f\x7f]{1,500}$", "description": "why (one line)"},
            "vcluster": {"type": "object", "additionalProperties": False, "properties": {"values": {"type": "object"}}},
            "slurm": {"type": "object", "additionalProperties": False, "properties": {"values": {"type": "object"}}},
        },
    },
}


def leaves(schema: dict[str, Any] | None = None, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], dict]]:
    """Every allow-listed key path of an allow-list schema (default: the vcluster one) with its leaf
    schema (for docs and tests)."""
    schema = VCLUSTER if schema is None else schema
    if schema.get(MARK):
        out = []
        for k, sub in schema["properties"].items():
            out += leaves(sub, (*path, k))
        return out
    return [(path, schema)]


def is_allow_list(schema: dict[str, Any]) -> bool:
    return bool(schema.get(MARK))


def version_issues(raw: Any) -> list[Issue]:
    """Tenant values of a chart whose pinned version differs from the reviewed one are refused."""
    versions = raw.data.get("gpufleet_versions")
    tenants = raw.data.get("gpufleet_tenants")
    if not isinstance(versions, dict) or not isinstance(tenants, list):
        return []
    issues = []
    for chart, reviewed in REVIEWED.items():
        over = versions.get(chart)
        version = over.get("version") if isinstance(over, dict) else None
        if version is None or version == reviewed:
            continue
        for ti, t in enumerate(tenants):
            sect = t.get(TENANT_KEY[chart][0]) if isinstance(t, dict) else None
            if isinstance(sect, dict) and sect.get("values"):
                issues.append(
                    raw.issue(
                        ("gpufleet_tenants", ti, *TENANT_KEY[chart]),
                        f"tenant {chart} values are allow-listed for chart version {reviewed}, but"
                        f" gpufleet_versions.{chart}.version pins {version!r}: the platform moves them to"
                        " gpufleet_clusters[].tenant_overrides until the allow-list is reviewed for that version",
                    )
                )
    return issues


def override_issues(raw: Any) -> list[Issue]:
    """``tenant_overrides`` name tenants of that cluster."""
    clusters = raw.data.get("gpufleet_clusters")
    tenants = raw.data.get("gpufleet_tenants")
    if not isinstance(clusters, list):
        return []
    where = {
        t["name"]: t.get("cluster")
        for t in (tenants if isinstance(tenants, list) else [])
        if isinstance(t, dict) and isinstance(t.get("name"), str)
    }
    issues = []
    for ci, c in enumerate(clusters):
        over = c.get("tenant_overrides") if isinstance(c, dict) else None
        if not isinstance(over, dict):
            continue
        for name in over:
            if where.get(name) != c.get("name"):
                issues.append(
                    raw.issue(
                        ("gpufleet_clusters", ci, "tenant_overrides", name),
                        f"no tenant {name!r} in cluster {c.get('name')!r}",
                    )
                )
    return issues


def _resource_blocks(values: Any, path: tuple[str | int, ...]) -> list[tuple[tuple[str | int, ...], dict]]:
    """Every allow-listed ``resources`` object under ``values`` with its key path."""
    if not isinstance(values, dict):
        return []
    if "resources" in values and isinstance(values["resources"], dict):
        return [((*path, "resources"), values["resources"])]
    out = []
    for k, v in values.items():
        out += _resource_blocks(v, (*path, k))
    return out


def resource_issues(raw: Any) -> list[Issue]:
    """A tenant's ``requests`` come with a ``limits`` of the same resource at least as large.

    The API server refuses a pod whose request exceeds its limit, and a request without a limit
    meets the chart's default limit (vcluster: ``controlPlane.statefulSet.resources.limits.memory``
    4Gi), so the tenant names both and the render keeps them as given."""
    tenants = raw.data.get("gpufleet_tenants")
    issues = []
    for ti, t in enumerate(tenants if isinstance(tenants, list) else []):
        for chart, (sect, key) in TENANT_KEY.items():
            given = (t.get(sect) or {}).get(key) if isinstance(t, dict) and isinstance(t.get(sect), dict) else None
            for path, res in _resource_blocks(given, ("gpufleet_tenants", ti, sect, key)):
                issues += _request_issues(raw, path, res, chart)
    return issues


def _request_issues(raw: Any, path: tuple[str | int, ...], res: dict, chart: str) -> list[Issue]:
    req, lim = res.get("requests") or {}, res.get("limits") or {}
    if not isinstance(req, dict) or not isinstance(lim, dict):
        return []  # the schema names the wrong type
    issues = []
    for name, want in req.items():
        cap = lim.get(name)
        at = (*path, "requests", name)
        if cap is None:
            msg = f"requests.{name} {want} needs limits.{name} too (at least as large): without it the {chart}"
            issues.append(raw.issue(at, msg + " chart's default limit applies"))
            continue
        r, c = quantity(str(want)), quantity(str(cap))
        if r is not None and c is not None and r > c:
            msg = f"requests.{name} {want} exceeds limits.{name} {cap}: the API server refuses the pod"
            issues.append(raw.issue(at, msg))
    return issues
