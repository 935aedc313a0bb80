"""fabric_facts in-process: leaf groups and health from saved output, from labels, and the snapshot file."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from gpufleet_testlib import fabric_gen
from module_harness import run_module


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("fleet")
    g = fabric_gen.generate(fabric_gen.GenSpec(hosts=32, rails=4, su_size=8, cut_cables=1))
    (d / "ibnetdiscover.out").write_text(fabric_gen.render_ibnetdiscover(g))
    (d / "nodes.yaml").write_text(yaml.safe_dump(fabric_gen.nodes_snapshot(g)))
    return d


def test_saved_output_health_and_check_mode(fleet: Path) -> None:
    r = run_module("fabric_facts", {"src": str(fleet / "ibnetdiscover.out"), "nodes": ["gpu[001-033]"]}, check=True)
    assert r["changed"] is False and len(r["fabric"]["leaf_groups"]) == 4
    assert r["fabric"]["health"]["hosts_missing_rails_count"] == 1  # the cut cable
    assert r["fabric"]["health"]["nodes_not_in_fabric"] == ["gpu033"]


def test_discovery_saves_the_snapshot_once(fleet: Path, tmp_path: Path) -> None:
    shim = tmp_path / "ibnetdiscover"
    shim.write_text(f"#!/bin/sh\ncat {fleet / 'ibnetdiscover.out'}\n")
    shim.chmod(0o755)
    dest = tmp_path / "snap" / "ibnetdiscover.out"
    args = {"ibnetdiscover_path": str(shim), "dest": str(dest)}
    r = run_module("fabric_facts", args, check=True)
    assert r["changed"] is True and not dest.exists()
    r = run_module("fabric_facts", args)
    assert r["changed"] is True and dest.read_bytes() == (fleet / "ibnetdiscover.out").read_bytes()
    assert run_module("fabric_facts", args)["changed"] is False


def test_labels_and_errors(fleet: Path, tmp_path: Path) -> None:
    r = run_module("fabric_facts", {"nodes_snapshot": str(fleet / "nodes.yaml"), "discover": False})
    assert r["fabric"]["leaf_groups"] == [] and r["fabric"]["blocks"]
    r = run_module("fabric_facts", {"ibnetdiscover_path": str(tmp_path / "no-such-ibnetdiscover")})
    assert r["failed"] is True and "no-such-ibnetdiscover" in r["msg"]
    bad = tmp_path / "fabric.yaml"
    bad.write_text("switches: [not, a, mapping]\n")
    r = run_module("fabric_facts", {"fabric": str(bad)})
    assert r["failed"] is True and str(bad) in r["msg"]
