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

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.fabric.model import (
    HOST,
    SHARP,
    UNNAMED,
    Fabric,
    bulk_build,
)
from ansible_collections.gpufleet.core.plugins.module_utils.topology.fabric_health import (
    LIST_CAP,
    healthy,
    rail_report,
    uplink_anomalies,
)
from ansible_collections.gpufleet.core.plugins.module_utils.topology.names import (
    MAX_NAME,
    exclude_matcher,
    make_node_map,
    name_entities,
    natural_key,
    natural_sorted,
    safe_name,
)
from ansible_collections.gpufleet.core.plugins.module_utils.topology.topology_model import Topology, TreeSwitch

MAX_DEPTH = 20


# ---------------------------------------------------------------- connected components


def _components(order: Iterable[Any], links: Callable[[Any], Iterable[Any]]) -> dict[Any, list[Any]]:
    """Connected components by one walk: each keyed by its smallest member (``order`` is sorted,
    so the first member met starts its component), members sorted; ``links(x)`` the neighbours of x."""
    label: dict[Any, Any] = {}
    comps: dict[Any, list[Any]] = {}
    for s in order:
        if s in label:
            continue
        label[s] = s
        members = [s]
        stack = [s]
        while stack:
            for y in links(stack.pop()):
                if y not in label:
                    label[y] = s
                    members.append(y)
                    stack.append(y)
        members.sort()
        comps[s] = members
    return comps


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
    # tens of thousands of new lists, tuples and dicts and no reference cycle: without the cycle
    # collector running on the way, which would walk the whole fabric again and again
    with bulk_build():
        return _build(fabric, node_map, nodes, exclude, domains)


def _build(
    fabric: Fabric,
    node_map: object,
    nodes: str | Iterable[str] | None,
    exclude: Iterable[str] | str | None,
    domains: Mapping[str, str] | None,
) -> Topology:
    excluded = exclude_matcher(exclude) if exclude else None
    sw_all = fabric.switches
    drop_sw = {s.id for s in sw_all.values() if excluded(s.name) or excluded(s.desc)} if excluded else set()
    hosts = _collect_hosts(fabric, None if node_map is None else make_node_map(node_map), excluded, drop_sw)
    units = _fold_leaves(hosts.host_leaves)
    tiers = _tiers([s for s in sw_all.values() if s.id not in drop_sw], units.leaf_hosts, sw_all)
    links = _TierLinks(tiers.tier, sw_all)
    ents = _Entities()
    group_entity = {k: ents.add(sorted(units.group_leaves[k]), 0) for k in sorted(units.group_leaves)}
    asymmetric = ents.fold_upper_tiers(links, sw_all)
    ents.drop_single_child_tops()
    fabrics = ents.add_roots(links, sw_all, hosts.host_leaves)

    member_names = [natural_sorted(sw_all[m].name for m in mem) for mem in ents.members]
    names = name_entities(member_names, ents.tier, ents.removed)
    switches, node_group = _tree_switches(
        ents, names, member_names, {n: names[group_entity[g]] for n, g in units.host_group.items()}
    )
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
        **rail_report(units.host_group, units.group_leaves, units.group_of_leaf, hosts.host_leaves, sw_all),
        "unnamed_hcas": sorted(hosts.unnamed, key=lambda d: d["guid"])[:LIST_CAP],
        "unnamed_hcas_count": len(hosts.unnamed),
        "sharp_nodes": hosts.sharp,
        "uplink_anomalies": uplink_anomalies(sw_all, tiers.tier, links.up_cables, links.down_cables),
        "asymmetric_switches": asymmetric,
        "isolated_switches": tiers.isolated[:LIST_CAP],
        "dangling_switches": tiers.dangling[:LIST_CAP],
        "excluded": {
            "hcas": hosts.excluded_hcas,
            "switches": natural_sorted(sorted(sw_all[s].name for s in drop_sw))[:LIST_CAP],
        },
        "unmapped_hosts": natural_sorted(sorted(set(hosts.unmapped)))[:LIST_CAP],
        "synthetic_roots": sorted(names[e] for e in ents.synthetic),
        "nodes_not_in_fabric": [],
        "fabric_not_in_nodes": [],
    }
    topo = Topology(
        switches, roots, leaf_groups, node_group, blocks, block_domains, block_source, health, order, fabric.source
    )
    if nodes is not None:
        topo = topo.subset(nodes)
    topo.health["ok"] = healthy(topo.health)
    return topo


