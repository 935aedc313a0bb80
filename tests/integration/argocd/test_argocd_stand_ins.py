"""Nothing a stand-in made is live in the bed unless docs/adr/bed-stand-ins.md names it.

Every object every Application manages (``status.resources``, on the host and in each tenant's
vCluster) is read back live; an object a stand-in chart rendered carries the label
``gpufleet.io/test-double: <chart>`` (``double_chart``): its chart must be one the ADR's table lists
under "In the bed for". Switching a chart to the real one and leaving it in the table is caught the
other way round: a chart listed there must still be a stand-in somewhere.
"""

from __future__ import annotations

import json
import re
from typing import Any

from argocd_bed import ArgoBed, Synced
from argocd_harness import REPO_ROOT

ADR = REPO_ROOT / "docs" / "adr" / "bed-stand-ins.md"
LABEL = "gpufleet.io/test-double"


def tabled_doubles() -> set[str]:
    """The charts the table's ``double_chart`` row names."""
    row = next(line for line in ADR.read_text().splitlines() if line.startswith("| `double_chart`"))
    return {c.strip() for c in row.split("|")[2].split(",")}


def _live(bed: ArgoBed, app: dict[str, Any], res: dict[str, Any]) -> dict[str, Any] | None:
    """The live object of one managed resource, from the API its Application deploys to."""
    server = app["spec"]["destination"]["server"]
    kind = f"{res['kind']}.{res['group']}" if res.get("group") else res["kind"]
    args = ["get", kind, res["name"], *(("-n", res["namespace"]) if res.get("namespace") else ()), "-o", "json"]
    api: Any = next((t for t in bed.tenants.values() if t.host in server), bed.host)
    p = api.kubectl(*args, check=False)
    return json.loads(p.stdout) if p.returncode == 0 else None


def test_no_live_object_comes_from_a_stand_in_the_table_does_not_name(argocd_bed: ArgoBed, synced: Synced) -> None:
    allowed = tabled_doubles()
    assert allowed and all(re.fullmatch(r"[a-z0-9-]+", c) for c in allowed), allowed
    made_by: set[str] = set()
    for app in argocd_bed.argocd.apps().values():
        for res in (app.get("status") or {}).get("resources") or []:
            if res["kind"] != "ConfigMap":  # double_chart renders exactly one ConfigMap
                continue
            obj = _live(argocd_bed, app, res)
            chart = ((obj or {}).get("metadata", {}).get("labels") or {}).get(LABEL)
            if chart:
                made_by.add(chart)
                assert chart in allowed, f"{app['metadata']['name']}: {res['name']} made by a stand-in of {chart}"
    assert made_by == allowed, f"the table lists charts that are real now: {sorted(allowed - made_by)}"
