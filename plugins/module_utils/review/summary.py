"""What a change does per tenant, in the operator's words, read from the two rendered trees (the base's
and the head's), never from the raw diff:

- replicas: ``login `main` 1→2``, ``NodeSet `train` 8→16`` (the Slinky chart's ``loginsets``/``nodesets``);
- disruption budgets: every PodDisruptionBudget of the tenant's rendered files, by name
  (``disruption budget `slurmd-busy` maxUnavailable 0→1``);
- Slurm accounts, users and QOS: the rendered ``sacctmgr`` script of the accounts Job (added, removed,
  each changed setting);
- the update window of the tenant's Slurm workers (the fleet model: it is not a rendered object);
- placement: a pool of the tenant that comes to span more leaf groups of the fabric than before (its
  jobs then cross the spine), from the two renders' inputs;
- drains (which nodes leave a pool) and the notices of :mod:`.approval` (maintenance, upgrade waves) are
  added by the review beside these.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.deps import missing
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Fleet
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants.rollout_waves import block_counts
from ansible_collections.gpufleet.core.plugins.module_utils.yaml_dump import safe_load_all

try:
    import yaml
except ImportError:  # importing works without it; the first use raises a clear error
    yaml = missing("yaml", "PyYAML")

_QOS = re.compile(r"^run modify qos where name=(\S+) set (.*)$")
_ACCOUNT = re.compile(r"^run modify account where name=(\S+) cluster=\S+ set (Fairshare=.*)$")
_USER = re.compile(r"^resolves (\S+) && run add user \S+ Account=(\S+) ")


@dataclass(frozen=True, order=True)
class TenantChange:
    """One change of a tenant: ``what`` is replicas | budget | account | user | qos | window | placement."""

    tenant: str
    what: str
    text: str


def yaml_docs(data: bytes | None) -> Iterator[Any]:
    """The YAML documents of a rendered file (none for a missing or unreadable one)."""
    if not data:
        return
    try:
        yield from safe_load_all(data)
    except yaml.YAMLError:
        return


def _walk(obj: Any) -> Iterator[dict[str, Any]]:
    if isinstance(obj, dict):
        yield obj
        for v in obj.values():
            yield from _walk(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _walk(v)


def _arrow(old: object, new: object) -> str:
    return f"{'-' if old is None else old}→{'-' if new is None else new}"


def _replicas(files: dict[str, bytes], prefix: str) -> dict[str, object]:
    """``login `name``` / ``NodeSet `name``` -> replicas, from the tenant's Slinky values."""
    out: dict[str, object] = {}
    for doc in yaml_docs(files.get(f"{prefix}/slurm/values.yaml")):
        if not isinstance(doc, dict):
            continue
        for key, label in (("loginsets", "login"), ("nodesets", "NodeSet")):
            for name, spec in (doc.get(key) or {}).items():
                if isinstance(spec, dict) and spec.get("enabled", True):
                    out[f"{label} `{name}`"] = spec.get("replicas")
    return out


def _budgets(files: dict[str, bytes], prefix: str) -> dict[str, dict[str, object]]:
    """PodDisruptionBudget name -> its limits, over every rendered file of the tenant."""
    out: dict[str, dict[str, object]] = {}
    for path in sorted(p for p in files if p.startswith(prefix + "/") and p.endswith((".yaml", ".yml"))):
        for doc in yaml_docs(files[path]):
            for obj in _walk(doc):
                if obj.get("kind") == "PodDisruptionBudget" and isinstance(obj.get("spec"), dict):
                    name = str((obj.get("metadata") or {}).get("name"))
                    spec = obj["spec"]
                    out[name] = {k: spec[k] for k in ("maxUnavailable", "minAvailable") if k in spec}
    return out


def _settings(text: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in text.split() if "=" in part)


def _accounting(files: dict[str, bytes], prefix: str) -> tuple[dict[str, dict[str, str]], ...]:
    """(QOS -> settings, account -> settings, user -> {account}) from the rendered sacctmgr script."""
    qos: dict[str, dict[str, str]] = {}
    accounts: dict[str, dict[str, str]] = {}
    users: dict[str, dict[str, str]] = {}
    for doc in yaml_docs(files.get(f"{prefix}/accounting/accounts.yaml")):
        script = ((doc or {}).get("data") or {}).get("accounts.sh", "") if isinstance(doc, dict) else ""
        for line in str(script).splitlines():
            line = line.strip()
            for regex, into in ((_QOS, qos), (_ACCOUNT, accounts)):
                m = regex.match(line)
                if m:
                    into[m.group(1)] = _settings(m.group(2))
            m = _USER.match(line)
            if m:
                users.setdefault(m.group(1), {})[m.group(2)] = "member"
    return qos, accounts, users


