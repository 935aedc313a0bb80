"""The slurm-bridge option of the model: the platform turns it on per tenant (pools, partition), the tenant
names its managed namespaces, accounts and QOS within its own; every key is checked and bounded, and a
valid option loads into the tenant's ``bridge`` (rendered by render/tenants/bridge.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from render_fixtures import edit_vars, model_errors

from ansible_collections.gpufleet.core.plugins.module_utils.model import bridge_model
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet


def _platform(inv: Path, **spec: Any) -> Path:
    entry = {"pools": ["pretrain"], "reason": "inference next to training", **spec}
    return edit_vars(
        inv, "clusters.yml", lambda d: d["gpufleet_clusters"][0].update(slurm_bridge={"llm-pretrain": entry})
    )


def _tenant(inv: Path, ti: int = 0, **spec: Any) -> Path:
    return edit_vars(inv, "tenants.yml", lambda d: d["gpufleet_tenants"][ti]["slurm"].update(bridge=spec))


def _problems(inv: Path) -> list[str]:
    return model_errors(inv)


def test_a_valid_option_loads_with_both_owners_parts(inv: Path) -> None:
    _platform(inv, partition="k8s")
    _tenant(
        inv, namespaces=["ml-jobs", "evals"], accounts=["pretrain", "evals"], default_account="evals", qos=["normal"]
    )
    fleet = load_fleet(inv)
    assert fleet.tenants["llm-pretrain"].bridge == bridge_model.Bridge(
        pools=("pretrain",),
        partition="k8s",
        namespaces=("evals", "ml-jobs"),
        accounts=("pretrain", "evals"),
        default_account="evals",
        qos=("normal",),
    )
    assert all(t.bridge is None for name, t in fleet.tenants.items() if name != "llm-pretrain")


def test_the_partition_defaults_to_the_charts(inv: Path) -> None:
    _platform(inv)
    _tenant(inv, namespaces=["ml-jobs"])
    assert load_fleet(inv).tenants["llm-pretrain"].bridge.partition == bridge_model.DEFAULT_PARTITION == "slurm-bridge"


def test_the_platform_cannot_turn_it_on_without_the_tenants_namespaces(inv: Path) -> None:
    f = _platform(inv)
    (err,) = model_errors(inv)
    assert err.startswith(f"{f}:") and "gpufleet_clusters[0].slurm_bridge.llm-pretrain" in err
    assert "gpufleet_tenants[0].slurm.bridge.namespaces" in err


def test_the_tenant_cannot_turn_it_on_alone(inv: Path) -> None:
    f = _tenant(inv, namespaces=["ml-jobs"])
    (err,) = model_errors(inv)
    assert err.startswith(f"{f}:") and "gpufleet_tenants[0].slurm.bridge" in err
    assert "the platform has not turned slurm-bridge on for this tenant" in err


@pytest.mark.parametrize(
    ("spec", "key", "message"),
    [
        ({"pools": ["research-batch"]}, "slurm_bridge.llm-pretrain.pools[0]", "not a Slurm pool of tenant"),
        ({"pools": ["inference"]}, "slurm_bridge.llm-pretrain.pools[0]", "not a Slurm pool of tenant"),
        ({"partition": "pretrain"}, "slurm_bridge.llm-pretrain.partition", "already pool 'pretrain'"),
        ({"partition": "k8s Nodes=ALL"}, "slurm_bridge.llm-pretrain.partition", "is not valid"),
        ({"reason": ""}, "slurm_bridge.llm-pretrain.reason", "is not valid"),
    ],
)
def test_platform_part_is_checked(inv: Path, spec: dict, key: str, message: str) -> None:
    _platform(inv, **spec)
    errs = _problems(inv)
    assert any(key in e and message in e for e in errs), errs


def test_bridge_for_a_tenant_of_another_cluster_or_none(inv: Path) -> None:
    edit_vars(
        inv,
        "clusters.yml",
        lambda d: d["gpufleet_clusters"][0].update(slurm_bridge={"nobody": {"pools": ["x"], "reason": "r"}}),
    )
    errs = _problems(inv)
    assert any("slurm_bridge.nobody" in e and "not a tenant of cluster 'gpu-east'" in e for e in errs), errs


@pytest.mark.parametrize(
    ("spec", "key", "message"),
    [
        ({"namespaces": ["kube-system"]}, "bridge.namespaces[0]", "system or platform namespace"),
        ({"namespaces": ["slurm"]}, "bridge.namespaces[0]", "system or platform namespace"),
        ({"namespaces": ["ML"]}, "bridge.namespaces[0]", "is not valid"),
        ({"namespaces": []}, "bridge.namespaces", "should be non-empty"),
        ({"namespaces": [f"n{i}" for i in range(17)]}, "bridge.namespaces", "is too long"),
        (
            {"namespaces": ["a"], "accounts": ["research"]},
            "bridge.accounts",
            "not in the tenant's slurm.accounting.accounts",
        ),
        ({"namespaces": ["a"], "qos": ["platinum"]}, "bridge.qos", "not in the tenant's slurm.accounting.qos"),
        (
            {"namespaces": ["a"], "accounts": ["evals"], "default_account": "pretrain"},
            "bridge.default_account",
            "slurm.bridge.accounts",
        ),
        ({"namespaces": ["a"], "accounts": ["Pre train"]}, "bridge.accounts[0]", "Slurm account/QOS name"),
        ({"namespaces": ["a"], "user_id": 0}, "bridge", "unknown key(s) 'user_id'"),
    ],
)
def test_tenant_part_is_checked(inv: Path, spec: dict, key: str, message: str) -> None:
    _platform(inv)
    _tenant(inv, **spec)
    errs = _problems(inv)
    assert any(f"gpufleet_tenants[0].slurm.{key}" in e and message in e for e in errs), errs


def test_kueue_namespaces_are_not_the_bridges(inv: Path) -> None:
    def both(d: dict) -> None:
        d["gpufleet_tenants"][0]["namespaces"] = ["serving-llm"]
        d["gpufleet_tenants"][0]["slurm"]["bridge"] = {"namespaces": ["serving-llm"]}

    _platform(inv)
    edit_vars(inv, "tenants.yml", both)
    errs = _problems(inv)
    assert any("bridge.namespaces[0]" in e and "Kueue namespaces" in e for e in errs), errs


def test_accounts_need_accounting(inv: Path) -> None:
    def off(d: dict) -> None:
        d["gpufleet_tenants"][0]["slurm"]["accounting"] = False
        d["gpufleet_tenants"][0]["slurm"]["bridge"] = {"namespaces": ["a"], "accounts": ["pretrain"]}

    _platform(inv)
    edit_vars(inv, "tenants.yml", off)
    errs = _problems(inv)
    assert any("slurm.bridge" in e and "accounting is off" in e for e in errs), errs


def test_validate_judges_the_bridge_schedulers_gates(inv: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The gates the chart's scheduler passes (bridge_model.SCHEDULER_FEATURE_GATES, compared with the real
    chart in tests/integration/test_slurm_bridge_chart.py) are judged for a bridged tenant: beta/GA pass;
    were one alpha, validate would refuse it unless the platform allows it."""
    from ansible_collections.gpufleet.core.plugins.module_utils.model import feature_gates

    f = _platform(inv)
    _tenant(inv, namespaces=["ml-jobs"])
    assert load_fleet(inv).tenants["llm-pretrain"].bridge is not None
    monkeypatch.setattr(
        feature_gates, "SCHEDULER_FEATURE_GATES", bridge_model.SCHEDULER_FEATURE_GATES + ",GenericWorkload=true"
    )
    (err,) = model_errors(inv)
    assert err.startswith(f"{f}:") and "gpufleet_clusters[0].slurm_bridge.llm-pretrain" in err
    assert "slurm-bridge scheduler of tenant 'llm-pretrain': feature gate GenericWorkload is ALPHA" in err
