"""The day-two upgrade plan and what it renders: NodeSet update windows (Slinky ``ScheduledUpdate``), the
GPU Operator's driver ``upgradePolicy``, the plan the review prints (golden Markdown), and rollback.

Rendered objects are checked against the upstream v1.2.1 NodeSet CRD and the GPU Operator ClusterPolicy
CRD in ``../shared/upstream`` (the chart keys themselves by test_render_schemas on the sample tree).
"""

from __future__ import annotations

import copy
import dataclasses
import os
import re
import shutil
from datetime import timedelta
from pathlib import Path

import jsonschema
import pytest
import yaml
from render_checks import crd_validator

from ansible_collections.gpufleet.core.plugins.module_utils.daytwo.upgrade import upgrade_plan
from ansible_collections.gpufleet.core.plugins.module_utils.errors import ModelError
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Component, Fleet
from ansible_collections.gpufleet.core.plugins.module_utils.model.rollout_model import Window
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.render.platform import driver_upgrade
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_fleet

REPO = Path(__file__).resolve().parents[5]
SAMPLE = REPO / "inventories" / "sample"
GOLDEN = Path(__file__).parent / "golden"
VALUES = "clusters/gpu-east/tenants/{}/slurm/values.yaml"
GPU_VALUES = "clusters/gpu-east/platform/gpu-operator/values.yaml"
PRETRAIN_WINDOW = Window("2026-12-06T02:00:00Z", "2h")


@pytest.fixture(scope="module")
def sample() -> Fleet:
    return load_fleet(SAMPLE)


def _with(fleet: Fleet, **rollout: object) -> Fleet:
    return dataclasses.replace(fleet, rollout=dataclasses.replace(fleet.rollout, **rollout))


def _slinky(fleet: Fleet, version: str) -> Fleet:
    versions = {c: {"version": version} for c in ("slurm", "slurm_operator", "slurm_operator_crds")}
    return dataclasses.replace(fleet, versions=versions)


def _driver(fleet: Fleet, version: str) -> Fleet:
    cluster = fleet.clusters["gpu-east"]
    comps = dict(cluster.components)
    comps["gpu_operator"] = Component("gpu_operator", values={"driver": {"version": version}})
    return dataclasses.replace(fleet, clusters={"gpu-east": dataclasses.replace(cluster, components=comps)})


# ---- ScheduledUpdate windows


def _nodeset(strategy: dict) -> dict:
    return {
        "apiVersion": "slinky.slurm.net/v1beta1",
        "kind": "NodeSet",
        "metadata": {"name": "x"},
        "spec": {"controllerRef": {"name": "slurm"}, "updateStrategy": strategy},
    }


def _nodeset_strategy_problems(strategy: dict, shared: Path) -> list[str]:
    """The v1.2.1 NodeSet CRD's schema, its CEL rule on updateStrategy (startTime and duration required for
    ScheduledUpdate) and the operator webhook's rule (duration a Go duration of at least one minute)."""
    validator = crd_validator(shared / "upstream" / "crds" / "slinky" / "slinky.slurm.net_nodesets.yaml", "v1beta1")
    out = [e.message for e in validator.iter_errors(_nodeset(strategy))]
    if strategy.get("type") == "ScheduledUpdate":
        sched = strategy.get("scheduledUpdate") or {}
        if "startTime" not in sched or "duration" not in sched:
            out.append("scheduledUpdate.startTime and scheduledUpdate.duration are required")
        if not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z", str(sched.get("startTime"))):
            out.append("startTime is not RFC 3339")
        go = re.fullmatch(r"(?:([0-9]+)h)?(?:([0-9]+)m)?", str(sched.get("duration", "")))
        if not go or not any(go.groups()) or int(go[1] or 0) * 60 + int(go[2] or 0) < 1:
            out.append("duration is not a Go duration of at least 1m")
    return out


def test_window_renders_scheduled_update_valid_for_the_upstream_crd(sample: Fleet, shared_dir: Path) -> None:
    fleet = _with(
        sample, window=Window("2026-12-05T02:00:00Z", "2d"), tenant_windows=(("llm-pretrain", PRETRAIN_WINDOW),)
    )
    files = render_fleet(fleet).files
    want = {
        "research": {
            "type": "ScheduledUpdate",
            # no FORCE_START: Slurm 26.05 refuses it on a one-off reservation (tests/integration/slinky)
            "scheduledUpdate": {"startTime": "2026-12-05T02:00:00Z", "duration": "48h"},
        },
        "llm-pretrain": {
            "type": "ScheduledUpdate",
            "scheduledUpdate": {"startTime": "2026-12-06T02:00:00Z", "duration": "2h"},
        },
    }
    for tenant, strategy in want.items():
        nodesets = yaml.safe_load(files[VALUES.format(tenant)])["nodesets"]
        assert nodesets and all(ns["updateStrategy"] == strategy for ns in nodesets.values()), tenant
        assert _nodeset_strategy_problems(strategy, shared_dir) == []
    assert Window("2026-12-05T02:00:00Z", "90m").go_duration() == "90m"


