"""The review's sections on who approves and what changes per tenant, as Markdown (the pull-request
comment): :mod:`.approval` and :mod:`.summary` in words."""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.review import approval


def _handles(owners: tuple[str, ...]) -> str:
    return " or ".join(f"`{o}`" for o in owners)


def md_approvers(rv: Any) -> list[str]:
    """One line on whose approval is enough, and a note where a platform change would ask a tenant."""
    if not rv.approvals or not rv.codeowners.path:
        return []
    a = approval.approvers(rv)
    lines = ["### Approval", ""]
    if a.covering:
        lines.append(
            f"One approval from {_handles(a.covering)} covers every committed file of this change"
            " (each file's last matching CODEOWNERS line; one owner of a line is enough, on GitHub and GitLab)."
        )
    else:
        lines.append(
            "No single owner covers every file: each CODEOWNERS line in the table above needs one of its owners."
        )
    if a.asks_tenants:
        lines += [
            "",
            f"Note: this platform change would need a tenant's approval for {len(a.asks_tenants)} file(s) whose"
            f" CODEOWNERS line does not list the platform ({_handles(a.platform)}), e.g. `{a.asks_tenants[0]}`:"
            " list the platform beside the tenant on its rendered tree (`gpufleet.py init` writes it so).",
        ]
    return [*lines, ""]


def md_tenants(rv: Any) -> list[str]:
    """Per tenant: what changes, in words, and what it is told (informational)."""
    tenants = sorted({c.tenant for c in rv.tenant_changes} | {n.tenant for n in rv.notices})
    if not tenants:
        return []
    lines = ["### What changes per tenant", ""]
    for t in tenants:
        lines += [f"#### `{t}`", ""]
        lines += [f"- {c.text}" for c in rv.tenant_changes if c.tenant == t]
        for n in (n for n in rv.notices if n.tenant == t):
            cc = (
                f"{' '.join(n.handles)}, for your information (no approval needed): "
                if n.handles
                else "For information: "
            )
            lines.append(f"- {cc}{n.text}")
        lines.append("")
    return lines


def md_charts(rv: Any) -> list[str]:
    """Each chart version or values change with the difference in the manifests the chart renders."""
    if not rv.charts:
        return []
    lines = [f"### Chart changes ({len(rv.charts)})", ""]
    for c in rv.charts:
        version = f"{c.old or 'new'} → {c.new}" if c.old != c.new else c.new
        values = ", values changed" if c.values_changed else ""
        lines.append(f"- `{c.app}`: chart `{c.chart}` {version}{values}" + (f"; {c.note}" if c.note else ""))
        if c.diff:
            lines += ["", "```diff", *c.diff, "```", ""]
    return [*lines, ""]
