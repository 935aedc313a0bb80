"""Validate the raw inventory model (JSON Schema, then cross-references); ``model/fleet_build.py``
builds the typed Fleet from it once it is valid.

Every problem found in one run is reported together, each with its file, line and key path.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

try:  # the regular-expression parser, to refuse patterns that can backtrack badly (regex_problem)
    from re import _constants as sre_c  # Python 3.11+
    from re import _parser as sre_parse
except ImportError:  # pragma: no cover - Python < 3.11
    import sre_constants as sre_c  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

from ansible_collections.gpufleet.core.plugins.module_utils.deps import missing
from ansible_collections.gpufleet.core.plugins.module_utils.errors import Issue, ModelError
from ansible_collections.gpufleet.core.plugins.module_utils.model import (
    accounting_model,
    bounds,
    bridge_model,
    fabric_sources,
    feature_gates,
    grammar,
    identity,
    maintenance_model,
    rollout_model,
    tenant_values,
)
from ansible_collections.gpufleet.core.plugins.module_utils.model.exposure import exposure_issues
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import (
    Fleet,
)
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet_build import build_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.model.inventory import RawModel, load_inventory
from ansible_collections.gpufleet.core.plugins.module_utils.model.nodes import MAX_FABRIC_BYTES, MAX_SNAPSHOT_BYTES
from ansible_collections.gpufleet.core.plugins.module_utils.model.schema import SCHEMA

try:
    import jsonschema
except ImportError:  # importing works without it; the first use raises a clear error
    jsonschema = missing("jsonschema", "jsonschema")


@functools.lru_cache(maxsize=1)
def _validator() -> Any:
    return grammar.validator_for(SCHEMA)


def _schema_message(err: jsonschema.ValidationError) -> str:
    if err.validator == "additionalProperties" and tenant_values.is_allow_list(err.schema):
        allowed = sorted(err.schema.get("properties", {}))
        extra = sorted(set(err.instance) - set(allowed)) if isinstance(err.instance, dict) else []
        return (
            f"{', '.join(map(repr, extra))}: a tenant may not set this chart value (allow-list here: "
            f"{', '.join(allowed)}; see docs/threat-model.md); the platform can set it for this tenant in"
            " gpufleet_clusters[].tenant_overrides"
        )
    if err.validator == "additionalProperties":
        allowed = sorted(err.schema.get("properties", {}))
        extra = sorted(set(err.instance) - set(allowed)) if isinstance(err.instance, dict) else []
        if extra and err.schema.get("patternProperties"):  # top level: only gpufleet_* keys are ours
            extra = [e for e in extra if str(e).startswith("gpufleet_")]
        return f"unknown key(s) {', '.join(map(repr, extra))}; expected one of: {', '.join(allowed)}" + _pool_hint(
            err, extra
        )
    if err.validator == "required":
        return err.message.replace("is a required property", "is required")
    if err.validator == "pattern":
        return (
            f"{err.instance!r} is not valid: {err.schema.get('description') or 'must match'}"
            f" (must match {err.schema['pattern']})"
        )
    return err.message


def _pool_hint(err: jsonschema.ValidationError, extra: list[str]) -> str:
    """A tenant that writes a pool's keys (``size:``) into its own entry: where capacity is asked for."""
    path = tuple(err.absolute_path)
    pool_keys = set(SCHEMA["properties"]["gpufleet_pools"]["items"]["properties"])
    if len(path) != 2 or path[0] != "gpufleet_tenants" or not pool_keys & set(extra):
        return ""
    pools = err.instance.get("pools") if isinstance(err.instance, dict) else None
    named = f" (the tenant's pools: {', '.join(map(str, pools))})" if isinstance(pools, list) and pools else ""
    return (
        f"; {', '.join(repr(k) for k in extra if k in pool_keys)} belong(s) to a pool, and pools are the platform's:"
        f" ask the platform to change gpufleet_pools in group_vars/all/pools.yml{named}"
        " (ansible-playbook gpufleet.core.scale -e pool=NAME -e size=N)"
    )


