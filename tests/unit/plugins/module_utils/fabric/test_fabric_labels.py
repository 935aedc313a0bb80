"""Fabric from Kubernetes Node labels: topograph, cloud schemes, GFD cliques."""

from __future__ import annotations

import pytest
import yaml
from gpufleet_testlib import fabric_gen
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.core.plugins.module_utils.fabric.load import load_fabric
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.model import FabricError
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.node_labels import (
    domains_from_nodes,
    fabric_from_nodes,
)
from ansible_collections.gpufleet.core.plugins.module_utils.topology.build import build_topology
from ansible_collections.gpufleet.core.plugins.module_utils.topology.render import parse_tree_conf, render_tree


def node(name: str, **labels: str) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


def nodes_list(items):
    return {"apiVersion": "v1", "kind": "List", "items": items}


def test_topograph_tiers_and_domains():
    items = []
    for i in range(8):
        items.append(
            node(
                f"n{i}",
                **{
                    "fabric.topograph.run/tier-0": f"leaf{i // 2}",
                    "fabric.topograph.run/tier-1": f"spine{i // 4}",
                    "fabric.topograph.run/tier-2": "core",
                    "accelerator.topograph.run/domain": f"nvl{i // 4}",
                },
            )
        )
    topo = build_topology(fabric_from_nodes(nodes_list(items)))
    sws = parse_tree_conf(render_tree(topo))
    assert sws[0] == ("core", "switches", ["spine0", "spine1"])
    assert topo.path("n5") == ["core", "spine1", "leaf2"]
    assert [b for b, _unused in topo.blocks] == ["nvl0", "nvl1"]


@pytest.mark.parametrize(
    "labels,path",
    [
        (
            {
                "cloud.google.com/gce-topology-block": "b1",
                "cloud.google.com/gce-topology-subblock": "sb1",
                "cloud.google.com/gce-topology-host": "h1",
            },
            ["b1", "sb1"],
        ),
        (
            {
                "topology.k8s.aws/network-node-layer-1": "nn-a",
                "topology.k8s.aws/network-node-layer-2": "nn-b",
                "topology.k8s.aws/network-node-layer-3": "nn-c",
            },
            ["nn-a", "nn-b", "nn-c"],
        ),
        (
            {
                "oci.oraclecloud.com/rdma.hpc_island_id": "i",
                "oci.oraclecloud.com/rdma.network_block_id": "nb",
                "oci.oraclecloud.com/rdma.local_block_id": "lb",
            },
            ["i", "nb", "lb"],
        ),
        (
            {
                "topology.nebius.com/tier-0": "nvl",
                "topology.nebius.com/tier-1": "leaf",
                "topology.nebius.com/tier-2": "spine",
            },
            ["spine", "leaf"],
        ),
    ],
)
def test_cloud_label_schemes(labels, path):
    leaf_key = next(k for k, v in labels.items() if v == path[-1])
    other = {**labels, leaf_key: path[-1] + "x"}
    topo = build_topology(fabric_from_nodes(nodes_list([node("a", **labels), node("b", **labels), node("c", **other)])))
    assert topo.path("a") == path[-2:]  # levels above a single child fold away
    assert topo.leaf_groups == [(path[-1], ["a", "b"]), (path[-1] + "x", ["c"])]


def test_gfd_clique_domain_and_nodes_without_fabric():
    doc = nodes_list([node("a", **{"nvidia.com/gpu.clique": "u.1"}), node("b", **{"nvidia.com/gpu.clique": "u.2"})])
    assert domains_from_nodes(doc) == {"a": "u.1", "b": "u.2"}
    topo = build_topology(fabric_from_nodes(doc))
    assert topo.leaf_groups == [] and [b for b, _unused in topo.blocks] == ["u.1", "u.2"]


def test_generated_snapshot_is_sorted_and_complete():
    g = fabric_gen.generate(fabric_gen.GenSpec(hosts=12, rails=8, su_size=4, seed=1))
    snap = fabric_gen.nodes_snapshot(g)
    names = [it["metadata"]["name"] for it in snap["items"]]
    assert names == sorted(names) and len(names) == 12
    it = snap["items"][0]
    assert it["metadata"]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
    assert it["metadata"]["labels"]["nvidia.com/gpu.count"] == "8"
    assert it["status"]["capacity"]["nvidia.com/gpu"] == "8"
    assert set(it["status"]["allocatable"]) == {"cpu", "memory", "nvidia.com/gpu", "pods"}
    text = yaml.safe_dump(snap)
    fab = load_fabric(text)  # kind auto-detected as labels
    assert fab.kind == "labels" and len(fab.domains) == 12


@pytest.mark.parametrize(
    "doc",
    [{"kind": "List"}, {"items": [{"metadata": {}}]}, [1], {"items": [{"metadata": {"name": "a", "labels": [1]}}]}],
)
def test_bad_node_lists(doc):
    with pytest.raises(FabricError):
        fabric_from_nodes(doc)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_fuzz_labels_text(text):
    try:
        load_fabric("kind: List\n" + text, kind="labels")
    except FabricError:
        pass
