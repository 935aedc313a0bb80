"""Bounds the schema cannot state: sizes and numbers a tenant sets against what the platform owns,
and the size of the whole model's hostlists together.

The schema bounds each value alone; these bounds compare a tenant's value with the platform's:

- ``slurm.accounting.database.storage`` (the accounting MariaDB's claim, in the tenant's host
  namespace, so it raises the host ``requests.storage`` quota) may not pass the cluster's
  ``tenant_database_storage_max`` (platform-owned, default :data:`DATABASE_STORAGE_MAX`);
- ``monitoring.scrape_interval`` (the host PodMonitor the shared Prometheus scrapes) may not be
  shorter than the cluster's ``monitoring.min_scrape_interval`` (default :data:`MIN_SCRAPE_INTERVAL`)
  nor longer than :data:`MAX_SCRAPE_INTERVAL`;

and every hostlist of the model (pins, excludes, fabric exclusions, allowed moves, maintenance) expands
to at most :data:`MAX_TOTAL_HOSTS` names together (each alone is bounded by the hostlist parser).
"""

from __future__ import annotations

import re
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import Issue
from ansible_collections.gpufleet.core.plugins.module_utils.model import maintenance_model

DATABASE_STORAGE_MAX = "1Ti"
MIN_SCRAPE_INTERVAL = "15s"
MAX_SCRAPE_INTERVAL = "1h"
STORAGE = r"^[0-9]{1,6}(Mi|Gi|Ti)$"
INTERVAL = r"^[1-9][0-9]{0,3}[smh]$"
_UNIT = {"Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "s": 1, "m": 60, "h": 3600}


def amount(text: Any, regex: str) -> int | None:
    """``text`` (a storage size or a duration of the grammars above) in bytes or seconds; None if not one."""
    if not isinstance(text, str) or not re.fullmatch(regex.strip("^$"), text):
        return None
    num = text.rstrip("MGTismh")
    return int(num) * _UNIT[text[len(num) :]]


def _dict(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _list(x: Any) -> list[Any]:
    return x if isinstance(x, list) else []


def _platform_bound_issues(raw: Any) -> list[Issue]:
    listed = raw.data.get("gpufleet_clusters")
    clusters = {
        c["name"]: (ci, c)
        for ci, c in enumerate(listed if isinstance(listed, list) else [])
        if isinstance(c, dict) and isinstance(c.get("name"), str)
    }
    issues: list[Issue] = []
    tenants = raw.data.get("gpufleet_tenants")
    for ti, t in enumerate(tenants if isinstance(tenants, list) else []):
        if not isinstance(t, dict) or not isinstance(t.get("cluster"), str) or t["cluster"] not in clusters:
            continue
        ci, c = clusters[t["cluster"]]
        db = _dict(_dict(_dict(t.get("slurm")).get("accounting")).get("database"))
        cap_text = c.get("tenant_database_storage_max", DATABASE_STORAGE_MAX)
        size, cap = amount(db.get("storage"), STORAGE), amount(cap_text, STORAGE)
        if size is not None and cap is not None and size > cap:
            issues.append(
                raw.issue(
                    ("gpufleet_tenants", ti, "slurm", "accounting", "database", "storage"),
                    f"{db['storage']} is more than the platform allows a tenant's accounting database"
                    f" (gpufleet_clusters[{ci}].tenant_database_storage_max: {cap_text}); it counts against the"
                    " tenant's host storage quota",
                )
            )
        floor_text = _dict(c.get("monitoring")).get("min_scrape_interval", MIN_SCRAPE_INTERVAL)
        every = amount(_dict(t.get("monitoring")).get("scrape_interval"), INTERVAL)
        floor, ceiling = amount(floor_text, INTERVAL), amount(MAX_SCRAPE_INTERVAL, INTERVAL)
        if every is not None and floor is not None and ceiling is not None and not floor <= every <= ceiling:
            issues.append(
                raw.issue(
                    ("gpufleet_tenants", ti, "monitoring", "scrape_interval"),
                    f"{t['monitoring']['scrape_interval']} is outside {floor_text} (the platform's"
                    f" gpufleet_clusters[{ci}].monitoring.min_scrape_interval) to {MAX_SCRAPE_INTERVAL}: the"
                    " shared Prometheus scrapes it",
                )
            )
    return issues


MAX_TOTAL_HOSTS = 100_000  # names all hostlists of the model may expand to, together
_TOP_COMMA = re.compile(r",(?![^\[]*\])")
_BRACKET = re.compile(r"\[([^\]]*)\]")
_RANGE = re.compile(r"^([0-9]{1,18})(?:-([0-9]{1,18}))?$")


def hostlist_size(expr: str) -> int:
    """How many names a hostlist expression expands to, counted without expanding it (an
    unparsable part counts 1: the hostlist parser reports it)."""
    total = 0
    for term in _TOP_COMMA.split(expr):
        n = 1
        for group in _BRACKET.findall(term):
            count = 0
            for item in group.split(","):
                m = _RANGE.match(item)
                count += (abs(int(m.group(2)) - int(m.group(1))) + 1) if m and m.group(2) else 1
            n *= max(count, 1)
        total += n
    return total


def _hostlist_total_issues(raw: Any) -> list[Issue]:
    found: list[tuple[tuple[str | int, ...], str]] = []
    for pi, p in enumerate(_list(raw.data.get("gpufleet_pools"))):
        for key in ("pin", "exclude"):
            for i, e in enumerate(_list(_dict(p).get(key))):
                found.append((("gpufleet_pools", pi, key, i), e))
    for ci, cl in enumerate(_list(raw.data.get("gpufleet_clusters"))):
        fab = _dict(_dict(cl).get("fabric"))
        for key in ("exclude_hosts", "exclude_switches"):
            for i, e in enumerate(_list(fab.get(key))):
                found.append((("gpufleet_clusters", ci, "fabric", key, i), e))
        for mi, m in enumerate(_list(_dict(cl).get("allow_node_moves"))):
            for i, e in enumerate(_list(_dict(m).get("nodes"))):
                found.append((("gpufleet_clusters", ci, "allow_node_moves", mi, "nodes", i), e))
    for i, m in enumerate(_list(raw.data.get(maintenance_model.KEY))):
        found.append(((maintenance_model.KEY, i, "nodes"), _dict(m).get("nodes")))
    total = 0
    for path, expr in found:
        if not isinstance(expr, str):
            continue
        total += hostlist_size(expr)
        if total > MAX_TOTAL_HOSTS:
            return [
                raw.issue(
                    path,
                    f"refused: the model's hostlists expand to more than {MAX_TOTAL_HOSTS} names together"
                    " (this one passes the bound); list fewer or narrower ranges",
                )
            ]
    return []


def bound_issues(raw: Any) -> list[Issue]:
    """Every bound of this module (the ``bounds`` pass of ``model/validation.py``)."""
    return _platform_bound_issues(raw) + _hostlist_total_issues(raw)
