"""The gitops_render module through real Ansible (ad-hoc ``ansible localhost -m``): check mode plans
without writing, diff mode shows file diffs, ``changed`` only when bytes change, bad input fails
with the file named."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from render_fixtures import REPO, make_inventory, tree_state

ANSIBLE = REPO / ".venv" / "bin" / "ansible"


def module(inv: Path, dest: Path, *flags: str, home: Path, option: str = "gitops_dir") -> dict:
    if not ANSIBLE.exists() and not shutil.which("ansible"):
        pytest.skip("ansible not installed in .venv")
    env = dict(os.environ)
    env.update(
        ANSIBLE_COLLECTIONS_PATH=str(REPO / ".build" / "collections"),
        ANSIBLE_HOME=str(home),
        ANSIBLE_LOCALHOST_WARNING="false",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
        ANSIBLE_LOAD_CALLBACK_PLUGINS="true",
        ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
        ANSIBLE_PYTHON_INTERPRETER=sys.executable,
    )
    cmd = [
        str(ANSIBLE if ANSIBLE.exists() else "ansible"),
        "localhost",
        "-m",
        "gpufleet.core.gitops_render",
        "-a",
        json.dumps({"inventory_dir": str(inv), option: str(dest)}),
        *flags,
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, check=False)
    out = json.loads(p.stdout)
    return out["plays"][0]["tasks"][0]["hosts"]["localhost"]


def test_module_check_diff_write_idempotent(tmp_path: Path) -> None:
    inv = make_inventory(tmp_path)
    dest = tmp_path / "gitops"
    home = tmp_path / "ansible-home"
    r = module(inv, dest, "--check", "--diff", home=home)
    assert r["changed"] is True and r["files_added"] and not dest.exists()
    assert not (inv / "snapshots/gpu-east/pools.lock.yaml").exists()
    assert any(d["after_header"].endswith("root-app.yaml") for d in r["diff"])
    r = module(inv, dest, home=home)
    assert r["changed"] is True and r["files_unchanged"] == 0 and "diff" not in r
    state = tree_state(dest)
    manifests = [f for f in state if f.endswith(".gpufleet-manifest")]
    assert len(manifests) == 1 + r["summary"]["gpu-east"]["tenants"]  # the root's + one per tenant
    assert len(state) == len(r["files_added"]) + len(manifests)
    r = module(inv, dest, "--diff", home=home)
    assert r["changed"] is False and r["diff"] == [] and r["files_unchanged"] == len(state) - len(manifests)
    assert tree_state(dest) == state and r["summary"]  # a full render that found nothing to change
    r = module(inv, dest, home=home, option="dest")  # the option's old name, kept as an alias
    assert r["changed"] is False and r["summary"] == {}  # no-change fast path, also inside AnsiballZ
    (dest / "clusters/gpu-east/REPORT.md").write_text("edited\n")
    r = module(inv, dest, "--check", "--diff", home=home)
    assert r["changed"] is True and r["files_changed"] == ["clusters/gpu-east/REPORT.md"]
    assert r["diff"][0]["before"] == "edited\n" and r["diff"][0]["after"].startswith("# Cluster `gpu-east`")


def test_module_bad_input_fails_clearly(tmp_path: Path) -> None:
    inv = make_inventory(tmp_path)
    pools = inv / "group_vars/all/pools.yml"
    pools.write_text(pools.read_text().replace("nodes: 32", "nodes: many"))
    r = module(inv, tmp_path / "gitops", home=tmp_path / "ansible-home")
    assert r["failed"] is True and "pools.yml" in r["msg"] and "Traceback" not in r["msg"]
    assert not (tmp_path / "gitops").exists()
