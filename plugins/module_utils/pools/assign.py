"""Partition a cluster's nodes into its pools: pure, deterministic, topology-aware and stable.

``assign(fleet, cluster, nodes, node_group, previous) -> Assignment``

- ``nodes``: the cluster's ``NodeInfo`` list (``nodes.load_nodes``);
- ``node_group``: node -> leaf group (topology); nodes missing from it share one "no group" group;
- ``previous``: node -> pool from the lock (``pool_lock.read_lock``), or None for a first assignment.

Rules

- Every node is in at most one pool. Sized pools (``size.nodes`` exact, or ``size.gpus``: the
  fewest nodes covering that many GPUs) are filled; the one spare pool without a size takes every
  remaining node. Without such a pool the rest stays unassigned (no label, no taint).
- Constraints: ``gpu_product`` (label ``nvidia.com/gpu.product``), ``node_selector`` (labels),
  ``pin`` (hostlists: always members, counted in the size), ``exclude`` (hostlists: never members).
  Pools of kind ``system`` prefer nodes without GPUs, the other kinds nodes with GPUs.
- Topology: a pool is kept inside as few leaf groups as possible (best fit, else whole largest
  groups first) and whole NVLink domains (``nvidia.com/gpu.clique``) are filled first. A pool
  without ``split_nvlink_domains: true`` never shares an NVLink domain with another pool.
- Stability: the previous assignment is the starting point. Pools above their size release nodes
  (from their least-filled leaf groups first) to the free side; pools below take free nodes
  (their own leaf groups first). Growing or shrinking a pool by k nodes moves exactly k nodes.
  Nodes that left the snapshot drop out; new nodes are free (so they go to the spare pool).
- Impossible requests raise ``PoolError`` naming the pool and the inventory key; every pool that cannot
  be filled is named in one error, with the pools that hold the nodes it could have taken.

``Assignment`` (pools/assignment.py) gives ``pool_of`` (node -> pool, assigned nodes), ``unassigned``,
``members(pool)``, ``gpus(pool)``, ``moves(previous)`` and ``rows()``; ``pools/pool_table.py`` turns
the rows into reviewable Markdown tables, one node per line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.hostlist import expand as _expand
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Fleet, Pool
from ansible_collections.gpufleet.core.plugins.module_utils.model.nodes import NodeInfo
from ansible_collections.gpufleet.core.plugins.module_utils.pools.assignment import (
    NO_GROUP,
    Assignment,
    PoolError,
    PoolInfo,
)
from ansible_collections.gpufleet.core.plugins.module_utils.pools.owner_moves import allowed_node_moves

# --------------------------------------------------------------------------------------------
# selection boxes: leaf group > NVLink domain > node


@dataclass
class _Box:
    key: tuple
    weight: int
    atomic: bool
    nodes: list[str]
    children: list[_Box] | None = None
    expand: Callable[[], list[_Box]] | None = None  # builds ``children`` when first entered

    def inner(self) -> list[_Box] | None:
        if self.children is None and self.expand is not None:
            self.children = self.expand()
        return self.children


def _fill(boxes: list[_Box], need: int, exact: bool) -> tuple[list[str], int]:
    """Pick nodes out of ``boxes`` worth ``need`` (exactly if ``exact``); returns (nodes, weight).

    Best fit first (the smallest box able to cover what is left, entered recursively), otherwise
    the largest box that fits is taken whole. Each round retires one box, so this ends.
    """
    taken: list[str] = []
    got = 0
    if need <= 0 or not boxes:
        return taken, got
    if all(b.children is None and b.expand is None for b in boxes) and len({b.weight for b in boxes}) == 1:
        w = boxes[0].weight  # uniform leaves: the first ones in key order
        if w <= 0:
            return taken, got
        count = need // w if exact else -(-need // w)
        for b in sorted(boxes, key=lambda b: b.key)[:count]:
            taken.extend(b.nodes)
            got += b.weight
        return taken, got
    left = sorted(boxes, key=lambda b: (b.weight, b.key))
    while got < need and left:
        rem = need - got

        def covers(b: _Box, rem: int = rem) -> bool:
            if b.atomic:
                return b.weight == rem if exact else b.weight >= rem
            return b.weight >= rem

        best = next((b for b in left if covers(b)), None)
        if best is not None:
            left.remove(best)
            inner = None if best.atomic else best.inner()
            if inner is None:
                taken.extend(best.nodes)
                got += best.weight
            else:
                t, g = _fill(inner, rem, exact)
                taken.extend(t)
                got += g
            continue
        fitting = [b for b in left if b.weight <= rem] if exact else list(left)
        if not fitting:
            break
        top = max(b.weight for b in fitting)
        big = next(b for b in fitting if b.weight == top)  # ``left`` is sorted: smallest key of the largest
        left.remove(big)
        taken.extend(big.nodes)
        got += big.weight
    return taken, got


# --------------------------------------------------------------------------------------------


@dataclass
class _Ctx:
    fleet: Fleet
    cluster: str
    nodes: dict[str, NodeInfo]
    group: dict[str, str]
    index: dict[str, int]
    domain_nodes: dict[str, list[str]]
    domain_group: dict[str, str] = field(default_factory=dict)
    eligible: dict[str, set[str]] = field(default_factory=dict)  # pool -> nodes it may hold
    sorted_names: list[str] = field(default_factory=list)
    holder: dict[str, str] = field(default_factory=dict)  # node -> the sized pool holding it (so far)
    unfilled: list[PoolError] = field(default_factory=list)  # pools that could not reach their size

    def key(self, pool: Pool, attr: str) -> str:
        return f"gpufleet_pools[{self.index[pool.name]}].{attr}"

    def err(self, pool: Pool, attr: str, msg: str) -> PoolError:
        where = ""
        if self.fleet.source is not None and pool.name in self.index:
            file, line = self.fleet.source.locate(("gpufleet_pools", self.index[pool.name], attr))
            where = f"{file}:{line}: " if line else f"{file}: "
        return PoolError(f"{where}pool {pool.name!r} (cluster {self.cluster!r}, {self.key(pool, attr)}): {msg}")


def _expand_all(ctx: _Ctx, pool: Pool, attr: str, exprs: Iterable[str]) -> list[str]:
    out: list[str] = []
    for e in exprs:
        try:
            out.extend(_expand(e))
        except GpufleetError as exc:
            raise ctx.err(pool, attr, f"bad hostlist {e!r}: {exc}") from None
    return sorted(set(out))


def _eligible_sets(ctx: _Ctx, pools: list[Pool], excluded: dict[str, set[str]]) -> dict[str, set[str]]:
    """pool -> eligible node names; pools with the same constraints share one scan of the nodes."""
    base: dict[tuple, set[str]] = {}
    out: dict[str, set[str]] = {}
    for p in pools:
        sig = (p.gpu_product, tuple(sorted(p.node_selector.items())), p.size_gpus is not None)
        if sig not in base:
            base[sig] = {n.name for n in ctx.nodes.values() if _matches(p, n)}
        out[p.name] = base[sig] - excluded[p.name] if excluded[p.name] else base[sig]
    return out


def _matches(pool: Pool, node: NodeInfo) -> bool:
    if pool.gpu_product and node.gpu_product != pool.gpu_product:
        return False
    if pool.size_gpus is not None and node.gpus <= 0:
        return False
    return all(node.labels.get(k) == v for k, v in pool.node_selector.items())


def _why_not(pool: Pool, node: NodeInfo, excluded: set[str]) -> str:
    if node.name in excluded:
        return "it is in the pool's exclude list"
    if pool.gpu_product and node.gpu_product != pool.gpu_product:
        return f"its gpu product is {node.gpu_product!r}, the pool wants {pool.gpu_product!r}"
    if pool.size_gpus is not None and node.gpus <= 0:
        return "it has no GPUs and the pool is sized in GPUs"
    bad = sorted(k for k, v in pool.node_selector.items() if node.labels.get(k) != v)
    return f"its labels do not match node_selector ({', '.join(bad)})"


def _weight(pool: Pool, node: NodeInfo) -> int:
    return node.gpus if pool.size_gpus is not None else 1


def _unit_of(ctx: _Ctx, pool: Pool, node: str) -> list[str]:
    """Nodes that move together for ``pool``: the NVLink domain unless the pool may split it."""
    d = ctx.nodes[node].nvlink_domain
    if d is None or pool.split_nvlink_domains:
        return [node]
    return ctx.domain_nodes[d]


def _group_fill(ctx: _Ctx, members: Iterable[str]) -> dict[str, int]:
    fill: dict[str, int] = {}
    for n in members:
        g = ctx.group.get(n, NO_GROUP)
        fill[g] = fill.get(g, 0) + 1
    return fill


def _shrink(ctx: _Ctx, pool: Pool, held: set[str], pinned: set[str]) -> list[str]:
    """Release nodes above the pool's size, least-filled leaf groups first; returns released nodes."""
    fill = _group_fill(ctx, held)
    units: dict[tuple[str, ...], None] = {}
    for n in sorted(held):
        units[tuple(u for u in _unit_of(ctx, pool, n) if u in held)] = None

    def order(u: tuple[str, ...]) -> tuple:
        g = ctx.group.get(u[0], NO_GROUP)
        d = ctx.nodes[u[0]].nvlink_domain
        dfill = sum(1 for x in ctx.domain_nodes.get(d, []) if x in held) if d else 0
        return (fill[g], g, dfill, d or "", tuple(_neg(x) for x in u))

    released: list[str] = []
    if pool.size_nodes is not None:
        rem = len(held) - pool.size_nodes
        for u in sorted(units, key=order):
            if rem <= 0:
                break
            if len(u) <= rem and not pinned.intersection(u):
                released.extend(u)
                rem -= len(u)
        if rem > 0:
            raise ctx.err(
                pool,
                "size",
                f"cannot shrink to {pool.size_nodes} nodes without releasing pinned nodes or splitting an "
                "NVLink domain (set split_nvlink_domains: true, or pick a size that fits whole domains)",
            )
    else:
        total = sum(ctx.nodes[n].gpus for n in held)
        for u in sorted(units, key=order):
            w = sum(ctx.nodes[n].gpus for n in u)
            if total - w >= pool.size_gpus and not pinned.intersection(u):
                released.extend(u)
                total -= w
    return released


