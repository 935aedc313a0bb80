"""The one way the tests run ``ansible-playbook``: the venv's binary (else the one on PATH), this
checkout's collection, the JSON callback (or, for a run as a user types it, the human output and its
recap), a play of tasks written next to the test's files, and the task results read back."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
COLLECTIONS = REPO / ".build" / "collections"
RECAP = re.compile(r"^localhost\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)


def ansible_playbook() -> str:
    """The venv's ``ansible-playbook`` (the one running the tests), else PATH's; skips without one."""
    exe = Path(sys.executable).parent / "ansible-playbook"
    if exe.exists():
        return str(exe)
    found = shutil.which("ansible-playbook")
    if found is None:
        pytest.skip("ansible-playbook is not installed (scripts/setup.sh)")
    return found


def playbook_env(base: Mapping[str, str] | None = None, *, user: bool = False, **extra: str) -> dict[str, str]:
    """The environment of a run (``base``, else this process's): this checkout's collection, JSON
    output, no colour, this Python; then ``extra``. ``user``: as a user at the repository root runs
    it instead: this checkout's collection and no colour, but the repository's ansible.cfg (its
    interpreter discovery, its output) and the venv's tools first on PATH."""
    env = dict(os.environ if base is None else base)
    env.update(ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), ANSIBLE_NOCOLOR="1")
    if user:
        for name in ("ANSIBLE_CONFIG", "ANSIBLE_STDOUT_CALLBACK", "ANSIBLE_PYTHON_INTERPRETER"):
            env.pop(name, None)
        env["ANSIBLE_FORCE_COLOR"] = "0"
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    else:
        env.update(
            ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
            ANSIBLE_LOCALHOST_WARNING="False",
            ANSIBLE_PYTHON_INTERPRETER=sys.executable,
        )
    env.update(extra)
    return env


def write_play(path: Path, tasks: list[dict[str, Any]], name: str = "test play") -> Path:
    """A one-play playbook on localhost (no facts) running ``tasks``, written to ``path``."""
    play = [{"name": name, "hosts": "localhost", "gather_facts": False, "tasks": tasks}]
    path.write_text(yaml.safe_dump(play, sort_keys=False), encoding="utf-8")
    return path


def run_playbook(
    inventory: Path | str,
    play: Path,
    *flags: str,
    env: dict[str, str] | None = None,
    ok: bool | None = True,
    timeout: int = 600,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess:
    """``ansible-playbook -i inventory play flags`` (in ``cwd``); asserts its exit status is 0 (``ok``),
    or not 0 (``ok=False``); ``ok=None`` leaves the status to the caller."""
    proc = subprocess.run(
        [ansible_playbook(), "-i", str(inventory), str(play), *flags],
        capture_output=True,
        text=True,
        env=env or playbook_env(),
        timeout=timeout,
        check=False,
        cwd=cwd,
    )
    if ok is not None:
        assert (proc.returncode == 0) is ok, proc.stdout[-6000:] + proc.stderr[-3000:]
    return proc


def recap_counts(output: str) -> dict[str, int]:
    """localhost's PLAY RECAP counts (ok, changed, unreachable, failed) of a run's human output; {} without one."""
    found = RECAP.search(output)
    if found is None:
        return {}
    return dict(zip(("ok", "changed", "unreachable", "failed"), map(int, found.groups()), strict=True))


def task_results(stdout: str, play: int = 0) -> list[dict[str, Any]]:
    """The localhost result of each task of a play, with the task's name, from the JSON callback."""
    tasks = json.loads(stdout)["plays"][play]["tasks"]
    return [{"name": t["task"]["name"], **t["hosts"]["localhost"]} for t in tasks]


def run_task(inventory: Path, play: Path, module: str, args: dict[str, Any], *flags: str) -> dict[str, Any]:
    """Run one ``module`` task with ``args`` (the play written to ``play``); its localhost result."""
    write_play(play, [{"name": module, module: args}])
    proc = run_playbook(inventory, play, *flags)
    return json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