def test_crd_check_of_the_strategy_can_fail(shared_dir: Path) -> None:
    assert _nodeset_strategy_problems(
        {"type": "ScheduledUpdate", "scheduledUpdate": {"startTime": "2026-12-05T02:00:00Z"}}, shared_dir
    )
    assert _nodeset_strategy_problems({"type": "Scheduled"}, shared_dir)
    assert _nodeset_strategy_problems(
        {"type": "ScheduledUpdate", "scheduledUpdate": {"startTime": "2026-12-05T02:00:00Z", "duration": "2d"}},
        shared_dir,
    )


def _inventory(tmp_path: Path, rollout: str) -> Path:
    inv = tmp_path / "inv"
    shutil.copytree(SAMPLE, inv)
    (inv / "group_vars" / "all" / "rollout.yml").write_text(rollout)
    return inv


@pytest.mark.parametrize(
    ("rollout", "message"),
    [
        ('gpufleet_rollout: {window: {start: "2026-12-05T02:00:00Z", duration: 8d}}', "1m to 7d"),
        ('gpufleet_rollout: {window: {start: "2026-02-30T02:00:00Z", duration: 4h}}', "not a valid UTC time"),
        ('gpufleet_rollout: {window: {start: "2026-12-05 02:00", duration: 4h}}', "window.start"),
        ('gpufleet_rollout: {window: {start: "2026-12-05T02:00:00Z", duration: 4h, flags: [FLEX]}}', "flags"),
        (
            'gpufleet_rollout: {tenant_windows: {inference: {start: "2026-12-05T02:00:00Z", duration: 4h}}}',
            "Slurm pool",
        ),
        ('gpufleet_rollout: {tenant_windows: {nobody: {start: "2026-12-05T02:00:00Z", duration: 4h}}}', "Slurm pool"),
        ("gpufleet_rollout: {driver_drain_timeout_seconds: -1}", "driver_drain_timeout_seconds"),
    ],
)
def test_windows_and_timeouts_are_bounded(tmp_path: Path, rollout: str, message: str) -> None:
    with pytest.raises(ModelError, match=re.escape(message)):
        load_fleet(_inventory(tmp_path, rollout + "\n"))


def test_inventory_window_loads(tmp_path: Path) -> None:
    text = 'gpufleet_rollout: {tenant_windows: {research: {start: "2026-12-05T02:00:00Z", duration: 90m}}}\n'
    fleet = load_fleet(_inventory(tmp_path, text))
    assert fleet.rollout.window_of("research") == Window("2026-12-05T02:00:00Z", "90m")
    assert fleet.rollout.window_of("llm-pretrain") is None
    assert fleet.rollout.window_of("research").end_time() - fleet.rollout.window_of(
        "research"
    ).start_time() == timedelta(minutes=90)


# ---- the GPU Operator's driver upgrade policy


def _cluster_policy_upgrade_schema(shared: Path) -> dict:
    crd = yaml.safe_load(
        (shared / "upstream" / "crds" / "gpu-operator" / "nvidia.com_clusterpolicies.yaml").read_text()
    )
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    schema = copy.deepcopy(spec["properties"]["driver"]["properties"]["upgradePolicy"])

    def strict(node: dict) -> None:
        if node.get("type") == "object" and "properties" in node:
            node["additionalProperties"] = False
            for child in node["properties"].values():
                strict(child)

    strict(schema)
    return schema


def _as_cluster_policy(values_policy: dict) -> dict:
    """The chart writes values ``gpuPodDeletion`` as ClusterPolicy ``podDeletion``; the rest by name."""
    out = dict(values_policy)
    out["podDeletion"] = out.pop("gpuPodDeletion")
    return out


