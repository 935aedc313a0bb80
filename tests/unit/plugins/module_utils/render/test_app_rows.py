"""Every child Application is a row of render/apps.py: what the one loop promises holds for each app
of the rendered sample (name, component label, folder, values file, keep rule), and a row the apply
step installs writes its values but no Application."""

from __future__ import annotations

import posixpath

import pytest
import yaml
from render_fixtures import make_inventory

from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.render import apps
from ansible_collections.gpufleet.core.plugins.module_utils.render import argocd as argo
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.versions import GIT_SOURCES

C = "clusters/gpu-east"
GITOPS = "gitops"  # gpufleet_fleet.gitops.path of the sample: Applications name files under it
REPO_URL = "https://github.com/example-org/gpu-fleet.git"  # the sample's gitops.repo_url


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    return render_fleet(load_fleet(make_inventory(tmp_path_factory.mktemp("inv")))).files


def child_apps(files: dict[str, bytes]) -> list[tuple[str, str, dict]]:
    """(scope folder, name prefix, Application) of every child app: the platform's and the tenants'."""
    out = []
    for rel, data in files.items():
        obj = yaml.safe_load(data) if rel.endswith(".yaml") and "/apps/" in rel else None
        if not obj or obj.get("kind") != "Application" or obj["spec"]["project"] == "default":
            continue
        if rel.startswith(f"{C}/apps/") and not rel.startswith(f"{C}/apps/tenant-"):
            out.append((f"{C}/platform", "gpu-east", obj))
        elif rel.startswith(f"{C}/tenants/"):
            tenant = rel.split("/")[3]
            out.append((f"{C}/tenants/{tenant}", tenant, obj))
    return out


def test_every_child_app_is_named_and_placed_by_its_part(files: dict[str, bytes]) -> None:
    rows = child_apps(files)
    assert len(rows) >= 30  # 9 platform apps and the three tenants' (4 + 11 + 11)
    for folder, prefix, app in rows:
        name = app["metadata"]["name"]
        assert name.startswith(f"{prefix}-"), name
        part = name[len(prefix) + 1 :]
        label = app["metadata"]["labels"][argo.LABEL_COMPONENT]
        assert label in (part, f"tenant-{part}"), (name, label)
        spec = app["spec"]
        if "sources" in spec:  # a chart: its values file is <folder>/<part>/values.yaml, rendered
            chart, ref = spec["sources"]
            assert ref["ref"] == "values" and "chart" not in ref, name
            (vf,) = chart["helm"]["valueFiles"]
            assert vf == f"$values/{GITOPS}/{folder}/{part}/values.yaml", name
            assert f"{folder}/{part}/values.yaml" in files, name
        elif spec["source"]["repoURL"] != REPO_URL:  # an upstream repository at a pinned tag
            src = GIT_SOURCES[part.replace("-", "_")]
            want = {"repoURL": src["repo_url"], "path": src["path"], "targetRevision": src["revision"]}
            assert spec["source"] == want, name
        else:  # a directory: <folder>/<part>/, holding at least one rendered manifest
            assert spec["source"]["path"] == f"{GITOPS}/{folder}/{part}", name
            assert any(posixpath.dirname(r) == f"{folder}/{part}" for r in files), name
        if argo.FINALIZER not in app["metadata"].get("finalizers", []):  # kept: deleting it deletes nothing
            assert argo.KEEP in spec["syncPolicy"]["syncOptions"], name


def test_a_row_the_apply_step_installs_writes_values_but_no_application(tmp_path) -> None:
    fleet = load_fleet(make_inventory(tmp_path))
    scope = apps.Scope("gpu-east", "clusters/gpu-east/platform", "gpu-east", "https://host")
    rows = [
        apps.App("10-a.yaml", "a", "operators", "ns-a", chart="cilium", values={"x": 1}, synced=False),
        apps.App("11-b.yaml", "b", "storage", "ns-b", manifests={"b.yaml": [{"kind": "ConfigMap"}]}, keep=True),
    ]
    out = apps.Rendered()
    written = apps.emit(fleet, scope, rows, out)
    assert out.values == {"clusters/gpu-east/platform/a/values.yaml": {"x": 1}}
    assert out.manifests == {"clusters/gpu-east/platform/b/b.yaml": [{"kind": "ConfigMap"}]}
    assert list(written) == ["11-b.yaml"]
    b = written["11-b.yaml"]
    assert b["metadata"]["name"] == "gpu-east-b"
    assert b["spec"]["destination"] == {"server": "https://host", "namespace": "ns-b"}
    assert "finalizers" not in b["metadata"] and argo.KEEP in b["spec"]["syncPolicy"]["syncOptions"]
