"""Maintenance: the model, the rendered cordon list and plan, the cordon patch, the inventory edit."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.module_utils.daytwo.maintenance_change import (
    MaintenanceError,
    plan_maintenance,
    write_maintenance,
)
from ansible_collections.gpufleet.core.plugins.module_utils.errors import ModelError
from ansible_collections.gpufleet.core.plugins.module_utils.model.maintenance_model import Maintenance
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.pools import apply as pool_apply
from ansible_collections.gpufleet.core.plugins.module_utils.pools import cordon
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_fleet

REPO = Path(__file__).resolve().parents[5]
SAMPLE = REPO / "inventories" / "sample"
CLI = REPO / "scripts" / "gpufleet.py"
FIRMWARE = {
    "name": "su01-firmware",
    "cluster": "gpu-east",
    "switch": "su01-leaf",
    "reason": "switch firmware 2.3",
    "window": {"start": "2026-12-01T06:00:00Z", "duration": "4h"},
}
PSU = {"name": "psu-swap", "cluster": "gpu-east", "nodes": "gpu[041-042]", "reason": "PSU swap RMA-4411"}


def _inventory(tmp_path: Path, entries: list[dict]) -> Path:
    inv = tmp_path / "inv"
    shutil.copytree(SAMPLE, inv)
    (inv / "group_vars" / "all" / "maintenance.yml").write_text(yaml.safe_dump({"gpufleet_maintenance": entries}))
    return inv


def _render(tmp_path: Path, entries: list[dict]) -> dict[str, bytes]:
    return render_fleet(load_fleet(_inventory(tmp_path, entries))).files


def test_render_resolves_hostlists_and_switches(tmp_path: Path) -> None:
    files = _render(tmp_path, [PSU, FIRMWARE])
    doc = yaml.safe_load(files["clusters/gpu-east/maintenance.yaml"])
    assert sorted(doc["nodes"]) == [f"gpu00{i}" for i in range(1, 9)] + ["gpu041", "gpu042"]
    assert doc["nodes"]["gpu041"] == {"maintenance": "psu-swap", "reason": "PSU swap RMA-4411"}
    assert doc["nodes"]["gpu003"]["end"] == "2026-12-01T10:00:00Z"
    # the window's MAINT reservation: only the Slurm tenant's nodes, in that tenant's Slurm
    assert doc["reservations"] == [
        {
            "tenant": "research",
            "name": "gpufleet-su01-firmware",
            "nodes": "gpu[003-008]",
            "start": "2026-12-01T06:00:00Z",
            "duration": "4h",
            "flags": ["MAINT", "IGNORE_JOBS"],
        }
    ]
    plan = files["clusters/gpu-east/MAINTENANCE.md"].decode()
    assert "| research | `psu-swap` | 2 of 14 | 16 of 112 (14%) | `gpu[041-042]` |" in plan
    assert "| research | `su01-firmware` | 6 of 14 | 48 of 112 (43%) | `gpu[003-008]` | 2026-12-01T06:00:00Z to" in plan


def test_no_maintenance_renders_nothing(tmp_path: Path) -> None:
    files = _render(tmp_path, [])
    assert not [f for f in files if "maintenance" in f.lower()]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({**PSU, "nodes": "gpu[900-901]"}, r"gpufleet_maintenance\[0\]\.nodes: not nodes of gpu-east: gpu\[900-901\]"),
        ({**PSU, "nodes": None, "switch": "nowhere"}, r"gpufleet_maintenance\[0\]\.switch: 'nowhere' is not a switch"),
    ],
)
def test_render_names_the_entry(tmp_path: Path, entry: dict, message: str) -> None:
    entry = {k: v for k, v in entry.items() if v is not None}
    with pytest.raises(ModelError, match=message):
        _render(tmp_path, [entry])


def test_one_node_one_maintenance(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"\[1\]\.name: node gpu041 is already in maintenance 'psu-swap'"):
        _render(tmp_path, [PSU, {**PSU, "name": "again", "nodes": "gpu041"}])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"reason": 'x"; scontrol delete'}, r"\[0\]\.reason"),
        ({"window": {"start": "2026-02-30T06:00:00Z", "duration": "4h"}}, "is not a valid UTC time"),
        ({"window": {"start": "2026-12-01T06:00:00Z", "duration": "31d"}}, "longer than 30d"),
        ({"window": {"start": "2026-12-01T06:00:00Z"}}, "duration"),
        ({"cluster": "gpu-west"}, "cluster 'gpu-west' is not defined"),
        ({"switch": "su01-leaf"}, r"\[0\]"),  # nodes and switch together
        ({"tenant": "research"}, "tenant"),  # closed object
    ],
)
def test_model_refuses(tmp_path: Path, change: dict, message: str) -> None:
    with pytest.raises(ModelError, match=message):
        load_fleet(_inventory(tmp_path, [{**PSU, **change}]))


def test_duplicate_names_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="maintenance 'psu-swap' is defined twice"):
        load_fleet(_inventory(tmp_path, [PSU, {**PSU, "nodes": "gpu043"}]))


def _node(name: str, unschedulable: bool = False, annotations: dict | None = None) -> dict:
    return {
        "metadata": {"name": name, "resourceVersion": "7", "annotations": annotations or {}, "labels": {}},
        "spec": {"unschedulable": unschedulable} if unschedulable else {},
    }


ENTRY = {"maintenance": "psu-swap", "reason": "PSU swap RMA-4411"}


def test_cordon_patch_carries_the_reason_with_the_cordon() -> None:
    change = pool_apply.plan_node(_node("gpu041"), None, None, maintenance={"gpu041": ENTRY})
    assert change is not None
    assert change.patch == {
        "metadata": {
            "resourceVersion": "7",
            "annotations": {cordon.OWNER_ANNOTATION: "psu-swap", cordon.REASON_ANNOTATION: "PSU swap RMA-4411"},
        },
        "spec": {"unschedulable": True},
    }
    assert change.after["cordon"]["unschedulable"] is True


def test_return_uncordons_only_gpufleet_cordons() -> None:
    ours = _node("gpu041", True, {cordon.OWNER_ANNOTATION: "psu-swap", cordon.REASON_ANNOTATION: "x", "a/b": "c"})
    change = pool_apply.plan_node(ours, None, None, maintenance={})
    assert change is not None
    assert change.patch["spec"] == {"unschedulable": False}
    assert change.patch["metadata"]["annotations"] == {cordon.OWNER_ANNOTATION: None, cordon.REASON_ANNOTATION: None}
    theirs = _node("gpu042", True, {cordon.REASON_ANNOTATION: "someone else"})
    assert pool_apply.plan_node(theirs, None, None, maintenance={}) is None
    assert pool_apply.plan_node(ours, None, None, maintenance=None) is None  # not managed: left alone
    done = _node("gpu041", True, {cordon.OWNER_ANNOTATION: "psu-swap", cordon.REASON_ANNOTATION: ENTRY["reason"]})
    assert pool_apply.plan_node(done, None, None, maintenance={"gpu041": ENTRY}) is None  # idempotent


def test_window_is_due_from_its_start() -> None:
    entries = {"gpu003": {**ENTRY, "start": "2026-12-01T06:00:00Z", "end": "2026-12-01T10:00:00Z"}, "gpu041": ENTRY}
    before = datetime(2026, 12, 1, 5, 59, tzinfo=timezone.utc)  # noqa: UP017
    after = datetime(2026, 12, 1, 6, 0, tzinfo=timezone.utc)  # noqa: UP017
    assert sorted(cordon.due(entries, before)) == ["gpu041"]
    assert sorted(cordon.due(entries, after)) == ["gpu003", "gpu041"]


def test_read_maintenance(tmp_path: Path) -> None:
    assert cordon.read_maintenance(tmp_path / "absent", "gpu-east")[0] is None
    assert cordon.read_maintenance(tmp_path, "gpu-east")[0] == {}
    path = cordon.maintenance_file(tmp_path, "gpu-east")
    path.parent.mkdir(parents=True)
    path.write_text("nodes: {gpu041: {maintenance: m, reason: r, start: 'not a time'}}\n")
    with pytest.raises(cordon.CordonError, match=r"nodes\.gpu041\.start"):
        cordon.read_maintenance(tmp_path, "gpu-east")


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "inventories").mkdir(parents=True)
    shutil.copytree(SAMPLE, repo / "inventories" / "sample")
    shutil.copytree(REPO / "gitops", repo / "gitops")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


def test_start_and_end_edit_one_file_and_render(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    inv = repo / "inventories" / "sample"
    before = {p: p.read_bytes() for p in (repo / "gitops").rglob("*") if p.is_file()}
    change = plan_maintenance(inv, start=Maintenance("psu-swap", "gpu-east", "PSU swap", nodes="gpu[041-042]"))
    assert change.files() == ["clusters/gpu-east/MAINTENANCE.md", "clusters/gpu-east/maintenance.yaml"]
    assert "2 of 14" in change.plan_markdown()
    assert not change.file.exists()  # planning writes nothing
    write_maintenance(change)
    assert yaml.safe_load(change.file.read_text())["gpufleet_maintenance"][0]["nodes"] == "gpu[041-042]"
    with pytest.raises(MaintenanceError, match="already in"):
        plan_maintenance(inv, start=Maintenance("psu-swap", "gpu-east", "again", nodes="gpu043"))
    with pytest.raises(MaintenanceError, match=r"no maintenance named 'nope'.*in maintenance: psu-swap"):
        plan_maintenance(inv, end="nope")
    write_maintenance(plan_maintenance(inv, end="psu-swap"))  # the return: back to the tree as it was
    assert not change.file.exists()
    assert {p: p.read_bytes() for p in (repo / "gitops").rglob("*") if p.is_file()} == before


def test_list_defined_elsewhere_is_refused(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    inv = repo / "inventories" / "sample"
    (inv / "group_vars" / "all" / "other.yml").write_text(yaml.safe_dump({"gpufleet_maintenance": [PSU]}))
    with pytest.raises(MaintenanceError, match=r"other\.yml: defines gpufleet_maintenance"):
        plan_maintenance(inv, end="psu-swap")


def test_cli_exit_codes(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    run = [sys.executable, str(CLI), "maintenance", "start", "-i", "inventories/sample", "--name", "m", "--check"]
    bad = subprocess.run(
        [*run, "--cluster", "gpu-east", "--nodes", "gpu999", "--reason", "r"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2 and "not nodes of gpu-east: gpu999" in bad.stderr
    ok = subprocess.run(
        [*run, "--cluster", "gpu-east", "--switch", "su06-leaf", "--reason", "r"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert ok.returncode == 0, ok.stderr
    assert "| research | `m` | 8 of 14 |" in ok.stdout and "would change" in ok.stdout
    assert not (repo / "inventories" / "sample" / "group_vars" / "all" / "maintenance.yml").exists()


def test_list_and_status_say_each_maintenances_state_at_a_time(tmp_path: Path) -> None:
    """``maintenance list``: every maintenance with its rendered nodes and its state at ``--now`` (pending
    before its window, due in it or without one, ended after it); ``status --name``: that one, exit 2 for
    a name there is none of."""
    repo = _repo(tmp_path)
    inv = repo / "inventories" / "sample"
    for entry in (FIRMWARE, PSU):
        start = Maintenance(entry["name"], entry["cluster"], entry["reason"], entry.get("nodes"), entry.get("switch"))
        window = entry.get("window") or {}
        write_maintenance(plan_maintenance(inv, start=replace(start, **window)))
    cmd = [sys.executable, str(CLI), "maintenance", "list", "-i", "inventories/sample", "--now"]

    def states(now: str, *more: str) -> list[tuple[str, str]]:
        p = subprocess.run([*cmd, now, *more], cwd=repo, capture_output=True, text=True, check=True)
        rows = [r.split("|") for r in p.stdout.splitlines()[2:]]
        return [(r[1].strip(" `"), r[6].strip()) for r in rows]

    assert states("2026-12-01T05:59:59Z") == [("psu-swap", "due"), ("su01-firmware", "pending")]
    assert states("2026-12-01T06:00:00Z") == [("psu-swap", "due"), ("su01-firmware", "due")]
    assert states("2026-12-01T10:00:00Z") == [("psu-swap", "due"), ("su01-firmware", "ended")]
    status = [sys.executable, str(CLI), "maintenance", "status", "-i", "inventories/sample"]
    one = subprocess.run([*status, "--name", "psu-swap"], cwd=repo, capture_output=True, text=True, check=False)
    assert one.returncode == 0 and "| `psu-swap` | `gpu-east` | `gpu[041-042]` (2) | PSU swap RMA-4411 |" in one.stdout
    assert "su01-firmware" not in one.stdout
    none = subprocess.run([*status, "--name", "nope"], cwd=repo, capture_output=True, text=True, check=False)
    assert none.returncode == 2 and "known: psu-swap, su01-firmware" in none.stderr, none.stderr


def test_a_tenants_file_cannot_put_nodes_into_maintenance(tmp_path: Path) -> None:
    inv = _inventory(tmp_path, [])
    own = inv / "group_vars" / "all" / "tenants" / "research.yml"
    own.parent.mkdir(parents=True)
    own.write_text(yaml.safe_dump({"gpufleet_maintenance": [PSU]}))
    with pytest.raises(ModelError, match=r"tenants/research\.yml.*gpufleet_maintenance"):
        load_fleet(inv)
