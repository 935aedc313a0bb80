"""One Argo CD release everywhere: the version table (``versions.IMAGES["argocd"]``) names it; the
rendered Argo CD image, the test bed's build (tools/build.sh and its wrapper module) and the docs
say the same release."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from ansible_collections.gpufleet.core.plugins.module_utils.versions import IMAGES

REPO = Path(__file__).resolve().parents[3]
VERSION = IMAGES["argocd"]


def _one(pattern: str, text: str, where: str) -> str:
    found = re.findall(pattern, text, flags=re.MULTILINE)
    assert len(found) == 1, f"{where}: expected one match of {pattern!r}, found {found}"
    return found[0]


def test_version_is_a_release_tag() -> None:
    assert re.fullmatch(r"v\d+\.\d+\.\d+", VERSION), VERSION


def test_rendered_image_is_the_pinned_release() -> None:
    for values in sorted((REPO / "gitops" / "clusters").glob("*/platform/argocd/values.yaml")):
        tag = yaml.safe_load(values.read_text())["global"]["image"]["tag"]
        assert tag == VERSION, f"{values.relative_to(REPO)}: global.image.tag {tag} != {VERSION}"


def test_bed_builds_the_pinned_release() -> None:
    build = (REPO / "tools" / "build.sh").read_text()
    assert _one(r"^ARGOCD_VERSION=(\S+)", build, "tools/build.sh") == VERSION
    gomod = (REPO / "tools" / "argocd" / "go.mod").read_text()
    assert _one(r"^require github\.com/argoproj/argo-cd/v3 (\S+)$", gomod, "tools/argocd/go.mod") == VERSION
    # the nested gitops-engine module comes from the source of that same release
    assert _one(r"^replace github\.com/argoproj/argo-cd/gitops-engine => (\S+)$", gomod, "go.mod") == "./gitops-engine"
    assert "argo-cd-gitops-engine-${ARGOCD_VERSION#v}-src.tar.gz" in build


def test_docs_name_the_pinned_release() -> None:
    adr = (REPO / "docs" / "adr" / "argocd-test-bed.md").read_text()
    assert _one(r"^## Version: (\S+)$", adr, "docs/adr/argocd-test-bed.md") == VERSION
    readme = (REPO / "tools" / "README.md").read_text()
    row = _one(r"^\| argocd \|.*$", readme, "tools/README.md")
    assert re.findall(r"v\d+\.\d+\.\d+", row) == [VERSION], row