def _meant(err: jsonschema.ValidationError):
    """An ``anyOf``/``oneOf`` error as the errors of the branch the value was meant for (the one
    whose type it has), so the message names the exact key; the error itself when that is unclear."""
    if err.validator in ("anyOf", "oneOf") and err.context:
        branches: dict[Any, list[jsonschema.ValidationError]] = {}
        for sub in err.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        meant = [
            subs for subs in branches.values() if not any(s.validator == "type" and not s.relative_path for s in subs)
        ]
        if len(meant) == 1:
            for sub in meant[0]:
                yield from _meant(sub)
            return
    yield err


def schema_issues(raw: RawModel) -> list[Issue]:
    issues = []
    for err in (e for top in _validator().iter_errors(raw.data) for e in _meant(top)):
        path = tuple(err.absolute_path)
        if err.validator == "additionalProperties" and isinstance(err.instance, dict):
            extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
            extra = [e for e in extra if not err.schema.get("patternProperties") or str(e).startswith("gpufleet_")]
            if extra:  # point at the first unknown key itself
                path = (*path, extra[0])
        issues.append(raw.issue(path, _schema_message(err)))
    return issues


def _shaped(value: Any, needs: tuple[str, ...]) -> list[tuple[int, dict[str, Any]]]:
    """(index, item) of the list items that carry the string keys the reference checks read. The
    others already have schema errors; skipping them lets every other problem be reported too."""
    if not isinstance(value, list):
        return []
    return [
        (i, it) for i, it in enumerate(value) if isinstance(it, dict) and all(isinstance(it.get(k), str) for k in needs)
    ]


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dupes(raw: RawModel, key: str, items: list[tuple[int, dict[str, Any]]], what: str) -> list[Issue]:
    seen: dict[str, int] = {}
    out = []
    for i, item in items:
        name = item.get("name")
        if name in seen:
            out.append(raw.issue((key, i, "name"), f"duplicate {what} name {name!r} (also {key}[{seen[name]}])"))
        else:
            seen[name] = i
    return out


@dataclasses.dataclass
class _Refs:
    """What the cross-reference rules read, and what they learn as they go (pool owners, the one
    sizeless spare pool per cluster, the partitions each tenant uses)."""

    raw: RawModel
    cluster_names: set[str]
    pool_by_name: dict[str, dict[str, Any]]
    owner: dict[str, str] = dataclasses.field(default_factory=dict)
    sizeless_spare: dict[str, str] = dataclasses.field(default_factory=dict)
    partitions: dict[tuple[str, str], str] = dataclasses.field(default_factory=dict)


def _tenant_cluster(r: _Refs, ti: int, t: dict[str, Any]) -> list[Issue]:
    if t["cluster"] in r.cluster_names:
        return []
    return [
        r.raw.issue(
            ("gpufleet_tenants", ti, "cluster"),
            f"cluster {t['cluster']!r} is not defined in gpufleet_clusters"
            f" (known: {', '.join(sorted(r.cluster_names))})",
        )
    ]


def _tenant_pools(r: _Refs, ti: int, t: dict[str, Any]) -> list[Issue]:
    """Each pool a tenant lists exists, is a tenant kind, has one owner and is in the tenant's cluster."""
    issues = []
    for pi, pname in enumerate(_list(t.get("pools"))):
        path = ("gpufleet_tenants", ti, "pools", pi)
        if not isinstance(pname, str):
            continue
        if pname not in r.pool_by_name:
            issues.append(r.raw.issue(path, f"pool {pname!r} is not defined in gpufleet_pools"))
            continue
        pool = r.pool_by_name[pname]
        if pool["kind"] not in ("slurm", "kubernetes"):
            issues.append(
                r.raw.issue(
                    path, f"pool {pname!r} is of kind {pool['kind']!r}: tenants own only slurm or kubernetes pools"
                )
            )
        if pname in r.owner:
            issues.append(r.raw.issue(path, f"pool {pname!r} already belongs to tenant {r.owner[pname]!r}"))
        else:
            r.owner[pname] = t["name"]
        if pool["cluster"] != t["cluster"]:
            issues.append(
                r.raw.issue(path, f"pool {pname!r} is in cluster {pool['cluster']!r}, tenant is in {t['cluster']!r}")
            )
    return issues