def _tree_switches(
    ents: _Entities, names: list[str], member_names: list[list[str]], node_group: dict[str, str]
) -> tuple[dict[str, TreeSwitch], dict[str, str]]:
    """The named tree switches of the entities (removed ones left out), nodes under their leaf group."""
    switches: dict[str, TreeSwitch] = {}
    for eid, nm in enumerate(names):
        if eid in ents.removed:
            continue
        parent = ents.parent[eid]
        switches[nm] = TreeSwitch(
            nm,
            ents.tier[eid],
            list(ents.members[eid]),
            natural_sorted(names[c] for c in ents.children[eid]),
            [],
            names[parent] if parent is not None else None,
            member_names[eid],
        )
    for node, gname in node_group.items():
        switches[gname].nodes.append(node)
    for sw in switches.values():
        if len(sw.nodes) > 1:
            sw.nodes = natural_sorted(sw.nodes)
    return switches, node_group


@dataclass
class _Hosts:
    host_leaves: dict[str, tuple[str, ...]] = field(default_factory=dict)  # node -> sorted leaf switch ids
    unnamed: list[dict] = field(default_factory=list)
    sharp: int = 0
    excluded_hcas: int = 0
    unmapped: list[str] = field(default_factory=list)


def _collect_hosts(
    fabric: Fabric,
    mapper: Callable[[str], str | None] | None,
    excluded: Callable[[str], bool] | None,
    drop_sw: set[str],
) -> _Hosts:
    """Step 1: which HCAs are hosts (by description), their node names and leaf switches.

    ``mapper`` None: node name = host name; ``excluded`` None: nothing excluded. The HCAs are
    gathered per host first, so the mapping hook runs once per host, not once per rail.
    """
    out = _Hosts()
    sw_all = fabric.switches
    host_links: defaultdict[str, list[str]] = defaultdict(list)  # host -> switch ids of its HCAs, in HCA order
    for ca in fabric.cas.values():
        kind = ca.kind
        if kind == SHARP:
            out.sharp += 1
            continue
        if excluded is not None and (
            excluded(ca.desc) or (ca.device and excluded(ca.device)) or (ca.host and excluded(ca.host))
        ):
            out.excluded_hcas += 1
            continue
        links = [s for s in ca.switches if s not in drop_sw] if drop_sw else ca.switches
        if kind == HOST:
            if links and ca.host is not None:
                host_links[ca.host] += links
        elif kind == UNNAMED and links:
            out.unnamed.append(
                {"guid": ca.id[2:], "description": ca.desc, "switch": ", ".join(sorted(sw_all[s].name for s in links))}
            )
    node_links: dict[str, list[str]] = {}
    for host, lst in host_links.items():
        node = host if mapper is None else mapper(host)
        if not node:
            out.unmapped.append(host)
        elif node in node_links:
            node_links[node] += lst
        else:
            node_links[node] = lst
    sorted_sets: dict[frozenset[str], tuple[str, ...]] = {}  # hosts of a unit share one leaf set: sorted once
    for node, lst in node_links.items():
        leaves = frozenset(lst)
        key = sorted_sets.get(leaves)
        if key is None:
            key = sorted_sets[leaves] = tuple(sorted(leaves))
        out.host_leaves[node] = key
    return out


@dataclass
class _Units:
    leaf_hosts: dict[str, dict[tuple[str, ...], int]]  # leaf switch id -> leaf sets of its hosts -> hosts
    group_leaves: dict[tuple[str, ...], list[str]]  # group key -> leaf switch ids
    group_of_leaf: dict[str, tuple[str, ...]]
    host_group: dict[str, tuple[str, ...]]


def _most(counts: dict, key) -> Any:
    return max(counts.items(), key=key)[0]


