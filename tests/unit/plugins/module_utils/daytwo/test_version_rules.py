"""Each data-protecting rule (daytwo.rules) refuses or flags exactly the changes it is about."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.module_utils.daytwo import rules
from ansible_collections.gpufleet.core.plugins.module_utils.daytwo.version_change import (
    RefusedChange,
    check,
    refuse,
    slurm_release,
)
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Component, Fleet
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet

REPO = Path(__file__).resolve().parents[5]
SAMPLE = REPO / "inventories" / "sample"


@pytest.fixture(scope="module")
def sample() -> Fleet:
    return load_fleet(SAMPLE)


def _slinky(fleet: Fleet, version: str, operator: str | None = None) -> Fleet:
    op = operator or version
    versions = {
        "slurm": {"version": version},
        "slurm_operator": {"version": op},
        "slurm_operator_crds": {"version": op},
    }
    return dataclasses.replace(fleet, versions=versions)


def _actions(found: list) -> list[tuple[str, str]]:
    return [(f.action, f.rule) for f in found]


def test_table_is_consistent() -> None:
    for release, priors in rules.SLURM_RELEASES.items():
        assert all(rules.version_key(p) < rules.version_key(release) for p in priors), release
    for line, release in rules.SLINKY_SLURM.items():
        assert release in rules.SLURM_RELEASES, line
    for rule in rules.RULES.values():
        assert rule.action in {"refuse", "flag"} and rule.source.startswith("https://"), rule.id


def test_chart_lines_map_to_releases() -> None:
    assert rules.slinky_slurm_release("1.2.1") == "26.05"
    assert rules.slinky_slurm_release("1.1.2") == "25.11"
    assert rules.slinky_slurm_release("9.9.0") is None


def test_sample_is_clean(sample: Fleet) -> None:
    assert slurm_release(sample) == ("1.2.1", "26.05")
    assert check(sample, sample) == []
    assert check(None, sample) == []


def test_supported_upgrade_is_noted_not_refused(sample: Fleet) -> None:
    old = _slinky(sample, "1.1.2")
    found = check(old, sample)
    assert _actions(found) == [("note", "slurm-downgrade")]
    assert "25.11 -> 26.05" in found[0].subject
    assert "slurmdbd converts the accounting database of llm-pretrain, research" in found[0].reason
    refuse(found, sample)  # a note never refuses


def test_skipping_releases_is_refused_with_the_steps(sample: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    # a chart line running 24.05 (not in the shipped table: a site adding an older line) -> 26.05
    monkeypatch.setitem(rules.SLINKY_SLURM, "0.9", "24.05")
    old = _slinky(sample, "0.9.0")
    found = check(old, sample)
    assert _actions(found) == [("refuse", "slurm-window")]
    assert "only from 25.11, 25.05, 24.11" in found[0].reason
    assert found[0].instead.endswith("24.05 -> 25.11 -> 26.05")
    with pytest.raises(RefusedChange, match=r"slurm-window.*24.05 -> 25.11 -> 26.05"):
        refuse(found, sample)


def test_going_back_past_the_conversion_is_refused(sample: Fleet) -> None:
    # the revert of the 25.11 -> 26.05 upgrade: base runs 26.05, the change goes back to the 1.1 chart
    reverted = _slinky(sample, "1.1.2")
    found = check(sample, reverted)
    assert ("refuse", "slurm-downgrade") in _actions(found)
    refusal = next(f for f in found if f.rule == "slurm-downgrade")
    assert "cannot undo" in refusal.reason and "restore" in refusal.instead
    assert refusal.source == f"{rules.SLURM_UPGRADES}#revert"
    with pytest.raises(RefusedChange, match="slurm-downgrade"):
        refuse(found, sample)


def test_chart_downgrade_is_flagged(sample: Fleet) -> None:
    reverted = _slinky(sample, "1.1.2")
    flags = [f for f in check(sample, reverted) if f.action == "flag"]
    assert sorted(f.subject for f in flags) == [
        "chart slurm 1.2.1 -> 1.1.2",
        "chart slurm-operator 1.2.1 -> 1.1.2",
        "chart slurm-operator-crds 1.2.1 -> 1.1.2",
    ]
    newer = dataclasses.replace(sample, versions={"kueue": {"version": "0.20.0"}})
    assert check(sample, newer) == []  # an upgrade of a chart is not flagged
    assert _actions(check(newer, sample)) == [("flag", "chart-downgrade")]


def test_unknown_slurm_chart_is_refused(sample: Fleet) -> None:
    found = check(sample, _slinky(sample, "1.9.0"))
    assert ("refuse", "slurm-unknown") in _actions(found)
    assert _actions(check(None, _slinky(sample, "1.9.0"))) == [("refuse", "slurm-unknown")]
    # what to do names what the user can change (the chart, the pin), never a file inside the collection
    (refusal,) = [f for f in found if f.rule == "slurm-unknown"]
    assert "1.2.x: Slurm 26.05" in refusal.instead and "requirements.yml" in refusal.instead
    assert ".py" not in refusal.line()
    assert refusal.key == ("gpufleet_versions", "slurm", "version")


def test_slinky_order(sample: Fleet) -> None:
    split = dataclasses.replace(sample, versions={"slurm_operator_crds": {"version": "1.1.2"}})
    assert _actions(check(None, split)) == [("refuse", "slinky-order")]
    ahead = _slinky(sample, "1.2.1", operator="1.1.2")
    found = [f for f in check(None, ahead) if f.rule == "slinky-order"]
    assert found and "newer release series than the operator" in found[0].reason
    behind = _slinky(sample, "1.1.2", operator="1.2.1")  # clusters may stay on the older series
    assert [f for f in check(None, behind) if f.rule == "slinky-order"] == []


def test_driver_downgrade_is_flagged(sample: Fleet) -> None:
    def with_driver(version: str) -> Fleet:
        cluster = sample.clusters["gpu-east"]
        comps = dict(cluster.components)
        comps["gpu_operator"] = Component("gpu_operator", values={"driver": {"version": version}})
        return dataclasses.replace(sample, clusters={"gpu-east": dataclasses.replace(cluster, components=comps)})

    assert check(with_driver("580.95.05"), with_driver("595.91.07")) == []
    found = check(with_driver("595.91.07"), with_driver("580.95.05"))
    assert _actions(found) == [("flag", "driver-downgrade")]
    assert "595.91.07 -> 580.95.05" in found[0].subject


def test_upgrade_path_goes_in_steps() -> None:
    assert rules.upgrade_path("25.11", "26.05") == ["26.05"]
    assert rules.upgrade_path("23.02", "26.05") == ["24.11", "26.05"]
    assert rules.upgrade_path("26.05", "25.11") is None
    assert rules.upgrade_path("20.02", "26.05") is None


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@example.org", "-c", "user.name=t", *args], check=True)


def test_cli_refuses_the_revert_of_an_upgrade_with_exit_2(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(SAMPLE, repo / "inventories" / "sample")
    _git(tmp_path, "init", "-q", str(repo))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "fleet on the 1.2 charts (Slurm 26.05)")
    fleet_yml = repo / "inventories" / "sample" / "group_vars" / "all" / "fleet.yml"
    pins = {c: {"version": "1.1.2"} for c in ("slurm", "slurm_operator", "slurm_operator_crds")}
    fleet_yml.write_text(fleet_yml.read_text() + yaml.safe_dump({"gpufleet_versions": pins}))
    cmd = [sys.executable, str(REPO / "scripts" / "gpufleet.py"), "check-versions", "-i", "inventories/sample"]
    back = subprocess.run([*cmd, "--base", "HEAD"], cwd=repo, capture_output=True, text=True, check=False)
    assert back.returncode == 2, back.stdout + back.stderr
    assert "REFUSE [slurm-downgrade] Slurm 26.05 -> 25.11" in back.stderr and "restore" in back.stderr
    assert "FLAG [chart-downgrade] chart slurm 1.2.1 -> 1.1.2" in back.stdout
    # each names the file, line and key of the inventory setting, like the inventory's validation errors
    lines = fleet_yml.read_text().splitlines()
    line = {c: next(i for i, t in enumerate(lines, 1) if t == f"  {c}:") + 1 for c in pins}  # its version:
    at = "inventories/sample/group_vars/all/fleet.yml"  # as the inventory was given
    assert f"\n  - {at}:{line['slurm']}: gpufleet_versions.slurm.version: REFUSE [slurm-downgrade]" in back.stderr
    crds = f"{at}:{line['slurm_operator_crds']}: gpufleet_versions.slurm_operator_crds.version: FLAG"
    assert crds in back.stdout, back.stdout
    # no base: the fleet alone is fine
    alone = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, check=False)
    assert alone.returncode == 0, alone.stderr


def test_upgrade_plan_orders_the_daemons_and_bounds_the_loss(sample: Fleet) -> None:
    from ansible_collections.gpufleet.core.plugins.module_utils.daytwo.upgrade import upgrade_plan

    assert upgrade_plan(sample, sample) == []
    text = "\n".join(upgrade_plan(_slinky(sample, "1.1.2"), sample))
    assert "(Slurm 25.11 -> 26.05)" in text
    rows = [line.split("|") for line in text.splitlines() if line.startswith("| ")]
    steps = [cells[2].strip() for cells in rows if cells[1].strip().isdigit()]
    assert steps == ["slurmdbd", "slurmctld", "slurmd", "login", "slurmrestd"]  # clients last
    # one node per NodeSet at a time: pretrain has one NodeSet, research two
    assert "| llm-pretrain | rolling | `pretrain` (5) | 1 of 32 | 8 of 256 | 1 in `su02-leaf` |" in text
    # research's two NodeSets both have nodes under su01-leaf: successive waves, that leaf loses one at most
    assert (
        "| research | rolling | `research-batch` (5), `research-debug` (6) | 1 of 14 | 8 of 112 | 1 in `su01-leaf` |"
        in text
    )