def _neg(s: str) -> tuple[int, ...]:
    """Sort key that orders strings descending."""
    return (*(-ord(c) for c in s), 0)


def _boxes(ctx: _Ctx, pool: Pool, candidates: list[str]) -> dict[str, _Box]:
    """Leaf-group boxes over ``candidates`` (free, eligible nodes), with NVLink domains inside."""
    cand = set(candidates)
    by_group: dict[str, dict[str | None, list[str]]] = {}
    for n in candidates:
        d = ctx.nodes[n].nvlink_domain
        g = ctx.domain_group[d] if d is not None else ctx.group.get(n, NO_GROUP)  # a domain sits in one box
        by_group.setdefault(g, {}).setdefault(d, []).append(n)
    by_gpus = pool.size_gpus is not None
    out: dict[str, _Box] = {}
    for g, doms in by_group.items():
        usable: list[tuple[str | None, list[str]]] = []
        for d, members in doms.items():
            if d is None or pool.split_nvlink_domains or all(x in cand for x in ctx.domain_nodes[d]):
                usable.append((d, members))  # a domain kept whole must be entirely free and eligible
        nodes = [n for _domain, members in usable for n in members]
        if nodes:
            weight = sum(ctx.nodes[n].gpus for n in nodes) if by_gpus else len(nodes)
            out[g] = _Box((g,), weight, False, nodes, None, lambda usable=usable: _domain_boxes(ctx, pool, usable))
    return out


