"""Read Argo CD Applications back: per-app sync/health records, the app tree of a root, a table.

Argo CD's application controller writes what it knows into each Application's ``status``:
``sync.status`` (Synced, OutOfSync, Unknown), ``health.status`` (Healthy, Progressing, Degraded,
Suspended, Missing, Unknown), ``operationState.phase``/``message`` of the last sync (Running,
Succeeded, Failed, Error, Terminating), ``conditions`` (``*Error`` and ``*Warning`` types) and
``resources[]`` with each managed object's sync status and health. Nothing else is needed to say
whether a fleet is applied: this module turns those objects into records, decides which apps are
ready (Synced and Healthy, no sync running), picks the one reason a human should read first, and
formats a table.

The tree of an app-of-apps is followed through the parent's ``status.resources`` entries of kind
``argoproj.io/Application``: the children the parent manages, whether or not they exist yet. A
child that is listed but not found is reported as missing (not ready).

Pure functions on plain dicts (the objects as the Kubernetes API returns them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.model.contracts import SYNC_WAVE as WAVE_ANNOTATION

GROUP = "argoproj.io"
VERSION = "v1alpha1"
PLURAL = "applications"
KIND = "Application"

SYNCED = "Synced"
HEALTHY = "Healthy"
RUNNING_PHASES = ("Running", "Terminating")
FAILED_PHASES = ("Failed", "Error")
# resource health states in the order a human should look at them
_HEALTH_ORDER = ("Degraded", "Missing", "Unknown", "Suspended", "Progressing")
NOT_FOUND = "NotFound"


class StatusError(GpufleetError):
    """The Applications cannot be read or the request names nothing that exists."""


@dataclass(frozen=True)
class AppStatus:
    """What one Application says about itself; ``found=False`` for a child that does not exist yet."""

    name: str
    namespace: str
    sync: str = "Unknown"
    health: str = "Unknown"
    phase: str = ""
    reason: str = ""
    revision: str = ""
    wave: int = 0
    parent: str = ""
    found: bool = True
    children: tuple[str, ...] = field(default=())

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def ready(self) -> bool:
        return self.found and self.sync == SYNCED and self.health == HEALTHY and self.phase not in RUNNING_PHASES

    @property
    def state(self) -> tuple[str, str, str]:
        """What a progress line reports a change of."""
        return (self.sync, self.health, self.phase)

    def as_dict(self) -> dict[str, Any]:
        """The fields but ``children``, then ``ready``."""
        out = asdict(self)
        del out["children"]
        return {**out, "ready": self.ready}


def _wave(meta: Mapping[str, Any]) -> int:
    raw = (meta.get("annotations") or {}).get(WAVE_ANNOTATION, "0")
    try:
        return int(str(raw).strip())
    except ValueError:
        return 0


def _res_ref(res: Mapping[str, Any]) -> str:
    kind = res.get("kind") or "?"
    ns = res.get("namespace") or ""
    name = res.get("name") or "?"
    return f"{kind}/{ns}/{name}" if ns else f"{kind}/{name}"


def _one_line(text: Any, limit: int = 300) -> str:
    s = " ".join(str(text or "").split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


def first_reason(app: Mapping[str, Any]) -> str:
    """The first thing that explains why an Application is not Synced and Healthy ('' if none).

    Order: an ``*Error`` condition (comparison, spec, project refusals), a failed sync operation
    (with the first resource that failed to sync), a resource that is not healthy (Degraded before
    Missing before Progressing), a resource that is OutOfSync, the app's own health message, a
    running operation's message, a ``*Warning`` condition.
    """
    status = app.get("status") or {}
    conditions = status.get("conditions") or []
    for cond in conditions:
        ctype = str(cond.get("type", ""))
        if ctype.endswith("Error"):
            return f"{ctype}: {_one_line(cond.get('message'))}"
    op = status.get("operationState") or {}
    phase = op.get("phase") or ""
    sync_status = (status.get("sync") or {}).get("status", "Unknown")
    health = (status.get("health") or {}).get("status", "Unknown")
    if phase in FAILED_PHASES and (sync_status != SYNCED or health != HEALTHY):
        msg = f"sync {phase}: {_one_line(op.get('message'))}"
        for res in (op.get("syncResult") or {}).get("resources") or []:
            if res.get("status") in ("SyncFailed", "PruneSkipped") or res.get("hookPhase") in FAILED_PHASES:
                return f"{msg} ({_res_ref(res)}: {_one_line(res.get('message'))})"
        return msg
    resources = status.get("resources") or []
    for wanted in _HEALTH_ORDER:
        for res in resources:
            rh = res.get("health") or {}
            if rh.get("status") == wanted:
                detail = f": {_one_line(rh.get('message'))}" if rh.get("message") else ""
                return f"{_res_ref(res)} {wanted}{detail}"
    for res in resources:
        if res.get("status") == "OutOfSync":
            return f"{_res_ref(res)} OutOfSync"
    hmsg = (status.get("health") or {}).get("message")
    if hmsg and health != HEALTHY:
        return f"health {health}: {_one_line(hmsg)}"
    if phase in RUNNING_PHASES:
        return f"sync {phase}: {_one_line(op.get('message'))}"
    for cond in conditions:
        if str(cond.get("type", "")).endswith("Warning"):
            return f"{cond.get('type')}: {_one_line(cond.get('message'))}"
    if not status:
        return "no status yet (the application controller has not reconciled it)"
    return ""


def child_refs(app: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(namespace, name) of the Applications this app manages, from ``status.resources``."""
    meta = app.get("metadata") or {}
    own_ns = meta.get("namespace") or ""
    out = []
    for res in (app.get("status") or {}).get("resources") or []:
        if res.get("kind") == KIND and res.get("group") == GROUP and res.get("name"):
            out.append((res.get("namespace") or own_ns, res["name"]))
    return sorted(set(out))


