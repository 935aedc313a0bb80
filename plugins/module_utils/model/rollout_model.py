"""``gpufleet_rollout``: how much of the fleet an upgrade may take down at once, and when (platform-owned).

``max_unavailable_per_block`` (default 1): the most nodes of one topology block (or leaf group) that a
rolling update may have down at the same time. A Slinky NodeSet rolls its pods by ordinal, not by
block, so its ``maxUnavailable`` is set to this number: then no block can lose more, whichever nodes
the update picks. The GPU Operator's driver upgrade takes the same number as its cluster-wide
parallelism (render/platform/driver_upgrade.py).

``window`` / ``tenant_windows``: an update window for the Slurm workers of every Slurm tenant / of one
tenant (its entry wins). A tenant with a window has NodeSets ``updateStrategy: ScheduledUpdate``: the
Slinky operator (v1.2.1) puts every node of the NodeSet in a Slurm reservation with the MAINT and
IGNORE_JOBS flags over [start, start + duration] and replaces the pods of reserved nodes during it; the
other tenants roll by ``max_unavailable_per_block``.

``driver_drain_timeout_seconds`` (default 86400): how long the GPU Operator's upgrade drain waits for a
node's slurmd pod, which Slinky keeps from eviction while the Slurm node still runs jobs (0: forever).

Example::

    gpufleet_rollout:
      max_unavailable_per_block: 1
      window: {start: "2026-12-05T02:00:00Z", duration: 4h}
      tenant_windows:
        llm-pretrain: {start: "2026-12-06T02:00:00Z", duration: 2h}
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import Issue
from ansible_collections.gpufleet.core.plugins.module_utils.model import grammar as g
from ansible_collections.gpufleet.core.plugins.module_utils.model.maintenance_model import (
    DURATION,
    START,
    parse_duration,
    parse_start,
    window_issues,
)

KEY = "gpufleet_rollout"
MIN_WINDOW = timedelta(minutes=1)  # the operator's NodeSet webhook refuses a shorter scheduledUpdate.duration
MAX_WINDOW = timedelta(days=7)
MAX_DRAIN_TIMEOUT = 7 * 86400

WINDOW_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["start", "duration"],
    "description": "an update window: the Slurm workers restart inside [start, start + duration] (NodeSet"
    " ScheduledUpdate, a Slurm MAINT reservation over every node of the NodeSet)",
    "properties": {
        "start": g.pattern(START, "start, UTC, RFC 3339 (2026-12-05T02:00:00Z)"),
        "duration": g.pattern(DURATION, "length: minutes (m), hours (h) or days (d), 1m to 7d"),
    },
}

SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "rolling updates (platform-owned): how many nodes of one topology block may be down at once,"
    " and the update windows of the Slurm workers",
    "properties": {
        "max_unavailable_per_block": {
            "type": "integer",
            "minimum": 1,
            "maximum": 64,
            "description": "NodeSet maxUnavailable and the GPU Operator's parallel driver upgrades: the most"
            " nodes of a block an update takes down at once (1)",
        },
        "window": WINDOW_SCHEMA,
        "tenant_windows": {
            "type": "object",
            "maxProperties": 500,
            "propertyNames": {"pattern": g.NAME},
            "additionalProperties": WINDOW_SCHEMA,
            "description": "per Slurm tenant, its own update window (wins over `window`)",
        },
        "driver_drain_timeout_seconds": {
            "type": "integer",
            "minimum": 0,
            "maximum": MAX_DRAIN_TIMEOUT,
            "description": "how long the GPU Operator's upgrade drain waits for a node's jobs to end (86400; 0:"
            " no limit)",
        },
    },
}


@dataclass(frozen=True)
class Window:
    start: str  # RFC 3339 UTC, as written
    duration: str  # 4h, 90m, 2d

    def start_time(self) -> datetime:
        return parse_start(self.start)

    def end_time(self) -> datetime:
        return self.start_time() + parse_duration(self.duration)

    def go_duration(self) -> str:
        """The duration as Go's ``time.ParseDuration`` reads it (the operator's field type): no days."""
        minutes = int(parse_duration(self.duration).total_seconds()) // 60
        return f"{minutes // 60}h" if minutes % 60 == 0 else f"{minutes}m"


@dataclass(frozen=True)
class Rollout:
    max_unavailable_per_block: int = 1
    window: Window | None = None
    tenant_windows: tuple[tuple[str, Window], ...] = ()
    driver_drain_timeout_seconds: int = 86400

    def window_of(self, tenant: str) -> Window | None:
        """The update window of ``tenant``'s Slurm workers (None: they roll, bounded per block)."""
        return dict(self.tenant_windows).get(tenant, self.window)


