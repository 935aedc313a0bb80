"""The rendered PodDisruptionBudgets on a real kube-apiserver: an eviction that would take down slurmctld
or slurmdbd during a rollout is refused; a login pod with a second replica may go.

The PDBs are read from the sample tree's rendered slurm values (``extraObjects``, as the chart applies
them), applied to a namespace, and pods carrying the Slinky operator's selector labels are bound to a KWOK
node; ``kubectl drain`` (the Eviction API, as a node drain, an autoscaler or the GPU Operator's upgrade
drain uses it) then tries to evict them.
"""

from __future__ import annotations

import sys

import pytest
import yaml
from controlplane import REPO_ROOT, LocalControlPlane

COLLECTIONS = REPO_ROOT / ".build" / "collections"
if str(COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS))

pytestmark = pytest.mark.kube

NS = "slurm-pdb"
NODE = "pdb-node-0"
VALUES = REPO_ROOT / "gitops" / "clusters" / "gpu-east" / "tenants" / "research" / "slurm" / "values.yaml"


def _pod(name: str, labels: dict[str, str]) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "spec": {
            "nodeName": NODE,
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "c", "image": "registry.invalid/none:1"}],
        },
    }


@pytest.fixture(scope="module")
def bed(kube_cluster: LocalControlPlane) -> LocalControlPlane:
    res = {"cpu": "8", "memory": "32Gi", "pods": "110"}
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": NODE},
        "status": {"capacity": res, "allocatable": res},
    }
    kube_cluster.create_nodes_from_snapshot([node], timeout=120)
    kube_cluster.create_namespace(NS)
    extra = yaml.safe_load(VALUES.read_text())["extraObjects"]
    pdbs = [o for o in extra if o["kind"] == "PodDisruptionBudget"]
    assert {o["kind"] for o in extra} == {"PodDisruptionBudget", "Job"}  # the Jobs: render/tenants/upgrade_gates.py
    kube_cluster.kubectl("apply", "-n", NS, "-f", "-", input=yaml.safe_dump_all(pdbs))
    pods = [
        _pod("slurm-controller-0", {"app.kubernetes.io/name": "slurmctld", "app.kubernetes.io/instance": "slurm"}),
        _pod("slurm-accounting-0", {"app.kubernetes.io/name": "slurmdbd", "app.kubernetes.io/instance": "slurm"}),
        _pod("other", {"app.kubernetes.io/name": "something-else"}),
    ]
    kube_cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(pods))
    kube_cluster.kubectl("wait", "-n", NS, "--for=condition=Ready", "pod", "--all", "--timeout=120s", timeout=150)
    # the disruption controller must have counted the healthy pods before it allows or denies
    kube_cluster.kubectl(
        "wait",
        "-n",
        NS,
        "pdb/slurm-controller",
        "--for=jsonpath={.status.currentHealthy}=1",
        "--timeout=60s",
        timeout=90,
    )
    return kube_cluster


def _drain(kube: LocalControlPlane, selector: str):
    return kube.kubectl(
        "drain",
        NODE,
        f"--pod-selector={selector}",
        "--ignore-daemonsets",
        "--force",
        "--timeout=8s",
        "--skip-wait-for-delete-timeout=1",
        check=False,
        timeout=60,
    )


@pytest.mark.parametrize("app", ["slurmctld", "slurmdbd"])
def test_eviction_of_controller_or_database_is_refused(bed: LocalControlPlane, app: str) -> None:
    r = _drain(bed, f"app.kubernetes.io/name={app}")
    assert r.returncode != 0
    assert "disruption budget" in (r.stderr + r.stdout), r.stderr + r.stdout
    pods = bed.get_json("pods", "-n", NS, "-l", f"app.kubernetes.io/name={app}")["items"]
    assert len(pods) == 1 and not pods[0]["metadata"].get("deletionTimestamp")


def test_other_pods_are_evicted(bed: LocalControlPlane) -> None:
    r = _drain(bed, "app.kubernetes.io/name=something-else")
    assert r.returncode == 0, r.stderr
    left = bed.get_json("pods", "-n", NS, "-l", "app.kubernetes.io/name=something-else")["items"]
    assert all(p["metadata"].get("deletionTimestamp") for p in left)
    bed.kubectl("uncordon", NODE)
