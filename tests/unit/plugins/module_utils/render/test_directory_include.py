"""Every directory Application names the files the render wrote in its folder (``directory.include``),
so Argo CD ignores a file committed there afterwards; chart sources are untouched."""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest
import yaml
from render_fixtures import make_inventory

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.render import include
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_inventory


def names(glob: str) -> set[str]:
    return set(glob[1:-1].split(",")) if glob.startswith("{") else {glob}


def test_each_directory_source_names_exactly_its_rendered_files(tmp_path: Path) -> None:
    result = render_inventory(make_inventory(tmp_path))
    prefix = result.fleet.gitops.path.strip("/") + "/"
    seen = 0
    for rel, data in result.files.items():
        if not rel.endswith(".yaml"):
            continue
        for doc in yaml.safe_load_all(data):
            if not isinstance(doc, dict) or doc.get("kind") != "Application":
                continue
            spec = doc["spec"]
            for src in [*(spec.get("sources") or []), *([spec["source"]] if spec.get("source") else [])]:
                if "chart" in src or "ref" in src:
                    assert "directory" not in src
                    continue
                if src["repoURL"] != result.fleet.gitops.repo_url:  # another repository (the Argo CD CRDs)
                    assert "directory" not in src, (rel, src["repoURL"])
                    continue
                folder = src["path"].removeprefix(prefix)
                want = {p.rpartition("/")[2] for p in result.files if p.rpartition("/")[0] == folder}
                want = {n for n in want if n.endswith((".yaml", ".yml", ".json"))}
                assert want, (rel, folder)
                if rel.endswith("root-app.yaml"):  # applied by the bootstrap, not from Git: a pattern
                    assert src["directory"]["include"] == include.ROOT_PATTERN
                    assert all(any(fnmatch.fnmatchcase(n, p) for p in include.ROOT_NAMES) for n in want)
                    assert not any(fnmatch.fnmatchcase("zz-extra.yaml", p) for p in include.ROOT_NAMES)
                else:
                    assert names(src["directory"]["include"]) == want, (rel, folder)
                seen += 1
    assert seen >= 10  # the cluster root, the tenant roots, host, objects and accounting folders


def test_the_cluster_root_refuses_a_rendered_name_outside_its_pattern() -> None:
    root = {"spec": {"source": {"path": "gitops/clusters/c/apps"}}}
    include.scope_root(root, ["00-argocd.yaml", "tenant-a.yaml"])
    assert root["spec"]["source"]["directory"] == {"include": include.ROOT_PATTERN}
    with pytest.raises(GpufleetError, match="do not match the cluster root"):
        include.scope_root(root, ["00-argocd.yaml", "extra.yaml"])


def test_the_pattern_is_exact() -> None:
    assert include.pattern(["b.yaml", "a.yaml", "a.yaml"]) == "{a.yaml,b.yaml}"
    assert include.pattern(["only.yaml"]) == "only.yaml"
    with pytest.raises(GpufleetError, match="glob character"):
        include.pattern(["a*.yaml"])


def test_a_tenant_host_folder_syncs_in_a_project_of_exactly_its_kinds(tmp_path: Path) -> None:
    result = render_inventory(make_inventory(tmp_path))
    docs = {
        rel: [d for d in yaml.safe_load_all(data) if d] for rel, data in result.files.items() if rel.endswith(".yaml")
    }
    tenants = sorted(result.fleet.tenants)
    assert tenants
    for t in tenants:
        app = docs[f"clusters/gpu-east/tenants/{t}/apps/1-host.yaml"][0]
        proj = docs[f"clusters/gpu-east/apps/tenant-{t}-0-host-project.yaml"][0]
        assert app["spec"]["project"] == proj["metadata"]["name"] == f"gpu-east-host-{t}"
        objs = [o for rel, ds in docs.items() if rel.startswith(f"clusters/gpu-east/tenants/{t}/host/") for o in ds]
        kinds = {(o["apiVersion"].rpartition("/")[0], o["kind"], bool(o["metadata"].get("namespace"))) for o in objs}
        spec = proj["spec"]
        assert {(k["group"], k["kind"], False) for k in spec["clusterResourceWhitelist"]} | {
            (k["group"], k["kind"], True) for k in spec["namespaceResourceWhitelist"]
        } == kinds
        assert {"group": "", "kind": "Namespace"} in spec["clusterResourceWhitelist"]
        assert {"group": "rbac.authorization.k8s.io", "kind": "ClusterRoleBinding"} not in spec[
            "clusterResourceWhitelist"
        ]
        assert spec["destinations"] == [{"namespace": f"vc-{t}", "server": app["spec"]["destination"]["server"]}]
        assert spec["sourceRepos"] == [result.fleet.gitops.repo_url]
        assert "*" not in yaml.safe_dump(spec)
