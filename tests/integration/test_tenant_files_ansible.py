"""Ansible and the renderer read the per-tenant files identically: what `ansible-inventory` shows as
``gpufleet_tenant_*`` variables of the hosts is, in file order, the renderer's ``gpufleet_tenants``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tenant_split import split_tenants

from ansible_collections.gpufleet.core.plugins.module_utils.model.inventory import load_inventory

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.ansible


def test_ansible_sees_the_tenants_the_renderer_reads(tmp_path: Path) -> None:
    inv = tmp_path / "inv"
    shutil.copytree(REPO / "inventories" / "sample", inv)
    split_tenants(inv, keep_in_list=1)
    env = dict(os.environ, ANSIBLE_INVENTORY_IGNORE="snapshots", ANSIBLE_HOME=str(tmp_path / "ah"))
    p = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-inventory"), "-i", str(inv), "--host", "localhost"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert p.returncode == 0, p.stderr
    hostvars = json.loads(p.stdout)
    per_tenant = [hostvars[k] for k in sorted(hostvars) if k.startswith("gpufleet_tenant_")]
    model = load_inventory(inv).data["gpufleet_tenants"]
    assert len(per_tenant) == 2 and model == hostvars["gpufleet_tenants"] + per_tenant
