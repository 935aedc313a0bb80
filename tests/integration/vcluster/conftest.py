"""Fixtures: a host control plane with the sample's GPU nodes fenced into pools (labels and taints
from the sample's pool lock, as the apply step sets them) and one real vCluster for a tenant, started
from the tenant's rendered values (real_vcluster.py)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "kube"))

from controlplane import LocalControlPlane, load_node_snapshot, require_control_plane_tools, shared_test_helpers
from real_vcluster import BIN_DIR, CHART, FenceHost, RealVCluster, fence_nodes

from ansible_collections.gpufleet.core.plugins.module_utils.pools.lock import parse_lock

REPO = HERE.parents[2]
SAMPLE = REPO / "inventories" / "sample"
SNAPSHOT = SAMPLE / "snapshots" / "gpu-east"
TENANT = "research"
VALUES = REPO / "gitops" / "clusters" / "gpu-east" / "tenants" / TENANT / "vcluster" / "values.yaml"


def sample_pools() -> dict[str, str]:
    return parse_lock((SNAPSHOT / "pools.lock.yaml").read_text(), cluster="gpu-east")


@pytest.fixture(scope="session")
def pools() -> dict[str, str]:
    return sample_pools()


@pytest.fixture(scope="session")
def host(tmp_path_factory: pytest.TempPathFactory, pools: dict[str, str]) -> Iterator[LocalControlPlane]:
    require_control_plane_tools()
    helpers = shared_test_helpers()
    helpers.require_path(BIN_DIR / "vcluster", "vcluster; build it with tools/build.sh vcluster")
    helpers.require_path(BIN_DIR / "helm", "helm; build it with tools/build.sh helm")
    helpers.require_path(CHART / "Chart.yaml", "the vcluster chart of the pinned release (GPUFLEET_VCLUSTER_CHART)")
    if os.geteuid() != 0:
        helpers.require_path(Path("/nonexistent/root"), "root: vCluster runs in its own network and mount namespaces")
    nodes = fence_nodes(load_node_snapshot(SNAPSHOT / "nodes.yaml"), SAMPLE, SNAPSHOT / "pools.lock.yaml", "gpu-east")
    plane = FenceHost()
    try:
        plane.start(tmp_path_factory.mktemp("vc-host") / "cluster")
        plane.create_nodes_from_snapshot(nodes)
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def vcluster(host: LocalControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealVCluster]:
    assert host.kubeconfig is not None
    vc = RealVCluster(TENANT, VALUES, host.kubeconfig, tmp_path_factory.mktemp("vc") / TENANT)
    try:
        vc.start()
        yield vc
    finally:
        vc.stop()
