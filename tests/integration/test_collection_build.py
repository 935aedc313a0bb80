"""`ansible-galaxy collection build` works and the tarball holds no caches, venvs or binaries."""

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
    bad = [n for n in names if any(f in n + "/" for f in FORBIDDEN) or n.endswith((".pyc", ".tar.gz"))]
    assert bad == []
    # no executables built from Go (or anything else that is not a script) ship in the collection
    big = [m.name for m in members if m.isfile() and m.size > 5 * 1024 * 1024]
    assert big == []
