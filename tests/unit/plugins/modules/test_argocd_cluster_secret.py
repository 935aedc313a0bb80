"""argocd_cluster_secret in-process: the Argo CD cluster Secret from a vCluster kubeconfig Secret."""

from __future__ import annotations

import base64
import json

import yaml
from module_harness import hide_library, run_module

CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n").decode()


def _data(user: dict) -> dict[str, str]:
    kubeconfig = {
        "clusters": [{"name": "vc", "cluster": {"server": "https://localhost:8443", "certificate-authority-data": CA}}],
        "users": [{"name": "vc", "user": user}],
        "contexts": [{"name": "vc", "context": {"cluster": "vc", "user": "vc"}}],
        "current-context": "vc",
    }
    return {"config": base64.b64encode(yaml.safe_dump(kubeconfig).encode()).decode()}


def test_secret_in_check_mode() -> None:
    args = {"vcluster_secret_data": _data({"token": "t0ken"}), "name": "research", "namespace": "tenant-research"}
    r = run_module("argocd_cluster_secret", {**args, "project": "research"}, check=True)
    assert r["changed"] is False
    secret = r["secret"]
    assert secret["metadata"]["name"] == "cluster-research" and secret["metadata"]["namespace"] == "argocd"
    data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert data["server"] == "https://research.tenant-research:443" and data["project"] == "research"
    assert json.loads(data["config"])["bearerToken"] == "t0ken"
    assert r["summary"]["auth"] == "bearer-token" and "t0ken" not in json.dumps(r["summary"])


def test_kubeconfig_without_credentials_fails() -> None:
    r = run_module("argocd_cluster_secret", {"vcluster_secret_data": _data({}), "name": "a", "namespace": "b"})
    assert r["failed"] is True and "credential" in r["msg"].lower()


def test_missing_library_is_named(monkeypatch) -> None:
    hide_library(monkeypatch, "yaml")
    r = run_module("argocd_cluster_secret", {"vcluster_secret_data": {}, "name": "a", "namespace": "b"})
    assert r["failed"] is True and "PyYAML" in r["msg"]
