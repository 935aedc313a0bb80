"""The result of a topology build: the folded switch tree (:class:`TreeSwitch`), leaf groups, blocks,
the health report and the node order (:class:`Topology`), and its per-tenant views (``subset``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ansible_collections.gpufleet.core.plugins.module_utils.topology.names import natural_sorted, node_list

# ---------------------------------------------------------------- result types


@dataclass
class TreeSwitch:
    name: str
    tier: int
    members: list[str] = field(default_factory=list)  # fabric switch ids folded in (empty: synthetic)
    children: list[str] = field(default_factory=list)  # child switch names (inner switches)
    nodes: list[str] = field(default_factory=list)  # node names (leaf groups)
    parent: str | None = None
    member_names: list[str] = field(default_factory=list)

    @property
    def is_leaf(self) -> bool:
        return self.tier == 0


def pruned_switches(switches: dict[str, TreeSwitch], groups: dict[str, list[str]]) -> dict[str, TreeSwitch]:
    """The switches on the way from the leaf groups in ``groups`` (name -> kept nodes) up to their
    root, in ``switches`` order, with children outside that set dropped and leaf nodes replaced."""
    live: set[str] = set()
    for g in groups:
        cur: str | None = g
        while cur is not None and cur not in live:
            live.add(cur)
            cur = switches[cur].parent
    return {
        name: TreeSwitch(
            name,
            sw.tier,
            list(sw.members),
            [c for c in sw.children if c in live],
            groups.get(name, []),
            sw.parent,
            list(sw.member_names),
        )
        for name, sw in switches.items()
        if name in live
    }


@dataclass
class Topology:
    switches: dict[str, TreeSwitch]
    roots: list[str]
    leaf_groups: list[tuple[str, list[str]]]
    node_group: dict[str, str]
    blocks: list[tuple[str, list[str]]]
    block_domains: dict[str, str]  # block name -> domain id it came from
    block_source: str  # "nvlink" | "fabric" | "none"
    health: dict
    order: list[str]  # every node, in network-adjacency order
    source: str = "<fabric>"
    _index: _Positions | None = field(default=None, init=False, repr=False, compare=False)

    def path(self, node: str) -> list[str]:
        """Switch names from the root down to the node's leaf group."""
        out: list[str] = []
        cur: str | None = self.node_group.get(node)
        while cur is not None:
            out.append(cur)
            cur = self.switches[cur].parent
        out.reverse()
        return out

    @property
    def cliques(self) -> list[tuple[str, list[str]]]:
        return self.blocks if self.block_source == "nvlink" else []

    def subset(self, nodes: str | Iterable[str] | None, health: bool = True) -> Topology:
        """The same topology restricted to ``nodes`` (empty groups and switches dropped).

        Costs O(len(nodes)) plus the switches kept, not O(cluster): the positions of every node are
        indexed once per topology, so per-tenant views of a large cluster stay cheap. ``health=False``
        leaves the health report empty (comparing against the whole fabric is O(cluster)).
        """
        wanted = node_list(nodes)
        if wanted is None:
            return self
        ix = self._positions()
        keep = set(wanted)
        groups_d: dict[str, list[str]] = {}
        blocks_d: dict[str, list[str]] = {}
        for n in keep:
            g = self.node_group.get(n)
            if g is not None:
                groups_d.setdefault(g, []).append(n)
            b = ix.block_of.get(n)
            if b is not None:
                blocks_d.setdefault(b[0], []).append(n)
        for ns in groups_d.values():
            ns.sort(key=ix.in_group.__getitem__)
        for ns in blocks_d.values():
            ns.sort(key=lambda n: ix.block_of[n][1])
        groups = [(g, groups_d[g]) for g in sorted(groups_d, key=ix.group_pos.__getitem__)]
        blocks = [(b, blocks_d[b]) for b in sorted(blocks_d, key=ix.block_pos.__getitem__)]
        sws = pruned_switches(self.switches, groups_d)
        live = set(sws)
        report: dict = {}
        if health:
            report = dict(self.health)
            fabric_nodes = set(self.node_group)
            report["nodes_not_in_fabric"] = natural_sorted(sorted(keep - fabric_nodes))
            report["fabric_not_in_nodes"] = natural_sorted(sorted(fabric_nodes - keep))
        return Topology(
            sws,
            [r for r in self.roots if r in live],
            groups,
            {n: g for g, ns in groups for n in ns},
            blocks,
            {b: d for b, d in self.block_domains.items() if b in blocks_d},
            self.block_source,
            report,
            sorted((n for n in keep if n in ix.order_pos), key=ix.order_pos.__getitem__),
            self.source,
        )

    def _positions(self) -> _Positions:
        if self._index is None:
            self._index = _Positions(self)
        return self._index


class _Positions:
    """Where each node, group and block sits in a :class:`Topology` (built once, for ``subset``)."""

    def __init__(self, topo: Topology):
        self.group_pos = {g: i for i, (g, _ns) in enumerate(topo.leaf_groups)}
        self.in_group = {n: i for _g, ns in topo.leaf_groups for i, n in enumerate(ns)}
        self.block_pos = {b: i for i, (b, _ns) in enumerate(topo.blocks)}
        self.block_of = {n: (b, i) for b, ns in topo.blocks for i, n in enumerate(ns)}
        self.order_pos = {n: i for i, n in enumerate(topo.order)}
