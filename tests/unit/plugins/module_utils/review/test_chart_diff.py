"""The review's chart diff: a chart version or values change of a rendered Application, templated with the
real helm before and after (a chart written here, so the test needs no download), or said to be
unavailable."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from lead_conftest import lead_conftest

from ansible_collections.gpufleet.core.plugins.module_utils.review.chart_diff import chart_changes

REPO = Path(__file__).resolve().parents[5]
APP = """apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {{name: c-echo, namespace: argocd}}
spec:
  destination: {{namespace: echo, server: https://kubernetes.default.svc}}
  sources:
  - chart: echo
    helm:
      releaseName: echo
      valueFiles: [$values/gitops/clusters/c/platform/echo/values.yaml]
    repoURL: https://charts.example.org
    targetRevision: {version}
  - {{ref: values, repoURL: https://git.example.org/fleet.git, targetRevision: main}}
"""


def tree(version: str, replicas: int) -> SimpleNamespace:
    return SimpleNamespace(
        files={
            "clusters/c/apps/50-echo.yaml": APP.format(version=version).encode(),
            "clusters/c/platform/echo/values.yaml": f"replicas: {replicas}\n".encode(),
            "clusters/c/platform/other/values.yaml": b"x: 1\n",
        }
    )


def chart(root: Path, version: str, extra: str = "") -> None:
    d = root / f"echo-{version}"
    (d / "templates").mkdir(parents=True)
    (d / "Chart.yaml").write_text(f"apiVersion: v2\nname: echo\nversion: {version}\n")
    (d / "templates/cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n"
        f"  namespace: {{{{ .Release.Namespace }}}}\n{extra}data:\n  replicas: {{{{ .Values.replicas | quote }}}}\n"
    )


def test_a_chart_that_is_not_here_is_named() -> None:
    (c,) = chart_changes(tree("0.1.0", 1), tree("0.2.0", 2), "gitops", None)
    assert (c.app, c.chart, c.old, c.new, c.values_changed) == ("c-echo", "echo", "0.1.0", "0.2.0", True)
    assert c.diff == () and c.note.startswith("rendered manifests not compared: "), c.note
    assert chart_changes(tree("0.1.0", 1), tree("0.1.0", 1), "gitops", None) == []  # nothing changed


def test_the_real_chart_templated_before_and_after(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    helm = lead_conftest().require_tool("helm", "templating a chart before and after")
    monkeypatch.setenv("PATH", f"{Path(helm).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    chart(tmp_path, "0.1.0")
    chart(tmp_path, "0.2.0", "  labels: {tier: gpu}\n")
    (c,) = chart_changes(tree("0.1.0", 1), tree("0.2.0", 2), "gitops", tmp_path)
    assert c.note == "" and c.diff[:2] == ("--- echo 0.1.0", "+++ echo 0.2.0"), c
    assert '-  replicas: "1"' in c.diff and '+  replicas: "2"' in c.diff and "+  labels: {tier: gpu}" in c.diff
    (same,) = chart_changes(tree("0.1.0", 1), tree("0.1.0", 2), "gitops", tmp_path)  # values only
    assert same.old == same.new == "0.1.0" and same.values_changed and '+  replicas: "2"' in same.diff


def test_crds_are_compared_and_a_v_version_is_found_unpacked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As Argo CD templates (``--include-crds``): a CRD the new version ships in ``crds/`` is in the diff;
    an unpacked chart whose version carries a ``v`` (cert-manager, gpu-operator) is found."""
    helm = lead_conftest().require_tool("helm", "templating a chart before and after")
    monkeypatch.setenv("PATH", f"{Path(helm).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    chart(tmp_path, "v0.1.0")
    chart(tmp_path, "v0.2.0")
    (tmp_path / "echo-v0.2.0" / "crds").mkdir()
    crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: echoes.example.org\n"
    (tmp_path / "echo-v0.2.0" / "crds" / "echo.yaml").write_text(crd)
    (c,) = chart_changes(tree("v0.1.0", 1), tree("v0.2.0", 1), "gitops", tmp_path)
    assert c.note == "" and "+  name: echoes.example.org" in c.diff, c
