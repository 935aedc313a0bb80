"""fleet_validate's payload: the validated model as plain data; the chart filter."""

from __future__ import annotations

import json
import shutil

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.errors import ModelError
from ansible_collections.gpufleet.core.plugins.module_utils.model.facts import fleet_facts


def test_sample_fleet_is_plain_json(repo_root):
    facts = fleet_facts(repo_root / "inventories" / "sample")
    json.dumps(facts)  # only plain types
    assert facts["name"] == "sample"
    assert [c["name"] for c in facts["clusters"]] == ["gpu-east"]
    comps = facts["clusters"][0]["components"]
    assert comps["cilium"]["install_method"] == "gitops" and comps["cilium"]["options"]["exclusive"] is True
    assert comps["shared_storage"]["options"]["nfs_share"] == "/export/slurm-home"
    assert facts["clusters"][0]["nodes_snapshot"].endswith("snapshots/gpu-east/nodes.yaml")
    assert facts["summary"] == {"clusters": 1, "tenants": 3, "pools": 6}


def test_broken_inventory_lists_every_problem(repo_root, tmp_path):
    inv = tmp_path / "inv"
    shutil.copytree(repo_root / "inventories" / "sample", inv, ignore=shutil.ignore_patterns("snapshots"))
    tenants = inv / "group_vars" / "all" / "tenants.yml"
    tenants.write_text(tenants.read_text().replace("pools: [pretrain]", "pools: [pretrian]"))
    with pytest.raises(ModelError) as exc:
        fleet_facts(inv)
    msg = str(exc.value)
    assert "tenants.yml:" in msg and "pretrian" in msg and "problem" in msg.splitlines()[0]


def test_chart_filter(repo_root):
    from ansible.errors import AnsibleFilterError

    from ansible_collections.gpufleet.core.plugins.filter.chart import chart

    oci = chart("slurm_operator")
    assert oci["chart_ref"] == "oci://ghcr.io/slinkyproject/charts/slurm-operator" and oci["chart_repo_url"] is None
    repo = chart("cilium", {"cilium": {"version": "1.20.1"}})
    assert (repo["chart_ref"], repo["chart_repo_url"], repo["version"]) == (
        "cilium",
        "https://helm.cilium.io/",
        "1.20.1",
    )
    with pytest.raises(AnsibleFilterError, match="unknown chart component 'cilum'"):
        chart("cilum")
