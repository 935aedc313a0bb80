"""Every rendered object against upstream schemas; every values file against the chart's values.

Custom resources: the upstream CRD's openAPIV3Schema (strict: unknown fields rejected). Helm
values: only keys the chart's upstream values.yaml has (plus values.schema.json where shipped).
No credentials anywhere in the tree.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path

import jsonschema
import pytest
from lead_conftest import lead_conftest
from render_checks import (
    CHART_OF_DIR,
    KUEUE_CRDS,
    NO_UPSTREAM_ALLOWED,
    PROMETHEUS_CRDS,
    crd_index,
    crd_validator,
    secret_findings,
    unknown_values_keys,
    values_schema,
)
from render_fixtures import REPO, yaml_objects

from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_inventory

# kinds whose CRDs are not in ../shared/upstream (validated only by their builders' unit tests and
# by server-side dry-run with stand-in CRDs): reported, not silently passed
NO_UPSTREAM_CRD = {("cilium.io/v2", "CiliumClusterwideNetworkPolicy")} | {("k8s.mariadb.com/v1alpha1", "MariaDB")}
# Cilium LB IPAM / announcement kinds (render/platform/loadbalancer.py): no Cilium CRDs in ../shared/upstream
NO_UPSTREAM_CRD |= {
    ("cilium.io/v2", "CiliumLoadBalancerIPPool"),
    ("cilium.io/v2", "CiliumBGPAdvertisement"),
    ("cilium.io/v2alpha1", "CiliumL2AnnouncementPolicy"),
}
# built-in APIs: no CRD (checked by the kube dry-run tests)
CORE = {"v1", "batch/v1", "policy/v1", "storage.k8s.io/v1", "scheduling.k8s.io/v1", "admissionregistration.k8s.io/v1"}


@pytest.fixture(scope="module")
def rendered(files: Mapping[str, bytes]) -> Mapping[str, bytes]:
    return files


@pytest.fixture(scope="module")
def sample_rendered() -> dict[str, bytes] | None:
    if not (REPO / "inventories/sample/snapshots/gpu-east/nodes.yaml").is_file():
        return None
    return render_inventory(REPO / "inventories" / "sample").files


def _trees(rendered, sample_rendered):
    yield "test", rendered
    if sample_rendered is not None:
        yield "sample", sample_rendered


def values_files(files: dict[str, bytes]):
    import yaml

    for rel, data in sorted(files.items()):
        if rel.endswith("/values.yaml"):
            yield rel, CHART_OF_DIR[rel.split("/")[-2]], yaml.safe_load(data)


def test_custom_resources_validate_against_upstream_crds(rendered, sample_rendered, shared_dir: Path) -> None:
    index = crd_index(shared_dir)
    seen: set[tuple[str, str]] = set()
    for _unused, files in _trees(rendered, sample_rendered):
        for rel, obj in yaml_objects(files):
            if "apiVersion" not in obj or "kind" not in obj:
                continue
            key = (obj["apiVersion"], obj["kind"])
            if key[0] in CORE or key in NO_UPSTREAM_CRD:
                continue
            if key[0].startswith("monitoring.coreos.com/") and key not in index:
                why = "prometheus-operator CRDs: tools/build.sh promcrds"
                lead_conftest().require_path(PROMETHEUS_CRDS / ".version", why)
            if key[0].startswith("kueue.x-k8s.io/") and key not in index:
                lead_conftest().require_path(KUEUE_CRDS.parent / ".version", "Kueue CRDs: tools/build.sh kueue")
            assert key in index, f"{rel}: {key} has no upstream CRD and is not listed in NO_UPSTREAM_CRD"
            seen.add(key)
            validator = crd_validator(*index[key])
            errors = sorted(validator.iter_errors(obj), key=lambda e: list(e.absolute_path))
            assert not errors, f"{rel}: {obj['kind']} {obj['metadata']['name']}: " + "; ".join(
                f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:5]
            )
    assert {("argoproj.io/v1alpha1", "Application"), ("argoproj.io/v1alpha1", "AppProject")} <= seen


def test_crd_check_can_fail(rendered, shared_dir: Path) -> None:
    index = crd_index(shared_dir)
    app = next(o for _unused, o in yaml_objects(rendered) if o.get("kind") == "Application")
    bad = copy.deepcopy(app)
    bad["spec"]["syncPolicy"]["automated"]["prun"] = True  # typo
    assert list(crd_validator(*index[("argoproj.io/v1alpha1", "Application")]).iter_errors(bad))
    bad = copy.deepcopy(app)
    del bad["spec"]["destination"]
    assert list(crd_validator(*index[("argoproj.io/v1alpha1", "Application")]).iter_errors(bad))


def test_values_use_only_upstream_keys(rendered, sample_rendered, shared_dir: Path) -> None:
    charts = set()
    for _unused, files in _trees(rendered, sample_rendered):
        for rel, chart, values in values_files(files):
            charts.add(chart)
            unknown = unknown_values_keys(values, chart, shared_dir)
            assert not unknown, f"{rel}: keys not in the {chart} chart's upstream values.yaml: {unknown}"
            schema = values_schema(shared_dir, chart)
            if schema is not None:
                errs = list(jsonschema.Draft7Validator(schema).iter_errors(values))
                assert not errs, f"{rel}: {chart} values.schema.json: " + "; ".join(e.message for e in errs[:5])
    assert {"cilium", "gpu-operator", "csi-driver-nfs", "vcluster", "slurm", "slurm-operator"} <= charts


def test_values_checker_can_fail(rendered, shared_dir: Path) -> None:
    vals = {rel: (chart, v) for rel, chart, v in values_files(rendered)}
    chart, cilium = vals["clusters/gpu-east/platform/cilium/values.yaml"]
    bad = copy.deepcopy(cilium)
    bad["hubble"]["tls"]["auto"]["methd"] = "cronJob"
    assert unknown_values_keys(bad, chart, shared_dir) == ["hubble.tls.auto.methd"]
    chart, slurm = vals["clusters/gpu-east/tenants/research/slurm/values.yaml"]
    bad = copy.deepcopy(slurm)
    bad["nodesets"]["research-batch"]["slurmd"]["resourcez"] = {}
    bad["partitions"]["batch"]["nodeset"] = ["x"]
    assert sorted(unknown_values_keys(bad, chart, shared_dir)) == [
        "nodesets.research-batch.slurmd.resourcez",
        "partitions.batch.nodeset",
    ]
    chart, gpu = vals["clusters/gpu-east/platform/gpu-operator/values.yaml"]
    bad = copy.deepcopy(gpu)
    bad["dcgmExporter"]["hpcJobMapping"]["dir"] = "/x"
    assert unknown_values_keys(bad, chart, shared_dir) == ["dcgmExporter.hpcJobMapping.dir"]
    assert unknown_values_keys({"crds": {"enabled": True, "kep": True}}, "cert-manager", shared_dir) == ["crds.kep"]


def test_charts_without_upstream_values_are_the_known_gap(rendered) -> None:
    """cert-manager and Kueue values cannot be checked here: keep them minimal (listed keys only)."""
    charts = {chart for _unused, chart, _unused in values_files(rendered)}
    assert charts - set(NO_UPSTREAM_ALLOWED) == {
        "cilium",
        "gpu-operator",
        "csi-driver-nfs",
        "vcluster",
        "slurm",
        "slurm-operator",
        "argo-cd",
        "mariadb-operator",
    }


def test_no_credentials_in_tree(rendered, sample_rendered) -> None:
    for _unused, files in _trees(rendered, sample_rendered):
        findings = [f for rel, data in files.items() for f in secret_findings(rel, data)]
        assert not findings, findings
        for _unused, obj in yaml_objects(files):
            assert obj.get("kind") != "Secret"


def test_secret_scan_can_fail() -> None:
    assert secret_findings("x.yaml", b"apiVersion: v1\nkind: Secret\nmetadata: {name: a}\ndata: {k: dg==}\n")
    assert secret_findings("x.yaml", b"key: |\n  -----BEGIN RSA PRIVATE KEY-----\n")
    assert secret_findings("x.yaml", b"password: hunter2hunter2\n")
    assert not secret_findings("x.yaml", b"passwordKeyRef: {name: mariadb-password, key: password}\n")


def test_committed_gitops_tree_is_the_sample_render(sample_rendered) -> None:
    """gitops/ is the sample inventory's render, byte for byte (what `make check` enforces)."""
    if sample_rendered is None:
        pytest.skip("inventories/sample snapshots not generated yet")
    from ansible_collections.gpufleet.core.plugins.module_utils.render import writer as tree_writer

    plan = tree_writer.plan(REPO / "gitops", sample_rendered)
    assert not plan.changes, {"added": plan.added, "changed": plan.changed, "removed": plan.removed}
