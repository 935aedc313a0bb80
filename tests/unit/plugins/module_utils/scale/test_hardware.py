"""`gpufleet.py hardware add|remove`: nodes and their leaf in the snapshots, refused whole or written whole."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.module_utils.fabric.file import parse_fabric_yaml
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.render import tree as render_tree
from ansible_collections.gpufleet.core.plugins.module_utils.scaffold import fleet_repo

REPO = Path(__file__).resolve().parents[5]
CLI = REPO / "scripts" / "gpufleet.py"


@pytest.fixture()
def lab(tmp_path: Path) -> Path:
    root = tmp_path / "lab"
    fleet_repo.scaffold(root, fleet_repo.options(root, org="lab", tenants=["vision:slurm", "serving:kubernetes"]))
    return root


def hw(lab: Path, *args: str) -> subprocess.CompletedProcess[str]:
    inv = str(lab / "inventories/prod")
    return subprocess.run(
        [sys.executable, str(CLI), "hardware", *args, "-i", inv, "--cluster", "gpu-1"],
        capture_output=True,
        text=True,
        check=False,
    )


def snapshot(lab: Path) -> tuple[list[str], dict[str, object]]:
    snap = lab / "inventories/prod/snapshots/gpu-1"
    nodes = [i["metadata"]["name"] for i in yaml.safe_load((snap / "nodes.yaml").read_text())["items"]]
    return nodes, yaml.safe_load((snap / "fabric.yaml").read_text())["switches"]


def test_a_new_leaf_then_its_removal(lab: Path) -> None:
    nodes0, switches0 = snapshot(lab)
    p = hw(lab, "add", "--nodes", "gpu[025-032]", "--leaf", "leaf-4", "--parent", "spine-1")
    assert p.returncode == 0, p.stderr
    assert "new leaf switch leaf-4 under spine-1" in p.stdout and "pools.yml" in p.stdout
    nodes, switches = snapshot(lab)
    assert nodes[-8:] == [f"gpu{i:03d}" for i in range(25, 33)] and nodes[:-8] == nodes0
    assert switches["leaf-4"] == {"nodes": ["gpu[025-032]"]} and "leaf-4" in switches["spine-1"]["switches"]
    fabric = (lab / "inventories/prod/snapshots/gpu-1/fabric.yaml").read_text()
    assert fabric.startswith("# Example fabric")  # the comments are kept
    parse_fabric_yaml(fabric, "fabric.yaml")
    # the fleet renders with the new nodes (in no pool until one grows)
    result = render_tree.render_inventory(lab / "inventories/prod")
    assert {n.name for n in result.inputs["gpu-1"].nodes} >= {"gpu025", "gpu032"}
    # the Nodes are copies of the leaf's model with their own names
    items = yaml.safe_load((lab / "inventories/prod/snapshots/gpu-1/nodes.yaml").read_text())["items"]
    assert items[-1]["metadata"]["labels"]["kubernetes.io/hostname"] == "gpu032"

    p = hw(lab, "remove", "--nodes", "gpu[025-032]")
    assert p.returncode == 0 and "leaf switch leaf-4 removed" in p.stdout, p.stderr
    nodes, switches = snapshot(lab)
    assert nodes == nodes0 and switches == switches0
    load_fleet(lab / "inventories/prod")


def test_more_nodes_on_an_existing_leaf_and_the_refusals(lab: Path) -> None:
    snap = lab / "inventories/prod/snapshots/gpu-1"
    before = {p.name: p.read_bytes() for p in snap.iterdir()}
    cases = [
        (("add", "--nodes", "gpu[008-009]", "--leaf", "leaf-1"), "already in the cluster"),
        (("add", "--nodes", "gpu040", "--leaf", "leaf-9"), "--parent must name the switch"),
        (("add", "--nodes", "gpu040", "--leaf", "leaf-1", "--parent", "spine-1"), "--parent is only for a new leaf"),
        (("add", "--nodes", "gpu040", "--leaf", "spine-1"), "nodes go under a leaf"),
        (("add", "--nodes", "gpu040", "--leaf", "leaf-1", "--like", "gpu999"), "--like 'gpu999'"),
        (("remove", "--nodes", "gpu[001,099]"), "no node(s) gpu099"),
    ]
    for args, message in cases:
        p = hw(lab, *args)
        assert p.returncode == 2 and message in p.stderr, (args, p.stderr)
    assert {p.name: p.read_bytes() for p in snap.iterdir()} == before  # nothing half-written
    last = snapshot(lab)[0][-1]
    p = hw(lab, "add", "--nodes", "gpu[090-091]", "--leaf", "leaf-1", "--like", last)
    assert p.returncode == 0, p.stderr
    assert snapshot(lab)[1]["leaf-1"] == {"nodes": ["gpu[001-008,090-091]"]}
