"""A switch tree with problems is a render error: a typo in a fabric file's switch name
(`switches: [leaf-1, leaf-2x]`) no longer renders a topology.conf with two roots in silence."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.scaffold import fleet_repo

REPO = Path(__file__).resolve().parents[5]
CLI = [sys.executable, str(REPO / "scripts" / "gpufleet.py")]


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    root = tmp_path / "fleet"
    fleet_repo.scaffold(root, fleet_repo.options(root, org="example-org"))
    (root / ".git").mkdir()  # the GitOps tree goes to <work tree>/gitops
    return root


def render(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "render", "--inventory", "inventories/prod"], cwd=root, capture_output=True, text=True, check=False
    )


def typo(root: Path) -> Path:
    fabric = root / "inventories/prod/snapshots/gpu-1/fabric.yaml"
    text = fabric.read_text()
    assert "switches: [leaf-1, leaf-2]" in text
    fabric.write_text(text.replace("switches: [leaf-1, leaf-2]", "switches: [leaf-1, leaf-2x]"))
    return fabric


def test_the_example_fabric_renders_one_root(fleet: Path) -> None:
    p = render(fleet)
    assert p.returncode == 0 and "WARNING" not in p.stderr, p.stderr
    conf = (fleet / "gitops/clusters/gpu-1/tenants/team-a/slurm/topology.conf").read_text()
    assert "SwitchName=spine-1 Switches=leaf-1" in conf


def test_a_switch_name_typo_is_an_error_naming_the_file_and_switches(fleet: Path) -> None:
    fabric = typo(fleet)
    p = render(fleet)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    assert "inventories/prod/group_vars/all/clusters.yml:" in p.stderr and "gpufleet_clusters[0].fabric" in p.stderr
    assert str(fabric.relative_to(fleet / "inventories/prod")) in p.stderr
    assert "dangling switch(es)" in p.stderr and "'leaf-2x'" in p.stderr
    assert "2 roots ('leaf-1', 'leaf-2')" in p.stderr and "allow_topology_problems" in p.stderr
    assert not (fleet / "gitops").exists(), "nothing is written"


def test_allowing_topology_problems_renders_with_a_loud_warning(fleet: Path) -> None:
    typo(fleet)
    clusters = fleet / "inventories/prod/group_vars/all/clusters.yml"
    clusters.write_text(
        clusters.read_text().replace(
            "      source: file\n", "      source: file\n      allow_topology_problems: true\n"
        )
    )
    p = render(fleet)
    assert p.returncode == 0, p.stderr
    assert "gpufleet: WARNING: cluster 'gpu-1':" in p.stderr and "'leaf-2x'" in p.stderr and "2 roots" in p.stderr
