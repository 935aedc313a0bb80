"""The renderer and the slurm_topology module load the topology the same way (topology.topology_load).

For every tenant of the sample fleet and of a generated fleet whose nodes carry NVLink cliques
(4-node domains), the tenant's topology.conf in the rendered GitOps tree must equal, byte for byte,
what the real slurm_topology module writes for the same fabric dump, nodes snapshot, exclusions and
tenant nodes, for topology/tree and topology/block. Before one loader existed, the render path
ignored the snapshot's NVLink domains and built blocks from leaf switches.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from gpufleet_testlib import fabric_gen
from render_fixtures import SAMPLE, copy_sample, cpu_node, edit_vars

from ansible_collections.gpufleet.core.plugins.module_utils.render.inputs import cluster_inputs
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_inventory

REPO = Path(__file__).resolve().parents[5]
COLLECTIONS = REPO / ".build" / "collections"
CLUSTER = "gpu-east"


def sample_inventory(root: Path) -> Path:
    inv = root / "sample"
    shutil.copytree(SAMPLE, inv)
    return inv


def nvlink_inventory(root: Path) -> Path:
    """The sample's group_vars over a generated 64-node fabric with 4-node NVLink cliques."""
    inv = copy_sample(root, "nvl")
    snap = inv / "snapshots" / CLUSTER
    snap.mkdir(parents=True)
    fab = fabric_gen.generate(fabric_gen.GenSpec(hosts=64, rails=8, su_size=8, nvl_domain=4, seed=5))
    (snap / "fabric.ibnetdiscover").write_text(fabric_gen.render_ibnetdiscover(fab), encoding="utf-8")
    nodes = fabric_gen.nodes_snapshot(fab)
    nodes["items"] += [cpu_node("sys01"), cpu_node("sys02")]
    (snap / "nodes.yaml").write_text(yaml.safe_dump(nodes, sort_keys=True), encoding="utf-8")

    def split(data: dict) -> None:  # the sample's pool sizes do not fall on 4-node domains
        for pool in data["gpufleet_pools"]:
            pool["split_nvlink_domains"] = True

    edit_vars(inv, "pools.yml", split)
    return inv


def set_plugin(inv: Path, plugin: str) -> None:
    def edit(data: dict) -> None:
        for c in data["gpufleet_clusters"]:
            c.setdefault("topology", {})["plugin"] = plugin

    edit_vars(inv, "clusters.yml", edit)


def run_module(args: dict, tmp_path: Path) -> dict:
    f = tmp_path / "args.json"
    f.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    env = {**os.environ, "PYTHONPATH": str(COLLECTIONS)}
    p = subprocess.run(
        [sys.executable, "-m", "ansible_collections.gpufleet.core.plugins.modules.slurm_topology", str(f)],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )
    out = p.stdout.strip().splitlines()
    assert out, p.stderr
    result = json.loads(out[-1])
    assert not result.get("failed"), result
    return result


@pytest.mark.parametrize("plugin", ["tree", "block"])
@pytest.mark.parametrize("fleet_kind", ["sample", "nvlink"])
def test_module_and_render_write_the_same_topology(tmp_path: Path, fleet_kind: str, plugin: str) -> None:
    inv = (sample_inventory if fleet_kind == "sample" else nvlink_inventory)(tmp_path)
    set_plugin(inv, plugin)
    result = render_inventory(inv)
    fleet = result.fleet
    cluster = fleet.clusters[CLUSTER]
    inputs = cluster_inputs(fleet, cluster)
    assert inputs.topology.block_source == "nvlink"  # both fleets label their nodes with NVLink cliques
    compared = 0
    for tenant in fleet.cluster_tenants(CLUSTER):
        nodes = sorted({n for p in fleet.tenant_pools(tenant.name, "slurm") for n in inputs.members.get(p.name, [])})
        rendered = result.files.get(f"clusters/{CLUSTER}/tenants/{tenant.name}/slurm/topology.conf")
        if not nodes:
            assert rendered is None
            continue
        args = {
            "ibnetdiscover": [str(cluster.fabric.path)],
            "nodes_snapshot": str(cluster.nodes_snapshot),
            "exclude": [*cluster.fabric.exclude_hosts, *cluster.fabric.exclude_switches],
            "nodes": nodes,
            "format": plugin,
        }
        module = run_module(args, tmp_path)
        assert rendered is not None, f"{tenant.name}: no topology.conf rendered"
        assert rendered.decode("utf-8") == module["content"], tenant.name
        if plugin == "block":
            assert module["topology"]["block_source"] == "nvlink"
            assert "BlockName=nvl-" in module["content"]
        compared += 1
    assert compared >= 2  # the sample has two Slurm tenants
