"""Sizes and numbers a tenant sets, bounded against what the platform owns.

The schema bounds each value alone; these bounds compare a tenant's value with the platform's:

- ``slurm.accounting.database.storage`` (the accounting MariaDB's claim, in the tenant's host
  namespace, so it raises the host ``requests.storage`` quota) may not pass the cluster's
  ``tenant_database_storage_max`` (platform-owned, default :data:`DATABASE_STORAGE_MAX`);
- ``monitoring.scrape_interval`` (the host PodMonitor the shared Prometheus scrapes) may not be
  shorter than the cluster's ``monitoring.min_scrape_interval`` (default :data:`MIN_SCRAPE_INTERVAL`)
  nor longer than :data:`MAX_SCRAPE_INTERVAL`.
"""

from __future__ import annotations

import re
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import Issue

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


def bound_issues(raw: Any) -> list[Issue]:
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