def _named(kind: str, old: dict[str, dict[str, str]], new: dict[str, dict[str, str]]) -> list[str]:
    """Added, removed and changed entries of one kind (QOS, account), with each changed setting."""
    out = []
    for name in sorted(set(old) | set(new)):
        a, b = old.get(name), new.get(name)
        if a == b:
            continue
        if a is None or b is None:
            out.append(f"{kind} `{name}` {'added' if a is None else 'removed'}")
            continue
        keys = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
        out.append(f"{kind} `{name}`: " + ", ".join(f"{k} {_arrow(a.get(k), b.get(k))}" for k in keys))
    return out


def _users(old: dict[str, dict[str, str]], new: dict[str, dict[str, str]]) -> list[str]:
    out = []
    for user in sorted(set(old) | set(new)):
        a, b = set(old.get(user, {})), set(new.get(user, {}))
        out += [f"user `{user}` added to account `{acc}`" for acc in sorted(b - a)]
        out += [f"user `{user}` removed from account `{acc}`" for acc in sorted(a - b)]
    return out


def _window(fleet: Fleet | None, tenant: str) -> str | None:
    if fleet is None or tenant not in fleet.tenants:
        return None
    w = fleet.rollout.window_of(tenant)
    return f"{w.start} for {w.duration}" if w else "rolling"


def _leaf_groups(result: Any, cluster: str, pool: str) -> dict[str, int]:
    inputs = result.inputs.get(cluster) if result is not None else None
    return block_counts(inputs, inputs.members.get(pool, [])) if inputs is not None else {}


def _placement(base: Any, head: Any, tenant: str, cluster: str) -> list[TenantChange]:
    """The tenant's pools that come to span more leaf groups than at the base."""
    out = []
    for pool in sorted(p.name for p in head.fleet.tenant_pools(tenant)):
        a, b = _leaf_groups(base, cluster, pool), _leaf_groups(head, cluster, pool)
        if a and len(b) > len(a):
            where = ", ".join(f"`{g}` ({n})" for g, n in sorted(b.items()))
            out.append(
                TenantChange(
                    tenant,
                    "placement",
                    f"pool `{pool}` now spans {len(b)} leaf groups, was {len(a)}: {where}; jobs across them"
                    " cross the spine (a topology-aware scheduler keeps a job in one where it fits)",
                )
            )
    return out


def _under(files: dict[str, bytes], prefix: str) -> dict[str, bytes]:
    return {p: data for p, data in files.items() if p.startswith(prefix + "/")}


def tenant_changes(base: Any, head: Any, tenant: str) -> list[TenantChange]:
    """What changes for ``tenant`` between the base's and the head's RenderResults (base None: new)."""
    cluster = head.fleet.tenants[tenant].cluster if tenant in head.fleet.tenants else base.fleet.tenants[tenant].cluster
    prefix = f"clusters/{cluster}/tenants/{tenant}"
    old_files: dict[str, bytes] = base.files if base is not None else {}
    wa, wb = _window(base.fleet if base else None, tenant), _window(head.fleet, tenant)
    window = []
    if base is not None and wa != wb:
        window.append(TenantChange(tenant, "window", f"update window of the Slurm workers: {wa} → {wb}"))
    if _under(old_files, prefix) == _under(head.files, prefix):  # what follows reads these files only
        return window + _placement(base, head, tenant, cluster)
    out: list[TenantChange] = []
    a, b = _replicas(old_files, prefix), _replicas(head.files, prefix)
    out += [
        TenantChange(tenant, "replicas", f"{k} {_arrow(a.get(k), b.get(k))}")
        for k in sorted(set(a) | set(b))
        if a.get(k) != b.get(k)
    ]
    pa, pb = _budgets(old_files, prefix), _budgets(head.files, prefix)
    for name in sorted(set(pa) | set(pb)):
        x, y = pa.get(name, {}), pb.get(name, {})
        changes = [f"{k} {_arrow(x.get(k), y.get(k))}" for k in sorted(set(x) | set(y)) if x.get(k) != y.get(k)]
        if name not in pa or name not in pb:
            changes = ["added" if name not in pa else "removed", *changes]
        if changes:
            out.append(TenantChange(tenant, "budget", f"disruption budget `{name}` " + ", ".join(changes)))
    (qa, aa, ua), (qb, ab, ub) = _accounting(old_files, prefix), _accounting(head.files, prefix)
    out += [TenantChange(tenant, "qos", t) for t in _named("QOS", qa, qb)]
    out += [TenantChange(tenant, "account", t) for t in _named("account", aa, ab)]
    out += [TenantChange(tenant, "user", t) for t in _users(ua, ub)]
    return out + window + _placement(base, head, tenant, cluster)


def all_tenant_changes(base: Any, head: Any) -> list[TenantChange]:
    """:func:`tenant_changes` for every tenant of the head (a tenant the change removes is a file list)."""
    return [c for t in sorted(head.fleet.tenants) for c in tenant_changes(base, head, t)]
