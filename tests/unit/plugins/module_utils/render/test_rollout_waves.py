"""Sync waves of a tenant's NodeSets under the per-block disruption budget, and the render's refusal of
rendered values (the platform's overrides merged in) that could still break it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Fleet
from ansible_collections.gpufleet.core.plugins.module_utils.model.rollout_model import Rollout, Window
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.render.inputs import cluster_inputs
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants import rollout_waves
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants.rollout_waves import (
    RolloutBudgetError,
    assign,
    max_unavailable,
)
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_fleet

SAMPLE = Path(__file__).resolve().parents[5] / "inventories" / "sample"


@pytest.fixture(scope="module")
def sample() -> Fleet:
    return load_fleet(SAMPLE)


@pytest.mark.parametrize(
    ("loads", "budget", "want"),
    [
        # two share block x: one after the other; c shares nothing with a and rolls beside it
        ({"b": {"x": 1}, "a": {"x": 1, "y": 1}, "c": {"z": 1}}, 1, {"a": 0, "b": 1, "c": 0}),
        ({"a": {"x": 1}, "b": {"x": 1}, "c": {"x": 1}}, 1, {"a": 0, "b": 1, "c": 2}),
        # a budget of 2: two NodeSets taking 1 each from x fit one wave, a third does not
        ({"a": {"x": 1}, "b": {"x": 1}, "c": {"x": 1}}, 2, {"a": 0, "b": 0, "c": 1}),
        ({"a": {"x": 2}, "b": {"x": 1, "y": 2}, "c": {"y": 1}}, 2, {"a": 0, "b": 1, "c": 0}),
        ({"a": {}, "b": {}}, 1, {"a": 0, "b": 0}),  # no topology: no block binds
    ],
)
def test_assign_puts_nodesets_sharing_a_block_in_successive_waves(loads: dict, budget: int, want: dict) -> None:
    assert assign(loads, budget) == want
    assert assign(dict(reversed(list(loads.items()))), budget) == want  # name order, not input order


@pytest.mark.parametrize(
    ("strategy", "total", "want"),
    [
        ({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}}, 8, 2),
        ({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%"}}, 14, 4),  # rounded up
        ({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "1%"}}, 14, 1),
        ({"type": "RollingUpdate"}, 8, 2),  # the operator's default, 25 %
        (None, 3, 1),  # no strategy: RollingUpdate 25 %, at least 1
        ({"type": "OnDelete"}, 8, None),
        ({"type": "ScheduledUpdate", "scheduledUpdate": {"startTime": "2026-12-05T02:00:00Z"}}, 8, None),
    ],
)
def test_max_unavailable_reads_like_the_operator(strategy: dict | None, total: int, want: int | None) -> None:
    assert max_unavailable(strategy, total) == want


def test_max_unavailable_refuses_what_the_operator_cannot_read() -> None:
    with pytest.raises(RolloutBudgetError, match="neither an integer nor a percentage"):
        max_unavailable({"rollingUpdate": {"maxUnavailable": "two"}}, 8)


def test_sample_waves_and_a_window_keeps_one_wave(sample: Fleet) -> None:
    inputs = cluster_inputs(sample, sample.clusters["gpu-east"])
    research = sample.tenants["research"]
    assert rollout_waves.nodeset_waves(sample, research, inputs, 5) == {"research-batch": 5, "research-debug": 6}
    windowed = dataclasses.replace(sample, rollout=Rollout(window=Window("2026-12-05T02:00:00Z", "4h")))
    # a window is the outage of all the tenant's NodeSets: a later wave would get its template after it
    assert rollout_waves.nodeset_waves(windowed, research, inputs, 5) == {"research-batch": 5, "research-debug": 5}
    # a budget of 2: research-batch alone can take 2 of its 4 nodes in su01-leaf, so research-debug still waits
    wide = dataclasses.replace(sample, rollout=Rollout(max_unavailable_per_block=2))
    assert rollout_waves.nodeset_waves(wide, research, inputs, 5) == {"research-batch": 5, "research-debug": 6}


def _override(fleet: Fleet, nodesets: dict) -> Fleet:
    cluster = fleet.clusters["gpu-east"]
    overrides = {"research": {"reason": "test", "slurm": {"values": {"nodesets": nodesets}}}}
    return dataclasses.replace(
        fleet, clusters={**fleet.clusters, "gpu-east": dataclasses.replace(cluster, tenant_overrides=overrides)}
    )


def _wave(n: int) -> dict:
    return {"metadata": {"annotations": {rollout_waves.WAVE_ANNOTATION: str(n)}}}


@pytest.mark.parametrize(
    ("nodesets", "message"),
    [
        # one NodeSet alone (4 of its 12 nodes in su01-leaf, 8 in su06-leaf) with maxUnavailable 3
        (
            {"research-batch": {"updateStrategy": {"rollingUpdate": {"maxUnavailable": 3}}}},
            "tenant research: NodeSet research-batch (maxUnavailable 3: up to 3 there) in sync wave 5 can take 3"
            " nodes of block su01-leaf at once, over the 1 allowed by gpufleet_rollout.max_unavailable_per_block\n"
            "tenant research: NodeSet research-batch (maxUnavailable 3: up to 3 there) in sync wave 5 can take 3"
            " nodes of block su06-leaf at once",
        ),
        # a percentage, of the NodeSet's 12 nodes, rounded up
        (
            {"research-batch": {"updateStrategy": {"rollingUpdate": {"maxUnavailable": "50%"}}}},
            "NodeSet research-batch (maxUnavailable 6: up to 4 there) in sync wave 5 can take 4 nodes of block"
            " su01-leaf",
        ),
        # the two NodeSets that share su01-leaf forced into one wave
        (
            {"research-debug": _wave(5)},
            "tenant research: NodeSet research-batch (maxUnavailable 1: up to 1 there) and research-debug"
            " (maxUnavailable 1: up to 1 there) in sync wave 5 can take 2 nodes of block su01-leaf at once",
        ),
    ],
)
def test_render_refuses_an_override_that_breaks_the_block_budget(sample: Fleet, nodesets: dict, message: str) -> None:
    with pytest.raises(RolloutBudgetError) as err:
        render_fleet(_override(sample, nodesets))
    assert message in str(err.value), str(err.value)
    assert "tenant_overrides.research.slurm.values.nodesets" in str(err.value)


def test_render_refuses_a_wave_argo_cd_cannot_read(sample: Fleet) -> None:
    bad = {"research-debug": {"metadata": {"annotations": {rollout_waves.WAVE_ANNOTATION: "late"}}}}
    with pytest.raises(
        RolloutBudgetError, match=r"tenant research: NodeSet research-debug: .*'late' is not an integer"
    ):
        render_fleet(_override(sample, bad))


def test_overrides_within_the_budget_render(sample: Fleet) -> None:
    # OnDelete takes nothing at once; 50 % of research-debug's 2 nodes is 1; a later wave keeps the budget
    ok = {
        "research-batch": {"updateStrategy": {"type": "OnDelete"}},
        "research-debug": {**_wave(9), "updateStrategy": {"rollingUpdate": {"maxUnavailable": "50%"}}},
    }
    files = render_fleet(_override(sample, ok)).files
    assert "clusters/gpu-east/tenants/research/slurm/values.yaml" in files
