"""Fixtures for tests against a real local Kubernetes control plane.

``kube_cluster`` (session scope) starts etcd + kube-apiserver +
kube-scheduler + kube-controller-manager + kwok from ``.build/bin`` (built by
``tools/build.sh``) and yields the ``LocalControlPlane``: ``.kubeconfig`` is
the admin kubeconfig path, ``.kubectl(*args)`` runs kubectl against it.
The cluster is shared by every test module in this directory: scope objects
by namespace and pods to your own node names (nodeAffinity on
kubernetes.io/hostname); other modules add nodes too.
Teardown runs on success, failure and interpreter exit (finalizer + atexit),
and the cluster also kills itself when the pytest process dies (owner pid).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from controlplane import REPO_ROOT, LocalControlPlane, require_control_plane_tools, shared_test_helpers

FIXTURES = Path(__file__).resolve().parent / "fixtures"
UPSTREAM_CRDS = REPO_ROOT.parent / "shared" / "upstream" / "crds"
# monitoring.coreos.com CRDs from the prometheus-operator Go module (tools/build.sh promcrds)
PROMETHEUS_CRDS = REPO_ROOT / ".build" / "share" / "prometheus-operator-crds"
# kueue.x-k8s.io CRDs from the Kueue Go module at the pinned chart's version (tools/build.sh kueue)
KUEUE_SHARE = REPO_ROOT / ".build" / "share" / "kueue"


@pytest.fixture(scope="session")
def kube_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalControlPlane]:
    require_control_plane_tools()
    plane = LocalControlPlane()
    state = tmp_path_factory.mktemp("kube") / "cluster"
    try:
        plane.start(state)
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def nodes_snapshot() -> Path:
    return FIXTURES / "nodes-small.yaml"


@pytest.fixture(scope="session")
def upstream_crd_files() -> list[Path]:
    shared_test_helpers().require_path(UPSTREAM_CRDS, "upstream CRDs")
    return sorted(UPSTREAM_CRDS.glob("*/*.yaml"))


@pytest.fixture(scope="session")
def prometheus_crd_files() -> list[Path]:
    """PodMonitor/ServiceMonitor/PrometheusRule CRDs of the pinned prometheus-operator release."""
    shared_test_helpers().require_path(PROMETHEUS_CRDS / ".version", "tools/build.sh promcrds")
    files = sorted(PROMETHEUS_CRDS.glob("monitoring.coreos.com_*.yaml"))
    assert files, f"no CRDs in {PROMETHEUS_CRDS}"
    return files


@pytest.fixture(scope="session")
def kueue_crd_files() -> list[Path]:
    """Every kueue.x-k8s.io CRD of the Kueue release the pinned chart ships (config/components/crd/bases)."""
    shared_test_helpers().require_path(KUEUE_SHARE / ".version", "tools/build.sh kueue")
    files = sorted((KUEUE_SHARE / "crds").glob("kueue.x-k8s.io_*.yaml"))
    assert files, f"no CRDs in {KUEUE_SHARE / 'crds'}"
    return files
