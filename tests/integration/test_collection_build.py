"""`ansible-galaxy collection build` works; the tarball holds what ships (plugins, roles, playbooks, the
CLI, the fleet-repository scaffold, requirements, the execution environment) and nothing of the
project's own tooling, tests or data; its scripts pass ansible-test's shebang rules."""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FORBIDDEN = (".venv/", ".build/", ".k8s/", "__pycache__/", ".hypothesis/", ".pytest_cache/", "tests/output/", ".git/")


def test_collection_build_is_clean(tmp_path: Path) -> None:
    galaxy = Path(sys.executable).parent / "ansible-galaxy"
    p = subprocess.run(
        [str(galaxy), "collection", "build", "--output-path", str(tmp_path), str(REPO)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert p.returncode == 0, p.stderr
    (tarball,) = tmp_path.glob("gpufleet-core-*.tar.gz")
    with tarfile.open(tarball) as tar:
        members = tar.getmembers()
    names = [m.name for m in members]
    assert "MANIFEST.json" in names and "FILES.json" in names
    for needed in (
        "plugins/modules/gitops_render.py",
        "plugins/module_utils/model/validation.py",
        "roles/tenant/tasks/main.yml",
    ):
        assert needed in names
    for ships in (
        "scripts/gpufleet.py",
        "requirements.txt",
        "requirements.yml",
        "meta/execution-environment.yml",
        "meta/runtime.yml",
        "playbooks/site.yml",
        "playbooks/init.yml",
        "scaffold/fleet-repo/ansible.cfg",
        "scaffold/fleet-repo/dot-github/workflows/gpufleet.yml",
    ):
        assert ships in names, ships
    top = {n.split("/", 1)[0] for n in names}
    not_shipped = {"gitops", "tests", "inventories", "bench", "tools", "extensions", "molecule", ".ci", "Makefile"}
    assert top & not_shipped == set()
    assert {n for n in names if n.startswith("scripts/")} == {"scripts/gpufleet.py"}
    bad = [n for n in names if any(f in n + "/" for f in FORBIDDEN) or n.endswith((".pyc", ".tar.gz"))]
    assert bad == []
    # no executables built from Go (or anything else that is not a script) ship in the collection
    big = [m.name for m in members if m.isfile() and m.size > 5 * 1024 * 1024]
    assert big == []
    # ansible-test's own shebang/executable-bit check, on the files as they ship (the sanity gate,
    # scripts/gates.d/20-sanity.sh, runs every sanity test on the built tarball)
    unpacked = tmp_path / "unpacked"
    with tarfile.open(tarball) as tar:
        tar.extractall(unpacked, filter="tar")
    import ansible_test

    shebang = Path(ansible_test.__file__).parent / "_util" / "controller" / "sanity" / "code-smell" / "shebang.py"
    files = [n for n in names if (unpacked / n).is_file()]
    check = subprocess.run(
        [sys.executable, str(shebang)],
        input="\n".join(files),
        cwd=unpacked,
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0 and check.stdout == "", check.stdout + check.stderr