def _pool_cluster(r: _Refs, pi: int, p: dict[str, Any]) -> list[Issue]:
    if p["cluster"] in r.cluster_names:
        return []
    return [
        r.raw.issue(("gpufleet_pools", pi, "cluster"), f"cluster {p['cluster']!r} is not defined in gpufleet_clusters")
    ]


def _pool_owned(r: _Refs, pi: int, p: dict[str, Any]) -> list[Issue]:
    if p["kind"] not in ("slurm", "kubernetes") or p["name"] in r.owner:
        return []
    return [
        r.raw.issue(
            ("gpufleet_pools", pi, "name"), f"{p['kind']} pool {p['name']!r} is not listed in any tenant's pools"
        )
    ]


def _pool_size(r: _Refs, pi: int, p: dict[str, Any]) -> list[Issue]:
    """A size on every pool but one spare pool per cluster, which takes the rest."""
    if "size" in p:
        return []
    base = ("gpufleet_pools", pi)
    if p["kind"] != "spare":
        return [r.raw.issue(base, "size is required (nodes: N or gpus: N); only a spare pool may omit it")]
    if p["cluster"] in r.sizeless_spare:
        return [
            r.raw.issue(
                base,
                f"a second spare pool without size in cluster {p['cluster']!r} "
                f"(first: {r.sizeless_spare[p['cluster']]!r}); only one may take the rest",
            )
        ]
    r.sizeless_spare[p["cluster"]] = p["name"]
    return []


def _pool_slurm(r: _Refs, pi: int, p: dict[str, Any]) -> list[Issue]:
    if "slurm" in p and p["kind"] != "slurm":
        return [r.raw.issue(("gpufleet_pools", pi, "slurm"), f"slurm settings on a {p['kind']} pool")]
    return []


def _pool_partition(r: _Refs, pi: int, p: dict[str, Any]) -> list[Issue]:
    """Slurm partition names are unique among one tenant's pools."""
    part = _dict(p.get("slurm")).get("partition", p["name"])
    if p["kind"] != "slurm" or p["name"] not in r.owner or not isinstance(part, str):  # else the schema says why
        return []
    key = (r.owner[p["name"]], part)
    first = r.partitions.get(key)
    r.partitions[key] = p["name"]
    if first is None:
        return []
    return [
        r.raw.issue(
            ("gpufleet_pools", pi, "slurm", "partition"),
            f"partition {part!r} already used by pool {first!r} of the same tenant",
        )
    ]


def _tenant_accounting(r: _Refs, ti: int, t: dict[str, Any]) -> list[Issue]:
    return accounting_model.reference_issues(
        r.raw, ("gpufleet_tenants", ti, "slurm", "accounting"), _dict(t.get("slurm")).get("accounting")
    )


def _cluster_node_name_map(r: _Refs, ci: int, c: dict[str, Any]) -> list[Issue]:
    fab = _dict(c.get("fabric"))
    nmap = _dict(fab.get("node_name_map"))
    path = ("gpufleet_clusters", ci, "fabric", "node_name_map")
    issues = []
    if fab.get("node_name_map") is not None and ("replacement" in nmap) == ("replace" in nmap):
        issues.append(r.raw.issue(path, "needs exactly one of replacement (or its former name, replace)"))
    if isinstance(nmap.get("pattern"), str):
        why = regex_problem(nmap["pattern"])
        if why:
            issues.append(r.raw.issue((*path, "pattern"), why))
    return issues


