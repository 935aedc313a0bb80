"""The review as Markdown for a pull-request comment (``gpufleet review``): the head line, the changed
files with their owners and approvers, node moves, drain guidance, the upgrade plan and the problems."""

from __future__ import annotations

from ansible_collections.gpufleet.core.plugins.module_utils.hostlist import compress
from ansible_collections.gpufleet.core.plugins.module_utils.review.change import MAX_ROWS, Review
from ansible_collections.gpufleet.core.plugins.module_utils.review.owners import Owner
from ansible_collections.gpufleet.core.plugins.module_utils.review.summary_markdown import (
    md_approvers,
    md_charts,
    md_tenants,
)
from ansible_collections.gpufleet.core.plugins.module_utils.scale.plan import (
    _cell,
    _code,
    _table,
    object_sections,
    table_section,
)


def _owners_cell(owners: tuple[Owner, ...]) -> str:
    return ", ".join(str(o) for o in owners)


def _md_head(rv: Review) -> list[str]:
    verdict = "✅ passes" if rv.ok else f"❌ fails ({len(rv.problems)} problem{'s' * (len(rv.problems) != 1)})"
    lines = [f"## gpufleet review: {verdict}", ""]
    lines += [f"Base `{_cell(rv.base)}` (merge base `{rv.base_commit[:12]}`); change: {rv.kind}.", ""]
    if rv.problems:
        lines += ["### Problems", ""] + [f"- {p}" for p in rv.problems] + [""]
    for n in rv.notes:
        lines.append(f"Note: {n}")
    if rv.notes:
        lines.append("")
    return lines


def _md_files(rv: Review) -> list[str]:
    """Changed inputs, rendered changes, committed changes no input explains, shared platform files."""
    rows = [[_code(c.path), _owners_cell(c.owners), c.change] for c in rv.inputs]
    lines = table_section("Changed inputs", len(rv.inputs), ["file", "owner", "change"], rows, "No input changed.")
    rows = [[_code(c.path), _owners_cell(c.owners), c.change] for c in rv.rendered[:MAX_ROWS]]
    head = ["file", "owners of what changed", "change"]
    lines += table_section("Rendered changes", len(rv.rendered), head, rows, "Nothing rendered changes.", "")

    if rv.drift:
        lines += [f"### Committed changes no input explains ({len(rv.drift)})", ""]
        lines.append("The base branch's tree was not its rendered inventory (a gpufleet upgrade, a hand edit):")
        lines.append("")
        lines += _table(
            ["file", "owners", "change"], [[_code(c.path), _owners_cell(c.owners), c.change] for c in rv.drift]
        )
        lines.append("")
    lines += [f"### Shared platform changes ({len(rv.shared_platform)})", ""]
    if rv.shared_platform:
        lines.append("Rendered platform files every tenant depends on; the platform team reviews these:")
        lines.append("")
        lines += [f"- `{_cell(p)}`" for p in rv.shared_platform]
    else:
        lines.append("None.")
    lines.append("")
    return lines


def _md_approvals(rv: Review) -> list[str]:
    """Every committed file, its owner and who must approve it (CODEOWNERS of the base)."""
    where = f"`{_cell(rv.codeowners.path)}` of the base" if rv.codeowners.path else "no CODEOWNERS at the base"
    rows = [
        [
            _code(a.path),
            a.change,
            str(a.owner),
            f"`{_cell(a.rule.pattern)}` (line {a.rule.line})" if a.rule else "none",
            _cell(" or ".join(a.rule.owners)) if a.rule and a.rule.owners else "nobody (no code-owner review)",
        ]
        for a in rv.approvals
    ]
    head = ["file", "change", "owner", "CODEOWNERS rule", "must approve"]
    lines = [f"### Who must approve ({len(rv.approvals)} committed file(s); {where}, the last matching rule)", ""]
    lines += _table(head, rows) if rows else ["No committed file changes."]
    return [*lines, ""]


def _md_moves(rv: Review) -> list[str]:
    """Node moves and the fabric pictures of the clusters where nodes move."""
    rows = [
        [
            _code(m.node),
            _code(c),
            _code(m.from_pool),
            _code(m.to_pool),
            ", ".join(map(str, sorted(rv.move_owners[m.node]))),
        ]
        for c, m in rv.moves[:MAX_ROWS]
    ]
    head = ["node", "cluster", "from pool", "to pool", "owners"]
    lines = table_section("Node moves", len(rv.moves), head, rows, "No node changes pool.")
    for cluster, picture in sorted(rv.pictures.items()):
        lines += [f"#### The fabric of `{_cell(cluster)}` after the change", "", *picture, ""]
    return lines


def _md_drains(rv: Review) -> list[str]:
    if not rv.drains:
        return []
    lines = ["### Drain before merging", ""]
    for d in rv.drains:
        hosts = compress(list(d.nodes))
        lines += [
            f"Slurm pool `{d.pool}` of tenant `{d.tenant}` (partition `{d.partition}`) loses"
            f" {len(d.nodes)} node(s), `{hosts}` (to {', '.join(f'`{t}`' for t in d.to)})."
            f" In the tenant's Slurm (vCluster `{d.tenant}`),"
            " drain them and let their jobs finish before this is merged:",
            "",
            "```",
            f'scontrol update NodeName={hosts} State=DRAIN Reason="gpufleet: leaving pool {d.pool}"',
            f"squeue --nodelist={hosts}                 # wait until no job is left",
            f"sinfo --nodes={hosts} --format='%N %T'   # all drained",
            "```",
            "",
        ]
    return lines


def render_markdown(rv: Review) -> str:
    lines = _md_head(rv) + md_tenants(rv) + _md_files(rv) + _md_approvals(rv) + md_approvers(rv) + _md_moves(rv)
    lines += object_sections(rv.partitions, rv.nodesets, rv.topology)
    lines += _md_drains(rv) + rv.plan + md_charts(rv)
    return "\n".join(lines).rstrip() + "\n"