def _window(d: dict[str, Any] | None) -> Window | None:
    return Window(d["start"], d["duration"]) if d else None


def from_dict(d: dict[str, Any] | None) -> Rollout:
    d = dict(d or {})
    windows = d.get("tenant_windows") or {}
    return Rollout(
        max_unavailable_per_block=d.get("max_unavailable_per_block", 1),
        window=_window(d.get("window")),
        tenant_windows=tuple(sorted((t, Window(w["start"], w["duration"])) for t, w in windows.items())),
        driver_drain_timeout_seconds=d.get("driver_drain_timeout_seconds", 86400),
    )


def _window_issues(raw: Any, path: tuple[str | int, ...], w: Any) -> list[Issue]:
    return window_issues(raw, path, w, (MIN_WINDOW, MAX_WINDOW), "an update window is 1m to 7d long")


def issues(raw: Any) -> list[Issue]:
    """Real start times, bounded windows, and tenant windows only for Slurm tenants (the schema checked shapes)."""
    d = raw.data.get(KEY)
    if not isinstance(d, dict):
        return []
    out = _window_issues(raw, (KEY, "window"), d.get("window"))
    tenants = raw.data.get("gpufleet_tenants") if isinstance(raw.data.get("gpufleet_tenants"), list) else []
    pools = raw.data.get("gpufleet_pools") if isinstance(raw.data.get("gpufleet_pools"), list) else []
    slurm_pools = {p.get("name") for p in pools if isinstance(p, dict) and p.get("kind") == "slurm"}
    slurm = {
        t.get("name")
        for t in tenants
        if isinstance(t, dict) and isinstance(t.get("pools"), list) and slurm_pools & set(map(str, t["pools"]))
    }
    for name, w in sorted((d.get("tenant_windows") or {}).items()) if isinstance(d.get("tenant_windows"), dict) else ():
        if name not in slurm:
            out.append(raw.issue((KEY, "tenant_windows", name), f"{name!r} is not a tenant with a Slurm pool"))
        out += _window_issues(raw, (KEY, "tenant_windows", name), w)
    return out


def driver_policy_issues(raw: Any) -> list[Issue]:
    """The driver upgrade policy is rendered from this key (render/platform/driver_upgrade.py); a cluster's own
    gpu_operator values may not set it, or the per-block budget would hold in one place and not the other."""
    clusters = raw.data.get("gpufleet_clusters")
    out = []
    for i, c in enumerate(clusters if isinstance(clusters, list) else ()):
        comps = c.get("components") if isinstance(c, dict) else None
        comp = comps.get("gpu_operator") if isinstance(comps, dict) else None
        vals = comp.get("values") if isinstance(comp, dict) else None
        driver = vals.get("driver") if isinstance(vals, dict) else None
        if isinstance(driver, dict) and "upgradePolicy" in driver:
            path = ("gpufleet_clusters", i, "components", "gpu_operator", "values", "driver", "upgradePolicy")
            out.append(raw.issue(path, f"set by {KEY} (max_unavailable_per_block, driver_drain_timeout_seconds)"))
    return out
