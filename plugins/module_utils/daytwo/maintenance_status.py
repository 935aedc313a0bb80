"""``gpufleet.py maintenance list``: the maintenances of an inventory, their nodes as rendered, their
window and state at a given time (``pending`` before the window, ``due`` while the nodes are cordoned,
``ended`` once the window is over: end it with ``maintenance end``, which returns the nodes)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ansible_collections.gpufleet.core.plugins.module_utils.hostlist import compress
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Fleet
from ansible_collections.gpufleet.core.plugins.module_utils.model.paths import default_out
from ansible_collections.gpufleet.core.plugins.module_utils.pools.cordon import read_maintenance


@dataclass(frozen=True)
class Status:
    name: str
    cluster: str
    reason: str
    nodes: tuple[str, ...]  # as rendered (clusters/<c>/maintenance.yaml)
    window: str  # "start for duration" or "on apply"
    state: str  # pending | due | ended


def statuses(fleet: Fleet, now: datetime) -> list[Status]:
    """Every maintenance of ``fleet`` in file order, with its rendered nodes and its state at ``now``."""
    out = []
    rendered = {
        c: read_maintenance(default_out(fleet), c)[0] or {} for c in sorted({m.cluster for m in fleet.maintenance})
    }
    for m in fleet.maintenance:
        nodes = tuple(sorted(n for n, e in rendered[m.cluster].items() if e.get("maintenance") == m.name))
        start, end = m.start_time(), m.end_time()
        state = "pending" if start and now < start else "ended" if end and now >= end else "due"
        window = f"{m.start} for {m.duration}" if start else "on apply"
        out.append(Status(m.name, m.cluster, m.reason, nodes, window, state))
    return out


def status_lines(rows: list[Status]) -> list[str]:
    """A Markdown table of ``rows`` (or a sentence when there is none)."""
    if not rows:
        return ["No maintenance."]
    lines = ["| maintenance | cluster | nodes | reason | window | state |", "| --- | --- | --- | --- | --- | --- |"]
    for s in rows:
        nodes = f"`{compress(list(s.nodes))}` ({len(s.nodes)})" if s.nodes else "none rendered: re-render"
        lines.append(f"| `{s.name}` | `{s.cluster}` | {nodes} | {s.reason} | {s.window} | {s.state} |")
    return lines
