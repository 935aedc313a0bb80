"""Every image the charts pull is in gpufleet's image table and follows ``gpufleet_image_mirror``.

The image references come from the pinned charts' own values (the real charts, with the values of
the dependencies they carry: tests/lib/real_charts.py), not from the table: every values node that
names an image (``repository`` with a tag, registry, image name or digest) must have a row, with the
same reference (the table pins a tag the chart leaves floating or empty). Then the sample is rendered
with a mirror and, for every chart values file, the rendered values are merged over the chart's
defaults (as Helm does) and each image the chart would pull is resolved the way the chart builds it:
every one must come from the mirror. gpufleet's own manifests (the accounts Job, the gate Jobs) too.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from real_charts import ARCHIVES, BUILT_CHARTS, chart_defaults, chart_dir, helpers
from render_checks import CHART_OF_DIR
from render_fixtures import edit_vars, make_inventory, turn_bridge_on, yaml_objects

from ansible_collections.gpufleet.core.plugins.module_utils.render import images
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_inventory
from ansible_collections.gpufleet.core.plugins.module_utils.versions import CHARTS

MIRROR = "registry.site.internal/mirror"
KEY_OF_CHART = {c["chart"]: k for k, c in CHARTS.items()}
UPSTREAM_CHARTS = tuple(sorted(k for k in {*ARCHIVES, *BUILT_CHARTS} if k not in images.NO_IMAGES))


@pytest.fixture(scope="module")
def defaults(tmp_path_factory) -> dict[str, dict[str, Any]]:
    """versions.CHARTS key -> the values the real chart templates with by default."""
    work = tmp_path_factory.mktemp("charts")
    out = {}
    for key in UPSTREAM_CHARTS:
        d = chart_dir(key, work)
        if key in BUILT_CHARTS:
            helpers().require_path(d / "Chart.yaml", "tools/build.sh charts / vcluster")
        out[key] = chart_defaults(d)
    return out


def qualified(ref: str) -> str:
    """``ref`` with the registry a container runtime assumes (Docker Hub, ``library/`` for one name)."""
    first, _sep, rest = ref.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return ref
    return f"docker.io/{ref}" if rest else f"docker.io/library/{ref}"


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
    default_registry = (values.get("controlPlane", {}).get("advanced") or {}).get("defaultImageRegistry")
    if chart == "vcluster" and default_registry:  # replaces every registry (vcluster.image, the syncer)
        repo = f"{default_registry}/{repo}"
    elif node.get("registry"):
        repo = f"{node['registry']}/{repo}"
    elif chart == "gpu_operator" and node.get("image"):
        repo = f"{repo}/{node['image']}"
    elif chart == "csi_driver_nfs" and repo.startswith("/"):
        repo = values["image"]["baseRepo"] + repo
    tag = node.get("tag") or node.get("version")
    return qualified(f"{repo}:{tag}" if tag else repo)


def merged(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = merged(base.get(k), v)
        return out
    return copy.deepcopy(over)


def _untagged(ref: str) -> str:
    head, _sep, last = ref.rpartition("/")
    return f"{head}/{last.split(':', 1)[0]}"


@pytest.mark.parametrize("chart", [c for c in UPSTREAM_CHARTS if c not in ("cert_manager", "kueue")])
def test_table_has_every_image_the_chart_pulls(defaults: dict[str, Any], chart: str) -> None:
    values = defaults[chart]
    rows = {img.path: img for img in images.IMAGES if img.chart == chart}
    found = image_nodes(values)
    assert found
    missing = [".".join(p) for p, _image in found if p not in rows]
    assert not missing, f"{chart}: images the mirror does not cover: {missing}"
    for path, node in found:
        ref, row = reference(chart, node, values), rows[path]
        if row.pin or not (node.get("tag") or node.get("version")):  # floating or the appVersion: pinned here
            assert _untagged(row.upstream) == _untagged(ref), path
            assert row.pin == ref.endswith(":latest"), path
        else:
            assert row.upstream == ref, path


def test_table_rows_name_upstream_keys(defaults: dict[str, Any]) -> None:
    # cert-manager and Kueue: their images are read off the templated charts (test_images_templated)
    assert {img.chart for img in images.IMAGES} - set(defaults) == set()
    for img in images.IMAGES:
        node: Any = defaults[img.chart]
        for k in img.path:
            node = node[k]
        assert isinstance(node, (dict, str)), img


def test_no_image_floats() -> None:
    for img in (*images.IMAGES, *images.OWN):
        if img.path[-1:] == ("mariadbImageName",):  # a name: the operator appends the MariaDB version
            continue
        last = img.upstream.rsplit("/", 1)[-1]
        assert ":" in last and not last.endswith(":latest"), img


@pytest.fixture(scope="module")
def mirrored(tmp_path_factory) -> dict[str, bytes]:
    inv = turn_bridge_on(make_inventory(tmp_path_factory.mktemp("images")))  # the sample leaves the bridge off

    def mirror(d: dict) -> None:
        d["gpufleet_image_mirror"] = MIRROR

    edit_vars(inv, "fleet.yml", mirror)
    return render_inventory(inv).files


def test_every_image_comes_from_the_mirror(defaults: dict[str, Any], mirrored: dict[str, bytes]) -> None:
    seen = set()
    for rel, body in sorted(mirrored.items()):
        if not rel.endswith("/values.yaml"):
            continue
        chart = KEY_OF_CHART.get(CHART_OF_DIR.get(rel.split("/")[-2], ""))
        if chart not in UPSTREAM_CHARTS:
            continue
        seen.add(chart)
        effective = merged(defaults[chart], yaml.safe_load(body))
        for path, node in image_nodes(effective):
            ref = reference(chart, node, effective)
            assert ref.startswith(MIRROR + "/"), f"{rel}: {'.'.join(path)} pulls {ref}"
        if chart == "vcluster":  # CoreDNS and the rewrite-hosts init container (the vCluster's own)
            assert effective["controlPlane"]["advanced"]["defaultImageRegistry"] == MIRROR
            assert effective["telemetry"] == {"enabled": False}
    assert seen == set(UPSTREAM_CHARTS)
    # gpufleet's own Jobs: plain manifests and the slurm chart's extraObjects (the gate Jobs)
    own = [o for rel, o in yaml_objects(mirrored) if o.get("kind") == "Job"]
    for rel, body in mirrored.items():
        if rel.endswith("/slurm/values.yaml"):
            own += [o for o in yaml.safe_load(body).get("extraObjects", []) if o.get("kind") == "Job"]
    assert len([j for j in own if j["metadata"]["name"].startswith("slurm-")]) >= 2, "no gate Jobs rendered"
    for job in own:
        for c in job["spec"]["template"]["spec"]["containers"]:
            assert c["image"].startswith(MIRROR + "/ghcr.io/slinkyproject/"), (job["metadata"]["name"], c["image"])
    table = mirrored["IMAGES.md"].decode()
    alpine = "docker.io/library/alpine:3.20.3"
    assert f"`{alpine}` | `{MIRROR}/{alpine}`" in table


def test_without_a_mirror_nothing_changes_but_telemetry(tmp_path: Path) -> None:
    files = render_inventory(make_inventory(tmp_path)).files
    vc = yaml.safe_load(files["clusters/gpu-east/tenants/research/vcluster/values.yaml"])
    assert vc["telemetry"] == {"enabled": False}
    assert "advanced" not in vc["controlPlane"]
    assert "is not set" in files["IMAGES.md"].decode()
