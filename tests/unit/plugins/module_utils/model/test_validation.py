"""The fleet model: the sample inventory loads; broken inventories give every error with file, line, key."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from render_fixtures import edit_vars, model_errors

from ansible_collections.gpufleet.core.plugins.module_utils.errors import ModelError
from ansible_collections.gpufleet.core.plugins.module_utils.model.inventory import load_inventory
from ansible_collections.gpufleet.core.plugins.module_utils.model.schema import SCHEMA
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet, validate

REPO = Path(__file__).resolve().parents[5]
SAMPLE = REPO / "inventories" / "sample"


def test_sample_loads_typed():
    fleet = load_fleet(SAMPLE)
    assert fleet.name == "sample"
    assert set(fleet.clusters) == {"gpu-east"}
    assert fleet.pools["pretrain"].tenant == "llm-pretrain"
    assert fleet.pools["pretrain"].slurm.partition == "pretrain"
    assert fleet.pools["inference"].size_gpus == 96
    assert fleet.pools["spare"].size_nodes is None
    assert fleet.clusters["gpu-east"].components["shared_storage"].options["nfs_share"] == "/export/slurm-home"
    assert [p.name for p in fleet.tenant_pools("research", "slurm")] == ["research-batch", "research-debug"]


def test_wrong_type_names_file_line_and_key(inv):
    f = edit_vars(inv, "pools.yml", lambda d: d["gpufleet_pools"][1]["size"].update(nodes="thirty-two"))
    errs = model_errors(inv)
    assert len(errs) == 1
    assert errs[0].startswith(f"{f}:")
    assert "gpufleet_pools[1].size.nodes" in errs[0]
    assert "'thirty-two' is not of type 'integer'" in errs[0]
    line = int(errs[0].split(":")[1])
    assert "thirty-two" in f.read_text().splitlines()[line - 1]


def test_unknown_key_is_an_error(inv):
    edit_vars(inv, "clusters.yml", lambda d: d["gpufleet_clusters"][0]["components"]["cilium"].update(exlusive=True))
    (err,) = model_errors(inv)
    assert "gpufleet_clusters[0].components.cilium.exlusive" in err
    assert "unknown key(s) 'exlusive'" in err and "exclusive" in err


def test_unknown_gpufleet_variable_is_an_error_other_vars_are_not(inv):
    (inv / "group_vars" / "all" / "extra.yml").write_text("gpufleet_tennants: []\nntp_servers: [a]\n")
    (err,) = model_errors(inv)
    assert "extra.yml:1" in err and "gpufleet_tennants" in err


def test_tenant_referencing_missing_pool(inv):
    f = edit_vars(inv, "tenants.yml", lambda d: d["gpufleet_tenants"][1]["pools"].append("research-big"))
    (err,) = model_errors(inv)
    assert err.startswith(f"{f}:")
    assert "gpufleet_tenants[1].pools[2]" in err and "pool 'research-big' is not defined" in err


def test_duplicate_names_and_every_error_reported(inv):
    def dup(d):
        d["gpufleet_pools"].append(dict(d["gpufleet_pools"][0]))
        d["gpufleet_pools"][2]["cluster"] = "gpu-west"

    edit_vars(inv, "pools.yml", dup)
    edit_vars(inv, "tenants.yml", lambda d: d["gpufleet_tenants"].append(dict(d["gpufleet_tenants"][0])))
    errs = model_errors(inv)
    joined = "\n".join(errs)
    assert "duplicate pool name 'system'" in joined
    assert "duplicate tenant name 'llm-pretrain'" in joined
    assert "pool 'pretrain' already belongs to tenant 'llm-pretrain'" in joined
    assert "cluster 'gpu-west' is not defined" in joined
    assert len(errs) >= 4


def test_pool_kind_rules(inv):
    def bad(d):
        del d["gpufleet_pools"][0]["size"]  # system pool without size
        d["gpufleet_pools"].append(
            {"name": "orphan", "cluster": "gpu-east", "kind": "kubernetes", "size": {"nodes": 1}}
        )

    edit_vars(inv, "pools.yml", bad)
    joined = "\n".join(model_errors(inv))
    assert "size is required" in joined
    assert "kubernetes pool 'orphan' is not listed in any tenant's pools" in joined


def test_same_variable_in_two_files(inv):
    (inv / "group_vars" / "all" / "zz.yml").write_text("gpufleet_pools: []\n")
    (err,) = model_errors(inv)
    assert "zz.yml:1" in err and "defined again" in err and "pools.yml" in err


def test_invalid_yaml_names_line(inv):
    (inv / "group_vars" / "all" / "tenants.yml").write_text("gpufleet_tenants:\n  - name: [\n")
    (err,) = model_errors(inv)
    assert "tenants.yml:" in err and "not valid YAML" in err


def test_published_schema_matches_code():
    published = json.loads((REPO / "docs" / "fleet.schema.json").read_text())
    assert published == SCHEMA


def test_schema_and_reference_errors_reported_together(inv):
    """A type error elsewhere must not hide a dangling reference: every problem in one run."""
    edit_vars(inv, "pools.yml", lambda d: d["gpufleet_pools"][1]["size"].update(nodes="many"))
    edit_vars(inv, "tenants.yml", lambda d: d["gpufleet_tenants"][2]["pools"].append("gpu-heavy"))

    def broken_shapes(d):
        d["gpufleet_clusters"][0]["fabric"] = "ibnetdiscover"  # wrong type: must not crash the reference pass
        d["gpufleet_clusters"].append({"name": 7})

    edit_vars(inv, "clusters.yml", broken_shapes)
    joined = "\n".join(model_errors(inv))
    assert "gpufleet_pools[1].size.nodes: 'many' is not of type 'integer'" in joined
    assert "gpufleet_tenants[2].pools[1]: pool 'gpu-heavy' is not defined" in joined
    assert "gpufleet_clusters[0].fabric: 'ibnetdiscover' is not of type 'object'" in joined
    assert "gpufleet_clusters[1].name: 7 is not of type 'string'" in joined


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(["", "x", "gpu-east", "slurm", "pretrain"]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["name", "kind", "size"]), inner, max_size=3)
    ),
    max_leaves=6,
)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*prefix, i))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_mutation_gives_a_fleet_or_model_errors(data):
    """Whatever a user breaks, validation answers with located ModelError issues, never a traceback."""
    raw = load_inventory(SAMPLE)
    paths = sorted(p for p in _paths(raw.data) if p)
    for _step in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(paths))
        target = raw.data
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = data.draw(_JSON)
        paths = sorted(p for p in _paths(raw.data) if p)
    try:
        validate(raw)
    except ModelError as exc:
        assert exc.issues
        assert all(i.file and i.message for i in exc.issues)
