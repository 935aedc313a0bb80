"""The modules that run on managed hosts (fabric_facts, slurm_topology) import and work on Python 3.9.

ansible-core 2.21 runs modules on target Pythons 3.9 and later; a host with an HCA is often a
RHEL/Rocky 9 machine whose system Python is 3.9. Three checks, each on the real thing:

- every file those modules import (their module_utils closure, read from the source) is kept at
  Python 3.9 by ruff (``per-file-target-version`` in pyproject.toml), so a 3.10+ syntax fails lint;
- the unit tests of that code run under Python 3.9 (``.build/py39``, made by scripts/setup.sh);
- ansible-playbook runs both modules with a bare Python 3.9 as the target interpreter (no PyYAML):
  AnsiballZ ships the module and its module_utils there, as on a managed host.
"""

from __future__ import annotations

import ast
import fnmatch
import json
import os
import subprocess
import tomllib
from pathlib import Path

import pytest
from gpufleet_testlib import fabric_gen
from playbook_runner import playbook_env, run_playbook, task_results, write_play

REPO = Path(__file__).resolve().parents[2]
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")  # as tests/conftest.py reads it
PREFIX = "ansible_collections.gpufleet.core.plugins."
TARGET_MODULES = ("plugins/modules/fabric_facts.py", "plugins/modules/slurm_topology.py")
# unit tests of the managed-host code only (the others need the controller's render stack)
TARGET_TESTS = (
    "tests/unit/plugins/module_utils/fabric",
    "tests/unit/plugins/module_utils/topology/test_natural_key.py",
    "tests/unit/plugins/module_utils/topology/test_topology.py",
    "tests/unit/plugins/module_utils/topology/test_topology_build_shortcuts.py",
    "tests/unit/plugins/module_utils/topology/test_topology_render.py",
)
PY39 = REPO / ".build" / "py39" / "bin" / "python"


def _file_of(module: str) -> Path | None:
    rel = Path(*module[len(PREFIX) :].split("."))
    for p in (REPO / "plugins" / rel.with_suffix(".py"), REPO / "plugins" / rel / "__init__.py"):
        if p.is_file():
            return p
    return None


def import_closure(roots: tuple[str, ...]) -> set[str]:
    """Repository paths of the roots and every collection file they import, transitively."""
    seen: set[Path] = set()
    todo = [REPO / r for r in roots]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        for n in ast.walk(ast.parse(p.read_text(), str(p))):
            if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith(PREFIX):
                names = [n.module] + [f"{n.module}.{a.name}" for a in n.names]
                todo += [f for f in map(_file_of, names) if f]
    return {str(p.relative_to(REPO)) for p in seen}


def _python39() -> Path:
    if PY39.exists():
        return PY39
    msg = f"{PY39} missing: run scripts/setup.sh (needs a Python 3.9, e.g. pyenv install 3.9)"
    if IN_CI:
        pytest.fail(msg, pytrace=False)
    pytest.skip(msg)
    raise AssertionError("unreachable")


def test_managed_host_code_is_linted_for_python39() -> None:
    globs = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["ruff"]["per-file-target-version"]
    py39 = [g for g, v in globs.items() if v == "py39"]
    closure = import_closure(TARGET_MODULES)
    assert len(closure) > len(TARGET_MODULES)  # the walk found module_utils
    assert "plugins/module_utils/fabric/ibnetdiscover.py" in closure
    outside = [f for f in sorted(closure) if not any(fnmatch.fnmatch(f, e) for g in py39 for e in _braces(g))]
    assert not outside, f"managed-host files not held to py39 in pyproject.toml: {outside}"


def _braces(glob: str) -> list[str]:
    """fnmatch has no {a,b}; ruff's globs do: expand one brace group."""
    if "{" not in glob:
        return [glob]
    head, rest = glob.split("{", 1)
    alts, tail = rest.split("}", 1)
    return [head + a + tail for a in alts.split(",")]


def test_managed_host_unit_tests_pass_on_python39() -> None:
    py = _python39()
    assert subprocess.run([str(py), "-c", "import sys; assert sys.version_info[:2] == (3, 9)"]).returncode == 0
    p = subprocess.run(
        [str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider", *TARGET_TESTS],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert p.returncode == 0, (p.stdout[-4000:], p.stderr[-2000:])
    assert " passed" in p.stdout.splitlines()[-1]


def test_modules_run_under_ansible_with_a_bare_python39(tmp_path: Path) -> None:
    """A bare interpreter (the pyenv 3.9 base, no PyYAML) as the target, as on a fresh Rocky 9 host."""
    py = Path(os.path.realpath(_python39())).parent / "python3.9"
    base = Path(subprocess.run([str(py), "-c", "import sys; print(sys.base_prefix)"], capture_output=True,
                               text=True, check=True).stdout.strip()) / "bin" / "python3.9"
    assert subprocess.run([str(base), "-c", "import yaml"], capture_output=True).returncode != 0
    g = fabric_gen.generate(fabric_gen.GenSpec(hosts=16, rails=2, su_size=8))
    (tmp_path / "ib.out").write_text(fabric_gen.render_ibnetdiscover(g))
    dest = tmp_path / "topology.conf"
    tasks = [
        {"name": "facts", "gpufleet.core.fabric_facts": {"src": str(tmp_path / "ib.out")}},
        {"name": "topo", "gpufleet.core.slurm_topology": {"ibnetdiscover": [str(tmp_path / "ib.out")],
                                                          "dest": str(dest)}},
        {"name": "yaml", "gpufleet.core.slurm_topology": {"ibnetdiscover": [str(tmp_path / "ib.out")],
                                                          "format": "yaml"}, "ignore_errors": True},
    ]
    play = write_play(tmp_path / "play.yml", tasks)
    env = playbook_env(ANSIBLE_HOME=str(tmp_path / "ansible-home"), ANSIBLE_INVENTORY_UNPARSED_WARNING="false")
    target = f"ansible_python_interpreter={base}"
    p = run_playbook("localhost,", play, "-c", "local", "-e", target, env=env, cwd=tmp_path)
    res = {r["name"]: r for r in task_results(p.stdout)}
    facts = res["facts"]
    assert not facts.get("failed"), facts
    topo, yml = res["topo"], res["yaml"]
    assert len(facts["fabric"]["leaf_groups"]) == 2
    assert topo["changed"] is True and "SwitchName=" in dest.read_text()
    # topology.yaml needs PyYAML on the target; without it the module says so (and does not crash)
    assert yml.get("failed") is True and "yaml" in yml["msg"] and "Traceback" not in json.dumps(yml), yml
