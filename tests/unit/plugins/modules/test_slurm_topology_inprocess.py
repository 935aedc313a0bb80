"""slurm_topology in-process: topology.conf written once, unchanged on rerun, check mode, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpufleet_testlib import fabric_gen
from module_harness import run_module


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    g = fabric_gen.generate(fabric_gen.GenSpec(hosts=32, rails=4, su_size=8))
    f = tmp_path_factory.mktemp("fabric") / "ibnetdiscover.out"
    f.write_text(fabric_gen.render_ibnetdiscover(g))
    return f


def test_check_write_rerun(dump: Path, tmp_path: Path) -> None:
    dest = tmp_path / "topology.conf"
    args = {"ibnetdiscover": [str(dump)], "dest": str(dest), "nodes": ["gpu[001-032]", "gpu099"]}
    r = run_module("slurm_topology", args, check=True, diff=True)
    assert r["changed"] is True and not dest.exists() and r["diff"]["before"] == ""
    assert r["content"].count("SwitchName=") == len(r["topology"]["leaf_groups"]) + len(r["topology"]["roots"])
    assert any("gpu099" in w for w in r["warnings"])  # a node not in the fabric
    r = run_module("slurm_topology", args)
    assert r["changed"] is True and dest.read_text() == r["content"]
    r = run_module("slurm_topology", args)
    assert r["changed"] is False


def test_errors_fail_cleanly(dump: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.out"
    bad.write_text("vendid=0x2c9\nSwitch 12 nonsense\n")
    r = run_module("slurm_topology", {"ibnetdiscover": [str(bad)], "dest": str(tmp_path / "t.conf")})
    assert r["failed"] is True and f"{bad}:2" in r["msg"] and not (tmp_path / "t.conf").exists()
    r = run_module("slurm_topology", {"ibnetdiscover": [str(dump)], "mode": "rwx", "dest": str(tmp_path / "t.conf")})
    assert r["failed"] is True and "mode" in r["msg"]
    r = run_module("slurm_topology", {"format": "tree"})  # no input at all
    assert r["failed"] is True and "one of the following is required" in r["msg"]
