"""The rendered fabric labels and Kueue Topology: scheme choice, no fabric, tenant values cannot reach them."""

from __future__ import annotations

import pytest
import yaml
from render_fixtures import copy_sample, edit_vars, make_inventory, model_errors

from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_inventory
from ansible_collections.gpufleet.core.plugins.module_utils.topology.labels import read_label_sets

LABELS = "clusters/gpu-east/node-labels.yaml"
OBJECTS = "clusters/gpu-east/tenants/inference/objects/objects.yaml"
VCLUSTER = "clusters/gpu-east/tenants/inference/vcluster/values.yaml"


def _cluster(key: str, value):
    def edit(data):
        data["gpufleet_clusters"][0].setdefault("topology", {})[key] = value

    return edit


def _kueue(files):
    objs = [o for o in yaml.safe_load_all(files[OBJECTS]) if o]
    return {o["kind"]: o for o in objs if o["apiVersion"].startswith("kueue.x-k8s.io/")}


@pytest.fixture(scope="module")
def inv(tmp_path_factory):
    return make_inventory(tmp_path_factory.mktemp("fl"))


def test_default_scheme_labels_every_fabric_node_and_the_flavor_names_the_topology(inv):
    files = render_inventory(inv).files
    doc = yaml.safe_load(files[LABELS])
    assert doc["scheme"] == "gpufleet"
    labels = read_label_sets(doc["sets"], "gpufleet")
    assert len(labels) == 64 and "sys01" not in labels  # system CPU nodes are not on the fabric
    # no NVLink clique labels on H100 HGX nodes: tiers only, one set per leaf group
    assert len(doc["sets"]) == 8 and all(
        set(ls) == {"topology.gpufleet.io/tier-0", "topology.gpufleet.io/tier-1"} for ls in labels.values()
    )
    k = _kueue(files)
    assert k["ResourceFlavor"]["spec"]["topologyName"] == k["Topology"]["metadata"]["name"] == "gpufleet-fabric"
    assert k["Topology"]["apiVersion"] == k["ResourceFlavor"]["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    # vCluster syncs only the pool's Nodes (it copies their labels): the fence selector, never all nodes
    sync = yaml.safe_load(files[VCLUSTER])["sync"]["fromHost"]["nodes"]
    assert sync["enabled"] is True and sync.get("selector", {}).get("all", False) is False
    assert sync["selector"]["labels"] == {"node-restriction.kubernetes.io/gpufleet-pool": "inference"}
    assert sync["syncBackChanges"] is False
    # Slurm-only tenants get no Topology
    assert "Topology" not in (files["clusters/gpu-east/tenants/llm-pretrain/objects/objects.yaml"].decode())


def test_topograph_scheme(tmp_path):
    inv = make_inventory(tmp_path)
    edit_vars(inv, "clusters.yml", _cluster("node_labels", "topograph"))
    files = render_inventory(inv).files
    doc = yaml.safe_load(files[LABELS])
    assert doc["scheme"] == "topograph"
    assert set(doc["sets"][0]["labels"]) == {"fabric.topograph.run/tier-0", "fabric.topograph.run/tier-1"}
    levels = [lv["nodeLabel"] for lv in _kueue(files)["Topology"]["spec"]["levels"]]
    assert levels == ["fabric.topograph.run/tier-1", "fabric.topograph.run/tier-0", "kubernetes.io/hostname"]


def test_no_fabric_no_labels_no_topology(tmp_path):
    inv = make_inventory(tmp_path)

    def no_fabric(data):
        data["gpufleet_clusters"][0]["fabric"] = {"source": "none"}

    edit_vars(inv, "clusters.yml", no_fabric)
    files = render_inventory(inv).files
    assert LABELS not in files
    k = _kueue(files)
    assert "Topology" not in k and "topologyName" not in k["ResourceFlavor"]["spec"]


def test_scheme_is_validated_and_not_a_tenant_key(tmp_path):
    inv = copy_sample(tmp_path)
    edit_vars(inv, "clusters.yml", _cluster("node_labels", "mine"))
    assert any("node_labels" in e for e in model_errors(inv))
    inv2 = copy_sample(tmp_path, "inv2")

    def tenant_sets_it(data):
        data["gpufleet_tenants"][0]["topology"] = {"node_labels": "topograph"}

    edit_vars(inv2, "tenants.yml", tenant_sets_it)
    assert model_errors(inv2)
