"""Every image the charts pull is in gpufleet's image table and follows ``gpufleet_image_mirror``.

The image references come from the pinned charts' own values (../shared/upstream/charts), not from
the table: every values node that names an image (``repository`` with a tag, registry, image name
or digest) must have a row, with the same reference. Then the sample is rendered with a mirror and,
for every chart values file, the rendered values are merged over the chart's defaults (as Helm
does) and each image the chart would pull is resolved the way the chart builds it: every one must
come from the mirror. gpufleet's own manifests (the accounts Job) too.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from render_checks import CHART_OF_DIR, upstream_values
from render_fixtures import edit_vars, make_inventory, yaml_objects

from ansible_collections.gpufleet.core.plugins.module_utils.render import images
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_inventory

MIRROR = "registry.site.internal/mirror"
KEY_OF_CHART = {"csi-driver-nfs": "csi_driver_nfs", "gpu-operator": "gpu_operator", "slurm-operator": "slurm_operator"}
UPSTREAM_CHARTS = ("cilium", "csi-driver-nfs", "gpu-operator", "slurm", "slurm-operator", "vcluster")


def image_nodes(values: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], dict]]:
    """Every values node that names an image (a non-empty ``repository`` and a tag, registry,
    image name, version or digest beside it)."""
    out = []
    if isinstance(values, dict):
        keys = set(values)
        if isinstance(values.get("repository"), str) and keys & {"tag", "registry", "image", "digest", "version"}:
            if values["repository"]:
                out.append((path, values))
        for k, v in values.items():
            out += image_nodes(v, (*path, str(k)))
    return out


def reference(chart: str, node: dict, values: dict) -> str:
    """The image a node makes the chart pull, built the way each chart builds it."""
    repo = node["repository"]
    if chart == "vcluster":
        repo = f"{node['registry']}/{repo}"
    elif chart == "gpu-operator":
        repo = f"{repo}/{node['image']}"
    elif chart == "csi-driver-nfs" and repo.startswith("/"):
        repo = values["image"]["baseRepo"] + repo
    tag = node.get("tag") or node.get("version")
    return f"{repo}:{tag}" if tag else repo


def merged(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = merged(base.get(k), v)
        return out
    return copy.deepcopy(over)


@pytest.mark.parametrize("chart", UPSTREAM_CHARTS)
def test_table_has_every_image_the_chart_pulls(shared_dir: Path, chart: str) -> None:
    values = upstream_values(shared_dir, chart)
    rows = {img.path: img for img in images.IMAGES if img.chart == KEY_OF_CHART.get(chart, chart)}
    found = image_nodes(values)
    assert found
    missing = [".".join(p) for p, _image in found if p not in rows]
    assert not missing, f"{chart}: images the mirror does not cover: {missing}"
    for path, node in found:
        assert rows[path].upstream == reference(chart, node, values), path


def test_table_rows_name_upstream_keys(shared_dir: Path) -> None:
    by_chart = {KEY_OF_CHART.get(c, c): upstream_values(shared_dir, c) for c in UPSTREAM_CHARTS}
    # the others are read off the templated charts (test_images_templated)
    assert {img.chart for img in images.IMAGES} - set(by_chart) == {"cert_manager", "kueue"}
    for img in (i for i in images.IMAGES if i.chart in by_chart):
        node: Any = by_chart[img.chart]
        for k in img.path:
            node = node[k]
        assert isinstance(node, dict), img


@pytest.fixture(scope="module")
def mirrored(tmp_path_factory) -> dict[str, bytes]:
    inv = make_inventory(tmp_path_factory.mktemp("images"))

    def mirror(d: dict) -> None:
        d["gpufleet_image_mirror"] = MIRROR

    edit_vars(inv, "fleet.yml", mirror)
    return render_inventory(inv).files


def test_every_image_comes_from_the_mirror(shared_dir: Path, mirrored: dict[str, bytes]) -> None:
    seen = set()
    for rel, body in sorted(mirrored.items()):
        if not rel.endswith("/values.yaml"):
            continue
        chart = CHART_OF_DIR.get(rel.split("/")[-2])
        if chart not in UPSTREAM_CHARTS:
            continue
        seen.add(chart)
        effective = merged(upstream_values(shared_dir, chart), yaml.safe_load(body))
        for path, node in image_nodes(effective):
            ref = reference(chart, node, effective)
            assert ref.startswith(MIRROR + "/"), f"{rel}: {'.'.join(path)} pulls {ref}"
        if chart == "vcluster":  # CoreDNS and the rewrite-hosts init container (the vCluster's own)
            assert effective["controlPlane"]["advanced"]["defaultImageRegistry"] == f"{MIRROR}/docker.io"
            assert effective["telemetry"] == {"enabled": False}
    assert seen == set(UPSTREAM_CHARTS)
    own = [o for rel, o in yaml_objects(mirrored) if o.get("kind") == "Job"]
    assert own
    for job in own:
        for c in job["spec"]["template"]["spec"]["containers"]:
            assert c["image"].startswith(MIRROR + "/ghcr.io/slinkyproject/"), c["image"]
    table = mirrored["IMAGES.md"].decode()
    alpine = "docker.io/library/alpine:latest"
    assert f"`{alpine}` | `{MIRROR}/{alpine}`" in table


def test_without_a_mirror_nothing_changes_but_telemetry(tmp_path: Path) -> None:
    files = render_inventory(make_inventory(tmp_path)).files
    vc = yaml.safe_load(files["clusters/gpu-east/tenants/research/vcluster/values.yaml"])
    assert vc["telemetry"] == {"enabled": False}
    assert "advanced" not in vc["controlPlane"]
    assert "is not set" in files["IMAGES.md"].decode()
