"""Fixtures: a real Argo CD syncing the sample fleet's rendered tree into real kube-apiservers.

``argocd_bed`` (session scope) is ``bed.start_bed``: host cluster, one real vCluster per tenant, a
local Helm repository (the real vcluster chart, doubles of the others), the rendered tree in a local
Git repository, the real Slinky operator in each Slurm tenant's vCluster and Argo CD v3.5.1 in a
loopback-only network namespace. Teardown stops everything on success, failure and interpreter exit
(the shell runners also watch this process's pid).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from argocd_bed import PROMETHEUS_CRDS, ArgoBed, Synced, prepare, start_bed, sync_root
from argocd_harness import ARGOCD_CRDS, BIN_DIR
from real_vcluster import CHART


def _require() -> None:
    from controlplane import require_control_plane_tools, shared_test_helpers

    require_control_plane_tools()
    helpers = shared_test_helpers()
    helpers.require_path(BIN_DIR / "argocd", "Argo CD; build it with tools/build.sh argocd")
    helpers.require_path(BIN_DIR / "helm", "helm; build it with tools/build.sh helm")
    # the repo-server builds the argo-cd repository's manifests/crds (a kustomization) with it
    helpers.require_path(BIN_DIR / "kustomize", "kustomize; build it with tools/build.sh kustomize")
    helpers.require_path(BIN_DIR / "vcluster", "vcluster; build it with tools/build.sh vcluster")
    for name in ("slurm-operator", "slurm-operator-webhook"):
        helpers.require_path(BIN_DIR / name, "the Slinky operator; build it with tools/build.sh slinky")
    helpers.require_path(CHART / "Chart.yaml", "the vcluster chart of the pinned release (tools/build.sh vcluster)")
    helpers.require_path(ARGOCD_CRDS / ".version", "the Argo CD CRDs of the pinned release; tools/build.sh charts")
    helpers.require_path(PROMETHEUS_CRDS, "prometheus-operator CRDs; tools/build.sh promcrds")
    for tool in ("redis-server", "git", "ip"):
        helpers.require_tool(tool, "used by tools/argocd.sh")
    if os.geteuid() != 0:
        helpers.require_path(Path("/nonexistent/root"), "root: Argo CD runs in a network namespace (ip netns)")


@pytest.fixture(scope="session")
def argocd_bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ArgoBed]:
    _require()
    with start_bed(tmp_path_factory.mktemp("argocd")) as bed:
        yield bed


SYNC_TIMEOUT = 900


@pytest.fixture(scope="session")
def synced(argocd_bed: ArgoBed) -> Synced:
    """The first install: the platform prerequisites, the tenants registered, the root app applied
    and every rendered app Synced+Healthy (shared by every test module of the bed)."""
    registration = prepare(argocd_bed)
    try:
        out = sync_root(argocd_bed, timeout=SYNC_TIMEOUT)
    except RuntimeError as exc:
        pytest.fail(str(exc))
    out.registration = registration
    # the first-install figures for the bench table (bench/bench_argocd_sync.py measures the same)
    print(
        f"\nbench: first install, root applied -> every app Synced+Healthy: {out.seconds:.1f}s"
        f" (plain-manifest apps: {out.plain_seconds:.1f}s)"
    )
    return out
