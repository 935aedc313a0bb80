"""Numbers a tenant may set keep their value through the charts, and resources stay consistent.

- slurm.conf options: the slurm chart (1.2.1, ``helm/slurm/templates/_helpers.tpl`` ``slurm._toList``)
  writes an option only when its value is true for a Go template and Helm reads values-file numbers
  as float64, so every option value must reach the chart as a non-empty string.
- requests never exceed limits (the API server refuses such a pod) and never come without a limit
  (the vcluster chart's default limit would apply).
- the tenants' vCluster control planes together stay within the share of the system pool the
  platform gives them.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest
from render_fixtures import SAMPLE

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError, ModelError
from ansible_collections.gpufleet.core.plugins.module_utils.model.inventory import load_inventory
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import validate
from ansible_collections.gpufleet.core.plugins.module_utils.render.inputs import cluster_inputs
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants import control_plane
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants.slurm import slurm_values
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants.slurm_conf_map import CONF_MAPS, as_words
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants.vcluster import vcluster_values


@pytest.fixture(scope="module")
def base():
    raw = load_inventory(SAMPLE)
    fleet = validate(raw)
    cluster = fleet.clusters["gpu-east"]
    return raw, fleet, cluster, cluster_inputs(fleet, cluster, None)


def _with(fleet, tenant: str, **values: Any):
    t = dataclasses.replace(fleet.tenants[tenant], **values)
    return dataclasses.replace(fleet, tenants={**fleet.tenants, tenant: t})


def _conf_leaves(values: dict[str, Any]) -> list[tuple[str, Any]]:
    out = []
    for path in CONF_MAPS:
        maps = [values]
        for k in path:
            maps = [m for x in maps for m in (x.values() if k == "*" else [x.get(k)]) if isinstance(m, dict)]
        out += [(k, v) for m in maps for k, v in m.items()]
    return out


def _chart_keeps(v: Any) -> bool:
    """What the slurm chart writes as given: a non-empty string, or a non-empty list of them."""
    items = v if isinstance(v, list) else [v]
    return bool(items) and all(isinstance(x, str) and x for x in items)


def test_zero_and_big_numbers_reach_the_chart_as_words(base) -> None:
    _inv, fleet, cluster, inputs = base
    asked = {"controller": {"extraConfMap": {"MinJobAge": 0, "MaxJobCount": 1000000}}}
    f = _with(fleet, "research", slurm_values=asked)
    got, _files = slurm_values(f, cluster, f.tenants["research"], inputs)
    conf = got["controller"]["extraConfMap"]
    assert conf["MinJobAge"] == "0" and conf["MaxJobCount"] == "1000000"
    leaves = _conf_leaves(got)
    assert len(leaves) > 20 and "PriorityWeightAssoc" in dict(leaves)  # gpufleet's own 0 is kept too
    assert [kv for kv in leaves if not _chart_keeps(kv[1])] == []


@pytest.mark.parametrize("bad", [False, "", [], None])
def test_a_value_the_chart_drops_is_an_error(bad: Any) -> None:
    with pytest.raises(GpufleetError, match=r"t\.controller\.extraConfMap\.KillWait"):
        as_words({"controller": {"extraConfMap": {"KillWait": bad}}}, "t")


@pytest.mark.parametrize(
    ("resources", "error"),
    [
        ({"requests": {"cpu": "4"}, "limits": {"cpu": "2"}}, r"requests\.cpu 4 exceeds limits\.cpu 2"),
        ({"requests": {"memory": "16Gi"}}, r"requests\.memory 16Gi needs limits\.memory"),
        ({"requests": {"memory": "2Gi"}, "limits": {"memory": "1024Mi"}}, r"exceeds limits\.memory 1024Mi"),
    ],
)
def test_requests_above_limits_are_refused(base, resources: dict, error: str) -> None:
    raw = copy.deepcopy(base[0])
    sts = {"statefulSet": {"resources": resources}}
    raw.data["gpufleet_tenants"][1]["vcluster"] = {"values": {"controlPlane": sts}}
    with pytest.raises(ModelError, match=r"gpufleet_tenants\[1\]\.vcluster\.values\.controlPlane.*" + error):
        validate(raw)


def test_requests_within_limits_pass(base) -> None:
    raw = copy.deepcopy(base[0])
    res = {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "2", "memory": "2048Mi"}}
    raw.data["gpufleet_tenants"][1]["slurm"]["values"] = {"controller": {"slurmctld": {"resources": res}}}
    validate(raw)


def test_control_planes_bounded_by_the_system_pool(base, monkeypatch) -> None:
    _inv, fleet, cluster, inputs = base
    system = "system"
    have = inputs.pool_resources(system)
    asks = control_plane.requested(fleet, cluster)
    assert asks and all(a["cpu"] > 0 for a in asks.values())  # chart default counted
    small = {"cpu": 4, "memory": "16Gi"}  # a 2-node system pool of small machines: 2 CPU for tenants
    big = {"controlPlane": {"statefulSet": {"resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "2"}}}}}
    f = _with(fleet, "research", vcluster_values=big)
    control_plane.check(f, cluster, system, have)  # the sample's pool is large: fits
    with pytest.raises(
        GpufleetError,
        match=r"gpufleet_tenants\[research\]\.vcluster\.values\..*requests\.cpu.*"
        r"request 2\.4 cpu together.*system pool 'system' \(4 allocatable\)",
    ):
        control_plane.check(f, cluster, system, small)
    control_plane.check(fleet, cluster, system, small)  # chart defaults only: 0.6 CPU fits
    vcluster_values(f, cluster, f.tenants["research"], inputs)
    monkeypatch.setattr(inputs, "pool_resources", lambda pool: small if pool == system else have)
    with pytest.raises(GpufleetError, match=r"request 2\.4 cpu together"):  # the render checks it
        vcluster_values(f, cluster, f.tenants["research"], inputs)