def _cluster_fabric_path(r: _Refs, ci: int, c: dict[str, Any]) -> list[Issue]:
    fab = _dict(c.get("fabric"))
    source = fabric_sources.BY_NAME.get(fab.get("source"))  # type: ignore[arg-type]
    if source is not None and source.needs_path and not fab.get("path"):
        return [r.raw.issue(("gpufleet_clusters", ci, "fabric"), f"fabric source {fab['source']!r} needs a path")]
    return []


def _cluster_shared_storage(r: _Refs, ci: int, c: dict[str, Any]) -> list[Issue]:
    ss = _dict(_dict(c.get("components")).get("shared_storage"))
    if ss.get("enabled", True) and ss and not (ss.get("nfs_server") and ss.get("nfs_share")):
        return [
            r.raw.issue(
                ("gpufleet_clusters", ci, "components", "shared_storage"),
                "shared_storage needs nfs_server and nfs_share (or enabled: false)",
            )
        ]
    return []


_Rule = Callable[[_Refs, int, dict[str, Any]], list[Issue]]

# (list key, the string keys its items need, the rules run on each item, in order). The passes run
# in this order: the pool rules read the owners the tenant pass records.
_REFERENCE_PASSES: tuple[tuple[str, tuple[str, ...], tuple[_Rule, ...]], ...] = (
    ("gpufleet_tenants", ("name", "cluster"), (_tenant_cluster, _tenant_pools)),
    (
        "gpufleet_pools",
        ("name", "cluster", "kind"),
        (_pool_cluster, _pool_owned, _pool_size, _pool_slurm, _pool_partition),
    ),
    ("gpufleet_tenants", ("name", "cluster"), (_tenant_accounting,)),
    ("gpufleet_clusters", ("name",), (_cluster_node_name_map, _cluster_fabric_path, _cluster_shared_storage)),
)


def reference_issues(raw: RawModel) -> list[Issue]:
    """Cross-reference checks, on every item whose shape allows them (even when the schema failed)."""
    d = raw.data
    clusters = _shaped(d.get("gpufleet_clusters"), ("name",))
    tenants = _shaped(d.get("gpufleet_tenants"), ("name", "cluster"))
    pools = _shaped(d.get("gpufleet_pools"), ("name", "cluster", "kind"))
    issues = _dupes(raw, "gpufleet_clusters", clusters, "cluster")
    issues += _dupes(raw, "gpufleet_tenants", tenants, "tenant")
    issues += _dupes(raw, "gpufleet_pools", pools, "pool")
    refs = _Refs(raw, {c["name"] for c in dict(clusters).values()}, {p["name"]: p for p in dict(pools).values()})
    for key, needs, rules in _REFERENCE_PASSES:
        for i, item in _shaped(d.get(key), needs):
            for rule in rules:
                issues += rule(refs, i, item)
    return issues


MAX_UNBOUNDED_REPEATS = 2  # in node_name_map.pattern: cost stays polynomial of low degree


def regex_problem(pattern: str) -> str | None:
    """Why ``pattern`` is not a valid, linear-enough regular expression (None: fine).

    Python's engine backtracks: a nested quantifier (``(a+)+``), a quantified alternation
    (``(a|a)*``), backreferences and lookarounds can take exponential time on a crafted host name.
    Those are refused, and so are more than :data:`MAX_UNBOUNDED_REPEATS` unbounded repeats."""
    try:
        re.compile(pattern)
    except re.error as exc:
        return f"not a valid regular expression: {exc}"
    repeats = {sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, getattr(sre_c, "POSSESSIVE_REPEAT", sre_c.MAX_REPEAT)}
    refused = {sre_c.GROUPREF, sre_c.GROUPREF_EXISTS, sre_c.ASSERT, sre_c.ASSERT_NOT}
    unbounded = 0

    def walk(items: Any, in_repeat: bool) -> str | None:
        nonlocal unbounded
        for op, av in items:
            if op in refused:
                return "backreferences and lookarounds are not allowed (they make matching slow)"
            if op in repeats:
                _lo, hi, body = av
                if in_repeat:
                    return "a quantifier inside a quantified group can take exponential time; rewrite it"
                if hi == sre_c.MAXREPEAT:
                    unbounded += 1
                why = walk(body, hi > 1)
                if why:
                    return why
            elif op == sre_c.BRANCH:
                if in_repeat:
                    return "an alternation inside a quantified group can take exponential time; rewrite it"
                for branch in av[1]:
                    why = walk(branch, in_repeat)
                    if why:
                        return why
            elif op == sre_c.SUBPATTERN:
                why = walk(av[-1], in_repeat)
                if why:
                    return why
            elif op == getattr(sre_c, "ATOMIC_GROUP", None):
                why = walk(av, in_repeat)
                if why:
                    return why
        return None

    why = walk(sre_parse.parse(pattern), False)
    if why is None and unbounded > MAX_UNBOUNDED_REPEATS:
        why = f"more than {MAX_UNBOUNDED_REPEATS} unbounded repeats ('*', '+', '{{n,}}'); be more specific"
    return f"refused: {why}" if why else None


