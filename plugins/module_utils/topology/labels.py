"""Node labels from a :class:`Topology`: the switch path and NVLink domain of every node, for Kueue's
Topology Aware Scheduling and tools that read topograph's labels.

The labels come from the same build as the Slurm topology files (``render.render``), so a node's
Slurm leaf switch, its ancestors and its block are the values of its labels:

- ``<tier key>0`` = the node's leaf group (the Slurm ``SwitchName ... Nodes=`` line that lists it),
  ``<tier key>1`` its parent, and so on up to the root. Nodes whose path is shorter than the
  deepest one repeat their root at the missing top tiers, so every node carries every tier (Kueue
  leaves a node missing a level label out of the topology).
- the accelerator key = the NVLink domain of the node's block (the id in ``block_domains``), when the
  fabric has NVLink cliques. It is a Kueue level (below the leaf) only when every node has a domain,
  every domain lies inside one leaf group and some domain spans several nodes (``accelerator_level``);
  otherwise a label only.

Label schemes (``SCHEMES``): ``gpufleet`` (``topology.gpufleet.io/tier-N``,
``topology.gpufleet.io/accelerator``) and ``topograph`` (``fabric.topograph.run/tier-N``,
``accelerator.topograph.run/domain``, the keys topograph >= 1.0 writes). Values that are not valid
Kubernetes label values become ``x`` + the FNV-64a hex of the name, as topograph does.

``label_sets`` is the grouped form the renderer writes (one entry per leaf group and NVLink domain,
the nodes as a hostlist); ``read_label_sets`` reads it back, checking keys, values and node names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.fabric.model import FabricError
from ansible_collections.gpufleet.core.plugins.module_utils.topology.names import (
    hostlist_compress,
    hostlist_expand,
)
from ansible_collections.gpufleet.core.plugins.module_utils.topology.topology_model import Topology

HOSTNAME_LABEL = "kubernetes.io/hostname"
MAX_LEVELS = 16  # Kueue Topology.spec.levels maxItems
_VALUE = re.compile(r"[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")  # fullmatch: "$" allows a final "\n"
# a DNS subdomain prefix (<= 253) and a name part (<= 63), as the API server checks label keys
_KEY = re.compile(
    r"(?:(?=.{1,253}/)[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
)


@dataclass(frozen=True)
class LabelScheme:
    """Where the fabric labels live: ``<tier_prefix><n>`` per tier and one accelerator key."""

    name: str
    tier_prefix: str
    accelerator: str

    def tier(self, n: int) -> str:
        return f"{self.tier_prefix}{n}"

    def owns(self, key: str) -> bool:
        """True for the keys this scheme writes (every tier number, the accelerator key)."""
        if key == self.accelerator:
            return True
        return key.startswith(self.tier_prefix) and key[len(self.tier_prefix) :].isdigit()

    @classmethod
    def from_prefix(cls, prefix: str) -> LabelScheme:
        """``<prefix>/tier-N`` and ``<prefix>/accelerator`` (the filters' ``prefix`` option)."""
        scheme = cls("custom", f"{prefix}/tier-", f"{prefix}/accelerator")
        for key in (scheme.tier(0), scheme.accelerator):
            if not _KEY.fullmatch(key):
                raise FabricError(f"label prefix {prefix!r} does not give valid label keys ({key!r})", key="prefix")
        return scheme


SCHEMES: dict[str, LabelScheme] = {
    "gpufleet": LabelScheme("gpufleet", "topology.gpufleet.io/tier-", "topology.gpufleet.io/accelerator"),
    "topograph": LabelScheme("topograph", "fabric.topograph.run/tier-", "accelerator.topograph.run/domain"),
}
DEFAULT_SCHEME = "gpufleet"


def scheme(name: str | LabelScheme) -> LabelScheme:
    if isinstance(name, LabelScheme):
        return name
    if name not in SCHEMES:
        raise FabricError(f"unknown label scheme {name!r}: {', '.join(SCHEMES)}", key="node_labels")
    return SCHEMES[name]


def label_value(value: str) -> str:
    """A Kubernetes label value: <= 63 ASCII chars of [A-Za-z0-9_.-], alphanumeric at both ends.

    Any other name becomes ``x`` + FNV-64a hex (17 chars), as topograph does: deterministic, and
    distinct names collide only with FNV-64's odds.
    """
    if _VALUE.fullmatch(value) and value.isascii():
        return value
    h = 0xCBF29CE484222325
    for b in value.encode():
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"x{h:016x}"


def is_label_value(value: Any) -> bool:
    return isinstance(value, str) and (value == "" or (bool(_VALUE.fullmatch(value)) and value.isascii()))


def _group_paths(topo: Topology) -> dict[str, list[str]]:
    """Leaf group -> switch names from the leaf up to its root (one walk per group, not per node)."""
    out: dict[str, list[str]] = {}
    for group, _nodes in topo.leaf_groups:
        path: list[str] = []
        cur: str | None = group
        while cur is not None:
            path.append(cur)
            cur = topo.switches[cur].parent
        out[group] = path
    return out


def accelerator_level(topo: Topology) -> bool:
    """True when the NVLink domains make a Kueue level below the leaf: every node has one, each lies
    inside one leaf group, and one at least spans several nodes (a domain per node would repeat the
    hostname level). Kueue leaves out a node that misses a level's label."""
    if topo.block_source != "nvlink" or not any(len(ns) > 1 for _b, ns in topo.blocks):
        return False
    if sum(len(ns) for _b, ns in topo.blocks) < len(topo.node_group):
        return False
    return all(len({topo.node_group.get(n) for n in ns}) == 1 for _b, ns in topo.blocks)


def _parts(topo: Topology, sch: LabelScheme) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """(leaf group -> its tier labels, node -> its accelerator label value)."""
    paths = _group_paths(topo)
    depth = max((len(p) for p in paths.values()), default=0)
    per_group: dict[str, dict[str, str]] = {}
    for group, path in paths.items():
        padded = path + [path[-1]] * (depth - len(path))
        per_group[group] = {sch.tier(i): label_value(sw) for i, sw in enumerate(padded)}
    domain_of: dict[str, str] = {}
    if topo.block_source == "nvlink":
        for block, ns in topo.blocks:
            value = label_value(topo.block_domains.get(block, block))
            domain_of.update(dict.fromkeys(ns, value))
    return per_group, domain_of


def node_labels(topo: Topology, labels: str | LabelScheme = DEFAULT_SCHEME) -> dict[str, dict[str, str]]:
    """Node -> its fabric labels, nodes in network-adjacency order (``topo.order``)."""
    sch = scheme(labels)
    per_group, domain_of = _parts(topo, sch)
    out: dict[str, dict[str, str]] = {}
    for node in topo.order:
        group = topo.node_group.get(node)
        if group is None:
            continue
        mine = dict(per_group[group])
        if node in domain_of:
            mine[sch.accelerator] = domain_of[node]
        out[node] = mine
    return out


def levels(topo: Topology, labels: str | LabelScheme = DEFAULT_SCHEME, hostname: bool = True) -> list[str]:
    """Kueue ``Topology.spec.levels`` node labels, coarse to fine (root tier first, hostname last)."""
    sch = scheme(labels)
    depth = max((len(p) for p in _group_paths(topo).values()), default=0)
    out = [sch.tier(i) for i in range(depth - 1, -1, -1)]
    if accelerator_level(topo):
        out.append(sch.accelerator)
    if hostname:
        out.append(HOSTNAME_LABEL)
    if len(out) > MAX_LEVELS:
        raise FabricError(f"the fabric has {len(out)} topology levels; Kueue allows at most {MAX_LEVELS}")
    return out


def label_sets(topo: Topology, labels: str | LabelScheme = DEFAULT_SCHEME) -> list[dict[str, Any]]:
    """``[{labels, nodes}]``: one entry per leaf group and NVLink domain in it, in network order,
    nodes as a hostlist (the same labels as :func:`node_labels`, grouped without a dict per node)."""
    sch = scheme(labels)
    per_group, domain_of = _parts(topo, sch)
    groups: dict[tuple[str, str | None], list[str]] = {}
    for node in topo.order:
        group = topo.node_group.get(node)
        if group is not None:
            groups.setdefault((group, domain_of.get(node)), []).append(node)
    out = []
    for (group, domain), ns in groups.items():
        mine = per_group[group] if domain is None else {**per_group[group], sch.accelerator: domain}
        out.append({"labels": dict(sorted(mine.items())), "nodes": hostlist_compress(ns)})
    return out


def read_label_sets(sets: Any, labels: str | LabelScheme, where: str = "sets") -> dict[str, dict[str, str]]:
    """Node -> labels from ``label_sets`` output; every key owned by the scheme, every value a valid
    label value, every node in one set at most. Raises ``FabricError`` naming the entry. The nodes of
    one set share one (read-only) dict."""
    sch = scheme(labels)
    if not isinstance(sets, list):
        raise FabricError(f"{where}: expected a list of {{labels, nodes}}, got {type(sets).__name__}")
    out: dict[str, dict[str, str]] = {}
    for i, entry in enumerate(sets):
        at = f"{where}[{i}]"
        if not isinstance(entry, Mapping) or set(entry) != {"labels", "nodes"}:
            raise FabricError(f"{at}: expected exactly the keys labels and nodes")
        mine = entry["labels"]
        if not isinstance(mine, Mapping) or not mine:
            raise FabricError(f"{at}.labels: expected a non-empty mapping")
        for k, v in mine.items():
            if not isinstance(k, str) or not sch.owns(k):
                raise FabricError(f"{at}.labels: {k!r} is not a {sch.name} fabric label key")
            if not is_label_value(v):
                raise FabricError(f"{at}.labels.{k}: {v!r} is not a valid label value")
        if not isinstance(entry["nodes"], str):
            raise FabricError(f"{at}.nodes: expected a hostlist string")
        try:
            names = hostlist_expand(entry["nodes"])
        except ValueError as exc:
            raise FabricError(f"{at}.nodes: {exc}") from None
        shared = dict(mine)
        for n in names:
            if n in out:
                raise FabricError(f"{at}.nodes: {n} is in an earlier set too")
            out[n] = shared
    return out


def kueue_topology(
    topo: Topology,
    name: str = "gpufleet-fabric",
    labels: str | LabelScheme = DEFAULT_SCHEME,
    api_version: str = "kueue.x-k8s.io/v1beta2",
) -> dict[str, Any]:
    """The Kueue ``Topology`` whose levels are the labels :func:`node_labels` puts on the nodes."""
    return {
        "apiVersion": api_version,
        "kind": "Topology",
        "metadata": {"name": name},
        "spec": {"levels": [{"nodeLabel": lv} for lv in levels(topo, labels)]},
    }
