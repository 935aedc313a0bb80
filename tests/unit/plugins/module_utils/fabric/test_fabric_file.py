"""Fabric YAML files (topograph's model format plus nodes under switches and domains)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.core.plugins.module_utils.fabric.load import load_fabric
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.model import FabricError
from ansible_collections.gpufleet.core.plugins.module_utils.topology.build import build_topology


def test_small_file_with_nodes_and_domains():
    text = (
        "switches:\n"
        "  core: {switches: [l1, l2]}\n"
        "  l1: {nodes: ['gpu[001-004]']}\n"
        "  l2: {nodes: [gpu005, gpu006]}\n"
        "domains:\n"
        "  rack-a: ['gpu[001-006]']\n"
    )
    topo = build_topology(load_fabric(text, kind="file"))
    assert topo.roots == ["core"]
    assert topo.leaf_groups == [("l1", ["gpu001", "gpu002", "gpu003", "gpu004"]), ("l2", ["gpu005", "gpu006"])]
    assert topo.blocks == [("rack-a", [f"gpu00{i}" for i in range(1, 7)])]


def test_topograph_model_loads(shared_dir):
    fab = load_fabric(shared_dir / "upstream" / "fabric-samples" / "topograph" / "models" / "small-tree.yaml")
    topo = build_topology(fab)
    assert topo.leaf_groups == [("S2", ["I21", "I22", "I25"]), ("S3", ["I34", "I35", "I36"])]
    assert fab.domains["I21"] == "nvl2"


@pytest.mark.parametrize(
    "text,line",
    [
        ("switches:\n  a: [x]\n", 2),
        ("switches:\n  a:\n    bogus: 1\n", 3),
        ("switches: [a]\n", 1),
        ("blocks:\n  - switch: s\n    nodes: ['n[1-']\n", 3),
        ("switches:\n  a: {nodes: [1.5]}\n", 2),
        ("x: 1\n", 1),
        ("switches:\n  a: {\n", 3),
    ],
)
def test_errors_have_lines(text, line):
    with pytest.raises(FabricError) as e:
        load_fabric(text, kind="file")
    assert e.value.line == line, str(e.value)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_fuzz_file(text):
    try:
        build_topology(load_fabric("switches:\n" + text, kind="file"))
    except FabricError:
        pass


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
        max_leaves=12,
    )
)
def test_fuzz_structures(obj):
    import yaml

    text = yaml.safe_dump({"switches": obj, "blocks": obj})
    try:
        build_topology(load_fabric(text, kind="file"))
    except FabricError:
        pass
