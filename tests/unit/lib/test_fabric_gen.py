"""The fabric generator and its CLI: deterministic, realistic options, matching node list."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml
from gpufleet_testlib import fabric_gen

from ansible_collections.gpufleet.core.plugins.module_utils.fabric.load import load_fabric

SAMPLE = [
    "--hosts",
    "64",
    "--su-size",
    "8",
    "--rails",
    "8",
    "--tiers",
    "2",
    "--sharp",
    "1",
    "--unnamed",
    "1",
    "--cut-cables",
    "1",
]


def run_cli(repo_root, tmp_path, *args):
    return subprocess.run(
        [sys.executable, str(repo_root / "scripts" / "fabric_gen.py"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )


def test_cli_sample_fleet_is_deterministic(repo_root, tmp_path):
    outs = []
    for i in range(2):
        r = run_cli(repo_root, tmp_path, *SAMPLE, "--out", f"f{i}.out", "--nodes-out", f"n{i}.yaml")
        assert r.returncode == 0, r.stderr
        outs.append(((tmp_path / f"f{i}.out").read_bytes(), (tmp_path / f"n{i}.yaml").read_bytes()))
    assert outs[0] == outs[1]
    fab = load_fabric(str(tmp_path / "f0.out"))
    s = fab.summary()
    assert s["hosts"] == 64 and s["sharp_nodes"] == 1 and s["unnamed_hcas"] == 1
    assert s["hcas"] == 64 * 8 - 2  # one cable cut, one HCA unnamed
    nodes = yaml.safe_load((tmp_path / "n0.yaml").read_text())
    assert nodes["kind"] == "List" and len(nodes["items"]) == 64
    assert nodes["items"][0]["metadata"]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"


def test_cli_ports_format_and_stdout(repo_root, tmp_path):
    r = run_cli(repo_root, tmp_path, "--hosts", "8", "--su-size", "4", "--rails", "1", "--format", "ports")
    assert r.returncode == 0 and r.stdout.startswith("SW ")
    assert load_fabric(r.stdout).summary()["hosts"] == 8
    r = run_cli(repo_root, tmp_path, "--tiers", "2", "--hosts", "0")
    assert r.returncode == 2 and "fabric_gen:" in r.stderr


@pytest.mark.parametrize("seed", [1, 2])
def test_seeded_faults_differ_by_seed_only(seed):
    a = fabric_gen.generate(fabric_gen.GenSpec(hosts=32, rails=8, su_size=8, cut_cables=3, unnamed=2, seed=seed))
    b = fabric_gen.generate(fabric_gen.GenSpec(hosts=32, rails=8, su_size=8, cut_cables=3, unnamed=2, seed=seed))
    assert a.cut == b.cut and a.unnamed == b.unnamed and len(a.cut) == 3
    assert not set(a.cut) & set(a.unnamed)


def test_three_tier_storage_and_sharp_everywhere():
    g = fabric_gen.generate(
        fabric_gen.GenSpec(hosts=64, rails=2, su_size=8, tiers=3, su_per_pod=2, storage=3, sharp=-1)
    )
    fab = load_fabric(fabric_gen.render_ibnetdiscover(g))
    names = {sw.name for sw in fab.switches.values()}
    assert "storage-leaf-01" in names and any(n.startswith("core-r1") for n in names)
    assert any(n.startswith("pod04-spine-r2") for n in names)
    assert fab.summary()["sharp_nodes"] == len(fab.switches)
    assert {"stor01", "stor02", "stor03"} <= set(fab.hosts())
