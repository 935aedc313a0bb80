"""One Slinky release everywhere: the version table (``versions.CHARTS``) names the operator chart
the fleet deploys; its CRD chart, the operator the test bed builds (tools/build.sh, from the release
sources in ../shared/upstream/src) and the tools README say the same release."""

from __future__ import annotations

import re
from pathlib import Path

from ansible_collections.gpufleet.core.plugins.module_utils.versions import CHARTS

REPO = Path(__file__).resolve().parents[3]
VERSION = CHARTS["slurm_operator"]["version"]


def _one(pattern: str, text: str, where: str) -> str:
    found = re.findall(pattern, text, flags=re.MULTILINE)
    assert len(found) == 1, f"{where}: expected one match of {pattern!r}, found {found}"
    return found[0]


def test_operator_crd_and_cluster_charts_are_one_release() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION), VERSION
    assert CHARTS["slurm_operator_crds"]["version"] == VERSION
    assert CHARTS["slurm"]["version"] == VERSION


def test_bed_builds_the_pinned_release() -> None:
    build = (REPO / "tools" / "build.sh").read_text()
    assert _one(r"^SLINKY_VERSION=(\S+)", build, "tools/build.sh") == VERSION
    # the operator and the slurm-client it is built against come from the sources of that release
    assert "slurm-operator-$SLINKY_VERSION-src.tar.gz" in build
    assert "slurm-client-$SLINKY_VERSION-src.tar.gz" in build


def test_tools_readme_names_the_pinned_release() -> None:
    row = _one(r"^\| slinky \|.*$", (REPO / "tools" / "README.md").read_text(), "tools/README.md")
    assert re.findall(r"\d+\.\d+\.\d+", row.split("|")[-2]) == [VERSION], row
