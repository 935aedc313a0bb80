"""A health gate of the rollout on the real Argo CD v3.5.1: the wave after a failing gate never starts.

The gate is the rendered ``slurm-accounting-ready`` Job of the sample (the slurm chart's ``extraObjects``:
an Argo CD ``Sync`` hook in the wave between the Accounting and the Controller, render/tenants/upgrade_gates.py),
applied from a local Git repository by an Application of plain manifests, between two ConfigMaps in the
Accounting's and the Controller's waves (the Slinky objects need the operator's CRDs and controller, which
do not run here; the waves are what is under test). The host control plane's Job controller runs the Job
and KWOK completes its pod.

* Failing accounting: the test keeps the gate's pod off every node (a node selector) with a 20 s
  ``activeDeadlineSeconds``, standing for a slurmdbd that never answers (the gate's own command is tested
  against the real slurmdbd in tests/integration/slurm/test_slurm_upgrade_gates.py). The Job fails, the
  sync fails, and the Controller's wave is never applied.
* Healthy accounting: the same Job unchanged completes; the Controller's wave is applied after it.

Its own control plane and Argo CD, started and stopped within the module (named to run before the
session bed of the other modules starts).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml
from argocd_harness import BIN_DIR, LocalArgoCD, LocalControlPlane, git
from controlplane import require_control_plane_tools, shared_test_helpers

REPO = Path(__file__).resolve().parents[3]
VALUES = REPO / "gitops" / "clusters" / "gpu-east" / "tenants" / "research" / "slurm" / "values.yaml"
WAVE = "argocd.argoproj.io/sync-wave"
NODE = "gate-node-0"


def _require() -> None:
    require_control_plane_tools()
    helpers = shared_test_helpers()
    helpers.require_path(BIN_DIR / "argocd", "Argo CD; build it with tools/build.sh argocd")
    for tool in ("redis-server", "git", "ip"):
        helpers.require_tool(tool, "used by tools/argocd.sh")


def _gate() -> dict:
    objs = yaml.safe_load(VALUES.read_text())["extraObjects"]
    return next(o for o in objs if o["metadata"]["name"] == "slurm-accounting-ready")


def _configmap(name: str, wave: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "annotations": {WAVE: wave}}}


def _manifests(path: Path, failing: bool) -> None:
    job = _gate()
    if failing:
        job["spec"]["activeDeadlineSeconds"] = 20
        job["spec"]["template"]["spec"]["nodeSelector"] = {"gpufleet.io/test-no-such-node": "true"}
    path.mkdir(parents=True)
    docs = [_configmap("accounting", "1"), job, _configmap("controller", "3")]
    (path / "objects.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=True))


def _app(name: str, repo: Path) -> dict:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name, "namespace": "argocd"},
        "spec": {
            "project": "default",
            "source": {"repoURL": f"file://{repo}", "targetRevision": "main", "path": name},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": name},
            "syncPolicy": {"automated": {}},
        },
    }


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory):
    _require()
    base = tmp_path_factory.mktemp("gate")
    host = LocalControlPlane()
    argocd = LocalArgoCD(host, base / "argocd")
    try:
        host.start(base / "host")
        res = {"cpu": "8", "memory": "32Gi", "pods": "110"}
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": NODE},
            "status": {"capacity": res, "allocatable": res},
        }
        host.create_nodes_from_snapshot([node], timeout=120)
        repo = base / "repo.git"
        repo.mkdir()
        git(repo, "init", "-q", "-b", "main")
        for name, failing in (("gate-fails", True), ("gate-passes", False)):
            _manifests(repo / name, failing)
            host.create_namespace(name)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "gates")
        argocd.install_config()
        argocd.start()
        host.kubectl(
            "apply", "-f", "-", input=yaml.safe_dump_all([_app("gate-fails", repo), _app("gate-passes", repo)])
        )
        yield host, argocd
    finally:
        argocd.stop()
        host.stop()


def _phase(app: dict) -> str:
    return ((app.get("status") or {}).get("operationState") or {}).get("phase", "")


def _failed_once(app: dict) -> bool:
    op = (app.get("status") or {}).get("operationState") or {}
    return op.get("phase") in ("Failed", "Error") or "completed unsuccessfully" in op.get("message", "")


def _configmaps(host: LocalControlPlane, ns: str) -> set[str]:
    return {c["metadata"]["name"] for c in host.get_json("configmaps", "-n", ns)["items"]}


def test_a_failing_accounting_gate_stops_the_next_wave(bed) -> None:
    host, argocd = bed
    # Argo CD retries a failed automated sync (a new gate Job each time): the first failure is enough
    apps = argocd.wait(["gate-fails"], _failed_once, "failed", timeout=300)
    op = apps["gate-fails"]["status"]["operationState"]
    assert "controller" not in _configmaps(host, "gate-fails"), op
    assert "accounting" in _configmaps(host, "gate-fails")
    job = host.get_json("jobs", "-n", "gate-fails", "slurm-accounting-ready")
    assert any(c["type"] == "Failed" and c["status"] == "True" for c in job["status"]["conditions"]), job["status"]
    time.sleep(15)  # a few reconciliations later the Controller's wave has still not been applied
    assert "controller" not in _configmaps(host, "gate-fails")


def test_a_healthy_accounting_gate_lets_the_next_wave_start(bed) -> None:
    host, argocd = bed
    argocd.wait(["gate-passes"], lambda a: _phase(a) == "Succeeded", "synced", timeout=300)
    job = host.get_json("jobs", "-n", "gate-passes", "slurm-accounting-ready")
    controller = host.get_json("configmaps", "-n", "gate-passes", "controller")
    assert job["status"].get("succeeded") == 1, job["status"]
    assert controller["metadata"]["creationTimestamp"] >= job["status"]["completionTime"]
