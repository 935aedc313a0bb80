"""One row per fabric source (model/fabric_sources.py): every place that names a source agrees with the
table, and a new format is three files (its row, its parser, its lines in fabric/load.py) that reach
the schema, validation, the fleet model, the topology loader and the rendered topology.conf."""

from __future__ import annotations

from pathlib import Path

import pytest
from render_fixtures import collection_copy, copy_sample, edit_vars, insert_before, model_errors, run_on_copy

from ansible_collections.gpufleet.core.plugins.module_utils.fabric import load
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.model import FabricError
from ansible_collections.gpufleet.core.plugins.module_utils.model import fabric_sources, schema
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.topology import topology_load

REPO = Path(__file__).resolve().parents[5]
MU = "plugins/module_utils"


def test_every_derived_place_agrees_with_the_table() -> None:
    fabric = schema.SCHEMA["properties"]["gpufleet_clusters"]["items"]["properties"]["fabric"]["properties"]
    assert fabric["source"]["enum"] == list(fabric_sources.CHOICES)
    own_file = {s.name for s in fabric_sources.SOURCES if not s.reads_nodes}
    assert set(load.SOURCE_KIND) == own_file and set(load.SOURCE_KIND.values()) <= set(load.KINDS)
    assert all(s.needs_path for s in fabric_sources.SOURCES if s.name in own_file)
    params = {"ibnetdiscover": ["a.out", "b.out"], "fabric": "f.yaml"}
    assert topology_load.module_inputs(params) == [
        ("ibnetdiscover", "a.out"),
        ("ibnetdiscover", "b.out"),
        ("file", "f.yaml"),
    ]
    with pytest.raises(FabricError, match="unknown fabric source 'labels'"):
        load.load_source("labels", "x")


def test_a_source_that_needs_a_path_is_refused_without_one(inv: Path) -> None:
    def drop_path(d: dict) -> None:
        d["gpufleet_clusters"][0]["fabric"] = {"source": "file"}

    edit_vars(inv, "clusters.yml", drop_path)
    assert any("fabric source 'file' needs a path" in e for e in model_errors(inv))


PARSER = '''
"""Test format: one leaf switch a line, then the hosts under it; every leaf hangs off one core switch."""
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.model import HOST, Fabric


def parse_leafmap(text, source):
    fab = Fabric(source=source, kind="leafmap")
    fab.switch("core", "core", 1)
    for n, line in enumerate(text.splitlines(), 1):
        leaf, *hosts = line.split()
        fab.switch(leaf, leaf, n)
        fab.link_switches("core", leaf)
        for host in hosts:
            ca = fab.ca("H-" + host, host + " leafmap", n)
            ca.kind, ca.host, ca.device = HOST, host, "leafmap"
            fab.link_ca(ca.id, leaf)
    return fab.finish()
'''
ROW = '    FabricSource("leafmap", needs_path=True, reads_nodes=False, module_option=None),\n'
SCRIPT = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_inventory, write_render
write_render(render_inventory(Path(sys.argv[2])), Path(sys.argv[3]))
"""


def _leaf_lines(inv: Path) -> str:
    """The sample's leaf groups, written in the new format."""
    cluster = next(iter(load_fleet(inv).clusters.values()))
    topo = topology_load.load_topology([("ibnetdiscover", cluster.fabric.path)], nodes_snapshot=cluster.nodes_snapshot)
    return "".join(f"{g} {' '.join(ns)}\n" for g, ns in topo.leaf_groups)


def test_a_new_format_is_three_files(tmp_path: Path) -> None:
    core = collection_copy(tmp_path)
    (core / MU / "fabric/leafmap.py").write_text(PARSER, encoding="utf-8")  # 1: the parser
    insert_before(core / MU / "model/fabric_sources.py", '    FabricSource("file"', ROW)  # 2: the row
    load_py = core / MU / "fabric/load.py"  # 3: its lines in the loader
    insert_before(
        load_py,
        "from ansible_collections.gpufleet.core.plugins.module_utils.fabric.model import",
        ("from ansible_collections.gpufleet.core.plugins.module_utils.fabric.leafmap import parse_leafmap\n"),
    )
    insert_before(load_py, '    "file": parse_fabric_yaml,\n', '    "leafmap": parse_leafmap,\n')
    insert_before(load_py, '"file": "file"}', '"leafmap": "leafmap", ')
    inv = copy_sample(tmp_path, snapshots=True)
    (inv / "snapshots/gpu-east/fabric.leafmap").write_text(_leaf_lines(inv), encoding="utf-8")
    edit_vars(
        inv,
        "clusters.yml",
        lambda d: d["gpufleet_clusters"][0]["fabric"].update(
            source="leafmap", path="snapshots/gpu-east/fabric.leafmap"
        ),
    )
    out = tmp_path / "out"
    proc = run_on_copy(core, SCRIPT, str(inv), str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    conf = (out / "clusters/gpu-east/tenants/research/slurm/topology.conf").read_text()
    committed = (REPO / "gitops/clusters/gpu-east/tenants/research/slurm/topology.conf").read_text()
    leaves = sorted(line for line in conf.splitlines() if "Nodes=" in line)
    assert leaves and leaves == sorted(line for line in committed.splitlines() if "Nodes=" in line)
    assert "SwitchName=core Switches=" in conf and "spine" not in conf  # the tree came from the new file
