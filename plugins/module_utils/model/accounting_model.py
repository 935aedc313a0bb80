"""Slurm accounting of a tenant: the inventory schema, the typed model and its cross-reference checks.

A tenant writes ``slurm.accounting`` as ``true``/``false`` or as a mapping::

    accounting:
      enabled: true                      # default
      database: {type: mariadb-operator, storage: 16Gi}   # or {type: external, host: db.example, port: 3306}
      fairshare: {weights: {fairshare: 10000, age: 1000, qos: 2000}, decay_half_life: 7-0}
      default_account: pretrain          # where the tenant's users land
      qos:
        - {name: normal, priority: 10, max_wall: "2-00:00:00", max_tres_per_job: {gres/gpu: 64}}
      accounts:
        - {name: pretrain, fairshare: 100, qos: [normal], default_qos: normal, users: [alice]}

Everything here ends up in slurm.conf, slurmdbd.conf or a ``sacctmgr`` command line, so every
string is checked against Slurm's grammar (names, time formats, TRES) in the schema: no
whitespace, ``=``, ``,``, quotes or newlines can get through. Cross references (a QOS that is not
defined, a parent cycle) are checked in ``reference_issues``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import Issue
from ansible_collections.gpufleet.core.plugins.module_utils.model.grammar import HOSTNAME, pattern

# Slurm account/QOS names: Slurm lower-cases them; keep to a conservative, shell- and conf-safe set.
SLURM_NAME = {
    "type": "string",
    "pattern": "^[a-z][a-z0-9_-]{0,62}$",
    "description": "Slurm account/QOS name: lower-case letter, then [a-z0-9_-], max 63 chars",
}
USER_NAME = {
    "type": "string",
    "pattern": "^[a-z_][a-z0-9_-]{0,31}$",
    "description": "POSIX user name: [a-z_] then [a-z0-9_-], max 32 chars",
}
# Slurm time: minutes, minutes:seconds, hours:minutes:seconds, days-hours, days-hours:minutes,
# days-hours:minutes:seconds, or UNLIMITED / INFINITE.
SLURM_TIME = {
    "type": "string",
    # = grammar.SLURM_TIME (not imported: fleet.py imports this module and must not need jsonschema)
    "pattern": r"^(UNLIMITED|INFINITE|[0-9]{1,7}(:[0-9]{1,2}){0,2}|[0-9]{1,5}-[0-9]{1,2}(:[0-9]{1,2}){0,2})$",
    "description": "Slurm time: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED",
}
# TRES maps: cpu, mem (MB or with K/M/G/T suffix), node, billing, energy, gres/<type>[:<model>]
TRES = {
    "type": "object",
    "description": "TRES limits, e.g. {gres/gpu: 64, node: 8, cpu: 1024, mem: 2T}",
    "propertyNames": {"pattern": "^(cpu|mem|node|billing|energy|gres/[a-z][a-z0-9_]{0,31}(:[a-z0-9_]{1,32})?)$"},
    "additionalProperties": {
        "anyOf": [
            {"type": "integer", "minimum": 0, "maximum": 2**52},
            {"type": "string", "pattern": "^[0-9]{1,15}[KMGTP]?$"},
        ]
    },
    "minProperties": 1,
}
_COUNT = {"type": "integer", "minimum": 0, "maximum": 2**31 - 1}
_WEIGHT = {"type": "integer", "minimum": 0, "maximum": 2**32 - 1}
WEIGHTS = ("age", "assoc", "fairshare", "jobsize", "partition", "qos")
DEFAULT_WEIGHTS = {"age": 1000, "assoc": 0, "fairshare": 10000, "jobsize": 0, "partition": 0, "qos": 2000}
ENFORCE = ("associations", "limits", "qos", "safe", "wckeys", "nojobs", "nosteps")
DEFAULT_ENFORCE = ("associations", "limits", "qos")
DB_TYPES = ("mariadb-operator", "external")

QOS_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {
        "name": SLURM_NAME,
        "priority": _COUNT,
        "max_wall": SLURM_TIME,
        "max_tres_per_job": TRES,
        "max_tres_per_user": TRES,
        "grp_tres": TRES,
        "max_jobs_per_user": _COUNT,
        "max_submit_jobs_per_user": _COUNT,
        "deny_on_limit": {
            "type": "boolean",
            "default": False,
            "description": "reject a job over a limit at submission instead of leaving it pending",
        },
    },
}
ACCOUNT_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {
        "name": SLURM_NAME,
        "parent": {**SLURM_NAME, "description": "parent account (default: root)"},
        "fairshare": {"type": "integer", "minimum": 1, "maximum": 2**31 - 1, "default": 1},
        "qos": {"type": "array", "items": SLURM_NAME, "uniqueItems": True},
        "default_qos": SLURM_NAME,
        "grp_tres": TRES,
        "max_tres_per_job": TRES,
        "max_wall": SLURM_TIME,
        "users": {"type": "array", "items": USER_NAME, "uniqueItems": True},
    },
}
ACCOUNTING_OBJECT = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "enabled": {"type": "boolean", "default": True},
        "database": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "type": {"enum": list(DB_TYPES), "default": "mariadb-operator"},
                "host": pattern(HOSTNAME, "external database host name or IP (type: external)"),
                "port": {"type": "integer", "minimum": 1, "maximum": 65535, "default": 3306},
                "name": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]{0,63}$", "default": "slurm_acct_db"},
                "user": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]{0,31}$", "default": "slurm"},
                "storage": {
                    "type": "string",
                    "pattern": "^[0-9]{1,6}(Mi|Gi|Ti)$",
                    "default": "16Gi",
                    "description": "PVC size of the mariadb-operator MariaDB",
                },
                "storage_class": {"type": "string", "pattern": "^[a-z0-9]([-.a-z0-9]{0,251}[a-z0-9])?$"},
            },
        },
        "enforce": {
            "type": "array",
            "items": {"enum": list(ENFORCE)},
            "uniqueItems": True,
            "default": list(DEFAULT_ENFORCE),
            "description": "AccountingStorageEnforce",
        },
        "fairshare": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "weights": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {w: _WEIGHT for w in WEIGHTS},
                },
                "decay_half_life": {**SLURM_TIME, "default": "7-0"},
                "max_age": {**SLURM_TIME, "default": "7-0"},
                "favor_small": {"type": "boolean", "default": False},
            },
        },
        "default_account": SLURM_NAME,
        "qos": {"type": "array", "items": QOS_SCHEMA},
        "accounts": {"type": "array", "items": ACCOUNT_SCHEMA},
    },
}
SCHEMA = {"anyOf": [{"type": "boolean"}, ACCOUNTING_OBJECT], "default": True}


@dataclass(frozen=True)
class Database:
    type: str = "mariadb-operator"
    host: str | None = None
    port: int = 3306
    name: str = "slurm_acct_db"
    user: str = "slurm"
    storage: str = "16Gi"
    storage_class: str | None = None


@dataclass(frozen=True)
class Qos:
    name: str
    priority: int | None = None
    max_wall: str | None = None
    max_tres_per_job: dict[str, Any] = field(default_factory=dict)
    max_tres_per_user: dict[str, Any] = field(default_factory=dict)
    grp_tres: dict[str, Any] = field(default_factory=dict)
    max_jobs_per_user: int | None = None
    max_submit_jobs_per_user: int | None = None
    deny_on_limit: bool = False


@dataclass(frozen=True)
class Account:
    name: str
    parent: str = "root"
    fairshare: int = 1
    qos: tuple[str, ...] = ()
    default_qos: str | None = None
    grp_tres: dict[str, Any] = field(default_factory=dict)
    max_tres_per_job: dict[str, Any] = field(default_factory=dict)
    max_wall: str | None = None
    users: tuple[str, ...] = ()


@dataclass(frozen=True)
class Accounting:
    enabled: bool = True
    database: Database = field(default_factory=Database)
    enforce: tuple[str, ...] = DEFAULT_ENFORCE
    weights: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    decay_half_life: str = "7-0"
    max_age: str = "7-0"
    favor_small: bool = False
    default_account: str | None = None
    qos: tuple[Qos, ...] = ()
    accounts: tuple[Account, ...] = ()


def build_accounting(spec: Any) -> Accounting:
    """The typed accounting of a tenant from its (schema-valid) ``slurm.accounting``."""
    if spec is None or spec is True:
        return Accounting()
    if spec is False:
        return Accounting(enabled=False)
    db = spec.get("database", {})
    fs = spec.get("fairshare", {})
    return Accounting(
        enabled=spec.get("enabled", True),
        database=Database(**db),
        enforce=tuple(spec.get("enforce", DEFAULT_ENFORCE)),
        weights={**DEFAULT_WEIGHTS, **fs.get("weights", {})},
        decay_half_life=fs.get("decay_half_life", "7-0"),
        max_age=fs.get("max_age", "7-0"),
        favor_small=fs.get("favor_small", False),
        default_account=spec.get("default_account"),
        qos=tuple(Qos(**q) for q in spec.get("qos", ())),
        accounts=tuple(
            Account(
                **{k: v for k, v in a.items() if k not in ("qos", "users")},
                qos=tuple(a.get("qos", ())),
                users=tuple(a.get("users", ())),
            )
            for a in spec.get("accounts", ())
        ),
    )


def reference_issues(raw: Any, base: tuple, spec: Any) -> list[Issue]:
    """Cross references inside one tenant's ``slurm.accounting`` (``base``: its key path)."""
    if not isinstance(spec, dict):
        return []
    issues: list[Issue] = []

    def items(key: str) -> list[tuple[int, dict[str, Any]]]:
        v = spec.get(key)
        return [(i, x) for i, x in enumerate(v) if isinstance(x, dict)] if isinstance(v, list) else []

    def name_of(x: dict[str, Any]) -> str | None:
        n = x.get("name")
        return n if isinstance(n, str) else None  # else the schema says why

    qos_names: set[str] = set()
    for i, q in items("qos"):
        name = name_of(q)
        if name is not None and name in qos_names:
            issues.append(raw.issue((*base, "qos", i, "name"), f"QOS {name!r} defined twice"))
        if name is not None:
            qos_names.add(name)
    accounts = items("accounts")
    parents: dict[str, str | None] = {}
    for i, a in accounts:
        name = name_of(a)
        if name is None:
            continue
        if name == "root":
            issues.append(raw.issue((*base, "accounts", i, "name"), "account 'root' is Slurm's own; pick another name"))
        if name in parents:
            issues.append(raw.issue((*base, "accounts", i, "name"), f"account {name!r} defined twice"))
        parent = a.get("parent", "root")
        parents[name] = parent if isinstance(parent, str) else None
    for i, a in accounts:
        path = (*base, "accounts", i)
        qos = [x for x in a["qos"] if isinstance(x, str)] if isinstance(a.get("qos"), list) else []
        for qi, qn in enumerate(qos):
            if qn not in qos_names and qn != "normal":
                issues.append(raw.issue((*path, "qos", qi), f"QOS {qn!r} is not defined in this tenant's qos"))
        dq = a.get("default_qos")
        if isinstance(dq, str) and dq not in qos:
            issues.append(raw.issue((*path, "default_qos"), f"default_qos {dq!r} is not in the account's qos list"))
        parent = a.get("parent")
        if isinstance(parent, str) and parent != "root" and parent not in parents:
            issues.append(raw.issue((*path, "parent"), f"parent account {parent!r} is not defined"))
        # a parent chain must end at root
        seen: set[str] = set()
        cur = name_of(a)
        while cur is not None and cur in parents and cur not in seen:
            seen.add(cur)
            cur = parents[cur]
        if cur is not None and cur in seen:
            issues.append(raw.issue((*path, "parent"), f"account {name_of(a)!r} is its own ancestor"))
    da = spec.get("default_account")
    if isinstance(da, str) and da not in parents:
        issues.append(raw.issue((*base, "default_account"), f"default_account {da!r} is not defined in accounts"))
    db = spec.get("database")
    if isinstance(db, dict):
        if db.get("type") == "external" and not db.get("host"):
            issues.append(raw.issue((*base, "database"), "an external database needs a host"))
        if db.get("type", "mariadb-operator") != "external" and "host" in db:
            issues.append(raw.issue((*base, "database", "host"), "host is only for type: external"))
    enforce = spec.get("enforce")
    if isinstance(enforce, list) and ("limits" in enforce or "qos" in enforce) and "associations" not in enforce:
        issues.append(
            raw.issue((*base, "enforce"), "limits/qos enforcement needs 'associations' too (Slurm implies it)")
        )
    return issues
