"""Feature gates the rendered components ask for are judged at the pinned Kubernetes version: an alpha
gate is refused unless the platform allows it (and then the review names it), an unknown or locked gate
is refused, on a test inventory (a copy of the sample with the platform's vCluster override)."""

from __future__ import annotations

from pathlib import Path

import pytest
from render_fixtures import edit_vars, model_errors

from ansible_collections.gpufleet.core.plugins.module_utils.model import feature_gates
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet


def _gates(inv: Path, arg: str, part: str = "apiServer", allow: list[dict] | None = None) -> Path:
    def edit(d: dict) -> None:
        c = d["gpufleet_clusters"][0]
        k8s = {"controlPlane": {"distro": {"k8s": {part: {"extraArgs": ["--v=2", arg]}}}}}
        c["tenant_overrides"] = {"research": {"reason": "workload API trial", "vcluster": {"values": k8s}}}
        if allow is not None:
            c["allow_alpha_feature_gates"] = allow

    return edit_vars(inv, "clusters.yml", edit)


def test_alpha_gate_is_refused_naming_gate_file_and_key(inv: Path) -> None:
    f = _gates(inv, "--feature-gates=GenericWorkload=true,DRAExtendedResource=true")
    (err,) = model_errors(inv)
    assert err.startswith(f"{f}:")
    assert "tenant_overrides.research.vcluster.values.controlPlane.distro.k8s.apiServer.extraArgs[1]" in err
    assert "feature gate GenericWorkload is ALPHA at Kubernetes 1.36" in err
    assert "allow_alpha_feature_gates" in err


@pytest.mark.parametrize("part", ["controllerManager", "scheduler"])
def test_every_control_plane_part_is_read(inv: Path, part: str) -> None:
    _gates(inv, "--feature-gates=WorkloadWithJob=true", part=part)
    (err,) = model_errors(inv)
    assert f"vCluster {part} of tenant 'research': feature gate WorkloadWithJob is ALPHA" in err


def test_all_alpha_is_an_alpha_gate(inv: Path) -> None:
    _gates(inv, "--feature-gates=AllAlpha=true")
    (err,) = model_errors(inv)
    assert "AllAlpha is ALPHA" in err


def test_platform_allows_an_alpha_gate_and_the_review_names_it(inv: Path) -> None:
    _gates(
        inv,
        "--feature-gates=GenericWorkload=true",
        allow=[{"gate": "GenericWorkload", "reason": "gang scheduling trial, INC-42"}],
    )
    fleet = load_fleet(inv)
    assert fleet.clusters["gpu-east"].allow_alpha_feature_gates == {"GenericWorkload": "gang scheduling trial, INC-42"}
    (line,) = feature_gates.alpha_in_use(fleet)
    assert "`gpu-east`" in line and "`GenericWorkload`" in line and "Kubernetes 1.36" in line
    assert "gang scheduling trial, INC-42" in line


def test_allowing_one_alpha_gate_does_not_allow_another(inv: Path) -> None:
    _gates(
        inv,
        "--feature-gates=GenericWorkload=true,WorkloadWithJob=true",
        allow=[{"gate": "GenericWorkload", "reason": "x"}],
    )
    (err,) = model_errors(inv)
    assert "WorkloadWithJob is ALPHA" in err


def test_beta_ga_and_alpha_off_pass_and_name_nothing(inv: Path) -> None:
    _gates(inv, "--feature-gates=DRAExtendedResource=true,DynamicResourceAllocation=true,GenericWorkload=false")
    assert feature_gates.alpha_in_use(load_fleet(inv)) == []


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        ("--feature-gates=GenericWorkloads=true", "GenericWorkloads is not a feature gate of Kubernetes 1.36"),
        ("--feature-gates=DynamicResourceAllocation=false", "is GA and locked to true at Kubernetes 1.36"),
        ("--feature-gates=GenericWorkload=yes", "'yes' is not a boolean"),
        ("--feature-gates=GenericWorkload", "is not Name=true|false"),
    ],
)
def test_unknown_locked_and_malformed_gates_are_refused(inv: Path, arg: str, message: str) -> None:
    _gates(inv, arg, allow=[{"gate": "GenericWorkload", "reason": "x"}])
    (err,) = model_errors(inv)
    assert message in err


def test_allow_list_entry_needs_a_reason(inv: Path) -> None:
    _gates(inv, "--feature-gates=GenericWorkload=true", allow=[{"gate": "GenericWorkload"}])
    errs = model_errors(inv)
    assert any("allow_alpha_feature_gates[0]" in e and "'reason' is required" in e for e in errs), errs