def test_driver_upgrade_policy_is_bounded_and_valid(sample: Fleet, shared_dir: Path) -> None:
    policy = yaml.safe_load(render_fleet(sample).files[GPU_VALUES])["driver"]["upgradePolicy"]
    assert policy == driver_upgrade.upgrade_policy(sample)
    assert policy["autoUpgrade"] is True and policy["drain"]["enable"] is True and policy["drain"]["force"] is False
    assert policy["drain"]["podSelector"] == "app.kubernetes.io/name=slurmd"
    assert policy["maxParallelUpgrades"] == policy["maxUnavailable"] == sample.rollout.max_unavailable_per_block
    schema = _cluster_policy_upgrade_schema(shared_dir)
    jsonschema.Draft7Validator(schema).validate(_as_cluster_policy(policy))
    with pytest.raises(jsonschema.ValidationError):  # the check can fail
        jsonschema.Draft7Validator(schema).validate({**_as_cluster_policy(policy), "drain": {"enabled": True}})
    wide = _with(sample, max_unavailable_per_block=3, driver_drain_timeout_seconds=0)
    assert driver_upgrade.upgrade_policy(wide)["maxParallelUpgrades"] == 3
    assert driver_upgrade.upgrade_policy(wide)["drain"]["timeoutSeconds"] == 0


def test_busy_slurmd_budget_on_the_host(sample: Fleet) -> None:
    files = render_fleet(sample).files
    pdb = yaml.safe_load(files["clusters/gpu-east/tenants/research/host/disruption.yaml"])
    assert pdb["metadata"]["namespace"] == "vc-research"
    assert pdb["spec"]["maxUnavailable"] == 0  # the selector: model/test_contracts.py and the Slinky bed
    assert "clusters/gpu-east/tenants/inference/host/disruption.yaml" not in files  # no Slurm there


def test_cluster_values_cannot_set_the_policy(tmp_path: Path) -> None:
    inv = _inventory(tmp_path, "{}\n")
    clusters = inv / "group_vars" / "all" / "clusters.yml"
    clusters.write_text(
        clusters.read_text().replace(
            "gpu_operator: {}", "gpu_operator: {values: {driver: {upgradePolicy: {maxParallelUpgrades: 0}}}}"
        )
    )
    with pytest.raises(ModelError, match=r"upgradePolicy: set by gpufleet_rollout"):
        load_fleet(inv)


# ---- the plan the review prints (golden Markdown)


def _golden(name: str, lines: list[str]) -> None:
    """Compare with golden/<name>.md (GPUFLEET_UPDATE_GOLDEN=1 rewrites it; review the diff)."""
    text = "\n".join(lines) + "\n"
    path = GOLDEN / f"{name}.md"
    if os.environ.get("GPUFLEET_UPDATE_GOLDEN") == "1":
        path.write_text(text)
    assert text == path.read_text(), f"{path} differs from the plan:\n{text}"


def test_plan_of_a_slurm_bump(sample: Fleet) -> None:
    new = _with(sample, tenant_windows=(("llm-pretrain", PRETRAIN_WINDOW),))
    lines = upgrade_plan(_slinky(sample, "1.1.2"), new)
    _golden("slurm-bump", lines)
    text = "\n".join(lines)
    assert (
        "| llm-pretrain | 2026-12-06 02:00 to 2026-12-06 04:00 UTC | `pretrain` (5) | 32 of 32 | 256 of 256 |" in text
    )
    # research's two NodeSets share su01-leaf: one after the other, within the budget of 1 node per block
    assert (
        "| research | rolling | `research-batch` (5), `research-debug` (6) | 1 of 14 | 8 of 112 | 1 in `su01-leaf` |"
        in text
    )


def test_plan_of_a_chart_bump(sample: Fleet) -> None:
    old = dataclasses.replace(sample, versions={**sample.versions, "gpu_operator": {"version": "v26.3.0"}})
    lines = upgrade_plan(old, sample)
    _golden("gpu-operator-chart-bump", lines)
    assert any(line.startswith("GPU Operator: gpu-operator v26.3.0 -> ") for line in lines)


def test_plan_of_a_driver_bump(sample: Fleet) -> None:
    lines = upgrade_plan(_driver(sample, "580.95.05"), _driver(sample, "595.91.07"))
    _golden("driver-bump", lines)
    text = "\n".join(lines)
    assert "cluster gpu-east: driver 580.95.05 -> 595.91.07" in text
    assert "| llm-pretrain | 1 of 32 | 8 of 256 |" in text  # one node of the whole cluster at a time
    assert "up to 86400 s" in text
    assert upgrade_plan(sample, sample) == []


# ---- rollback: the revert renders the previous tree byte for byte


def test_revert_renders_the_previous_tree(sample: Fleet) -> None:
    before = render_fleet(sample).files
    bumped = _with(
        _driver(sample, "595.91.07"), window=Window("2026-12-05T02:00:00Z", "4h"), max_unavailable_per_block=2
    )
    during = render_fleet(bumped).files
    assert during != before
    assert render_fleet(load_fleet(SAMPLE)).files == before
