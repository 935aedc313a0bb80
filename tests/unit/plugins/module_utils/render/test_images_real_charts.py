"""Every image the real charts pull with the rendered values comes from ``gpufleet_image_mirror``.

Each chart of the pinned release (tests/lib/real_charts.py: the archives in ../shared/upstream/src,
the vcluster chart of its module) is templated by the Go-built helm with the values the sample renders
with a mirror, optional parts switched on so that every image the chart can pull is templated. The
references are read off the output the way the consumers read them: container and init container
``image`` fields (hook Jobs and sidecars included), ``--*-image=`` flags, the ``RELATED_IMAGE_*`` and
``*_IMAGE`` settings an operator starts other images from (env and ConfigMap data), the GPU
Operator's ClusterPolicy (``repository``/``image``/``version``). Every one is on the mirror, carries a
tag or digest and is not ``latest``, and is in the image table (IMAGES.md) for that chart.
cert-manager and Kueue: test_images_templated.py.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from real_charts import ARCHIVES, chart_dir, helpers, image_references, template
from render_checks import CHART_OF_DIR
from render_fixtures import edit_vars, make_inventory, turn_bridge_on

from ansible_collections.gpufleet.core.plugins.module_utils.render import images
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_inventory
from ansible_collections.gpufleet.core.plugins.module_utils.versions import CHARTS

MIRROR = "registry.site.internal/mirror"
KEYS = sorted({*ARCHIVES, "vcluster"})
KEY_OF_CHART = {c["chart"]: k for k, c in CHARTS.items()}
# optional parts on, so that every image the chart can pull is templated (the rendered values win)
ALL_PARTS: dict[str, dict[str, Any]] = {
    "argocd": {
        "redis": {"exporter": {"enabled": True}},
        "server": {"extensions": {"enabled": True}},
        "dex": {"enabled": True},
    },
    "cilium": {"hubble": {"relay": {"enabled": True}, "ui": {"enabled": True}}},
}


@pytest.fixture(scope="module")
def mirrored(tmp_path_factory) -> dict[str, bytes]:
    inv = turn_bridge_on(make_inventory(tmp_path_factory.mktemp("inv")))  # the sample leaves the bridge off
    edit_vars(inv, "fleet.yml", lambda d: d.__setitem__("gpufleet_image_mirror", MIRROR))
    return render_inventory(inv).files


@pytest.fixture(scope="module")
def helm() -> str:
    return helpers().require_tool("helm", "templating the real charts")


@pytest.mark.parametrize("key", KEYS)
def test_every_image_a_real_chart_templates_comes_from_the_mirror(
    key: str, mirrored: dict[str, bytes], helm: str, tmp_path_factory
) -> None:
    work = tmp_path_factory.mktemp(key)
    chart = chart_dir(key, tmp_path_factory.getbasetemp() / "charts")
    helpers().require_path(chart / "Chart.yaml", "the pinned chart")
    meta = yaml.safe_load((chart / "Chart.yaml").read_text(encoding="utf-8"))
    assert str(meta["version"]) == CHARTS[key]["version"]
    files = {
        rel: body
        for rel, body in sorted(mirrored.items())
        if rel.endswith("/values.yaml") and KEY_OF_CHART.get(CHART_OF_DIR.get(rel.split("/")[-2], "")) == key
    }
    assert files, f"the sample renders no {key} values"
    table = {images.pulled(i, MIRROR) for i in (*images.IMAGES, *images.OWN) if i.chart == key}
    listed = mirrored["IMAGES.md"].decode()
    parts = work / "parts.yaml"
    parts.write_text(yaml.safe_dump(ALL_PARTS.get(key, {})), encoding="utf-8")
    for rel, body in files.items():
        values = work / "values.yaml"
        values.write_bytes(body)
        refs = image_references(template(helm, chart, [parts, values], release=key.replace("_", "-")))
        if key in images.NO_IMAGES:
            assert refs == set(), rel
            continue
        assert refs, rel
        assert {r for r in refs if not r.startswith(MIRROR + "/")} == set(), rel
        for ref in refs:
            last = ref.rsplit("/", 1)[1]
            if any(ref == images.pulled(i, MIRROR) for i in images.IMAGES if i.path[-1:] == ("mariadbImageName",)):
                continue  # RELATED_IMAGE_MARIADB_NAME: a name, the operator appends the MariaDB version
            assert (":" in last or "@" in last) and not last.endswith(":latest"), (rel, ref)
            untagged = ref.split("@", 1)[0]
            assert untagged in table or any(untagged.startswith(t.rsplit(":", 1)[0]) for t in table), (rel, ref)
    for ref in table:  # IMAGES.md lists each
        assert f"| `{ref}` |" in listed, ref
