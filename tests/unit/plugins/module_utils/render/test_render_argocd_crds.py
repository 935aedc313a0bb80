"""The Argo CD CRDs a cluster gets are those of the Argo CD release that runs there.

The argo-cd chart carries the CRDs of its appVersion (10.1.1: v3.4.4) while the fleet runs the
release pinned in versions.py (docs/adr/argocd-crds.md): the API server would prune the fields the
newer controller writes. Here the real chart (../shared/upstream/src) is templated by the Go-built
helm with the values the sample renders, and the CRDs of the rendered argocd-crds Application are
read from the argo-cd module at the tag it names (tools/build.sh charts): together they must be
exactly the ``manifests/crds`` of the release the chart's containers run, each once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from real_charts import BUILT, chart_dir, helpers, template
from render_fixtures import edit_vars, make_inventory

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.render import argocd as argo
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_inventory
from ansible_collections.gpufleet.core.plugins.module_utils.versions import GIT_SOURCES, IMAGES

APPS = "clusters/gpu-east/apps"
RELEASE_CRDS = BUILT / "argocd-crds"  # manifests/crds of the argo-cd module at IMAGES["argocd"]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, bytes]:
    return render_inventory(make_inventory(tmp_path_factory.mktemp("inv"))).files


def _doc(files: dict[str, bytes], rel: str) -> dict[str, Any]:
    return next(d for d in yaml.safe_load_all(files[rel]) if d)


def _crds(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objs if o.get("kind") == "CustomResourceDefinition"]


def release_crds(version: str) -> dict[str, dict[str, Any]]:
    """The CRDs Argo CD ``version`` ships (manifests/crds of its module), by name."""
    helpers().require_path(RELEASE_CRDS / ".version", "the Argo CD CRDs of the pinned release; tools/build.sh charts")
    assert (RELEASE_CRDS / ".version").read_text().strip() == version, "tools/build.sh charts builds another release"
    kust = yaml.safe_load((RELEASE_CRDS / "kustomization.yaml").read_text())
    docs = [yaml.safe_load((RELEASE_CRDS / r).read_text()) for r in kust["resources"]]
    return {d["metadata"]["name"]: d for d in docs}


def test_the_crds_app_names_the_release_that_runs(files: dict[str, bytes]) -> None:
    app = _doc(files, f"{APPS}/00-argocd-crds.yaml")
    src = GIT_SOURCES["argocd_crds"]
    assert app["spec"]["source"] == {
        "repoURL": src["repo_url"],
        "path": "manifests/crds",
        "targetRevision": IMAGES["argocd"],
    }
    argocd = _doc(files, f"{APPS}/00-argocd.yaml")
    wave = argo.WAVE
    assert int(app["metadata"]["annotations"][wave]) < int(argocd["metadata"]["annotations"][wave])
    assert "Delete=false" in app["spec"]["syncPolicy"]["syncOptions"]  # CRDs outlive their app
    assert "ServerSideApply=true" in app["spec"]["syncPolicy"]["syncOptions"]  # the ApplicationSet CRD is 1.4 MB
    assert "finalizers" not in app["metadata"]
    project = _doc(files, f"{APPS}/00-projects.yaml") if f"{APPS}/00-projects.yaml" in files else None
    if project is not None:
        assert src["repo_url"] in project["spec"]["sourceRepos"]


def test_the_cluster_gets_the_crds_of_the_release_that_runs(files: dict[str, bytes], tmp_path: Path) -> None:
    helm = helpers().require_tool("helm", "templating the real argo-cd chart")
    values = tmp_path / "values.yaml"
    values.write_bytes(files["clusters/gpu-east/platform/argocd/values.yaml"])
    objs = template(helm, chart_dir("argocd", tmp_path / "charts"), [values], release="argocd", namespace="argocd")
    running = {
        c["image"].rsplit(":", 1)[1]
        for o in objs
        if o["kind"] in ("Deployment", "StatefulSet")
        for c in o["spec"]["template"]["spec"]["containers"]
        if "/argoproj/argocd:" in c["image"]
    }
    assert running == {IMAGES["argocd"]}, running
    want = release_crds(IMAGES["argocd"])
    app = _doc(files, f"{APPS}/00-argocd-crds.yaml")["spec"]["source"]
    got = _crds(objs)
    if app["targetRevision"] == IMAGES["argocd"] and app["path"] == "manifests/crds":
        got += list(want.values())  # what the argocd-crds Application syncs: the module at that tag
    names = [c["metadata"]["name"] for c in got]
    assert sorted(names) == sorted(want), names  # each once: the chart ships none of its own
    for crd in got:
        assert crd["spec"] == want[crd["metadata"]["name"]]["spec"], crd["metadata"]["name"]


def test_no_argocd_checkout_runs_git_submodule_update(files: dict[str, bytes], tmp_path: Path) -> None:
    """The real chart with the rendered values: the repo-server and the ApplicationSet controller read
    ARGOCD_GIT_MODULES_ENABLED from argocd-cmd-params-cm keys the render sets to false."""
    helm = helpers().require_tool("helm", "templating the real argo-cd chart")
    values = tmp_path / "values.yaml"
    values.write_bytes(files["clusters/gpu-east/platform/argocd/values.yaml"])
    objs = template(helm, chart_dir("argocd", tmp_path / "charts"), [values], release="argocd", namespace="argocd")
    params = next(o for o in objs if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "argocd-cmd-params-cm")
    read = {
        o["metadata"]["name"]: e["valueFrom"]["configMapKeyRef"]
        for o in objs
        if o["kind"] == "Deployment"
        for c in o["spec"]["template"]["spec"]["containers"]
        for e in c.get("env", [])
        if e["name"] == "ARGOCD_GIT_MODULES_ENABLED"
    }
    assert set(read) == {"argocd-repo-server", "argocd-applicationset-controller"}, read
    for ref in read.values():
        assert ref["name"] == "argocd-cmd-params-cm" and params["data"][ref["key"]] == "false", (ref, params["data"])


def test_the_inventory_cannot_turn_the_chart_crds_back_on(tmp_path: Path) -> None:
    inv = make_inventory(tmp_path)

    def turn_on(d: dict[str, Any]) -> None:
        d["gpufleet_clusters"][0]["components"]["argocd"] = {"values": {"crds": {"install": True}}}

    edit_vars(inv, "clusters.yml", turn_on)
    with pytest.raises(GpufleetError, match=r"crds\.install"):
        render_inventory(inv)
