"""One row per platform component (model/components.py): every place that names a component agrees
with the table, and a new row (plus its chart pin and values function) reaches the schema, the
model, the rendered tree, the collision check, the apply step's releases and a new repository."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from render_fixtures import collection_copy, copy_sample, edit_vars, insert_before, run_on_copy

from ansible_collections.gpufleet.core.plugins.module_utils.model import components, fleet, schema, variables
from ansible_collections.gpufleet.core.plugins.module_utils.model.facts import fleet_facts
from ansible_collections.gpufleet.core.plugins.module_utils.render import collisions, shared_names
from ansible_collections.gpufleet.core.plugins.module_utils.render.platform import cluster as platform
from ansible_collections.gpufleet.core.plugins.module_utils.scaffold import fleet_repo
from ansible_collections.gpufleet.core.plugins.module_utils.versions import CHARTS

REPO = Path(__file__).resolve().parents[5]
SAMPLE = REPO / "inventories" / "sample"
MU = "plugins/module_utils"


def _schema_components() -> dict:
    cluster = schema.SCHEMA["properties"]["gpufleet_clusters"]["items"]["properties"]
    return cluster["components"]["properties"]


def test_every_derived_place_agrees_with_the_table() -> None:
    names = [r.name for r in components.COMPONENTS]
    assert list(fleet.COMPONENTS) == names
    assert list(_schema_components()) == names
    for row in components.COMPONENTS:
        props = _schema_components()[row.name]["properties"]
        assert set(row.options) <= set(props), row.name
        assert row.chart in CHARTS, row.name
        assert shared_names.DEFAULT_NAMESPACES[row.name] == row.namespace
        assert shared_names.COMPONENT_CHART[row.name] == row.chart
        assert (row.name in collisions.HOST_COMPONENTS) == row.host
        assert all(r.chart in CHARTS for r in row.releases), row.name
        if row.role:
            assert row.name in variables.ROLES
            assert (REPO / "roles" / row.name / "meta" / "argument_specs.yml").is_file(), row.name
    assert set(platform.VALUES) == {r.name for r in components.COMPONENTS if r.host}


def test_the_sample_renders_one_application_per_enabled_host_row() -> None:
    apps = {p.name for p in (REPO / "gitops/clusters/gpu-east/apps").iterdir()}
    for row in components.COMPONENTS:
        if row.host:
            assert row.app in apps, row.name
            assert (REPO / "gitops/clusters/gpu-east/platform" / row.part / "values.yaml").is_file(), row.name


def test_the_apply_step_gets_each_rows_releases() -> None:
    comps = fleet_facts(SAMPLE)["clusters"][0]["components"]
    assert [r["release_name"] for r in comps["slurm_operator"]["releases"]] == ["slurm-operator-crds", "slurm-operator"]
    gitops = REPO / "gitops/clusters/gpu-east"
    for name, comp in comps.items():
        assert comp["bootstrap"] == components.ROWS[name].bootstrap
        for rel in comp["releases"]:
            assert (gitops / rel["values_file"]).is_file(), (name, rel)
            assert rel["chart"]["chart_ref"], (name, rel)


def test_a_vcluster_component_without_a_slurm_tenant_has_no_values_file() -> None:
    row = components.ROWS["slurm_operator"]
    assert [r["values_file"] for r in components.helm_releases(row, None, [], {})] == ["", ""]
    got = components.helm_releases(row, "ops", ["zeta", "alpha"], {})
    assert [r["values_file"] for r in got] == [
        "tenants/alpha/slurm-operator-crds/values.yaml",
        "tenants/alpha/slurm-operator/values.yaml",
    ]
    assert {r["namespace"] for r in got} == {"ops"}


def test_a_new_repository_lists_every_row() -> None:
    text = "components:" + fleet_repo._components_yml("east")
    assert list(yaml.safe_load(text)["components"]) == list(fleet.COMPONENTS)


# What adding a component takes: its row, its chart's pin and its values function. The script runs
# on a copy of the collection with those three edits and prints what reached each derived place.
ROW = """    Row(
        "fake_operator",
        "fake_operator",
        "fake-system",
        host=True,
        app="50-fake-operator.yaml",
        part="fake-operator",
        wave="operators",
        releases=(Release("fake_operator", "fake-operator", "platform/fake-operator/values.yaml"),),
    ),
"""
PIN = '    "fake_operator": _chart("https://charts.example.invalid", "fake-operator", "1.0.0"),\n'
VALUES = '    "fake_operator": lambda _fleet, _cluster: {"replicas": 2},\n'
SCRIPT = """
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from ansible_collections.gpufleet.core.plugins.module_utils.model import fleet, schema
from ansible_collections.gpufleet.core.plugins.module_utils.model.facts import fleet_facts
from ansible_collections.gpufleet.core.plugins.module_utils.render import collisions
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_inventory, write_render
from ansible_collections.gpufleet.core.plugins.module_utils.scaffold import fleet_repo
inv, out = Path(sys.argv[2]), Path(sys.argv[3])
write_render(render_inventory(inv), out)
comps = schema.SCHEMA["properties"]["gpufleet_clusters"]["items"]["properties"]["components"]["properties"]
print(json.dumps({
    "model": "fake_operator" in fleet.COMPONENTS,
    "schema": "fake_operator" in comps,
    "host": "fake_operator" in collisions.HOST_COMPONENTS,
    "releases": fleet_facts(inv)["clusters"][0]["components"]["fake_operator"]["releases"],
    "scaffold": "fake_operator: {}" in fleet_repo._components_yml("east"),
}))
"""


def test_a_new_row_flows_through_to_the_rendered_tree(tmp_path: Path) -> None:
    core = collection_copy(tmp_path)
    insert_before(core / MU / "model/components.py", '    Row("kueue", "kueue"', ROW)
    insert_before(core / MU / "versions.py", '    "argocd": _chart(', PIN)
    insert_before(core / MU / "render/platform/cluster.py", '    "shared_storage": csi_driver_nfs_values,', VALUES)
    inv = copy_sample(tmp_path, snapshots=True)
    edit_vars(inv, "clusters.yml", lambda d: d["gpufleet_clusters"][0]["components"].update(fake_operator={}))
    out = tmp_path / "out"
    proc = run_on_copy(core, SCRIPT, str(inv), str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.splitlines()[-1])
    assert got["model"] and got["schema"] and got["host"] and got["scaffold"], got
    assert [(r["release_name"], r["namespace"], r["values_file"]) for r in got["releases"]] == [
        ("fake-operator", "fake-system", "platform/fake-operator/values.yaml")
    ]
    cluster = out / "clusters" / "gpu-east"
    assert yaml.safe_load((cluster / "platform/fake-operator/values.yaml").read_text()) == {"replicas": 2}
    app = yaml.safe_load((cluster / "apps/50-fake-operator.yaml").read_text())
    assert app["spec"]["destination"]["namespace"] == "fake-system"
    assert any(s.get("chart") == "fake-operator" for s in app["spec"]["sources"]), app["spec"]
