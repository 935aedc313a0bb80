"""``gpufleet_maintenance``: nodes the platform takes out of service, with a reason and an optional window.

Platform-owned (a top-level key: a tenant's own file may define nothing but its tenant, see
``tenant_files``). Each entry names nodes by hostlist (``nodes``) or by a switch of the cluster's
topology (``switch``: a leaf group, a tree switch or a block; every node under it)::

    gpufleet_maintenance:
      - name: psu-swap-su06
        cluster: gpu-east
        switch: su06-leaf
        reason: PSU swap RMA-4411
        window: {start: "2026-12-01T06:00:00Z", duration: 4h}

The renderer resolves the nodes (render/platform/maintenance.py) and the apply step cordons them; Slinky drains the
Slurm nodes behind a cordon with the Node's ``node-cordon-reason``. The entry is written and removed
by ``gpufleet.py maintenance start|end`` (daytwo.maintenance_change).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import Issue
from ansible_collections.gpufleet.core.plugins.module_utils.model import grammar as g

KEY = "gpufleet_maintenance"
MAX_ENTRIES = 500
MAX_WINDOW = timedelta(days=30)
# one line Slurm keeps as the node Reason and Kubernetes as an annotation value: no quotes, no '='
REASON = r"^[A-Za-z0-9][-A-Za-z0-9 _.,:/#@+()]{0,119}$"
START = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"
DURATION = r"^[1-9][0-9]{0,4}[mhd]$"
SWITCH = r"^[A-Za-z0-9][-A-Za-z0-9_.]{0,127}$"

SCHEMA: dict[str, Any] = {
    "type": "array",
    "maxItems": MAX_ENTRIES,
    "description": "nodes in maintenance (platform-owned): cordoned by the apply step, drained in Slurm by the"
    " Slinky operator with the reason, in a Slurm MAINT reservation during the window; written by"
    " `gpufleet.py maintenance start|end`",
    "items": {
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "cluster", "reason"],
        "oneOf": [{"required": ["nodes"]}, {"required": ["switch"]}],
        "description": "one maintenance: the nodes (hostlist `nodes` or topology `switch`), why, and when",
        "properties": {
            "name": g.pattern(g.NAME, "name of the maintenance (unique; the Slurm reservation is named after it)"),
            "cluster": g.pattern(g.NAME, "cluster of the nodes"),
            "nodes": g.pattern(g.HOSTLIST, "nodes by hostlist, e.g. gpu[041-044]"),
            "switch": g.pattern(SWITCH, "every node under this switch, leaf group or block of the topology"),
            "reason": g.pattern(
                REASON, "why (Slurm shows it as the drain reason); letters, digits, -_.,:/#@+() and spaces"
            ),
            "window": {
                "type": "object",
                "additionalProperties": False,
                "required": ["start", "duration"],
                "description": "when the nodes are out: cordoned from start; a Slurm MAINT reservation over"
                " [start, start + duration] keeps jobs that would overlap it off the nodes before that",
                "properties": {
                    "start": g.pattern(START, "start, UTC, RFC 3339 (2026-12-01T06:00:00Z)"),
                    "duration": g.pattern(DURATION, "length: minutes (m), hours (h) or days (d), at most 30d"),
                },
            },
        },
    },
}


@dataclass(frozen=True)
class Maintenance:
    name: str
    cluster: str
    reason: str
    nodes: str | None = None
    switch: str | None = None
    start: str | None = None  # RFC 3339 UTC, as written
    duration: str | None = None  # 4h, 90m, 2d

    def start_time(self) -> datetime | None:
        return parse_start(self.start) if self.start else None

    def end_time(self) -> datetime | None:
        start = self.start_time()
        return start + parse_duration(self.duration) if start and self.duration else None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "cluster": self.cluster}
        out.update({k: v for k, v in (("nodes", self.nodes), ("switch", self.switch)) if v})
        out["reason"] = self.reason
        if self.start and self.duration:
            out["window"] = {"start": self.start, "duration": self.duration}
        return out


def parse_start(text: str) -> datetime:
    """``2026-12-01T06:00:00Z`` -> an aware UTC datetime (ValueError when it is not a real time)."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)  # noqa: UP017 (Python 3.9 on hosts)


def parse_duration(text: str) -> timedelta:
    m = re.fullmatch(DURATION.strip("^$"), text)
    if not m:
        raise ValueError(f"not a duration: {text!r}")
    return timedelta(minutes=int(text[:-1]) * {"m": 1, "h": 60, "d": 1440}[text[-1]])


def from_dict(d: dict[str, Any]) -> Maintenance:
    w = d.get("window") or {}
    return Maintenance(
        name=d["name"],
        cluster=d["cluster"],
        reason=d["reason"],
        nodes=d.get("nodes"),
        switch=d.get("switch"),
        start=w.get("start"),
        duration=w.get("duration"),
    )


def window_issues(
    raw: Any, path: tuple[str | int, ...], w: Any, bounds: tuple[timedelta, timedelta], too_long: str
) -> list[Issue]:
    """A window's start must be a real UTC time and its length within ``bounds`` (else ``too_long``);
    the schema has already checked the shape and names a duration that does not parse."""
    if not isinstance(w, dict) or not isinstance(w.get("start"), str) or not isinstance(w.get("duration"), str):
        return []
    out = []
    try:
        parse_start(w["start"])
    except ValueError:
        out.append(raw.issue((*path, "start"), f"{w['start']!r} is not a valid UTC time"))
    try:
        length = parse_duration(w["duration"])
    except ValueError:
        return out  # the schema names it
    if not bounds[0] <= length <= bounds[1]:
        out.append(raw.issue((*path, "duration"), too_long))
    return out


def issues(raw: Any, clusters: set[str]) -> list[Issue]:
    """Unique names, known clusters, real start times and bounded windows (the schema checked shapes)."""
    entries = raw.data.get(KEY)
    if not isinstance(entries, list):
        return []
    out: list[Issue] = []
    seen: set[str] = set()
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            continue
        name = e.get("name")
        if isinstance(name, str):
            if name in seen:
                out.append(raw.issue((KEY, i, "name"), f"maintenance {name!r} is defined twice"))
            seen.add(name)
        if isinstance(e.get("cluster"), str) and e["cluster"] not in clusters:
            out.append(raw.issue((KEY, i, "cluster"), f"cluster {e['cluster']!r} is not defined in gpufleet_clusters"))
        too_long = "longer than 30d: split it or return the nodes"
        out += window_issues(raw, (KEY, i, "window"), e.get("window"), (timedelta.min, MAX_WINDOW), too_long)
    return out
