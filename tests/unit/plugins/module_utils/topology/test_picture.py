"""The switch tree as a Mermaid flowchart: every node in exactly one box, coloured by tenant, moves marked."""

from __future__ import annotations

import re
from pathlib import Path

from ansible_collections.gpufleet.core.plugins.module_utils.hostlist import expand
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.render.inputs import cluster_inputs
from ansible_collections.gpufleet.core.plugins.module_utils.topology.picture import mermaid

REPO = Path(__file__).resolve().parents[5]


def _sample():
    fleet = load_fleet(REPO / "inventories" / "sample")
    inputs = cluster_inputs(fleet, fleet.clusters["gpu-east"])
    pools = {p.name: (p.kind, p.tenant) for p in fleet.cluster_pools("gpu-east")}
    return inputs, pools


def test_every_node_once_in_its_pools_colour() -> None:
    inputs, pools = _sample()
    lines = mermaid(inputs.topology, inputs.pool_of, pools)
    assert lines[0] == "```mermaid" and "```" in lines
    boxes = [re.match(r'  n\d+\["([^"<]+)<br/>([^"<]+)"\]:::(\S+)$', ln) for ln in lines if ln.startswith("  n")]
    boxes = [m for m in boxes if m]
    drawn = [n for m in boxes for n in expand(m.group(1))]
    assert sorted(drawn) == sorted(inputs.topology.node_group) and len(drawn) == len(set(drawn))
    for m in boxes:
        pool = m.group(2).split(" ")[0]
        kind, tenant = pools[pool]
        assert all(inputs.pool_of[n] == pool for n in expand(m.group(1)))
        assert m.group(3) == (f"t_{sorted({t for _k, t in pools.values() if t}).index(tenant)}" if tenant else kind)
    assert "red border" not in lines[-1] and "llm-pretrain orange" in lines[-1]
    assert lines == mermaid(inputs.topology, inputs.pool_of, pools)  # deterministic


def test_moved_nodes_are_drawn_apart_with_a_red_border() -> None:
    inputs, pools = _sample()
    pool_of = dict(inputs.pool_of) | {"gpu061": "pretrain", "gpu062": "pretrain"}
    lines = mermaid(inputs.topology, pool_of, pools, moved={"gpu061": "spare", "gpu062": "spare"})
    (box,) = [ln for ln in lines if "moved from spare" in ln]
    assert box.startswith("  n") and '"gpu[061-062]<br/>pretrain (llm-pretrain)<br/>moved from spare"' in box
    assert f"  class {box.split('[')[0].strip()} moved" in lines and "red border" in lines[-1]


def _drawn(label: str) -> int:
    return int(label.split()[0]) if label.endswith(" nodes") else len(expand(label))


def test_past_the_limit_the_tree_is_drawn_at_spine_level() -> None:
    """More leaf groups than the limit: the switches down to the deepest level within it, each node once."""
    inputs, pools = _sample()
    lines = mermaid(inputs.topology, inputs.pool_of, pools, max_groups=3)
    switches = [ln for ln in lines if ln.endswith(":::switch")]
    assert switches == ['  s0["spine"]:::switch']  # the 8 leaf groups fold into their spine
    boxes = [re.match(r'  n\d+\["([^"<]+)<br/>([^"<]+)"\]', ln) for ln in lines if ln.startswith("  n")]
    assert sum(_drawn(m.group(1)) for m in boxes if m) == len(inputs.topology.node_group)
    assert '"gpu[009-040]<br/>pretrain (llm-pretrain)"' in "\n".join(lines)
    assert f"{len(inputs.topology.leaf_groups)} leaf groups, more than 3: drawn down to the 1 switch(es)" in "\n".join(
        lines
    )
    assert lines[0] == "```mermaid" and lines == mermaid(inputs.topology, inputs.pool_of, pools, max_groups=3)


def test_more_roots_than_the_limit_are_not_drawn() -> None:
    inputs, pools = _sample()
    (line,) = mermaid(inputs.topology, inputs.pool_of, pools, max_groups=0)
    assert "1 roots, too many to draw (the limit is 0)" in line