def app_status(app: Mapping[str, Any], parent: str = "") -> AppStatus:
    """One Application object -> its record."""
    meta = app.get("metadata") or {}
    status = app.get("status") or {}
    sync = status.get("sync") or {}
    op = status.get("operationState") or {}
    record = AppStatus(
        name=str(meta.get("name", "")),
        namespace=str(meta.get("namespace", "")),
        sync=str(sync.get("status") or "Unknown"),
        health=str((status.get("health") or {}).get("status") or "Unknown"),
        phase=str(op.get("phase") or ""),
        revision=str(sync.get("revision") or "")[:12],
        wave=_wave(meta),
        parent=parent,
        children=tuple(f"{ns}/{n}" for ns, n in child_refs(app)),
    )
    reason = "" if record.ready else first_reason(app)
    return replace(record, reason=reason)


def missing_child(namespace: str, name: str, parent: str) -> AppStatus:
    return AppStatus(
        name=name,
        namespace=namespace,
        sync=NOT_FOUND,
        health="Missing",
        parent=parent,
        found=False,
        reason=f"listed by {parent} but the Application does not exist (yet)",
    )


def _order(records: Iterable[AppStatus]) -> list[AppStatus]:
    return sorted(records, key=lambda r: (r.wave, r.name, r.namespace))


def select(apps: Iterable[Mapping[str, Any]], names: Iterable[str] = (), namespace: str = "") -> list[AppStatus]:
    """Records of the given Applications; with ``names``, a name that is not there is reported missing."""
    by_name = {(a.get("metadata") or {}).get("name"): a for a in apps}
    wanted = list(dict.fromkeys(names))
    if not wanted:
        return _order(app_status(a) for a in by_name.values())
    out = []
    for n in wanted:
        if n in by_name:
            out.append(app_status(by_name[n]))
        else:
            out.append(
                AppStatus(
                    name=n,
                    namespace=namespace,
                    sync=NOT_FOUND,
                    health="Missing",
                    found=False,
                    reason="the Application does not exist",
                )
            )
    return _order(out)


