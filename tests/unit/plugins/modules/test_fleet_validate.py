"""fleet_validate in-process: the fleet model of a valid inventory, one message for a broken one."""

from __future__ import annotations

from pathlib import Path

import yaml
from module_harness import hide_library, run_module
from render_fixtures import make_inventory


def test_returns_the_fleet_unchanged_in_check_mode(tmp_path: Path) -> None:
    inv = make_inventory(tmp_path)
    tenants = yaml.safe_load((inv / "group_vars/all/tenants.yml").read_text())["gpufleet_tenants"]
    r = run_module("fleet_validate", {"inventory_dir": str(inv)}, check=True)
    assert r["changed"] is False and "failed" not in r
    assert [t["name"] for t in r["fleet"]["tenants"]] == [t["name"] for t in tenants]
    assert r["fleet"]["summary"]["tenants"] == len(tenants)


def test_broken_inventory_fails_naming_the_file(tmp_path: Path) -> None:
    inv = make_inventory(tmp_path)
    pools = inv / "group_vars/all/pools.yml"
    pools.write_text(pools.read_text().replace("nodes: 32", "nodes: many", 1))
    r = run_module("fleet_validate", {"inventory_dir": str(inv)})
    assert r["failed"] is True and "pools.yml" in r["msg"] and "Traceback" not in r["msg"]


def test_missing_library_is_named(tmp_path: Path, monkeypatch) -> None:
    hide_library(monkeypatch, "jsonschema")
    r = run_module("fleet_validate", {"inventory_dir": str(tmp_path)})
    assert r["failed"] is True and "jsonschema" in r["msg"] and "jsonschema" in r["exception"]


def test_gitops_dir_is_the_fleet_repositorys_from_anywhere(tmp_path: Path, monkeypatch) -> None:
    """``fleet.gitops.dir`` (what apply and maintenance default to) is found from the inventory: the Git
    work tree above it, else the folder holding ``ansible.cfg``; never the working directory or the
    folder a playbook runs from (the installed collection)."""
    import subprocess

    lab = tmp_path / "lab"
    inv = make_inventory(lab / "inventories")
    path = yaml.safe_load((inv / "group_vars/all/fleet.yml").read_text())["gpufleet_fleet"]["gitops"]["path"]
    elsewhere = tmp_path / "collections/ansible_collections/gpufleet/core/playbooks"
    elsewhere.mkdir(parents=True)
    monkeypatch.chdir(elsewhere)
    (lab / "ansible.cfg").write_text("[defaults]\ninventory = inventories/inv\n")
    r = run_module("fleet_validate", {"inventory_dir": str(inv)}, check=True)
    assert r["fleet"]["gitops"]["dir"] == str(lab / path), r["fleet"]["gitops"]
    # a Git work tree wins over an ansible.cfg nearer the inventory
    (lab / "inventories/ansible.cfg").write_text("[defaults]\n")
    subprocess.run(["git", "init", "-q", str(lab)], check=True)
    r = run_module("fleet_validate", {"inventory_dir": str(inv)}, check=True)
    assert r["fleet"]["gitops"]["dir"] == str(lab / path), r["fleet"]["gitops"]


def test_no_playbook_finds_the_fleets_files_from_its_own_folder() -> None:
    """The playbooks run from the installed collection: ``playbook_dir`` is the collection's folder, so only
    ``init`` (which runs the collection's own CLI) may use it; the rest take gitops/ from the inventory."""
    repo = Path(__file__).resolve().parents[4]
    users = sorted(
        p.relative_to(repo).as_posix()
        for p in (*repo.glob("playbooks/**/*.yml"), *repo.glob("roles/**/*.yml"), repo / "site.yml")
        if "playbook_dir" in p.read_text(encoding="utf-8")
    )
    assert users == ["playbooks/init.yml"], users
