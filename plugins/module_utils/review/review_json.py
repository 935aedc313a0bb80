"""The review as JSON for CI annotations (``gpufleet.py review --format json``), in the shape of
``docs/review.schema.json`` (``schema_version`` 1; fields are only added within a version). Lists keep the
review's sorted order, keys are sorted: the same change gives the same bytes."""

from __future__ import annotations

import json
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.review import approval

SCHEMA_VERSION = 1


def _files(changes: list[Any]) -> list[dict[str, Any]]:
    return [{"path": c.path, "change": c.change, "owners": [str(o) for o in c.owners]} for c in changes]


def review_dict(rv: Any) -> dict[str, Any]:
    """Every fact of the review a CI job annotates with: verdict, problems, files, approvers, per tenant."""
    a = approval.approvers(rv) if rv.codeowners.path else None
    return {
        "schema_version": SCHEMA_VERSION,
        "ok": rv.ok,
        "base": rv.base,
        "base_commit": rv.base_commit,
        "kind": "tenant" if rv.tenant_pr else rv.kind.split(":")[0],
        "tenant": rv.tenant_pr,
        "problems": list(rv.problems),
        "notes": list(rv.notes),
        "inputs": _files(rv.inputs),
        "rendered": _files(rv.rendered),
        "drift": _files(rv.drift),
        "shared_platform": list(rv.shared_platform),
        "approvals": [
            {
                "path": x.path,
                "change": x.change,
                "owner": str(x.owner),
                "rule": {"pattern": x.rule.pattern, "line": x.rule.line} if x.rule else None,
                "approvers": list(x.rule.owners) if x.rule else [],
            }
            for x in rv.approvals
        ],
        "approval": {
            "codeowners": rv.codeowners.path or None,
            "covering": list(a.covering) if a else [],
            "platform": list(a.platform) if a else [],
            "asks_tenants": list(a.asks_tenants) if a else [],
        },
        "moves": [{"cluster": c, "node": m.node, "from": m.from_pool, "to": m.to_pool} for c, m in rv.moves],
        "drains": [
            {"tenant": d.tenant, "pool": d.pool, "partition": d.partition, "nodes": list(d.nodes)} for d in rv.drains
        ],
        "tenant_changes": [{"tenant": c.tenant, "what": c.what, "text": c.text} for c in rv.tenant_changes],
        "notices": [{"tenant": n.tenant, "text": n.text, "handles": list(n.handles)} for n in rv.notices],
        "charts": [
            {
                "app": c.app,
                "chart": c.chart,
                "old": c.old,
                "new": c.new,
                "values_changed": c.values_changed,
                "diff": list(c.diff),
                "note": c.note,
            }
            for c in rv.charts
        ],
    }


def render_json(rv: Any) -> str:
    return json.dumps(review_dict(rv), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
