"""The slurm_topology and fabric_facts modules, run as Ansible runs them (python -m with an args file)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from gpufleet_testlib import fabric_gen

from ansible_collections.gpufleet.core.plugins.module_utils.fabric.model import FabricError
from ansible_collections.gpufleet.core.plugins.module_utils.topology.task import run_slurm_topology

REPO = Path(__file__).resolve().parents[4]
COLLECTIONS = REPO / ".build" / "collections"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    d = tmp_path_factory.mktemp("fleet")
    g = fabric_gen.generate(fabric_gen.GenSpec(hosts=64, rails=8, su_size=8, sharp=1, unnamed=1, cut_cables=1))
    (d / "ibnetdiscover.out").write_text(fabric_gen.render_ibnetdiscover(g))
    (d / "ibnetdiscover-p.out").write_text(fabric_gen.render_ports(g))
    (d / "nodes.yaml").write_text(yaml.safe_dump(fabric_gen.nodes_snapshot(g)))
    for r, plane in enumerate(fabric_gen.planes(g)):
        (d / f"plane-mlx5_{r}.out").write_text(fabric_gen.render_ibnetdiscover(g, plane))
    return d


def run_module(
    name: str, args: dict, tmp_path: Path, check: bool = False, diff: bool = False, env: dict | None = None
) -> dict:
    f = tmp_path / f"args-{name}.json"
    f.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {**args, "_ansible_check_mode": check, "_ansible_diff": diff}}))
    e = {**os.environ, "PYTHONPATH": str(COLLECTIONS), **(env or {})}
    p = subprocess.run(
        [sys.executable, "-m", f"ansible_collections.gpufleet.core.plugins.modules.{name}", str(f)],
        capture_output=True,
        text=True,
        env=e,
        timeout=120,
        check=False,
    )
    out = p.stdout.strip().splitlines()
    assert out, p.stderr
    return json.loads(out[-1])


def test_module_writes_once_then_unchanged(fleet, tmp_path):
    dest = tmp_path / "etc" / "topology.conf"
    args = {"ibnetdiscover": [str(fleet / "ibnetdiscover.out")], "dest": str(dest)}
    r = run_module("slurm_topology", args, tmp_path, check=True, diff=True)
    assert r["changed"] is True and not dest.exists()
    assert r["diff"]["before"] == "" and "SwitchName=spine" in r["diff"]["after"]
    r = run_module("slurm_topology", args, tmp_path)
    assert r["changed"] is True and dest.read_text() == r["content"]
    mtime = dest.stat().st_mtime_ns
    r = run_module("slurm_topology", args, tmp_path)
    assert r["changed"] is False and dest.stat().st_mtime_ns == mtime
    r = run_module("slurm_topology", args, tmp_path, check=True)
    assert r["changed"] is False
    assert r["health"]["hosts_missing_rails_count"] == 2  # the cut cable and the unnamed HCA
    assert r["topology"]["roots"] == ["spine"]
    assert r["slinky_spec"]["gpu001"] == "default:spine:su01-leaf"


def test_module_yaml_with_cliques_and_nodes(fleet, tmp_path):
    args = {
        "ibnetdiscover": [str(fleet / "ibnetdiscover-p.out")],
        "nodes_snapshot": str(fleet / "nodes.yaml"),
        "format": "yaml",
        "nodes": ["gpu[001-032]"],
        "topologies": [
            {"name": "topo-tree", "plugin": "tree", "cluster_default": True},
            {"name": "topo-block", "plugin": "block", "block_sizes": [8, 16]},
        ],
    }
    r = run_module("slurm_topology", args, tmp_path)
    doc = yaml.safe_load(r["content"])
    assert [d["topology"] for d in doc] == ["topo-tree", "topo-block"]
    assert len(doc[1]["block"]["blocks"]) == 4
    assert r["health"]["fabric_not_in_nodes"][0] == "gpu033"
    assert r["slinky_spec"]["gpu001"].startswith("topo-tree:spine:su01-leaf,topo-block:nvl-")
    assert r["changed"] is False  # no dest


def test_module_errors_are_clean(fleet, tmp_path):
    bad = tmp_path / "bad.out"
    bad.write_text("vendid=0x2c9\nSwitch 12 nonsense\n")
    r = run_module("slurm_topology", {"ibnetdiscover": [str(bad)], "dest": str(tmp_path / "t.conf")}, tmp_path)
    assert r["failed"] is True and f"{bad}:2" in r["msg"]
    assert not (tmp_path / "t.conf").exists()
    r = run_module("slurm_topology", {"ibnetdiscover": [str(fleet / "ibnetdiscover.out")], "strict": True}, tmp_path)
    assert r["failed"] is True and "strict" in r["msg"]
    r = run_module(
        "slurm_topology", {"ibnetdiscover": [str(fleet / "ibnetdiscover.out")], "nodes": ["gpu001", "gpu999"]}, tmp_path
    )
    assert "gpu999" in json.dumps(r["warnings"]) and "deprecations" not in r


def test_fabric_facts_runs_ibnetdiscover(fleet, tmp_path):
    # stand-in for infiniband-diags on a host with an HCA: replays a saved fabric, prints -p when asked
    shim = tmp_path / "bin" / "ibnetdiscover"
    shim.parent.mkdir()
    shim.write_text(
        f'#!/bin/sh\nif [ "$1" = -p ]; then cat {fleet / "ibnetdiscover-p.out"}; '
        f"else cat {fleet / 'ibnetdiscover.out'}; fi\n"
    )
    shim.chmod(0o755)
    env = {"PATH": f"{shim.parent}:{os.environ['PATH']}"}
    dest = tmp_path / "snap" / "ibnetdiscover.out"
    r = run_module(
        "fabric_facts", {"dest": str(dest), "nodes": ["gpu[001-064]", "gpu099"]}, tmp_path, check=True, env=env
    )
    assert r["changed"] is True and not dest.exists()
    assert r["fabric"]["health"]["nodes_not_in_fabric"] == ["gpu099"]
    r = run_module("fabric_facts", {"dest": str(dest)}, tmp_path, env=env)
    assert r["changed"] is True and dest.read_text() == (fleet / "ibnetdiscover.out").read_text()
    r = run_module("fabric_facts", {"dest": str(dest)}, tmp_path, env=env)
    assert r["changed"] is False
    r = run_module("fabric_facts", {"ports": True}, tmp_path, env=env)
    assert len(r["fabric"]["leaf_groups"]) == 8
    r = run_module("fabric_facts", {"ibnetdiscover_path": "no-such-ibnetdiscover"}, tmp_path, env=env)
    assert r["failed"] is True


def test_fabric_facts_from_labels(fleet, tmp_path):
    r = run_module("fabric_facts", {"nodes_snapshot": str(fleet / "nodes.yaml"), "discover": False}, tmp_path)
    assert r["fabric"]["leaf_groups"] == [] and len(r["fabric"]["blocks"]) == 8


def test_task_needs_a_source():
    with pytest.raises(FabricError, match="one of"):
        run_slurm_topology({})


def test_fabric_facts_one_run_per_rail_hca(fleet, tmp_path):
    # stand-in for ibnetdiscover -C <dev>: each HCA sees only its rail's subnet
    shim = tmp_path / "bin" / "ibnetdiscover"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\n[ "$1" = -C ] && exec cat {fleet}/plane-"$2".out\nexit 3\n')
    shim.chmod(0o755)
    env = {"PATH": f"{shim.parent}:{os.environ['PATH']}"}
    hcas = [f"mlx5_{r}:1" for r in range(8)]
    r = run_module("fabric_facts", {"hcas": hcas, "dest": str(tmp_path / "f.out")}, tmp_path, env=env)
    assert [len(g["nodes"]) for g in r["fabric"]["leaf_groups"]] == [8] * 8
    assert r["fabric"]["roots"] == ["spine"]
    r1 = run_module("fabric_facts", {"hcas": hcas[:1]}, tmp_path, env=env)
    assert len(r1["fabric"]["leaf_groups"]) == 8  # one rail still shows the units
    r = run_module("fabric_facts", {}, tmp_path, env=env)
    assert r["failed"] is True and "rc=3" in r["msg"]