def _domain_boxes(ctx: _Ctx, pool: Pool, usable: list[tuple[str | None, list[str]]]) -> list[_Box]:
    """The boxes inside a leaf group: nodes without a domain, and domains (atomic unless splittable)."""
    children: list[_Box] = []
    for d, members in usable:
        leaves = [_Box((n,), _weight(pool, ctx.nodes[n]), True, [n]) for n in members]
        if d is None:
            children.extend(leaves)
        elif pool.split_nvlink_domains:
            children.append(_Box(("~" + d,), sum(b.weight for b in leaves), False, list(members), leaves))
        else:
            children.append(_Box(("~" + d,), sum(b.weight for b in leaves), True, list(members)))
    return children


def _grow(ctx: _Ctx, pool: Pool, held: set[str], free: set[str]) -> list[str]:
    """Take free nodes until the pool reaches its size; the pool's own leaf groups first."""
    elig = ctx.eligible[pool.name]
    taken: list[str] = []
    # a pool that may not split a domain completes the domains it holds part of (pins)
    if not pool.split_nvlink_domains:
        for d in sorted({ctx.nodes[n].nvlink_domain for n in held} - {None}):
            rest = [x for x in ctx.domain_nodes[d] if x not in held]
            if rest and all(x in free and x in elig for x in rest):
                taken.extend(rest)
    forced = len(taken)
    have = set(held) | set(taken)
    if pool.size_nodes is not None:
        need, exact = pool.size_nodes - len(have), True
    else:
        need, exact = pool.size_gpus - sum(ctx.nodes[n].gpus for n in have), False
    if need <= 0:
        return taken
    pick = free & elig
    cands = [n for n in ctx.sorted_names if n in pick and n not in have]
    want_gpus = pool.kind != "system"
    tiers = [
        [n for n in cands if (ctx.nodes[n].gpus > 0) == want_gpus],
        [n for n in cands if (ctx.nodes[n].gpus > 0) != want_gpus],
    ]
    fill = _group_fill(ctx, have)
    got = 0
    for tier in tiers:
        if got >= need or not tier:
            continue
        boxes = _boxes(ctx, pool, tier)
        own = sorted((g for g in boxes if g in fill), key=lambda g: (-fill[g], g))
        for g in own:
            if got >= need:
                break
            t, w = _fill(boxes.pop(g).inner() or [], need - got, exact)
            taken.extend(t)
            got += w
        if got < need:
            t, w = _fill(list(boxes.values()), need - got, exact)
            taken.extend(t)
            got += w
    if got < need:
        unit = "nodes" if exact else "GPUs"
        what = [f"gpu_product {pool.gpu_product!r}"] if pool.gpu_product else []
        if pool.node_selector:
            what.append(f"node_selector {dict(sorted(pool.node_selector.items()))}")
        hint = f" matching {' and '.join(what)}" if what else ""
        if not pool.split_nvlink_domains and any(ctx.nodes[n].nvlink_domain for n in cands):
            hint += " (whole NVLink domains only; split_nvlink_domains: true allows partial domains)"
        ctx.unfilled.append(
            ctx.err(
                pool,
                "size",
                f"needs {need} more {unit} but only {got} can be taken from the free nodes{hint}; "
                f"{len(free)} nodes are free{_where_they_are(ctx, pool, elig - have - free)}",
            )
        )
    if not exact and got > need:  # heterogeneous GPU counts: drop newly taken units that are not needed
        units: dict[tuple[str, ...], None] = {}
        for n in taken[forced:]:
            units[tuple(x for x in _unit_of(ctx, pool, n) if x in taken)] = None
        for u in sorted(units, key=lambda u: (sum(ctx.nodes[x].gpus for x in u), _neg(u[0]))):
            w = sum(ctx.nodes[x].gpus for x in u)
            if got - w >= need:
                got -= w
                taken = [x for x in taken if x not in u]
    return taken


