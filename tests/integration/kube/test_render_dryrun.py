"""Every rendered manifest passes server-side dry-run (``--validate=strict``) on a real kube-apiserver
with the upstream CRDs installed (Argo CD Application/AppProject, Slinky, GPU Operator, and, from their
Go modules fetched by tools/build.sh, the prometheus-operator's PodMonitor/ServiceMonitor and Kueue's CRDs
at the pinned chart's version: flavors, queues, the fabric Topology).

Objects meant for a tenant's vCluster API (namespaces, the Slurm-home PVC, Kueue queues) are
dry-run against the same apiserver: a vCluster serves the same Kubernetes API. Cilium and
mariadb-operator CRDs are not in ../shared/upstream: stand-in CRDs (right group, kind and scope, schema left open)
let the apiserver check apiVersion, kind, scope and metadata of those objects; their fields are
checked only by the unit tests (a known gap).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests" / "lib"))

from render_fixtures import make_inventory

from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_inventory

pytestmark = pytest.mark.kube

STAND_INS = {
    ("cilium.io", "CiliumClusterwideNetworkPolicy", "ciliumclusterwidenetworkpolicies", "Cluster", "v2"),
    ("k8s.mariadb.com", "MariaDB", "mariadbs", "Namespaced", "v1alpha1"),
    ("cilium.io", "CiliumLoadBalancerIPPool", "ciliumloadbalancerippools", "Cluster", "v2"),
    ("cilium.io", "CiliumBGPAdvertisement", "ciliumbgpadvertisements", "Cluster", "v2"),
}
NOT_MANIFESTS = ("values.yaml", "node-topology.yaml", "node-labels.yaml", "vclusters.yaml")


def stand_in_crd(group: str, kind: str, plural: str, scope: str, version: str) -> dict:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
            "scope": scope,
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                        }
                    },
                }
            ],
        },
    }


def manifests(files: dict[str, bytes]) -> list[tuple[str, dict]]:
    out = []
    for rel, data in sorted(files.items()):
        if rel.endswith(".yaml") and not rel.endswith(NOT_MANIFESTS):
            out += [(rel, d) for d in yaml.safe_load_all(data) if d]
    return out


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, bytes]]:
    trees = {"test": render_inventory(make_inventory(tmp_path_factory.mktemp("inv"))).files}
    if (REPO / "inventories/sample/snapshots/gpu-east/nodes.yaml").is_file():
        trees["sample"] = render_inventory(REPO / "inventories" / "sample").files
    return trees


@pytest.fixture(scope="module")
def api(kube_cluster, upstream_crd_files, prometheus_crd_files, kueue_crd_files, tmp_path_factory):
    kube_cluster.apply_crds(upstream_crd_files, timeout=180)
    kube_cluster.apply_crds(prometheus_crd_files, timeout=180)
    kube_cluster.apply_crds(kueue_crd_files, timeout=180)
    d = tmp_path_factory.mktemp("standin")
    files = []
    for spec in sorted(STAND_INS):
        f = d / f"{spec[2]}.{spec[0]}.yaml"
        f.write_text(json.dumps(stand_in_crd(*spec)))
        files.append(f)
    kube_cluster.apply_crds(files)
    return kube_cluster


def test_every_rendered_manifest_passes_server_dry_run(api, rendered) -> None:
    checked: dict[str, int] = {}
    for _, files in sorted(rendered.items()):
        objs = manifests(files)
        # namespaces first, for real (idempotent apply), so namespaced objects can be dry-run
        names = {o["metadata"]["name"] for _, o in objs if o["kind"] == "Namespace"}
        names |= {o["metadata"]["namespace"] for _, o in objs if o["metadata"].get("namespace")}
        for ns in sorted(names):
            doc = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
            api.kubectl("apply", "--server-side", "--field-manager=gpufleet-tests", "-f", "-", input=json.dumps(doc))
        failures = []
        for rel, obj in objs:
            proc = api.server_dry_run(obj)
            if proc.returncode != 0:
                failures.append(f"{rel}: {obj['kind']}/{obj['metadata']['name']}: {proc.stderr.strip()}")
            checked[obj["kind"]] = checked.get(obj["kind"], 0) + 1
        assert not failures, "\n".join(failures)
    for kind in (
        "Application",
        "AppProject",
        "StorageClass",
        "Namespace",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "CiliumClusterwideNetworkPolicy",
        "CiliumLoadBalancerIPPool",
        "ClusterQueue",
        "ResourceFlavor",
        "LocalQueue",
        "PodMonitor",
        "MariaDB",
        "Job",
    ):
        assert checked.get(kind), f"no {kind} was checked: {checked}"


def test_dry_run_rejects_a_broken_application(api, rendered) -> None:
    """The check can fail: a typo in a rendered Application is refused by the apiserver."""
    files = rendered["test"]
    app = next(o for _, o in manifests(files) if o["kind"] == "Application")
    bad = json.loads(json.dumps(app))
    bad["spec"]["syncPolicy"]["automatd"] = {"prune": True}
    proc = api.server_dry_run(bad)
    assert proc.returncode != 0 and "automatd" in proc.stderr
    bad = json.loads(json.dumps(app))
    bad["spec"]["destination"]["namespace"] = 42
    assert api.server_dry_run(bad).returncode != 0


def test_dry_run_rejects_a_broken_pod_monitor(api, rendered) -> None:
    """The monitoring.coreos.com schema is really enforced: a misspelt endpoint field is refused."""
    pm = next(o for _, o in manifests(rendered["sample"]) if o["kind"] == "PodMonitor")
    assert api.server_dry_run(pm).returncode == 0
    bad = json.loads(json.dumps(pm))
    bad["spec"]["podMetricsEndpoints"][0]["intervall"] = "30s"
    proc = api.server_dry_run(bad)
    assert proc.returncode != 0 and "intervall" in proc.stderr
    bad = json.loads(json.dumps(pm))
    bad["spec"]["podMetricsEndpoints"][0]["interval"] = "30 seconds"
    assert api.server_dry_run(bad).returncode != 0
