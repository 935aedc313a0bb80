"""Snapshots may be JSON (``kubectl get nodes -o json``): same result as YAML, errors still located."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.module_utils.model.nodes import NodesError, load_nodes
from ansible_collections.gpufleet.core.plugins.module_utils.yaml_dump import safe_load

SAMPLE_NODES = Path(__file__).resolve().parents[5] / "inventories" / "sample" / "snapshots" / "gpu-east" / "nodes.yaml"


def test_json_snapshot_loads_like_yaml(tmp_path: Path) -> None:
    doc = yaml.safe_load(SAMPLE_NODES.read_text())
    as_json = tmp_path / "nodes.json"
    as_json.write_text(json.dumps(doc, indent=2, sort_keys=True))
    from_json = load_nodes(as_json)
    assert from_json == load_nodes(SAMPLE_NODES)
    assert [n.cpu_millis for n in from_json] == [n.cpu_millis for n in load_nodes(SAMPLE_NODES)]
    assert len(from_json) == 64


def test_broken_json_is_located_by_line(tmp_path: Path) -> None:
    bad = tmp_path / "nodes.json"
    bad.write_text('{\n  "kind": "List",\n  "items": [\n    {"metadata": {"name": "a"}\n  ]\n}\n')
    with pytest.raises(NodesError, match=r"nodes\.json:\d+: not valid YAML"):
        load_nodes(bad)


@pytest.mark.parametrize("text", ["[1, 2]", '{"a": {"b": [true, null]}}', "a: 1\n", "- x\n- y\n"])
def test_safe_load_equals_yaml(text: str) -> None:
    assert safe_load(text) == yaml.safe_load(text)
