"""The switch tree of a cluster as a Mermaid flowchart, nodes coloured by pool and tenant.

GitHub, GitLab and Forgejo draw Mermaid blocks in Markdown, so the picture lives in the rendered
``REPORT.md`` and in the pull-request review, which marks the nodes that move. Under each leaf group
the nodes are drawn as one box per pool (a hostlist), so the picture grows with leaf groups and pools,
not with nodes. A tree with more than ``max_groups`` leaf groups is drawn down to the deepest level of
at most ``max_groups`` switches (the spines, say), each box then holding a pool's nodes below one of
them; only a fabric with more roots than that is not drawn (a line says so).
Deterministic: switches in the tree's depth-first order, colours by sorted tenant name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.hostlist import compress

# fill, stroke: colour-blind safe (Okabe-Ito), light fills so that labels stay readable
_PALETTE = (
    ("blue", "#cce5f6", "#0072b2"),
    ("orange", "#fde3c8", "#e69f00"),
    ("green", "#cdeee4", "#009e73"),
    ("pink", "#f7d9e8", "#cc79a7"),
    ("yellow", "#fbf3c4", "#b8a200"),
    ("sky blue", "#d3ecf9", "#56b4e9"),
    ("red", "#f9d4c4", "#d55e00"),
    ("dark grey", "#e4e4e4", "#555555"),
)
MAX_GROUPS = 64
MAX_BOXES = 150  # pool boxes of a folded picture (Mermaid renderers stop at a few hundred edges)


def _label(text: str) -> str:
    return "".join("#quot;" if c == '"' else "#lt;" if c == "<" else "#gt;" if c == ">" else c for c in text)


def mermaid(
    topo: Any,
    pool_of: Mapping[str, str],
    pools: Mapping[str, tuple[str, str | None]],
    moved: Mapping[str, str] | None = None,
    max_groups: int = MAX_GROUPS,
) -> list[str]:
    """Markdown lines: a ```mermaid block of ``topo`` (a :class:`Topology`) and a legend.

    ``pool_of``: node -> pool; ``pools``: pool -> (kind, tenant or None); ``moved``: node -> the pool it
    comes from (drawn apart, with a red border)."""
    moved = dict(moved or {})
    groups = [g for g, _nodes in topo.leaf_groups]
    if not groups:
        return []
    levels = _levels(topo, max_groups, pool_of) if len(groups) > max_groups else None
    if levels is not None and len(levels[0]) > max_groups:
        return [f"The switch tree has {len(levels[0])} roots, too many to draw (the limit is {max_groups})."]
    cut = set(levels[-1]) if levels is not None else set()
    tenants = sorted({t for _kind, t in pools.values() if t})
    colour = {t: _PALETTE[i % len(_PALETTE)] for i, t in enumerate(tenants)}
    out = ["```mermaid", "flowchart TB"]
    for t in tenants:
        _name, fill, stroke = colour[t]
        out.append(f"  classDef t_{tenants.index(t)} fill:{fill},stroke:{stroke},color:#000")
    out.append("  classDef system fill:#eeeeee,stroke:#777777,color:#000")
    out.append("  classDef spare fill:#ffffff,stroke:#777777,stroke-dasharray:4 3,color:#000")
    out.append("  classDef none fill:#ffffff,stroke:#bbbbbb,color:#555")
    out.append("  classDef moved stroke:#d62728,stroke-width:4px")
    out.append("  classDef switch fill:#f4f4f4,stroke:#333333,color:#000")
    ids: dict[str, str] = {}
    order: list[str] = []
    stack = list(reversed(topo.roots))
    while stack:
        name = stack.pop()
        ids[name] = f"s{len(ids)}"
        order.append(name)
        if name not in cut:
            stack.extend(reversed(topo.switches[name].children))
    seg = 0
    for name in order:
        sw = topo.switches[name]
        out.append(f'  {ids[name]}["{_label(name)}"]:::switch')
        if sw.parent is not None and sw.parent in ids:
            out.append(f"  {ids[sw.parent]} --> {ids[name]}")
        by_pool: dict[tuple[str, str], list[str]] = {}
        for node in _below(topo, name) if name in cut else sw.nodes:
            pool = pool_of.get(node, "")
            by_pool.setdefault((pool, moved.get(node, "\0")), []).append(node)
        for (pool, came_from), nodes in sorted(by_pool.items()):
            kind, tenant = pools.get(pool, ("none", None))
            cls = f"t_{tenants.index(tenant)}" if tenant else (kind if kind in ("system", "spare") else "none")
            hosts = compress(nodes)
            lines = [
                hosts if len(hosts) <= 40 else f"{len(nodes)} nodes",
                (pool or "no pool") + (f" ({tenant})" if tenant else ""),
            ]
            if came_from != "\0":
                lines.append(f"moved from {came_from or 'no pool'}")
            out.append(f'  n{seg}["{"<br/>".join(_label(x) for x in lines)}"]:::{cls}')
            if came_from != "\0":
                out.append(f"  class n{seg} moved")
            out.append(f"  {ids[name]} --> n{seg}")
            seg += 1
    out.append("```")
    legend = [f"{t} {colour[t][0]}" for t in tenants]
    out.append("")
    if levels is not None:
        out.append(
            f"The switch tree has {len(groups)} leaf groups, more than {max_groups}: drawn down to the"
            f" {len(levels[-1])} switch(es) at depth {len(levels)}, a box holding a pool's nodes below one."
        )
    out.append(
        ("Boxes under a leaf group are its nodes by pool," if levels is None else "Boxes are nodes by pool,")
        + " filled in the tenant's colour ("
        + ", ".join(legend)
        + "); system pools grey, spare dashed"
        + ("; a red border marks nodes that move." if moved else ".")
    )
    return out


def _levels(topo: Any, limit: int, pool_of: Mapping[str, str]) -> list[list[str]]:
    """The switches level by level from the roots, down to the deepest level of at most ``limit``
    switches whose picture has at most ``MAX_BOXES`` pool boxes (the roots at least)."""
    levels = [list(topo.roots)]
    while True:
        below = [c for name in levels[-1] for c in topo.switches[name].children]
        if not below or len(below) > limit:
            break
        levels.append(below)
    while len(levels) > 1 and _boxes(topo, levels, pool_of) > MAX_BOXES:
        levels.pop()
    return levels


def _boxes(topo: Any, levels: list[list[str]], pool_of: Mapping[str, str]) -> int:
    """The pool boxes of the picture folded at ``levels[-1]``."""
    upper = sum(len({pool_of.get(n, "") for n in topo.switches[s].nodes}) for level in levels[:-1] for s in level)
    return upper + sum(len({pool_of.get(n, "") for n in _below(topo, s)}) for s in levels[-1])


def _below(topo: Any, name: str) -> list[str]:
    """Every node under switch ``name``."""
    out: list[str] = []
    stack = [name]
    while stack:
        sw = topo.switches[stack.pop()]
        out.extend(sw.nodes)
        stack.extend(sw.children)
    return list(dict.fromkeys(out))  # a host under several leaves of the switch is one node
