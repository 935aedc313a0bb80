"""Shared helpers for the fabric/topology unit tests (not a test module)."""

from __future__ import annotations

from gpufleet_testlib import fabric_gen

from ansible_collections.gpufleet.core.plugins.module_utils.fabric.load import load_fabric
from ansible_collections.gpufleet.core.plugins.module_utils.topology.build import build_topology


def gen(**kw):
    return fabric_gen.generate(fabric_gen.GenSpec(**kw))


def gen_text(ports: bool = False, **kw) -> str:
    g = gen(**kw)
    return fabric_gen.render_ports(g) if ports else fabric_gen.render_ibnetdiscover(g)


def gen_topo(ports: bool = False, build_kw: dict | None = None, **kw):
    return build_topology(load_fabric(gen_text(ports, **kw)), **(build_kw or {}))


def canonical_tree(switches):
    """Set of node sets under each switch: the tree's shape with switch names forgotten."""
    kids = {n: (k, m) for n, k, m in switches}
    memo: dict[str, frozenset] = {}

    def under(n: str) -> frozenset:
        if n not in memo:
            k, m = kids[n]
            memo[n] = frozenset(m) if k == "nodes" else frozenset().union(*(under(c) for c in m))
        return memo[n]

    return sorted((sorted(under(n)) for n in kids), key=lambda s: (len(s), s))
