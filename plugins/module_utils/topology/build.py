"""From a :class:`Fabric` to a Slurm-ready switch tree, leaf groups, blocks and a health report.

Algorithm (linear in links; docs/adr/topology.md explains each step):

1. Hosts are HCAs whose description is ``<host> <device>``; the mapping hook turns the fabric host
   name into the Slurm/Kubernetes node name. SHARP aggregation nodes and firmware-default HCAs are
   not hosts. ``exclude`` globs drop HCAs (storage rails) or switches (storage leaves).
2. Leaves are switches with hosts. Rail-optimized leaves fold into one leaf group: each leaf takes
   the leaf set most common among its hosts, leaves with the same set form one group, and each host
   joins the group holding most of its leaves (a host that lost a rail cable stays in its unit).
3. Dangling switches (no hosts, at most one switch neighbour) are dropped. Upper tiers by hop
   distance from the leaves. At each tier, switches reaching a common child are folded into one
   (parallel spines, rail planes), so every child has one parent.
4. A top above a single child is dropped. One root per connected fabric: when several tops remain
   in one fabric, a root is added.
5. Names come from switch descriptions (common prefix of the folded switches, else the first
   one), made safe for every Slurm version and unique; the order is a depth-first walk.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.fabric.model import (
    HOST,
    SHARP,
    UNNAMED,
    Fabric,
    FabricError,
)
from ansible_collections.gpufleet.core.plugins.module_utils.hostlist import compress, expand

MAX_NAME = 64
MAX_DIGIT_TAIL = 18
MAX_DEPTH = 20
_LIST_CAP = 50  # longest list kept in one health item

# ---------------------------------------------------------------- names and hostlists

_NAT = re.compile(r"(\d+)")


def natural_key(s: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in _NAT.split(s))


def hostlist_compress(names: Iterable[str]) -> str:
    try:
        return compress(list(names))
    except ValueError as e:
        raise FabricError(f"cannot write a hostlist: {e}") from None


def hostlist_expand(expr: str) -> list[str]:
    return expand(expr)


def node_list(nodes: str | Iterable[str] | None) -> list[str] | None:
    """A node list given as a hostlist expression or a list of names/expressions."""
    if nodes is None:
        return None
    items = [nodes] if isinstance(nodes, str) else list(nodes)
    out: list[str] = []
    for item in items:
        try:
            out.extend(hostlist_expand(str(item)))
        except ValueError as e:
            raise FabricError(f"bad node list: {e}", key="nodes") from None
    return out


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def safe_name(name: str) -> str:
    """A switch/block name every Slurm version accepts: [A-Za-z0-9_.-], <= 64, short digit tail."""
    s = _UNSAFE.sub("_", name).strip("_.-") or "sw"
    if len(s) > MAX_NAME:
        import hashlib

        h = hashlib.sha1(name.encode()).hexdigest()[:8]
        s = s[: MAX_NAME - 10].rstrip("_.-") + "_" + h
    m = re.search(r"\d+$", s)
    if m and len(m.group(0)) > MAX_DIGIT_TAIL:
        s = s[: MAX_NAME - 1] + "_"
    return s


def name_problems(name: str) -> list[str]:
    """Why Slurm (any version since 22.05) would reject a switch or block name."""
    out = []
    if not name:
        out.append("empty name")
    if len(name) > MAX_NAME:
        out.append(f"longer than {MAX_NAME} characters (fatal since Slurm 24.05.5)")
    m = re.search(r"\d+$", name)
    if m and len(m.group(0)) > MAX_DIGIT_TAIL:
        out.append(f"trailing digit run of {len(m.group(0))} > {MAX_DIGIT_TAIL} (hostlist overflow, fatal)")
    if _UNSAFE.search(name):
        out.append("characters outside [A-Za-z0-9_.-]")
    return out


# ---------------------------------------------------------------- node name mapping


def make_node_map(spec: object) -> Callable[[str], str | None]:
    """Build the host -> node name hook.

    ``None``: identity. A callable: used as is (return None to drop the host). A dict with
    ``pattern`` and ``replacement`` (``replace``: its former name, as the inventory had it; and optional
    ``drop_unmatched``): regex full match and expand.
    Any other dict: lookup, unknown hosts keep their name, a None/empty value drops the host.
    """
    if spec is None:
        return lambda h: h
    if callable(spec):
        return spec  # type: ignore[return-value]
    if isinstance(spec, Mapping) and "pattern" in spec and "replace" in spec and "replacement" not in spec:
        spec = {**{k: v for k, v in spec.items() if k != "replace"}, "replacement": spec["replace"]}
    if isinstance(spec, Mapping) and "pattern" in spec and "replacement" in spec:
        try:
            rx = re.compile(str(spec["pattern"]))
        except re.error as e:
            raise FabricError(f"bad node_map pattern: {e}", key="node_map.pattern") from None
        repl = str(spec["replacement"])
        drop = bool(spec.get("drop_unmatched", False))

        def by_regex(h: str) -> str | None:
            m = rx.fullmatch(h)
            if m is None:
                return None if drop else h
            try:
                return m.expand(repl)
            except (re.error, IndexError) as e:
                raise FabricError(f"bad node_map replacement: {e}", key="node_map.replacement") from None

        return by_regex
    if isinstance(spec, Mapping):
        table = dict(spec)

        def by_table(h: str) -> str | None:
            v = table.get(h, h)
            return str(v) if v else None

        return by_table
    raise FabricError("node_map must be a dict, a {pattern, replacement} dict or a callable", key="node_map")


def _exclude_matcher(exclude: Iterable[str] | str | None) -> Callable[[str], bool]:
    if not exclude:
        return lambda s: False
    pats = [exclude] if isinstance(exclude, str) else list(exclude)
    rx = re.compile("|".join(f"(?:{fnmatch.translate(str(p))})" for p in pats))
    return lambda s: bool(s) and rx.match(s) is not None


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
            report["nodes_not_in_fabric"] = sorted(keep - fabric_nodes, key=natural_key)
            report["fabric_not_in_nodes"] = sorted(fabric_nodes - keep, key=natural_key)
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


# ---------------------------------------------------------------- union-find


class _DSU:
    __slots__ = ("p",)

    def __init__(self) -> None:
        self.p: dict = {}

    def find(self, x):
        p = self.p
        p.setdefault(x, x)
        root = x
        while p[root] != root:
            root = p[root]
        while p[x] != root:
            p[x], x = root, p[x]
        return root

    def union(self, a, b) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            if rb < ra:
                ra, rb = rb, ra
            self.p[rb] = ra


# ---------------------------------------------------------------- the algorithm


def build_topology(
    fabric: Fabric,
    node_map: object = None,
    nodes: str | Iterable[str] | None = None,
    exclude: Iterable[str] | str | None = None,
    domains: Mapping[str, str] | None = None,
) -> Topology:
    """Turn a fabric into a :class:`Topology` (see the module docstring for the rules).

    ``nodes`` restricts the result (and the health report compares against it); ``domains``
    (node -> NVLink clique / accelerator domain, e.g. from :func:`fabric_labels.domains_from_nodes`)
    overrides the domains the fabric input carried.
    """
    excluded = _exclude_matcher(exclude)
    sw_all = fabric.switches
    drop_sw = {s.id for s in sw_all.values() if excluded(s.name) or excluded(s.desc)}
    hosts = _collect_hosts(fabric, make_node_map(node_map), excluded, drop_sw)
    units = _fold_leaves(hosts.host_leaves, sw_all)
    tiers = _tiers([s for s in sw_all.values() if s.id not in drop_sw], units.leaf_hosts, sw_all)
    ents = _Entities()
    group_entity = {k: ents.add(sorted(units.group_leaves[k]), 0) for k in sorted(units.group_leaves)}
    asymmetric = ents.fold_upper_tiers(tiers.tier, sw_all)
    ents.drop_single_child_tops()
    fabrics = ents.add_roots(tiers.tier, sw_all, hosts.host_leaves)

    names = _name_entities(fabric, ents.members, ents.tier, ents.removed)
    switches: dict[str, TreeSwitch] = {}
    for eid, nm in enumerate(names):
        if eid in ents.removed:
            continue
        parent = ents.parent[eid]
        switches[nm] = TreeSwitch(
            nm,
            ents.tier[eid],
            list(ents.members[eid]),
            sorted((names[c] for c in ents.children[eid]), key=natural_key),
            [],
            names[parent] if parent is not None else None,
            sorted((sw_all[m].name for m in ents.members[eid]), key=natural_key),
        )
    node_group: dict[str, str] = {}
    for node, g in units.host_group.items():
        gname = names[group_entity[g]]
        node_group[node] = gname
        switches[gname].nodes.append(node)
    for sw in switches.values():
        sw.nodes.sort(key=natural_key)
    roots = sorted((n for n, sw in switches.items() if sw.parent is None), key=natural_key)
    leaf_groups = _depth_first(switches, roots)
    order = [n for _group, ns in leaf_groups for n in ns]
    doms = dict(domains) if domains is not None else dict(fabric.domains)
    blocks, block_domains, block_source = _blocks(doms, leaf_groups, order)

    health = {
        "summary": {
            **fabric.summary(),
            "nodes": len(node_group),
            "leaf_switches": len(units.leaf_hosts),
            "leaf_groups": len(leaf_groups),
            "tree_switches": len(switches),
            "roots": len(roots),
            "fabrics": fabrics,
            "blocks": len(blocks),
        },
        **_rail_report(units, hosts.host_leaves, sw_all),
        "unnamed_hcas": sorted(hosts.unnamed, key=lambda d: d["guid"])[:_LIST_CAP],
        "unnamed_hcas_count": len(hosts.unnamed),
        "sharp_nodes": hosts.sharp,
        "uplink_anomalies": _uplink_anomalies(sw_all, tiers.tier),
        "asymmetric_switches": asymmetric,
        "isolated_switches": tiers.isolated[:_LIST_CAP],
        "dangling_switches": tiers.dangling[:_LIST_CAP],
        "excluded": {
            "hcas": hosts.excluded_hcas,
            "switches": sorted((sw_all[s].name for s in drop_sw), key=natural_key)[:_LIST_CAP],
        },
        "unmapped_hosts": sorted(set(hosts.unmapped), key=natural_key)[:_LIST_CAP],
        "synthetic_roots": sorted(names[e] for e in ents.synthetic),
        "nodes_not_in_fabric": [],
        "fabric_not_in_nodes": [],
    }
    topo = Topology(
        switches, roots, leaf_groups, node_group, blocks, block_domains, block_source, health, order, fabric.source
    )
    if nodes is not None:
        topo = topo.subset(nodes)
    topo.health["ok"] = _healthy(topo.health)
    return topo


@dataclass
class _Hosts:
    host_leaves: dict[str, list[str]] = field(default_factory=dict)  # node -> sorted leaf switch ids
    unnamed: list[dict] = field(default_factory=list)
    sharp: int = 0
    excluded_hcas: int = 0
    unmapped: list[str] = field(default_factory=list)


def _collect_hosts(
    fabric: Fabric, mapper: Callable[[str], str | None], excluded: Callable[[str], bool], drop_sw: set[str]
) -> _Hosts:
    """Step 1: which HCAs are hosts (by description), their node names and leaf switches."""
    out = _Hosts()
    sw_all = fabric.switches
    for ca in fabric.cas.values():
        links = [s for s in ca.switches if s not in drop_sw]
        if ca.kind == SHARP:
            out.sharp += 1
            continue
        if excluded(ca.desc) or (ca.device and excluded(ca.device)) or (ca.host and excluded(ca.host)):
            out.excluded_hcas += 1
            continue
        if ca.kind == UNNAMED:
            if links:
                out.unnamed.append(
                    {
                        "guid": ca.id[2:],
                        "description": ca.desc,
                        "switch": ", ".join(sorted(sw_all[s].name for s in links)),
                    }
                )
            continue
        if ca.kind != HOST or not links or ca.host is None:
            continue
        node = mapper(ca.host)
        if not node:
            out.unmapped.append(ca.host)
            continue
        lst = out.host_leaves.setdefault(node, [])
        for s in links:
            if s not in lst:
                lst.append(s)
    for lst in out.host_leaves.values():
        lst.sort()
    return out


@dataclass
class _Units:
    leaf_hosts: dict[str, list[str]]  # leaf switch id -> nodes
    group_leaves: dict[tuple[str, ...], list[str]]  # group key -> leaf switch ids
    group_of_leaf: dict[str, tuple[str, ...]]
    host_group: dict[str, tuple[str, ...]]


def _most(counts: dict, key) -> Any:
    return max(counts.items(), key=key)[0]


def _fold_leaves(host_leaves: dict[str, list[str]], sw_all: dict) -> _Units:
    """Step 2: rail-optimized leaves serving the same hosts become one leaf group (scalable unit)."""
    leaf_hosts: dict[str, list[str]] = {}
    host_key: dict[str, tuple[str, ...]] = {}
    for node, lst in host_leaves.items():
        host_key[node] = tuple(lst)
        for s in lst:
            leaf_hosts.setdefault(s, []).append(node)
    group_of_leaf: dict[str, tuple[str, ...]] = {}
    group_leaves: dict[tuple[str, ...], list[str]] = {}
    for leaf, hs in leaf_hosts.items():
        cnt: dict[tuple[str, ...], int] = {}
        for h in hs:
            cnt[host_key[h]] = cnt.get(host_key[h], 0) + 1
        k = _most(cnt, lambda kv: (kv[1], len(kv[0]), kv[0]))  # the leaf set most of its hosts have
        group_of_leaf[leaf] = k
        group_leaves.setdefault(k, []).append(leaf)
    host_group: dict[str, tuple[str, ...]] = {}
    for node, lst in host_leaves.items():
        cnt2: dict[tuple[str, ...], int] = {}
        for s in lst:
            cnt2[group_of_leaf[s]] = cnt2.get(group_of_leaf[s], 0) + 1
        host_group[node] = _most(cnt2, lambda kv, own=host_key[node]: (kv[1], kv[0] == own, kv[0]))
    # a group whose hosts all went elsewhere (irregular cabling): its leaves join where their hosts went
    manned = set(host_group.values())
    for k in sorted(k for k in group_leaves if k not in manned):
        for leaf in group_leaves.pop(k):
            cnt3: dict[tuple[str, ...], int] = {}
            for h in leaf_hosts[leaf]:
                cnt3[host_group[h]] = cnt3.get(host_group[h], 0) + 1
            target = _most(cnt3, lambda kv: (kv[1], kv[0]))
            group_of_leaf[leaf] = target
            group_leaves[target].append(leaf)
    return _Units(leaf_hosts, group_leaves, group_of_leaf, host_group)


def _rail_report(units: _Units, host_leaves: dict[str, list[str]], sw_all: dict) -> dict:
    """Hosts missing rails of their unit, and hosts cabled into another unit."""
    missing: list[dict] = []
    outside: list[dict] = []
    for node, g in units.host_group.items():
        expected = units.group_leaves[g]
        have = set(host_leaves[node])
        if len(expected) > 1 and not set(expected) <= have:
            missing.append(
                {
                    "node": node,
                    "rails": len(have & set(expected)),
                    "expected": len(expected),
                    "missing_leaves": sorted((sw_all[s].name for s in expected if s not in have), key=natural_key),
                }
            )
        foreign = sorted(sw_all[s].name for s in host_leaves[node] if units.group_of_leaf[s] != g)
        if foreign:
            outside.append({"node": node, "foreign_leaves": foreign})
    missing.sort(key=lambda d: natural_key(d["node"]))
    outside.sort(key=lambda d: natural_key(d["node"]))
    return {
        "hosts_missing_rails": missing[:_LIST_CAP],
        "hosts_missing_rails_count": len(missing),
        "hosts_outside_unit": outside[:_LIST_CAP],
    }


@dataclass
class _Tiers:
    tier: dict[str, int]  # switch id -> hops from the nearest leaf
    dangling: list[str]
    isolated: list[str]


def _tiers(alive: list, leaf_hosts: dict[str, list[str]], sw_all: dict) -> _Tiers:
    """Step 3: drop dangling switches, then tiers by hop distance from the leaves (BFS)."""
    alive_ids = {s.id for s in alive}
    # dangling switches: no hosts and at most one switch neighbour (empty leaves, cables to nowhere)
    # add no path between hosts; left in, they would pose as a top tier
    deg = {s.id: sum(1 for p in s.peers if p in alive_ids) for s in alive}
    queue = sorted(sid for sid, d in deg.items() if d <= 1 and sid not in leaf_hosts)
    gone: set[str] = set()
    while queue:
        sid = queue.pop()
        if sid in gone:
            continue
        gone.add(sid)
        for p in sw_all[sid].peers:
            if p in alive_ids and p not in gone:
                deg[p] -= 1
                if deg[p] <= 1 and p not in leaf_hosts:
                    queue.append(p)
    alive_ids -= gone
    tier: dict[str, int] = {leaf: 0 for leaf in leaf_hosts}
    frontier = sorted(leaf_hosts)
    t = 0
    while frontier:
        nxt = []
        for s in frontier:
            for p in sw_all[s].peers:
                if p in alive_ids and p not in tier:
                    tier[p] = t + 1
                    nxt.append(p)
        frontier = nxt
        t += 1
    return _Tiers(
        tier,
        sorted((sw_all[sid].name for sid in gone), key=natural_key),
        sorted((s.name for s in alive if s.id not in tier and s.id not in gone), key=natural_key),
    )


class _Entities:
    """Tree switches under construction: each folds one or more fabric switches (or none: a root)."""

    def __init__(self) -> None:
        self.members: list[list[str]] = []
        self.tier: list[int] = []
        self.children: list[list[int]] = []
        self.parent: list[int | None] = []
        self.removed: set[int] = set()
        self.synthetic: list[int] = []
        self.of: dict[str, int] = {}  # fabric switch id -> entity

    def add(self, members: list[str], tier: int, children: list[int] | None = None) -> int:
        eid = len(self.members)
        self.members.append(members)
        self.tier.append(tier)
        self.children.append(children or [])
        self.parent.append(None)
        for s in members:
            self.of[s] = eid
        for c in children or []:
            self.parent[c] = eid
        return eid

    def fold_upper_tiers(self, tier: dict[str, int], sw_all: dict) -> list[dict]:
        """Per tier, switches reaching a common child fold into one; returns the asymmetric ones."""
        by_tier: dict[int, list[str]] = {}
        for s, t in tier.items():
            if t > 0:
                by_tier.setdefault(t, []).append(s)
        asymmetric: list[dict] = []
        for t in sorted(by_tier):
            sws = sorted(by_tier[t])
            dsu = _DSU()
            kids: dict[str, set[int]] = {}
            first_with: dict[int, str] = {}
            for s in sws:
                ch = {self.of[p] for p in sw_all[s].peers if tier.get(p) == t - 1 and p in self.of}
                kids[s] = ch
                dsu.find(s)
                for c in ch:
                    f = first_with.get(c)
                    if f is None:
                        first_with[c] = s
                    else:
                        dsu.union(f, s)
            comps: dict[str, list[str]] = {}
            for s in sws:
                comps.setdefault(dsu.find(s), []).append(s)
            for root in sorted(comps):
                members = comps[root]
                union: set[int] = set()
                for s in members:
                    union |= kids[s]
                self.add(members, t, sorted(union))
                for s in members:
                    if kids[s] != union and len(asymmetric) < _LIST_CAP:
                        asymmetric.append(
                            {"switch": sw_all[s].name, "tier": t, "missing_children": len(union - kids[s])}
                        )
        return asymmetric

    def drop_single_child_tops(self) -> None:
        """A top above a single child adds nothing: drop it, the child becomes the top."""
        changed = True
        while changed:
            changed = False
            for eid in range(len(self.members)):
                if (
                    eid in self.removed
                    or self.parent[eid] is not None
                    or self.tier[eid] == 0
                    or len(self.children[eid]) != 1
                ):
                    continue
                self.removed.add(eid)
                self.parent[self.children[eid][0]] = None
                changed = True

    def add_roots(self, tier: dict[str, int], sw_all: dict, host_leaves: dict[str, list[str]]) -> int:
        """One root per connected fabric (hosts join their rails); returns the number of fabrics."""
        comp = _DSU()
        for s in tier:
            comp.find(s)
            for p in sw_all[s].peers:
                if p in tier:
                    comp.union(s, p)
        for lst in host_leaves.values():
            for s in lst[1:]:
                comp.union(lst[0], s)
        tops: dict[str, list[int]] = {}
        for eid in range(len(self.members)):
            if self.parent[eid] is None and eid not in self.removed:
                tops.setdefault(comp.find(self.members[eid][0]), []).append(eid)
        for key in sorted(tops):
            if len(tops[key]) > 1:
                self.synthetic.append(self.add([], max(self.tier[x] for x in tops[key]) + 1, sorted(tops[key])))
        return len(tops)


def _depth_first(switches: dict[str, TreeSwitch], roots: list[str]) -> list[tuple[str, list[str]]]:
    leaf_groups: list[tuple[str, list[str]]] = []
    stack = list(reversed(roots))
    while stack:
        sw = switches[stack.pop()]
        if sw.tier == 0:
            leaf_groups.append((sw.name, list(sw.nodes)))
        else:
            stack.extend(reversed(sw.children))
    return leaf_groups


def _healthy(h: dict) -> bool:
    return not (
        h["hosts_missing_rails_count"]
        or h["unnamed_hcas_count"]
        or h["uplink_anomalies"]
        or h["asymmetric_switches"]
        or h["hosts_outside_unit"]
        or h["nodes_not_in_fabric"]
        or h["summary"]["roots"] > h["summary"]["fabrics"]
    )


def _uplink_anomalies(sw_all: dict, tier: dict[str, int]) -> list[dict]:
    """Switches with fewer cables up (or down) than most switches of their tier."""
    up: dict[int, dict[str, int]] = {}
    down: dict[int, dict[str, int]] = {}
    for s, t in tier.items():
        u = d = 0
        for p, n in sw_all[s].peers.items():
            pt = tier.get(p)
            if pt is None:
                continue
            if pt > t:
                u += n
            elif pt < t:
                d += n
        up.setdefault(t, {})[s] = u
        if t > 0:
            down.setdefault(t, {})[s] = d
    out: list[dict] = []
    for direction, table in (("up", up), ("down", down)):
        for t in sorted(table):
            counts = table[t]
            freq: dict[int, int] = {}
            for v in counts.values():
                freq[v] = freq.get(v, 0) + 1
            mode, support = max(freq.items(), key=lambda kv: (kv[1], kv[0]))
            if (direction == "up" and mode == 0) or support < 2 or support * 2 <= len(counts):
                continue
            for s in sorted(counts, key=lambda x: natural_key(sw_all[x].name)):
                if counts[s] < mode and len(out) < _LIST_CAP:
                    out.append(
                        {
                            "switch": sw_all[s].name,
                            "tier": t,
                            "direction": direction,
                            "links": counts[s],
                            "expected": mode,
                        }
                    )
    return out


def _common_prefix_name(names: list[str]) -> str | None:
    if len(names) < 2:
        return None
    lo, hi = min(names), max(names)
    i = 0
    while i < len(lo) and i < len(hi) and lo[i] == hi[i]:
        i += 1
    pre = lo[:i]
    if pre == lo:
        return None
    cut = max(pre.rfind("-"), pre.rfind("_"), pre.rfind("."))
    pre = pre[:cut].rstrip("-_.") if cut > 0 else ""
    return pre if len(pre) >= 3 else None


def _name_entities(fabric: Fabric, members: list[list[str]], tiers: list[int], skip: set[int]) -> list[str]:
    sw_all = fabric.switches
    proposals: list[str] = []
    fallback: list[str] = []
    for mem in members:
        if not mem:
            proposals.append("root")
            fallback.append("root")
            continue
        mnames = sorted((sw_all[m].name for m in mem), key=natural_key)
        first = safe_name(mnames[0])
        pre = _common_prefix_name(mnames)
        proposals.append(safe_name(pre) if pre else first)
        fallback.append(first)
    count: dict[str, int] = {}
    for i, p in enumerate(proposals):
        if i not in skip:
            count[p] = count.get(p, 0) + 1
    chosen = [p if count.get(p, 0) == 1 else fallback[i] for i, p in enumerate(proposals)]
    # synthetic roots: "root", or "root-<first child>" when several fabrics need one
    used: set[str] = set()
    order = sorted(
        (e for e in range(len(members)) if e not in skip), key=lambda e: (tiers[e], natural_key(chosen[e]), e)
    )
    final = [""] * len(members)
    for eid in order:
        base = chosen[eid]
        nm = base
        k = 2
        while nm in used:
            suffix = f"_{k}"
            nm = safe_name(base[: MAX_NAME - len(suffix)] + suffix)
            k += 1
        used.add(nm)
        final[eid] = nm
    return final


_CLIQUE = re.compile(r"^([0-9a-fA-F]{8})-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\.(\d{1,10})$")


def _blocks(
    doms: dict[str, str], leaf_groups: list[tuple[str, list[str]]], order: list[str]
) -> tuple[list[tuple[str, list[str]]], dict[str, str], str]:
    """Blocks from accelerator domains (NVLink cliques) when known, else from leaf groups.

    Ordered by where their first node appears in the depth-first walk of the switch tree, so that
    consecutive blocks are network-close (Slurm aggregates runs of adjacent BlockName lines).
    """
    if not doms:
        if not leaf_groups:
            return [], {}, "none"
        return [(g, list(ns)) for g, ns in leaf_groups], {g: g for g, _nodes in leaf_groups}, "fabric"
    pos = {n: i for i, n in enumerate(order)}
    members: dict[str, list[str]] = {}
    for n, d in doms.items():
        if d:
            members.setdefault(str(d), []).append(n)
    big = len(order) + 1
    ranked = sorted(
        members.items(),
        key=lambda kv: (min(pos.get(n, big) for n in kv[1]), natural_key(min(kv[1], key=natural_key)), kv[0]),
    )
    blocks: list[tuple[str, list[str]]] = []
    bdom: dict[str, str] = {}
    used: set[str] = set()
    for d, ns in ranked:
        m = _CLIQUE.match(d)
        nm = f"nvl-{m.group(1)}-{m.group(2)}" if m else safe_name(d)
        base, k = nm, 2
        while nm in used:
            nm = safe_name(f"{base[: MAX_NAME - 4]}_{k}")
            k += 1
        used.add(nm)
        blocks.append((nm, sorted(ns, key=lambda n: (pos.get(n, big), natural_key(n)))))
        bdom[nm] = d
    return blocks, bdom, "nvlink"
