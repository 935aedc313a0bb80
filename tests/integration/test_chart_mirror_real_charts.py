"""The rendered Applications' charts, fetched through ``gpufleet_chart_mirrors`` as the real charts.

A Helm HTTP repository (index.yaml + packages: ``HelmRepo.publish`` of the Argo CD bed) is built at
test time from the pinned releases (tests/lib/real_charts.py: the archives in ../shared/upstream/src,
gpu-operator stamped as its release packages it, the vcluster/cert-manager/Kueue charts of their
modules) and served on 127.0.0.1; the sample is rendered with every upstream chart repository mapped
to it. Then every chart Application of the tree is resolved the way Argo CD's repo-server resolves
it: the chart pulled from its ``repoURL`` at ``targetRevision`` and templated with its rendered value
files. Each must template, and what it templates is the real chart's (no stand-in label).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from real_charts import ARCHIVES, chart_dir, helpers
from render_fixtures import turn_bridge_on

from ansible_collections.gpufleet.core.plugins.module_utils.versions import CHARTS

sys.path.insert(0, str(Path(__file__).resolve().parent / "argocd"))
from argocd_harness import HelmRepo, bed_inventory, fleet_repository

KEYS = sorted({*ARCHIVES, "vcluster", "cert_manager", "kueue"})


@pytest.fixture(scope="module")
def mirrored_tree(tmp_path_factory) -> tuple[HelmRepo, Path]:
    helm = helpers().require_tool("helm", "packaging and templating the real charts")
    base = tmp_path_factory.mktemp("mirror")
    real = {}
    for key in KEYS:
        d = chart_dir(key, base / "charts")
        helpers().require_path(d / "Chart.yaml", "the pinned chart (tools/build.sh charts / vcluster)")
        real[CHARTS[key]["chart"]] = d
    repo = HelmRepo(base / "repo")
    assert Path(helm).exists()
    repo.publish(sorted({(c["chart"], c["version"]) for c in CHARTS.values()}), base / "src", real=real)
    mirrors = {c["repo_url"]: repo.url for c in CHARTS.values()}
    # slurm-bridge on (the sample leaves it off), so that every pinned chart has an Application
    inv = turn_bridge_on(bed_inventory(base / "inv", "https://git.site.internal/fleet.git", mirrors))
    tree = fleet_repository(base / "fleet", inv) / "gitops"
    yield repo, tree
    repo.close()


def chart_apps(tree: Path) -> list[dict[str, Any]]:
    out = []
    for f in sorted(tree.glob("clusters/*/**/apps/*.yaml")):
        for doc in yaml.safe_load_all(f.read_text(encoding="utf-8")):
            if doc and doc.get("kind") == "Application" and "sources" in doc["spec"]:
                out.append(doc)
    return out


def test_the_repository_serves_each_pinned_release(mirrored_tree) -> None:
    repo, _tree = mirrored_tree
    index = yaml.safe_load((repo.root / "index.yaml").read_text(encoding="utf-8"))
    served = {(name, str(e["version"])) for name, entries in index["entries"].items() for e in entries}
    assert served == {(c["chart"], c["version"]) for c in CHARTS.values()}
    gpu = index["entries"]["gpu-operator"][0]
    assert (gpu["version"], gpu["appVersion"]) == ("v26.7.0", "v26.7.0")  # as the release packages it


def test_every_chart_app_templates_the_real_chart_from_the_mirror(mirrored_tree, tmp_path: Path) -> None:
    repo, tree = mirrored_tree
    helm = helpers().require_tool("helm")
    apps = chart_apps(tree)
    assert len(apps) >= 15
    seen = set()
    for app in apps:
        src, _values_ref = app["spec"]["sources"]
        assert src["repoURL"] == repo.url, app["metadata"]["name"]
        files = [tree.parent / v.removeprefix("$values/") for v in src["helm"]["valueFiles"]]
        cmd = [helm, "template", src["helm"]["releaseName"], src["chart"], "--repo", repo.url]
        cmd += ["--version", src["targetRevision"], "-n", app["spec"]["destination"]["namespace"], "--include-crds"]
        cmd += ["--kube-version", "1.36.0"]
        for f in files:
            cmd += ["-f", str(f)]
        p = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=300, cwd=tmp_path)
        assert p.returncode == 0, f"{app['metadata']['name']}: {p.stderr[-2000:]}"
        objs = [d for d in yaml.safe_load_all(p.stdout) if d]
        assert objs, app["metadata"]["name"]
        assert not [o for o in objs if "gpufleet.io/test-double" in (o["metadata"].get("labels") or {})]
        seen.add(src["chart"])
    assert seen == {c["chart"] for c in CHARTS.values()}