def _fold_leaves(host_leaves: dict[str, tuple[str, ...]]) -> _Units:
    """Step 2: rail-optimized leaves serving the same hosts become one leaf group (scalable unit).

    Every count is over hosts, but hosts with the same leaf set count alike: the work is per
    distinct leaf set (one per scalable unit, plus the miscabled hosts), not per host and rail.
    """
    per_set = Counter(host_leaves.values())  # leaf set -> hosts having it, in order of first host
    leaf_hosts: dict[str, dict[tuple[str, ...], int]] = {}  # leaves in order of first host
    for k, n in per_set.items():
        for s in k:
            cnt = leaf_hosts.get(s)
            if cnt is None:
                leaf_hosts[s] = {k: n}
            else:
                cnt[k] = n
    group_of_leaf: dict[str, tuple[str, ...]] = {}
    group_leaves: dict[tuple[str, ...], list[str]] = {}
    for leaf, cnt in leaf_hosts.items():
        k = _most(cnt, lambda kv: (kv[1], len(kv[0]), kv[0]))  # the leaf set most of its hosts have
        group_of_leaf[leaf] = k
        group_leaves.setdefault(k, []).append(leaf)
    set_group: dict[tuple[str, ...], tuple[str, ...]] = {}
    for own in per_set:
        cnt2: dict[tuple[str, ...], int] = {}
        for s in own:
            cnt2[group_of_leaf[s]] = cnt2.get(group_of_leaf[s], 0) + 1
        set_group[own] = _most(cnt2, lambda kv, own=own: (kv[1], kv[0] == own, kv[0]))
    host_group = {node: set_group[k] for node, k in host_leaves.items()}
    # a group whose hosts all went elsewhere (irregular cabling): its leaves join where their hosts went
    manned = set(set_group.values())
    for k in sorted(k for k in group_leaves if k not in manned):
        for leaf in group_leaves.pop(k):
            cnt3: dict[tuple[str, ...], int] = {}
            for hk, n in leaf_hosts[leaf].items():
                cnt3[set_group[hk]] = cnt3.get(set_group[hk], 0) + n
            target = _most(cnt3, lambda kv: (kv[1], kv[0]))
            group_of_leaf[leaf] = target
            group_leaves[target].append(leaf)
    return _Units(leaf_hosts, group_leaves, group_of_leaf, host_group)


@dataclass
class _Tiers:
    tier: dict[str, int]  # switch id -> hops from the nearest leaf
    dangling: list[str]
    isolated: list[str]


def _tiers(alive: list, leaf_hosts: Mapping[str, object], sw_all: dict) -> _Tiers:
    """Step 3: drop dangling switches, then tiers by hop distance from the leaves (BFS)."""
    alive_ids = {s.id for s in alive}
    # dangling switches: no hosts and at most one switch neighbour (empty leaves, cables to nowhere)
    # add no path between hosts; left in, they would pose as a top tier. Peeling them one by one
    # ends in the same set whatever the order; a switch's degree is counted only when a neighbour goes.
    queue = sorted(s.id for s in alive if s.id not in leaf_hosts and _at_most_one(s.peers, alive_ids))
    gone: set[str] = set()
    while queue:
        sid = queue.pop()
        if sid in gone:
            continue
        gone.add(sid)
        for p in sw_all[sid].peers:
            if p in alive_ids and p not in gone and p not in leaf_hosts:
                peers = sw_all[p].peers.keys()
                if len(peers & alive_ids) - len(peers & gone) <= 1:
                    queue.append(p)
    alive_ids -= gone
    tier: dict[str, int] = dict.fromkeys(leaf_hosts, 0)
    frontier = sorted(leaf_hosts)
    t = 0
    while frontier:
        nxt = []
        for s in frontier:
            for p in sw_all[s].peers:
                if p not in tier and p in alive_ids:
                    tier[p] = t + 1
                    nxt.append(p)
        frontier = nxt
        t += 1
    return _Tiers(
        tier,
        natural_sorted(sorted(sw_all[sid].name for sid in gone)),
        sorted((s.name for s in alive if s.id not in tier and s.id not in gone), key=natural_key),
    )


def _at_most_one(peers: Iterable[str], alive: set[str]) -> bool:
    """Whether at most one of ``peers`` is alive (stops at the second)."""
    n = 0
    for p in peers:
        if p in alive:
            if n:
                return False
            n = 1
    return True


