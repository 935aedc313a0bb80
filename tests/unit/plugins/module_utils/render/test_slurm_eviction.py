"""Slurm pods are the last the kubelet evicts on a tenant's nodes, and a tenant cannot undo it.

Read from the rendered sample tree: every Slurm tenant's slurm values name a host PriorityClass the
tenant's host app renders (value above the default 0, ``preemptionPolicy: Never``) and say why; the
vCluster makes exactly that class visible (label selector) so synced pods keep it; slurmd requests
memory (a pod without requests is first in the kubelet's eviction order); system-critical classes
are refused in the tenant's host namespace. Tenant values that touch any of it are refused.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from render_fixtures import REPO, SAMPLE

from ansible_collections.gpufleet.core.plugins.module_utils.errors import ModelError
from ansible_collections.gpufleet.core.plugins.module_utils.model.inventory import load_inventory
from ansible_collections.gpufleet.core.plugins.module_utils.model.tenant_values import quantity
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import validate

TREE = REPO / "gitops" / "clusters" / "gpu-east"
NODES = SAMPLE / "snapshots" / "gpu-east" / "nodes.yaml"


def _load(p: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(p.read_text()) if d]


def slurm_tenants() -> list[str]:
    return sorted(p.parent.parent.name for p in TREE.glob("tenants/*/slurm/values.yaml"))


def test_sample_has_slurm_tenants() -> None:
    assert len(slurm_tenants()) >= 2


@pytest.mark.parametrize("tenant", slurm_tenants())
def test_slurm_pods_get_the_platform_class(tenant: str) -> None:
    values = yaml.safe_load((TREE / f"tenants/{tenant}/slurm/values.yaml").read_text())
    pc = values["priorityClass"]
    assert pc["enabled"] is True and pc["create"] is False and "evicted after" in pc["description"]
    host = {d["kind"]: d for d in _load(TREE / f"tenants/{tenant}/host/priority.yaml")}
    cls = host["PriorityClass"]
    assert cls["metadata"]["name"] == pc["name"] and cls["value"] > 0 and cls["preemptionPolicy"] == "Never"
    assert cls["globalDefault"] is False
    vc = yaml.safe_load((TREE / f"tenants/{tenant}/vcluster/values.yaml").read_text())
    sel = vc["sync"]["fromHost"]["priorityClasses"]
    assert sel["enabled"] is True and sel["selector"]["matchLabels"].items() <= cls["metadata"]["labels"].items()
    assert not vc["sync"].get("toHost", {}).get("priorityClasses", {}).get("enabled")  # tenant classes stay inside
    quota = host["ResourceQuota"]
    assert quota["metadata"]["namespace"] == f"vc-{tenant}" and quota["spec"]["hard"] == {"pods": "0"}
    assert quota["spec"]["scopeSelector"]["matchExpressions"][0]["values"] == [
        "system-node-critical",
        "system-cluster-critical",
    ]
    for ns in values["nodesets"].values():  # the chart's class is not overridden per NodeSet
        assert "priorityClassName" not in ns.get("podSpec", {})


@pytest.mark.parametrize("tenant", slurm_tenants())
def test_slurmd_requests_memory_within_its_nodes(tenant: str) -> None:
    values = yaml.safe_load((TREE / f"tenants/{tenant}/slurm/values.yaml").read_text())
    lock = yaml.safe_load((SAMPLE / "snapshots" / "gpu-east" / "pools.lock.yaml").read_text())
    nodes = {n["metadata"]["name"]: n for n in yaml.safe_load(NODES.read_text())["items"]}
    for pool, ns in values["nodesets"].items():
        want = quantity(ns["slurmd"]["resources"]["requests"]["memory"])
        names = [n for n, p in lock["nodes"].items() if p == pool]
        assert names, pool
        least = min(quantity(nodes[n]["status"]["allocatable"]["memory"]) for n in names)
        assert want is not None and least / 2 < want < least, (pool, want, least)


@pytest.mark.parametrize(
    "values",
    [
        {"priorityClass": {"enabled": False}},
        {"nodesets": {"pretrain": {"podSpec": {"priorityClassName": ""}}}},
        {"controller": {"podSpec": {"priorityClassName": "x"}}},
    ],
)
def test_tenant_cannot_undo_it(values: dict) -> None:
    raw = load_inventory(SAMPLE)
    i = next(i for i, t in enumerate(raw.data["gpufleet_tenants"]) if isinstance(t.get("slurm"), dict))
    bad = copy.deepcopy(raw)
    bad.data["gpufleet_tenants"][i]["slurm"]["values"] = values
    with pytest.raises(ModelError, match=r"slurm\.values.*tenant_overrides"):
        validate(bad)
    raw.data["gpufleet_tenants"][i]["vcluster"] = {"values": {"sync": {"fromHost": {"priorityClasses": {}}}}}
    with pytest.raises(ModelError, match=r"vcluster\.values\.sync"):
        validate(raw)
