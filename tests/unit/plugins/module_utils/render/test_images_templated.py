"""The charts whose values are not in ../shared (cert-manager, Kueue), templated for real: the pinned
release's chart (tools/build.sh ``charts``: its module zip on the Go module proxy plus the release's
packaging step, cached in .build/share/charts) through the Go-built ``helm``, with the values the
sample renders. Every image in the output, containers, init containers and image flags alike, comes
from ``gpufleet_image_mirror``; without a mirror, the output pulls exactly the image table's
upstream references (so the table is read off the chart, not written from memory)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from real_charts import helpers, image_references
from render_checks import CHART_OF_DIR, unknown_values_keys
from render_fixtures import edit_vars, make_inventory

from ansible_collections.gpufleet.core.plugins.module_utils import versions
from ansible_collections.gpufleet.core.plugins.module_utils.render import images
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_inventory

REPO = Path(__file__).resolve().parents[5]
MIRROR = "registry.site.internal/mirror"
CHARTS = {"cert-manager": "cert_manager", "kueue": "kueue"}  # chart -> versions.CHARTS / image table key
# optional parts switched on so that every image the chart can pull is templated (before the rendered
# values, which win: none of them turns these off)
ALL_PARTS = {"kueue": {"enableKueueViz": True}, "cert-manager": {"startupapicheck": {"enabled": True}}}


def chart_dir(chart: str) -> Path:
    return helpers().require_path(REPO / ".build" / "share" / "charts" / chart, "tools/build.sh charts")


def template(chart: str, values: bytes, tmp: Path) -> list[dict[str, Any]]:
    helm = helpers().require_tool("helm", "templating the pinned charts")
    src = chart_dir(chart)
    parts, rendered = tmp / f"{chart}-parts.yaml", tmp / f"{chart}-values.yaml"
    parts.write_text(yaml.safe_dump(ALL_PARTS[chart]), encoding="utf-8")
    rendered.write_bytes(values)
    cmd = [helm, "template", "r", str(src), "-n", "ns", "-f", str(parts), "-f", str(rendered)]
    p = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert p.returncode == 0, p.stderr
    return [d for d in yaml.safe_load_all(p.stdout) if d]


def chart_values(files: dict[str, bytes], chart: str) -> dict[str, bytes]:
    """The rendered values files of ``chart`` (platform and tenants)."""
    return {
        rel: body
        for rel, body in sorted(files.items())
        if rel.endswith("/values.yaml") and CHART_OF_DIR.get(rel.split("/")[-2]) == chart
    }


@pytest.fixture(scope="module")
def renders(tmp_path_factory) -> dict[str, dict[str, bytes]]:
    plain = make_inventory(tmp_path_factory.mktemp("plain"))
    mirrored = make_inventory(tmp_path_factory.mktemp("mirrored"))
    edit_vars(mirrored, "fleet.yml", lambda d: d.__setitem__("gpufleet_image_mirror", MIRROR))
    return {"plain": render_inventory(plain).files, "mirrored": render_inventory(mirrored).files}


@pytest.mark.parametrize("chart", sorted(CHARTS))
def test_the_cached_chart_is_the_pinned_release(chart: str) -> None:
    meta = yaml.safe_load((chart_dir(chart) / "Chart.yaml").read_text(encoding="utf-8"))
    assert (meta["name"], str(meta["version"])) == (chart, versions.CHARTS[CHARTS[chart]]["version"])


@pytest.mark.parametrize("chart", sorted(CHARTS))
def test_every_image_the_chart_templates_comes_from_the_mirror(
    chart: str, renders, tmp_path: Path, shared_dir: Path
) -> None:
    rows = [img for img in images.IMAGES if img.chart == CHARTS[chart]]
    assert rows and CHARTS[chart] not in images.NO_IMAGES
    mirrored = chart_values(renders["mirrored"], chart)
    assert mirrored, f"the sample renders no {chart} values"
    for rel, body in mirrored.items():
        assert unknown_values_keys(yaml.safe_load(body), chart, shared_dir) == [], rel  # the keys the tests allow
        refs = image_references(template(chart, body, tmp_path), bare=True)
        assert refs, rel
        assert {r for r in refs if not r.startswith(MIRROR + "/")} == set(), rel
        assert refs == {images.pulled(img, MIRROR) for img in rows}, rel
    for rel, body in chart_values(renders["plain"], chart).items():  # upstream: the table's references
        assert image_references(template(chart, body, tmp_path), bare=True) == {img.upstream for img in rows}, rel
    table = renders["mirrored"]["IMAGES.md"].decode()
    for img in rows:
        assert f"`{img.upstream}` | `{MIRROR}/{img.upstream}`" in table