class _TierLinks:
    """Per tiered switch, its peers one tier down, and its cables up and down.

    Tiers are hop distances from the leaves (a breadth-first walk), so cabled switches are at most one
    tier apart: the peers one tier down are all its lower peers, the ones one tier up all its upper
    peers. Each is a C-level intersection of the switch's peers with one tier, not a Python loop
    over the 500,000 cables of a 16k-host fabric; with one cable per peer (the usual case) the
    cables are the number of peers.
    """

    def __init__(self, tier: dict[str, int], sw_all: dict) -> None:
        self.tier = tier
        self.level: dict[int, set[str]] = {}  # tier -> its switches
        for s, t in tier.items():
            lv = self.level.get(t)
            if lv is None:
                self.level[t] = {s}
            else:
                lv.add(s)
        none: set[str] = set()
        self.down: dict[str, set[str]] = {}
        self.up_cables: dict[str, int] = {}
        self.down_cables: dict[str, int] = {}
        self.lateral: list[str] = []  # switches with peers neither up nor down: same tier or untiered
        for s, t in tier.items():
            peers = sw_all[s].peers
            down = peers.keys() & self.level.get(t - 1, none)
            up = peers.keys() & self.level.get(t + 1, none)
            self.down[s] = down
            if len(down) + len(up) < len(peers):
                self.lateral.append(s)
            if set(peers.values()) <= _ONE:
                self.up_cables[s], self.down_cables[s] = len(up), len(down)
            else:
                self.up_cables[s] = sum(map(peers.__getitem__, up))
                self.down_cables[s] = sum(map(peers.__getitem__, down))


_ONE = frozenset((1,))


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

    def fold_upper_tiers(self, links: _TierLinks, sw_all: dict) -> list[dict]:
        """Per tier, switches reaching a common child fold into one; returns the asymmetric ones."""
        asymmetric: list[dict] = []
        for t in sorted(links.level):
            if t == 0:
                continue
            # switches reaching the same children (a rail plane of a pod: dozens) are taken together
            reach: dict[frozenset[int] | str, list[str]] = {}  # children -> the switches reaching them
            for s in sorted(links.level[t]):
                ch = set(map(self.of.get, links.down[s]))
                ch.discard(None)
                reach.setdefault(frozenset(ch) if ch else s, []).append(s)  # type: ignore[arg-type]
            sets = [frozenset() if isinstance(k, str) else k for k in reach]  # by their first switch
            by_child: dict[int, list[int]] = {}  # child entity -> the child sets holding it
            for i, kids in enumerate(sets):
                for c in kids:
                    by_child.setdefault(c, []).append(i)
            # switches reaching a common child, transitively; each child's list is walked once
            comps = _components(range(len(sets)), lambda i, k=sets, b=by_child: (y for c in k[i] for y in b.pop(c, ())))
            rows = list(reach.values())
            for root in sorted(comps):
                union = frozenset().union(*(sets[i] for i in comps[root]))
                members = sorted(s for i in comps[root] for s in rows[i])
                self.add(members, t, sorted(union))
                short = {s: len(union - sets[i]) for i in comps[root] if sets[i] != union for s in rows[i]}
                for s in members:
                    if s in short and len(asymmetric) < LIST_CAP:
                        asymmetric.append({"switch": sw_all[s].name, "tier": t, "missing_children": short[s]})
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

    def add_roots(self, links: _TierLinks, sw_all: dict, host_leaves: dict[str, tuple[str, ...]]) -> int:
        """One root per connected fabric (hosts join their rails); returns the number of fabrics.

        The switches of one tree are connected (each reaches a child of its entity), and a cable
        between two trees joins two switches of the same tier (neighbouring tiers are parent and
        child), so fabrics are the trees joined by those cables and by hosts on leaves of several
        trees: components of a few thousand entities (:func:`_components`), not a walk over every
        cable. A fabric is keyed by its smallest switch id.
        """
        edges = [(eid, c) for eid, kids in enumerate(self.children) for c in kids]  # removed tops too
        for lst in dict.fromkeys(host_leaves.values()):  # hosts with the same leaves join them alike
            edges += [(self.of[lst[0]], self.of[s]) for s in lst[1:]]
        for s in links.lateral:
            edges += [(self.of[s], self.of[p]) for p in sw_all[s].peers.keys() & links.level[links.tier[s]]]
        adj: dict[int, list[int]] = {}
        for a, b in edges:
            adj.setdefault(a, []).append(b)
            adj.setdefault(b, []).append(a)
        smallest: dict[int, str] = {}  # entity -> the smallest switch id of its fabric
        for comp in _components(range(len(self.members)), lambda e: adj.get(e, ())).values():
            ids = [min(self.members[e]) for e in comp if self.members[e]]
            if ids:
                smallest.update(dict.fromkeys(comp, min(ids)))
        tops: dict[str, list[int]] = {}
        for eid in range(len(self.members)):
            if self.parent[eid] is None and eid not in self.removed:
                tops.setdefault(smallest[eid], []).append(eid)
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
