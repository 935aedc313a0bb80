"""``gpufleet_chart_mirrors``: production chart repository -> mirror, for air-gapped sites."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from render_fixtures import edit_vars, make_inventory, yaml_objects

from ansible_collections.gpufleet.core.plugins.module_utils.errors import ModelError
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_inventory
from ansible_collections.gpufleet.core.plugins.module_utils.versions import CHARTS

MIRROR = "https://charts.mirror.internal/gpu"
OCI_MIRROR = "registry.mirror.internal/slinky"


def _mirrors(d: dict) -> None:
    d["gpufleet_chart_mirrors"] = {
        "https://helm.cilium.io": MIRROR,  # the pinned URL ends in '/': the map ignores that
        "ghcr.io/slinkyproject/charts": OCI_MIRROR,
    }


def test_mirrors_rewrite_chart_sources_and_project_repos(tmp_path: Path) -> None:
    inv = make_inventory(tmp_path)
    plain = render_inventory(inv).files
    edit_vars(inv, "fleet.yml", _mirrors)
    files = render_inventory(inv).files
    objs = {(o["kind"], o["metadata"]["name"]): o for _rel, o in yaml_objects(files) if "kind" in o}
    cilium = objs[("Application", "gpu-east-cilium")]["spec"]["sources"][0]
    assert cilium["repoURL"] == MIRROR
    assert cilium["chart"] == CHARTS["cilium"]["chart"] and cilium["targetRevision"] == CHARTS["cilium"]["version"]
    slurm = next(s for s in objs[("Application", "research-slurm")]["spec"]["sources"] if "chart" in s)
    assert slurm["repoURL"] == OCI_MIRROR
    platform = objs[("AppProject", "gpu-east-platform")]["spec"]["sourceRepos"]
    assert MIRROR in platform and OCI_MIRROR in platform
    assert "https://helm.cilium.io/" not in platform and "ghcr.io/slinkyproject/charts" not in platform
    assert "https://charts.jetstack.io" in platform  # unmapped repositories stay
    research = objs[("AppProject", "research")]["spec"]["sourceRepos"]
    assert OCI_MIRROR in research and "ghcr.io/slinkyproject/charts" not in research
    # only the Applications and AppProjects change; values files are the same
    changed = {r for r in files if files[r] != plain.get(r)}
    assert changed and all("/apps/" in r for r in changed), sorted(changed)


@pytest.mark.parametrize(
    "mirrors",
    [
        {"https://helm.cilium.io/": "https://evil.example/x y"},
        {"https://helm.cilium.io/": "javascript:alert(1)"},
        {"https://helm.cilium.io/": 42},
        {"not a url": "https://mirror.internal"},
        {"https://helm.cilium.io/": 'https://mirror.internal"quote'},
    ],
)
def test_bad_mirror_entries_are_refused(tmp_path: Path, mirrors: dict) -> None:
    inv = make_inventory(tmp_path)
    edit_vars(inv, "fleet.yml", lambda d: d.update(gpufleet_chart_mirrors=mirrors))
    with pytest.raises(ModelError) as exc:
        load_fleet(inv)
    assert "gpufleet_chart_mirrors" in str(exc.value)
    assert "fleet.yml" in str(exc.value)


def test_mirrors_default_to_none() -> None:
    fleet = load_fleet(Path(__file__).resolve().parents[5] / "inventories" / "sample")
    assert fleet.chart_mirrors == {}
    assert fleet.chart_repo("https://helm.cilium.io/") == "https://helm.cilium.io/"
    assert yaml.safe_dump(fleet.chart_mirrors) == "{}\n"