def tree(root: str, namespace: str, lookup: Callable[[str], Mapping[str, Mapping[str, Any]]]) -> list[AppStatus]:
    """Records of ``root`` and every Application below it (children of children too).

    ``lookup(namespace)`` returns the Applications of a namespace by name; it is called once per
    namespace. A child listed by its parent but absent is a missing record; cycles are cut.
    """
    cache: dict[str, Mapping[str, Mapping[str, Any]]] = {}

    def get(ns: str, name: str) -> Mapping[str, Any] | None:
        if ns not in cache:
            cache[ns] = lookup(ns)
        return cache[ns].get(name)

    top = get(namespace, root)
    if top is None:
        raise StatusError(f"root Application {namespace}/{root} not found (apply the root app first)")
    records: list[AppStatus] = []
    seen: set[str] = set()
    queue: list[tuple[str, str, str]] = [(namespace, root, "")]
    while queue:
        ns, name, parent = queue.pop(0)
        key = f"{ns}/{name}"
        if key in seen:
            continue
        seen.add(key)
        obj = get(ns, name)
        if obj is None:
            records.append(missing_child(ns, name, parent))
            continue
        rec = app_status(obj, parent=parent)
        records.append(rec)
        queue.extend((cns, cname, name) for cns, cname in child_refs(obj))
    root_rec, rest = records[0], records[1:]
    return [root_rec, *_order(rest)]


def not_ready(records: Iterable[AppStatus]) -> list[AppStatus]:
    return [r for r in records if not r.ready]


def summary(records: list[AppStatus]) -> dict[str, Any]:
    bad = not_ready(records)
    return {
        "total": len(records),
        "ready": len(records) - len(bad),
        "not_ready": [r.name for r in bad],
    }


def failure_message(records: list[AppStatus], waited: float | None = None) -> str:
    """The failure text: which apps are not Synced/Healthy and why, one per line."""
    bad = not_ready(records)
    head = f"{len(bad)} of {len(records)} Argo CD Applications not Synced/Healthy"
    if waited is not None:
        head += f" after waiting {waited:.0f}s"
    lines = [head + ":"]
    for r in bad:
        state = f"{r.sync}/{r.health}" + (f" ({r.phase})" if r.phase else "")
        lines.append(f"  - {r.key}: {state}" + (f": {r.reason}" if r.reason else ""))
    return "\n".join(lines)


COLUMNS = ("APP", "WAVE", "SYNC", "HEALTH", "OPERATION", "REASON")


def table(records: list[AppStatus], reason_width: int = 100) -> list[str]:
    """A fixed-width table, one line per app (header first); reasons only for apps not ready."""
    rows = [COLUMNS]
    for r in records:
        reason = "" if r.ready else r.reason
        if len(reason) > reason_width:
            reason = reason[: reason_width - 3] + "..."
        rows.append((r.name, str(r.wave), r.sync, r.health, r.phase or "-", reason))
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS) - 1)]
    return [
        ("  ".join(cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=True)) + "  " + row[-1]).rstrip()
        for row in rows
    ]


def changes(before: Mapping[str, AppStatus], after: list[AppStatus]) -> list[AppStatus]:
    """Records whose sync/health/phase differ from ``before`` (new ones included)."""
    return [r for r in after if r.key not in before or before[r.key].state != r.state]


def progress_line(elapsed: float, rec: AppStatus, old: AppStatus | None) -> str:
    def fmt(s: AppStatus) -> str:
        return f"{s.sync}/{s.health}" + (f"/{s.phase}" if s.phase else "")

    was = fmt(old) if old else "new"
    tail = "" if rec.ready or not rec.reason else f" ({rec.reason})"
    return f"[{elapsed:6.1f}s] {rec.name}: {was} -> {fmt(rec)}{tail}"
