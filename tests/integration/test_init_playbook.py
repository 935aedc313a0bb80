"""`ansible-playbook gpufleet.core.init -e dest=...` scaffolds the same repository as the CLI, idempotently."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.ansible


def play(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=str(REPO / ".build" / "collections"),
        ANSIBLE_HOME=str(tmp_path / "ansible-home"),
    )
    return subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "gpufleet.core.init", *extra],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_init_playbook_scaffolds_once(tmp_path: Path) -> None:
    dest = tmp_path / "acme"
    args = ("-e", f"dest={dest}", "-e", "org=acme", "-e", '{"tenants": ["vision:slurm", "serving:kubernetes"]}')
    first = play(tmp_path, *args)
    assert first.returncode == 0 and "changed=1" in first.stdout, first.stdout + first.stderr
    tenants = sorted(p.name for p in (dest / "inventories/prod/group_vars/all/tenants").iterdir())
    assert tenants == ["serving.yml", "vision.yml"]
    assert "/inventories/prod/group_vars/all/tenants/vision.yml  @acme/vision" in (dest / "CODEOWNERS").read_text()
    again = play(tmp_path, *args)
    assert again.returncode == 0 and "changed=0" in again.stdout, again.stdout


def test_init_playbook_reports_bad_options(tmp_path: Path) -> None:
    p = play(tmp_path, "-e", f"dest={tmp_path / 'x'}", "-e", '{"tenants": ["Bad_Name"]}')
    assert p.returncode != 0 and "--tenant 'Bad_Name': a lower-case DNS label" in p.stdout
    assert not (tmp_path / "x").exists()


def test_init_playbook_refuses_a_relative_destination(tmp_path: Path) -> None:
    """Ansible runs the task from the playbook's directory: a relative DEST would land inside the collection."""
    p = play(tmp_path, "-e", "dest=acme", "-e", "org=acme")
    assert p.returncode != 0 and "dest=/ABSOLUTE/DIR" in p.stdout, p.stdout
    assert not (tmp_path / "acme").exists() and not (REPO / "playbooks" / "acme").exists()
