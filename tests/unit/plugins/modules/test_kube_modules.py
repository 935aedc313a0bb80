"""node_pools, gpu_health and argocd_status in-process, up to the Kubernetes API: requirements, argument
checks and a kubeconfig that does not load fail cleanly before any Node or Application is touched.

What they do against a real API server (check mode, diff, patches) is tested with kube-apiserver + etcd
in tests/integration/kube/ (test_node_pools.py, test_kube_gpu_health.py, test_kube_argocd_status.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from module_harness import hide_library, run_module

pytest.importorskip("kubernetes")


@pytest.fixture
def kubeconfig(tmp_path: Path) -> str:
    return str(tmp_path / "no-such-kubeconfig")


def test_node_pools(kubeconfig: str, tmp_path: Path) -> None:
    r = run_module("node_pools", {"assignment": {"gpu001": "pretrain"}, "kubeconfig": kubeconfig}, check=True)
    assert r["failed"] is True and f"cannot load kubeconfig {kubeconfig}" in r["msg"]
    r = run_module("node_pools", {"inventory": str(tmp_path)})  # the alias, without cluster
    assert r["failed"] is True and "cluster" in r["msg"]
    r = run_module("node_pools", {"assignment": {"gpu001": {"pool": 3}}, "kubeconfig": kubeconfig})
    assert r["failed"] is True and "gpu001" in r["msg"]


def test_gpu_health(kubeconfig: str) -> None:
    r = run_module("gpu_health", {"operation": "quarantine", "nodes": ["gpu001"]})
    assert r["failed"] is True and "reason" in r["msg"]
    r = run_module("gpu_health", {"operation": "quarantine", "nodes": ["gpu001"], "reason": "x" * 201})
    assert r["failed"] is True and "reason" in r["msg"]
    r = run_module("gpu_health", {"operation": "resume"})
    assert r["failed"] is True and r["msg"] == "operation=resume needs nodes"
    r = run_module("gpu_health", {"operation": "list", "kubeconfig": kubeconfig}, check=True)
    assert r["failed"] is True and kubeconfig in r["msg"]


def test_argocd_status(kubeconfig: str) -> None:
    r = run_module("argocd_status", {"wait_timeout": -1})
    assert r["failed"] is True and "wait_timeout" in r["msg"]
    r = run_module("argocd_status", {"root": "a", "names": ["b"]})
    assert r["failed"] is True and "mutually exclusive" in r["msg"]
    r = run_module("argocd_status", {"root": "gpu-east-root", "kubeconfig": kubeconfig}, check=True)
    assert r["failed"] is True and kubeconfig in r["msg"]


@pytest.mark.parametrize("name", ["node_pools", "gpu_health", "argocd_status"])
def test_missing_kubernetes_client_is_named(name: str, monkeypatch) -> None:
    hide_library(monkeypatch, "kubernetes")
    r = run_module(name, {"assignment": {}} if name == "node_pools" else {})
    assert r["failed"] is True and "kubernetes" in r["msg"] and "Failed to import" in r["msg"]