def path_issues(raw: RawModel) -> list[Issue]:
    """Snapshot paths stay inside the inventory: no part of them may be a symbolic link (the pool
    lock is written beside the nodes snapshot; a link would send it, or a read, elsewhere)."""
    issues = []
    inv = raw.inventory_dir
    for ci, c in _shaped(raw.data.get("gpufleet_clusters"), ("name",)):
        paths = [("nodes_snapshot",), ("fabric", "path")]
        for key in paths:
            val: Any = c
            for k in key:
                val = _dict(val).get(k)
            if not isinstance(val, str) or not grammar.fullmatch(grammar.REL_PATH, val):
                continue  # absent, or the schema says why
            bound = MAX_SNAPSHOT_BYTES if key == ("nodes_snapshot",) else MAX_FABRIC_BYTES
            target = inv / val
            if not target.is_symlink() and target.is_file() and target.stat().st_size > bound:
                issues.append(
                    raw.issue(
                        ("gpufleet_clusters", ci, *key), f"{target}: refused: larger than {bound} bytes (read nothing)"
                    )
                )
            cur = inv
            for part in val.split("/"):
                cur = cur / part
                if cur.is_symlink():
                    issues.append(
                        raw.issue(
                            ("gpufleet_clusters", ci, *key),
                            f"{cur} is a symbolic link (to {os.readlink(cur)!r}); snapshots must be real files"
                            " inside the inventory",
                        )
                    )
                    break
    return issues


def inside_inputs_issues(raw: RawModel) -> list[Issue]:
    """The renderer writes the tree (``gitops.path``, from the repository root) and each pool lock
    (beside ``nodes_snapshot``); neither may land in the vars folders Ansible reads."""
    issues = []
    inv = raw.inventory_dir.resolve()
    readers = [inv / "group_vars", inv / "host_vars"]

    def inside(p: Path) -> bool:
        return any(p == r or r in p.parents for r in readers)

    gitops = _dict(_dict(raw.data.get("gpufleet_fleet")).get("gitops"))
    gp = gitops.get("path", "gitops")
    if isinstance(gp, str) and grammar.fullmatch(grammar.REL_PATH, gp):
        root = inv
        while not (root / ".git").exists() and root.parent != root:
            root = root.parent
        if not (root / ".git").exists():
            root = Path.cwd().resolve()
        tree = root / gp
        if inside(tree):
            issues.append(
                raw.issue(("gpufleet_fleet", "gitops", "path"), f"{tree} is inside the inventory's vars folders")
            )
        if tree == inv or tree in inv.parents:
            issues.append(
                raw.issue(
                    ("gpufleet_fleet", "gitops", "path"), f"{tree} holds the inventory: the tree would replace it"
                )
            )
    for ci, c in _shaped(raw.data.get("gpufleet_clusters"), ("name",)):
        ns = c.get("nodes_snapshot")
        if isinstance(ns, str) and grammar.fullmatch(grammar.REL_PATH, ns) and inside((inv / ns).parent):
            issues.append(
                raw.issue(
                    ("gpufleet_clusters", ci, "nodes_snapshot"),
                    "inside group_vars/ or host_vars/: the pool lock written beside it would become a vars file;"
                    " keep snapshots under snapshots/",
                )
            )
    return issues