def _where_they_are(ctx: _Ctx, pool: Pool, held_elsewhere: set[str]) -> str:
    """Which pools hold the nodes ``pool`` could take, or why no node of the snapshot matches it."""
    if not ctx.eligible[pool.name] and pool.gpu_product:
        products: dict[str, int] = {}
        for n in ctx.nodes.values():
            products[n.gpu_product or "none"] = products.get(n.gpu_product or "none", 0) + 1
        shown = ", ".join(f"{k} ({v})" for k, v in sorted(products.items()))
        return f"; no node of the snapshot has gpu_product {pool.gpu_product!r} (there: {shown})"
    by_pool: dict[str, int] = {}
    for n in held_elsewhere:
        if n in ctx.holder:
            by_pool[ctx.holder[n]] = by_pool.get(ctx.holder[n], 0) + 1
    if not by_pool:
        return ""
    return "; the other matching nodes are held by pool(s) " + ", ".join(
        f"{p} ({k} node{'s' * (k != 1)})" for p, k in sorted(by_pool.items())
    )


def _order(ctx: _Ctx, pools: list[Pool], eligible_count: dict[str, int]) -> list[Pool]:
    """Grow order: most constrained first (fewest eligible nodes), then inventory order."""
    return sorted(pools, key=lambda p: (eligible_count[p.name], ctx.index[p.name]))


