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
