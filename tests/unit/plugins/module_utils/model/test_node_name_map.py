"""One option name for the fabric host -> Node name map: ``node_name_map {pattern, replacement}`` in the
inventory and the modules; the former spellings (inventory ``replace``, module option ``node_map``) still work."""

from __future__ import annotations

from pathlib import Path

import pytest
from render_fixtures import copy_sample, edit_vars

from ansible_collections.gpufleet.core.plugins.module_utils.errors import ModelError
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.topology.build import make_node_map
from ansible_collections.gpufleet.core.plugins.module_utils.topology.task import topology_from_params

REPO = Path(__file__).resolve().parents[5]
SAMPLE = REPO / "inventories" / "sample"


def test_replace_is_read_as_replacement() -> None:
    new = make_node_map({"pattern": r"dgx-(\d+)", "replacement": r"gpu\1"})
    old = make_node_map({"pattern": r"dgx-(\d+)", "replace": r"gpu\1"})
    assert new("dgx-07") == old("dgx-07") == "gpu07" and old("other") == "other"


@pytest.mark.parametrize("key", ["node_name_map", "node_map"])
def test_module_option_and_its_alias_reach_the_loader(tmp_path: Path, key: str) -> None:
    fabric = tmp_path / "fabric.yaml"
    fabric.write_text("switches:\n  s: {switches: [l]}\n  l: {nodes: [dgx-1, dgx-2]}\n")
    topo = topology_from_params({"fabric": str(fabric), key: {"pattern": r"dgx-(\d+)", "replacement": r"gpu\1"}})
    assert sorted(topo.node_group) == ["gpu1", "gpu2"]


def _with_map(tmp_path: Path, nmap: dict) -> Path:
    inv = copy_sample(tmp_path)
    edit_vars(inv, "clusters.yml", lambda d: d["gpufleet_clusters"][0]["fabric"].update(node_name_map=nmap))
    return inv


@pytest.mark.parametrize("key", ["replacement", "replace"])
def test_inventory_accepts_both_spellings(tmp_path: Path, key: str) -> None:
    fleet = load_fleet(_with_map(tmp_path, {"pattern": r"gpu(\d+)", key: r"gpu\1"}))
    assert fleet.clusters["gpu-east"].fabric.node_name_map == {"pattern": r"gpu(\d+)", key: r"gpu\1"}


@pytest.mark.parametrize("nmap", [{"pattern": "x"}, {"pattern": "x", "replace": "y", "replacement": "y"}])
def test_inventory_needs_exactly_one(tmp_path: Path, nmap: dict) -> None:
    with pytest.raises(ModelError) as exc:
        load_fleet(_with_map(tmp_path, nmap))
    assert "node_name_map: needs exactly one of replacement" in str(exc.value) and "clusters.yml:" in str(exc.value)
