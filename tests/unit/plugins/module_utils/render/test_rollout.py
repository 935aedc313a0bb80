"""The rendered rollout of a Slurm tenant: waves in Slurm's upgrade order, bounded NodeSet updates, PDBs."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.module_utils.daytwo.rules import SLURM_UPGRADE_ORDER
from ansible_collections.gpufleet.core.plugins.module_utils.errors import ModelError
from ansible_collections.gpufleet.core.plugins.module_utils.model.rollout_model import Rollout
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.render.inputs import cluster_inputs
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants import rollout
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_fleet

REPO = Path(__file__).resolve().parents[5]
SAMPLE = REPO / "inventories" / "sample"
VALUES = "clusters/gpu-east/tenants/{}/slurm/values.yaml"


@pytest.fixture(scope="module")
def rendered() -> dict[str, dict]:
    files = render_fleet(load_fleet(SAMPLE)).files
    return {t: yaml.safe_load(files[VALUES.format(t)]) for t in ("research", "llm-pretrain")}


def _wave(obj: dict) -> int:
    return int(obj["metadata"]["annotations"][rollout.WAVE_ANNOTATION])


def test_waves_follow_slurms_upgrade_order(rendered: dict[str, dict]) -> None:
    v = rendered["research"]
    by_daemon = {
        "slurmdbd": _wave(v["accounting"]),
        "slurmctld": _wave(v["controller"]),
        "slurmd": max(_wave(ns) for ns in v["nodesets"].values()),
        "login": _wave(v["loginsets"]["main"]),
        "slurmrestd": _wave(v["restapi"]),  # a client: last, with the login pods
    }
    order = [name for name, _step in SLURM_UPGRADE_ORDER]
    assert sorted(by_daemon, key=by_daemon.get) == order
    assert min(by_daemon.values()) > 0  # after the chart's ConfigMaps (wave 0)
    # the two NodeSets share the leaf group su01-leaf: one wave each, in name order, the login pods after
    assert {n: _wave(ns) for n, ns in v["nodesets"].items()} == {"research-batch": 5, "research-debug": 6}
    assert _wave(v["loginsets"]["main"]) == 7
    assert {n: _wave(ns) for n, ns in rendered["llm-pretrain"]["nodesets"].items()} == {"pretrain": 5}


def test_every_nodeset_rolls_at_most_the_block_allowance(rendered: dict[str, dict]) -> None:
    for values in rendered.values():
        for name, ns in values["nodesets"].items():
            assert ns["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}, name


def test_budgets_select_the_operators_pods(rendered: dict[str, dict]) -> None:
    pdbs = {o["metadata"]["name"]: o["spec"] for o in rendered["research"]["extraObjects"] if o["kind"] != "Job"}
    assert pdbs["slurm-controller"] == {
        "maxUnavailable": 0,
        "selector": {"matchLabels": {"app.kubernetes.io/name": "slurmctld", "app.kubernetes.io/instance": "slurm"}},
    }
    assert pdbs["slurm-accounting"]["selector"]["matchLabels"]["app.kubernetes.io/name"] == "slurmdbd"
    assert pdbs["slurm-login"]["selector"]["matchLabels"] == {
        "app.kubernetes.io/name": "login",
        "app.kubernetes.io/instance": "slurm-login-main",
    }


def test_allowance_and_login_replicas() -> None:
    fleet = load_fleet(SAMPLE)
    wide = dataclasses.replace(fleet, rollout=Rollout(max_unavailable_per_block=4))
    t = dataclasses.replace(fleet.tenants["research"], login_replicas=3)
    inputs = cluster_inputs(fleet, fleet.clusters["gpu-east"])
    frag = rollout.slurm_fragment(wide, t, {"nodesets": {"a": {}}, "loginsets": {"main": {}}}, inputs)
    assert frag["nodesets"]["a"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] == 4
    login = next(o for o in frag["extraObjects"] if o["metadata"]["name"] == "slurm-login")
    assert login["spec"]["maxUnavailable"] == 1  # three replicas: one may go, two stay
    off = dataclasses.replace(t, accounting=dataclasses.replace(t.accounting, enabled=False), login_replicas=0)
    frag = rollout.slurm_fragment(fleet, off, {"nodesets": {}}, inputs)
    assert [o["metadata"]["name"] for o in frag["extraObjects"]] == ["slurm-controller", "slurm-controller-ready"]
    assert "accounting" not in frag


def test_allowance_is_bounded(tmp_path: Path) -> None:
    inv = tmp_path / "inv"
    shutil.copytree(SAMPLE, inv)
    (inv / "group_vars" / "all" / "rollout.yml").write_text("gpufleet_rollout: {max_unavailable_per_block: 0}\n")
    with pytest.raises(ModelError, match="max_unavailable_per_block"):
        load_fleet(inv)
