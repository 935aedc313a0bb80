"""The collection's dependency lists agree with each other and with what is tested.

galaxy.yml, requirements.yml, requirements.txt, requirements-test.txt, meta/runtime.yml and
meta/execution-environment.yml each state part of the same facts; these tests fail when one moves
without the others.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

REPO = Path(__file__).resolve().parents[3]


def _requirements(path: Path) -> dict[str, Requirement]:
    out: dict[str, Requirement] = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            req = Requirement(line)
            out[req.name.lower()] = req
    return out


def test_runtime_requirements_cover_the_tested_pins() -> None:
    runtime = _requirements(REPO / "requirements.txt")
    pinned = _requirements(REPO / "requirements-test.txt")
    assert {"ansible-core", "jsonschema", "pyyaml", "ruamel.yaml", "kubernetes"} <= set(runtime)
    for name, req in runtime.items():
        assert name in pinned, f"{name} is a runtime requirement but not pinned for the tests"
        (version,) = [s.version for s in pinned[name].specifier]
        assert req.specifier.contains(version), f"requirements-test.txt pins {name}=={version} outside {req.specifier}"


def test_requires_ansible_matches_the_controller_range() -> None:
    runtime = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text())
    lower = SpecifierSet(runtime["requires_ansible"])
    core = _requirements(REPO / "requirements.txt")["ansible-core"].specifier
    (floor,) = [s.version for s in lower if s.operator == ">="]
    assert core.contains(floor), f"requirements.txt ({core}) excludes requires_ansible's floor {floor}"
    assert {s.version for s in core if s.operator == ">="} == {floor}


def test_galaxy_dependencies_match_requirements_yml() -> None:
    galaxy = yaml.safe_load((REPO / "galaxy.yml").read_text())
    reqs = yaml.safe_load((REPO / "requirements.yml").read_text())
    listed = {c["name"]: c.get("version", "*") for c in reqs["collections"]}
    for name, version in galaxy["dependencies"].items():
        assert listed.get(name) == version, f"galaxy.yml {name} {version!r} != requirements.yml {listed.get(name)!r}"


def test_action_group_lists_every_module() -> None:
    runtime = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text())
    modules = sorted(p.stem for p in (REPO / "plugins" / "modules").glob("*.py") if p.stem != "__init__")
    assert sorted(runtime["action_groups"]["gpufleet"]) == modules


def test_execution_environment_is_valid_and_uses_the_lists() -> None:
    ee_schema = pytest.importorskip("ansible_builder.ee_schema")
    ee = yaml.safe_load((REPO / "meta" / "execution-environment.yml").read_text())
    ee_schema.validate_schema(ee)  # raises on any key ansible-builder v3 does not know
    deps = ee["dependencies"]
    assert deps["python"] == "requirements.txt" and deps["galaxy"] == "requirements.yml"
    core = _requirements(REPO / "requirements.txt")["ansible-core"]
    assert Requirement(deps["ansible_core"]["package_pip"]).specifier == core.specifier