def _context(fleet: Fleet, cluster: str, nodes: Iterable[NodeInfo], node_group: Mapping[str, str] | None) -> _Ctx:
    """The nodes by name (each once), their leaf groups, and each NVLink domain's members and group."""
    if cluster not in fleet.clusters:
        raise PoolError(f"cluster {cluster!r} is not defined in gpufleet_clusters")
    node_map: dict[str, NodeInfo] = {}
    for n in nodes:
        if n.name in node_map:
            raise PoolError(f"cluster {cluster!r}: node {n.name!r} appears twice in the nodes snapshot")
        node_map[n.name] = n
    group = {n: str(g) for n, g in (node_group or {}).items() if n in node_map}
    domain_nodes: dict[str, list[str]] = {}
    for name in sorted(node_map):
        d = node_map[name].nvlink_domain
        if d is not None:
            domain_nodes.setdefault(d, []).append(name)
    domain_group = {}
    for d, members in domain_nodes.items():  # the leaf group holding most of the domain
        counts: dict[str, int] = {}
        for x in members:
            counts[group.get(x, NO_GROUP)] = counts.get(group.get(x, NO_GROUP), 0) + 1
        domain_group[d] = min(counts, key=lambda g: (-counts[g], g))
    index = {p: i for i, p in enumerate(fleet.pools)}
    return _Ctx(fleet, cluster, node_map, group, index, domain_nodes, domain_group)


def _rest_pool(ctx: _Ctx, pools: list[Pool]) -> Pool | None:
    """The one spare pool without size, which takes the nodes no other pool holds."""
    rest_pools = [p for p in pools if p.kind == "spare" and p.size_nodes is None and p.size_gpus is None]
    if len(rest_pools) > 1:
        raise ctx.err(rest_pools[1], "size", "a second spare pool without size; only one may take the rest")
    return rest_pools[0] if rest_pools else None


def _pins(
    ctx: _Ctx,
    pools: list[Pool],
    rest: Pool | None,
    excluded: dict[str, set[str]],
    previous: Mapping[str, str] | None,
) -> tuple[dict[str, str], dict[str, set[str]]]:
    """(node -> pool pinning it, pool -> its pinned nodes). Pins are fixed members, checked first; a
    pin never takes another tenant's node unless the platform allows that node's move
    (gpufleet_clusters[].allow_node_moves)."""
    fleet, cluster = ctx.fleet, ctx.cluster
    allowed_moves = allowed_node_moves(fleet, cluster)
    pinned_by: dict[str, str] = {}
    pins: dict[str, set[str]] = {}
    for p in pools:
        names = _expand_all(ctx, p, "pin", p.pin)
        unknown = [n for n in names if n not in ctx.nodes]
        if unknown:
            raise ctx.err(p, "pin", f"pins node(s) not in the nodes snapshot: {', '.join(unknown[:10])}")
        for n in names:
            if n in pinned_by:
                other = fleet.pools[pinned_by[n]]
                raise ctx.err(p, "pin", f"node {n!r} is also pinned by pool {other.name!r} ({ctx.key(other, 'pin')})")
            before = (previous or {}).get(n)
            owner = fleet.pools[before].tenant if before in fleet.pools else None
            if owner is not None and owner != p.tenant and n not in allowed_moves:
                raise ctx.err(
                    p,
                    "pin",
                    f"pinned node {n!r} belongs to pool {before!r} of tenant {owner!r} (pools.lock.yaml): a pin may"
                    f" not take a node from another tenant; the platform allows this move in"
                    f" gpufleet_clusters[{list(fleet.clusters).index(cluster)}].allow_node_moves",
                )
            if p is not rest and n not in ctx.eligible[p.name]:
                raise ctx.err(
                    p, "pin", f"pinned node {n!r} cannot be in the pool: {_why_not(p, ctx.nodes[n], excluded[p.name])}"
                )
            pinned_by[n] = p.name
        pins[p.name] = set(names)
        if p.size_nodes is not None and len(names) > p.size_nodes:
            raise ctx.err(p, "pin", f"pins {len(names)} nodes but size.nodes is {p.size_nodes}")
    return pinned_by, pins


