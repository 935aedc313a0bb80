"""From a :class:`Fabric` to a Slurm-ready switch tree, leaf groups, blocks and a health report.

Algorithm (linear in links; see reference topology.md section 7):

1. Hosts are HCAs whose description is ``<host> <device>``; the mapping hook turns the fabric host
   name into the Slurm/Kubernetes node name. SHARP aggregation nodes and firmware-default HCAs are
   not hosts. ``exclude`` globs drop HCAs (storage rails) or switches (storage leaves).
2. Leaves are switches with hosts. Rail-optimized leaves fold into one leaf group: each leaf takes
   the leaf set most common among its hosts, leaves with the same set form one group, and each host
   joins the group holding most of its leaves (a host that lost a rail cable stays in its unit).
3. Upper tiers by hop distance from the leaves. At each tier, switches reaching a common child are
   folded into one (parallel spines, rail planes), so every child has one parent.
4. One root per connected fabric: when several tops remain in one fabric, a root is added.
5. Names come from switch descriptions (common prefix of the folded switches, else the first
   one), made safe for every Slurm version and unique; the order is a depth-first walk.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from ansible_collections.gpufleet.core.plugins.module_utils.fabric import HOST, SHARP, UNNAMED, Fabric, FabricError
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
    ``pattern`` and ``replacement`` (and optional ``drop_unmatched``): regex full match and expand.
    Any other dict: lookup, unknown hosts keep their name, a None/empty value drops the host.
    """
    if spec is None:
        return lambda h: h
    if callable(spec):
        return spec  # type: ignore[return-value]
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

    def subset(self, nodes: str | Iterable[str] | None) -> Topology:
        """The same topology restricted to ``nodes`` (empty groups and switches dropped)."""
        wanted = node_list(nodes)
        if wanted is None:
            return self
        keep = set(wanted)
        groups = [(g, [n for n in ns if n in keep]) for g, ns in self.leaf_groups]
        groups = [(g, ns) for g, ns in groups if ns]
        live: set[str] = set()
        for g, _nodes in groups:
            cur: str | None = g
            while cur is not None and cur not in live:
                live.add(cur)
                cur = self.switches[cur].parent
        sws: dict[str, TreeSwitch] = {}
        gnodes = dict(groups)
        for name, sw in self.switches.items():
            if name not in live:
                continue
            sws[name] = TreeSwitch(
                name,
                sw.tier,
                list(sw.members),
                [c for c in sw.children if c in live],
                gnodes.get(name, []),
                sw.parent,
                list(sw.member_names),
            )
        blocks = [(b, [n for n in ns if n in keep]) for b, ns in self.blocks]
        blocks = [(b, ns) for b, ns in blocks if ns]
        kept_blocks = {b for b, _ns in blocks}
        health = dict(self.health)
        fabric_nodes = set(self.node_group)
        health["nodes_not_in_fabric"] = sorted(keep - fabric_nodes, key=natural_key)
        health["fabric_not_in_nodes"] = sorted(fabric_nodes - keep, key=natural_key)
        return Topology(
            sws,
            [r for r in self.roots if r in live],
            groups,
            {n: g for n, g in self.node_group.items() if n in keep},
            blocks,
            {b: d for b, d in self.block_domains.items() if b in kept_blocks},
            self.block_source,
            health,
            [n for n in self.order if n in keep],
            self.source,
        )


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
    mapper = make_node_map(node_map)
    excluded = _exclude_matcher(exclude)
    sw_all = fabric.switches

    # 0. exclusions
    dropped_switches = sorted(
        (s.name for s in sw_all.values() if excluded(s.name) or excluded(s.desc)), key=natural_key
    )
    drop_sw = {s.id for s in sw_all.values() if excluded(s.name) or excluded(s.desc)}
    alive = [s for s in sw_all.values() if s.id not in drop_sw]

    # 1. hosts
    host_leaves: dict[str, list[str]] = {}
    unnamed: list[dict] = []
    sharp = 0
    excluded_hcas = 0
    unmapped: list[str] = []
    for ca in fabric.cas.values():
        links = [s for s in ca.switches if s not in drop_sw]
        if ca.kind == SHARP:
            sharp += 1
            continue
        if excluded(ca.desc) or (ca.device and excluded(ca.device)) or (ca.host and excluded(ca.host)):
            excluded_hcas += 1
            continue
        if ca.kind == UNNAMED:
            if links:
                unnamed.append(
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
            unmapped.append(ca.host)
            continue
        lst = host_leaves.setdefault(node, [])
        for s in links:
            if s not in lst:
                lst.append(s)
    for lst in host_leaves.values():
        lst.sort()

    # 2. leaf groups
    leaf_hosts: dict[str, list[str]] = {}
    host_key: dict[str, tuple[str, ...]] = {}
    for node, lst in host_leaves.items():
        k = tuple(lst)
        host_key[node] = k
        for s in lst:
            leaf_hosts.setdefault(s, []).append(node)
    leaf_keyset: dict[str, tuple[str, ...]] = {}
    for leaf, hs in leaf_hosts.items():
        cnt: dict[tuple[str, ...], int] = {}
        for h in hs:
            k = host_key[h]
            cnt[k] = cnt.get(k, 0) + 1
        leaf_keyset[leaf] = max(cnt.items(), key=lambda kv: (kv[1], len(kv[0]), kv[0]))[0]
    group_of_leaf: dict[str, tuple[str, ...]] = {}
    group_leaves: dict[tuple[str, ...], list[str]] = {}
    for leaf, k in leaf_keyset.items():
        # leaves whose chosen set does not contain them cannot happen; keep the guard cheap
        group_of_leaf[leaf] = k
        group_leaves.setdefault(k, []).append(leaf)
    host_group: dict[str, tuple[str, ...]] = {}
    for node, lst in host_leaves.items():
        cnt2: dict[tuple[str, ...], int] = {}
        for s in lst:
            g = group_of_leaf[s]
            cnt2[g] = cnt2.get(g, 0) + 1
        own = host_key[node]
        host_group[node] = max(cnt2.items(), key=lambda kv: (kv[1], kv[0] == own, kv[0]))[0]
    # a group whose hosts all went elsewhere (irregular cabling): its leaves join where their hosts went
    manned = set(host_group.values())
    for k in sorted(k for k in group_leaves if k not in manned):
        for leaf in group_leaves.pop(k):
            cnt3: dict[tuple[str, ...], int] = {}
            for h in leaf_hosts[leaf]:
                cnt3[host_group[h]] = cnt3.get(host_group[h], 0) + 1
            target = max(cnt3.items(), key=lambda kv: (kv[1], kv[0]))[0]
            group_of_leaf[leaf] = target
            group_leaves[target].append(leaf)
    outside_unit: list[dict] = []
    for node, lst in host_leaves.items():
        g = host_group[node]
        foreign = sorted(sw_all[s].name for s in lst if group_of_leaf[s] != g)
        if foreign:
            outside_unit.append({"node": node, "foreign_leaves": foreign})

    # 3. tiers by hop distance from the leaves (BFS over switch links)
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
    dangling = sorted((sw_all[sid].name for sid in gone), key=natural_key)
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
    isolated = sorted((s.name for s in alive if s.id not in tier and s.id not in gone), key=natural_key)

    # entities: tier 0 = leaf groups; entity id = index into ent_* lists
    ent_members: list[list[str]] = []
    ent_tier: list[int] = []
    ent_children: list[list[int]] = []
    ent_parent: list[int | None] = []
    entity_of: dict[str, int] = {}
    for k in sorted(group_leaves):
        eid = len(ent_members)
        ent_members.append(sorted(group_leaves[k]))
        ent_tier.append(0)
        ent_children.append([])
        ent_parent.append(None)
        for leaf in group_leaves[k]:
            entity_of[leaf] = eid
    group_entity = {k: entity_of[group_leaves[k][0]] for k in group_leaves}

    by_tier: dict[int, list[str]] = {}
    for s, tt in tier.items():
        if tt > 0:
            by_tier.setdefault(tt, []).append(s)
    asymmetric: list[dict] = []
    for tt in sorted(by_tier):
        sws = sorted(by_tier[tt])
        dsu = _DSU()
        kids: dict[str, set[int]] = {}
        first_with: dict[int, str] = {}
        for s in sws:
            ch = {entity_of[p] for p in sw_all[s].peers if tier.get(p) == tt - 1 and p in entity_of}
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
            eid = len(ent_members)
            union: set[int] = set()
            for s in members:
                union |= kids[s]
            ent_members.append(members)
            ent_tier.append(tt)
            ent_children.append(sorted(union))
            ent_parent.append(None)
            for s in members:
                entity_of[s] = eid
                if kids[s] != union and len(asymmetric) < _LIST_CAP:
                    asymmetric.append({"switch": sw_all[s].name, "tier": tt, "missing_children": len(union - kids[s])})
            for c in union:
                ent_parent[c] = eid

    # a top switch (group) above a single child adds nothing: drop it, the child becomes the top
    removed: set[int] = set()
    changed = True
    while changed:
        changed = False
        for eid in range(len(ent_members)):
            if eid in removed or ent_parent[eid] is not None or ent_tier[eid] == 0 or len(ent_children[eid]) != 1:
                continue
            removed.add(eid)
            ent_parent[ent_children[eid][0]] = None
            changed = True

    # 4. one root per connected fabric
    comp = _DSU()
    for s in tier:
        comp.find(s)
        for p in sw_all[s].peers:
            if p in tier:
                comp.union(s, p)
    for lst in host_leaves.values():
        for s in lst[1:]:
            comp.union(lst[0], s)
    tops_by_comp: dict[str, list[int]] = {}
    for eid in range(len(ent_members)):
        if ent_parent[eid] is None and eid not in removed:
            tops_by_comp.setdefault(comp.find(ent_members[eid][0]), []).append(eid)
    synthetic: list[int] = []
    for key in sorted(tops_by_comp):
        tops = tops_by_comp[key]
        if len(tops) > 1:
            eid = len(ent_members)
            ent_members.append([])
            ent_tier.append(max(ent_tier[x] for x in tops) + 1)
            ent_children.append(sorted(tops))
            ent_parent.append(None)
            for x in tops:
                ent_parent[x] = eid
            synthetic.append(eid)

    # 5. names
    names = _name_entities(fabric, ent_members, ent_tier, removed)
    switches: dict[str, TreeSwitch] = {}
    for eid, nm in enumerate(names):
        if eid in removed:
            continue
        switches[nm] = TreeSwitch(
            nm,
            ent_tier[eid],
            list(ent_members[eid]),
            sorted((names[c] for c in ent_children[eid]), key=natural_key),
            [],
            names[ent_parent[eid]] if ent_parent[eid] is not None else None,  # type: ignore[index]
            sorted((sw_all[m].name for m in ent_members[eid]), key=natural_key),
        )
    node_group: dict[str, str] = {}
    for node, g in host_group.items():
        gname = names[group_entity[g]]
        node_group[node] = gname
        switches[gname].nodes.append(node)
    for sw in switches.values():
        sw.nodes.sort(key=natural_key)
    roots = sorted((n for n, sw in switches.items() if sw.parent is None), key=natural_key)

    # 6. depth-first order
    leaf_groups: list[tuple[str, list[str]]] = []
    stack = list(reversed(roots))
    while stack:
        nm = stack.pop()
        sw = switches[nm]
        if sw.tier == 0:
            leaf_groups.append((nm, list(sw.nodes)))
        else:
            stack.extend(reversed(sw.children))
    order = [n for _group, ns in leaf_groups for n in ns]

    # 7. blocks
    doms = dict(domains) if domains is not None else dict(fabric.domains)
    blocks, block_domains, block_source = _blocks(doms, leaf_groups, order)

    # 8. health
    missing_rails: list[dict] = []
    for node, g in host_group.items():
        expected = group_leaves[g]
        have = set(host_leaves[node])
        if len(expected) > 1 and not set(expected) <= have:
            missing_rails.append(
                {
                    "node": node,
                    "rails": len(have & set(expected)),
                    "expected": len(expected),
                    "missing_leaves": sorted((sw_all[s].name for s in expected if s not in have), key=natural_key),
                }
            )
    missing_rails.sort(key=lambda d: natural_key(d["node"]))
    health = {
        "summary": {
            **fabric.summary(),
            "nodes": len(node_group),
            "leaf_switches": len(leaf_hosts),
            "leaf_groups": len(leaf_groups),
            "tree_switches": len(switches),
            "roots": len(roots),
            "fabrics": len(tops_by_comp),
            "blocks": len(blocks),
        },
        "hosts_missing_rails": missing_rails[:_LIST_CAP],
        "hosts_missing_rails_count": len(missing_rails),
        "hosts_outside_unit": sorted(outside_unit, key=lambda d: natural_key(d["node"]))[:_LIST_CAP],
        "unnamed_hcas": sorted(unnamed, key=lambda d: d["guid"])[:_LIST_CAP],
        "unnamed_hcas_count": len(unnamed),
        "sharp_nodes": sharp,
        "uplink_anomalies": _uplink_anomalies(sw_all, tier),
        "asymmetric_switches": asymmetric,
        "isolated_switches": isolated[:_LIST_CAP],
        "dangling_switches": dangling[:_LIST_CAP],
        "excluded": {"hcas": excluded_hcas, "switches": dropped_switches[:_LIST_CAP]},
        "unmapped_hosts": sorted(set(unmapped), key=natural_key)[:_LIST_CAP],
        "synthetic_roots": sorted(names[e] for e in synthetic),
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