def _partition_access_issues(raw: RawModel) -> list[Issue]:
    """A pool's ``slurm.allow_accounts`` names accounts of its tenant's accounting (which must be on)."""
    d = raw.data
    owner = {
        p: t
        for _ti, t in _shaped(d.get("gpufleet_tenants"), ("name",))
        for p in (t.get("pools") if isinstance(t.get("pools"), list) else [])
        if isinstance(p, str)
    }
    issues = []
    for pi, p in _shaped(d.get("gpufleet_pools"), ("name",)):
        accts = _dict(p.get("slurm")).get("allow_accounts")
        t = owner.get(p["name"])
        if not isinstance(accts, list) or t is None:
            continue
        spec = _dict(t.get("slurm")).get("accounting", True)
        if spec is False or (isinstance(spec, dict) and spec.get("enabled") is False):
            issues.append(
                raw.issue(
                    ("gpufleet_pools", pi, "slurm", "allow_accounts"),
                    f"tenant {t['name']!r} has accounting off: AllowAccounts needs accounts (slurmdbd)",
                )
            )
            continue
        known = {a.get("name") for a in _dict(spec).get("accounts", []) if isinstance(a, dict)}
        for ai, a in enumerate(accts):
            if isinstance(a, str) and a not in known:
                issues.append(
                    raw.issue(
                        ("gpufleet_pools", pi, "slurm", "allow_accounts", ai),
                        f"account {a!r} is not defined in tenant {t['name']!r}'s slurm.accounting.accounts",
                    )
                )
    return issues


def _maintenance_issues(raw: RawModel) -> list[Issue]:
    return maintenance_model.issues(
        raw, {c["name"] for _ci, c in _shaped(raw.data.get("gpufleet_clusters"), ("name",))}
    )


@dataclasses.dataclass(frozen=True)
class Pass:
    """One check of the raw model: its name, the rows of docs/threat-model.md it enforces (whose
    "where" cell names it back; tests/unit/plugins/module_utils/model/test_passes.py) and the function."""

    name: str
    threats: tuple[int, ...]
    run: Callable[[RawModel], list[Issue]]


# Every pass runs on every model (each skips what the schema already refused), so one run reports
# every problem. A new hostile-input check is a function here and one row (CONTRIBUTING.md).
PASSES: tuple[Pass, ...] = (
    Pass("schema", (1, 3, 10, 13, 14), schema_issues),
    Pass("references", (6, 11), reference_issues),
    Pass("paths", (4, 14), path_issues),
    Pass("exposure", (13, 17), exposure_issues),
    Pass("identity", (1,), identity.identity_issues),
    Pass("partition_access", (3,), _partition_access_issues),
    Pass("chart_versions", (10,), tenant_values.version_issues),
    Pass("overrides", (10,), tenant_values.override_issues),
    Pass("inside_inputs", (13,), inside_inputs_issues),
    Pass("resources", (10,), tenant_values.resource_issues),
    Pass("bounds", (14, 18), bounds.bound_issues),
    Pass("maintenance", (14,), _maintenance_issues),
    Pass("rollout", (14,), rollout_model.issues),
    Pass("driver_policy", (10,), rollout_model.driver_policy_issues),
    Pass("feature_gates", (10,), feature_gates.issues),
    Pass("slurm_bridge", (3, 11), bridge_model.issues),
)


def validate(raw: RawModel) -> Fleet:
    issues = [issue for check in PASSES for issue in check.run(raw)]
    if issues:
        raise ModelError(issues)
    return build_fleet(raw)


def load_fleet(inventory: str | Path) -> Fleet:
    """Load, validate and type the fleet model of an inventory; ModelError lists every problem."""
    return validate(load_inventory(inventory))