def _held(
    ctx: _Ctx,
    sized: list[Pool],
    previous: Mapping[str, str] | None,
    pinned_by: dict[str, str],
    pins: dict[str, set[str]],
) -> dict[str, set[str]]:
    """Step 1: start from the previous assignment and the pins, dropping what no longer fits."""
    held: dict[str, set[str]] = {p.name: set() for p in sized}
    for n, pname in sorted((previous or {}).items()):
        if n not in ctx.nodes or pname not in held or n in pinned_by:
            continue
        if n in ctx.eligible[pname]:
            held[pname].add(n)
    for n, pname in pinned_by.items():
        if pname in held:
            held[pname].add(n)
    for p in sized:  # a pool that may not split a domain keeps none of a domain it holds only part of
        if p.split_nvlink_domains:
            continue
        for d in sorted({ctx.nodes[n].nvlink_domain for n in held[p.name]} - {None}):
            if not all(x in held[p.name] for x in ctx.domain_nodes[d]):
                held[p.name] -= {x for x in ctx.domain_nodes[d] if x not in pins[p.name]}
    return held


def assign(
    fleet: Fleet,
    cluster: str,
    nodes: Iterable[NodeInfo],
    node_group: Mapping[str, str] | None = None,
    previous: Mapping[str, str] | None = None,
) -> Assignment:
    """Assign every node of ``cluster`` to one of its pools (see the module docstring)."""
    ctx = _context(fleet, cluster, nodes, node_group)
    node_map = ctx.nodes
    pools = fleet.cluster_pools(cluster)
    infos = {p.name: PoolInfo(p.name, p.kind, p.tenant) for p in pools}
    rest = _rest_pool(ctx, pools)
    sized = [p for p in pools if p is not rest]

    excluded = {p.name: set(_expand_all(ctx, p, "exclude", p.exclude)) for p in pools}
    ctx.eligible = _eligible_sets(ctx, sized, excluded)
    ctx.sorted_names = sorted(node_map)
    eligible_count = {p.name: len(ctx.eligible[p.name]) for p in sized}
    pinned_by, pins = _pins(ctx, pools, rest, excluded, previous)
    held = _held(ctx, sized, previous, pinned_by, pins)

    # 2. shrink pools above their size, 3. grow pools below it
    for p in sized:
        held[p.name] -= set(_shrink(ctx, p, held[p.name], pins[p.name]))
    rest_pins = pins[rest.name] if rest is not None else set()
    free = set(node_map) - set().union(set(), *held.values()) - rest_pins
    ctx.holder = {n: pname for pname, members in held.items() for n in members}
    for p in _order(ctx, sized, eligible_count):
        took = _grow(ctx, p, held[p.name], free)
        held[p.name].update(took)
        free.difference_update(took)
        ctx.holder.update(dict.fromkeys(took, p.name))
    if ctx.unfilled:  # every pool that cannot be filled, at once
        if len(ctx.unfilled) == 1:
            raise ctx.unfilled[0]
        raise PoolError(
            f"cluster {cluster!r}: {len(ctx.unfilled)} pools cannot be filled:\n"
            + "\n".join(f"  - {e}" for e in ctx.unfilled)
        )

    pool_of: dict[str, str] = {}
    for pname, members in held.items():
        for n in members:
            pool_of[n] = pname
    if rest is not None:
        for n in free | rest_pins:
            if n not in excluded[rest.name]:
                pool_of[n] = rest.name
    _check(ctx, sized, held)
    return Assignment(
        cluster=cluster,
        pool_of=dict(sorted(pool_of.items())),
        pools=dict(sorted(infos.items())),
        nodes=dict(sorted(node_map.items())),
        node_group=dict(sorted(ctx.group.items())),
    )


def _check(ctx: _Ctx, sized: list[Pool], held: dict[str, set[str]]) -> None:
    """Final guard: sizes met, NVLink domains whole for pools that may not split them."""
    for p in sized:
        members = held[p.name]
        if p.size_nodes is not None and len(members) != p.size_nodes:
            raise ctx.err(p, "size", f"got {len(members)} nodes, size.nodes is {p.size_nodes}")
        if p.size_gpus is not None and sum(ctx.nodes[n].gpus for n in members) < p.size_gpus:
            raise ctx.err(p, "size", f"got {sum(ctx.nodes[n].gpus for n in members)} GPUs, size.gpus is {p.size_gpus}")
        if not p.split_nvlink_domains:
            for d in sorted({ctx.nodes[n].nvlink_domain for n in members} - {None}):
                outside = [x for x in ctx.domain_nodes[d] if x not in members]
                if outside:
                    raise ctx.err(
                        p,
                        "split_nvlink_domains",
                        f"NVLink domain {d!r} would be split (pinned members; {', '.join(outside[:5])} cannot join); "
                        "set split_nvlink_domains: true or pin the whole domain",
                    )
