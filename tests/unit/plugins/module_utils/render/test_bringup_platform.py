"""Argo CD manages itself; explicit nulls; Cilium
``kubeProxyReplacement``; GPU Operator driver on hosts with a preinstalled driver; the Slinky
topology annotation names topologies that exist in the rendered topology file.

Fails before the fix: no argo-cd Application was rendered (REPORT.md said "apply (Helm)"),
``kubeProxyReplacement`` and ``driver.enabled`` were left to chart defaults with no inventory
option, and with ``topology.plugin: yaml`` the annotations said ``default:...`` while topology.yaml
names its trees ``topo-tree``/``topo-block`` (reference: the annotation is ``<topology>:<unit>``, and
"a topology file defining those topology names is required").
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from render_checks import CHART_OF_DIR, NO_UPSTREAM_ALLOWED, upstream_values
from render_fixtures import make_inventory

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.render import argocd as argo
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_inventory

C = "clusters/gpu-east"
REPO = Path(__file__).resolve().parents[5]


def edit_cluster(inv: Path, edit) -> None:
    path = inv / "group_vars" / "all" / "clusters.yml"
    data = yaml.safe_load(path.read_text())
    edit(data["gpufleet_clusters"][0])
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def one(files, rel: str) -> dict:
    (doc,) = [d for d in yaml.safe_load_all(files[rel]) if d]
    return doc


def test_argocd_manages_itself(files) -> None:
    app = one(files, f"{C}/apps/00-argocd.yaml")
    src = app["spec"]["sources"][0]
    assert (src["chart"], src["targetRevision"], src["helm"]["releaseName"]) == ("argo-cd", "10.1.1", "argocd")
    assert app["spec"]["destination"] == {"server": argo.IN_CLUSTER, "namespace": argo.ARGOCD_NS}
    assert "finalizers" not in app["metadata"] and "Delete=false" in app["spec"]["syncPolicy"]["syncOptions"]
    assert int(app["metadata"]["annotations"][argo.WAVE]) == argo.WAVES["argocd-config"]
    values = yaml.safe_load(files[f"{C}/platform/argocd/values.yaml"])
    assert values["configs"]["cm"][argo.HEALTH_KEY] == argo.HEALTH_LUA
    # one owner of argocd-cm: no second app writing it
    assert not [r for r in files if "argocd-config" in r]
    report = files[f"{C}/REPORT.md"].decode()
    assert "| argocd | argo-cd | 10.1.1 | argocd | bootstrap (Helm), then Argo CD itself |" in report
    # the bootstrap installs Argo CD from that same values file
    tasks = (REPO / "playbooks" / "tasks" / "apply_cluster.yml").read_text()
    assert "/platform/argocd/values.yaml" in tasks and "argocd_values_file" in tasks


def test_helm_managed_argocd_keeps_the_health_check_app(tmp_path) -> None:
    inv = make_inventory(tmp_path)
    edit_cluster(inv, lambda c: c["components"].update(argocd={"install_method": "helm"}))
    files = render_inventory(inv).files
    assert f"{C}/apps/00-argocd.yaml" not in files
    cm = one(files, f"{C}/platform/argocd-config/argocd-cm.yaml")
    assert cm["data"][argo.HEALTH_KEY] == argo.HEALTH_LUA


def nulls(node, path=()):
    if node is None:
        yield path
    elif isinstance(node, dict):
        for k, v in node.items():
            yield from nulls(v, (*path, str(k)))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from nulls(v, (*path, str(i)))


def test_no_explicit_nulls_reach_a_live_object(files, shared_dir) -> None:
    """Argo CD diffs a manifest field set to null against a live object that omits it: OutOfSync for
    ever. Manifests carry no nulls; in Helm values a null deletes a chart default, so every null must
    name a key the chart's values.yaml sets (else it is a typo that silently does nothing)."""
    for rel, data in files.items():
        if not rel.endswith((".yaml", ".yml")):
            continue
        docs = [d for d in yaml.safe_load_all(data) if d is not None]
        if rel.endswith("/values.yaml"):
            chart = CHART_OF_DIR[rel.split("/")[-2]]
            if chart in NO_UPSTREAM_ALLOWED:
                assert not list(nulls(docs[0])), rel
                continue
            up = upstream_values(shared_dir, chart)
            for path in nulls(docs[0]):
                cur = up
                for p in path:
                    assert isinstance(cur, dict) and p in cur, f"{rel}: null at {'.'.join(path)} deletes nothing"
                    cur = cur[p]
                assert cur is not None, f"{rel}: {'.'.join(path)} is null upstream already"
        else:
            for d in docs:
                assert not list(nulls(d)), f"{rel}: explicit null at {list(nulls(d))[:3]}"


def test_kube_proxy_replacement_is_explicit(files, tmp_path) -> None:
    values = yaml.safe_load(files[f"{C}/platform/cilium/values.yaml"])
    assert values["kubeProxyReplacement"] == "false" and "k8sServiceHost" not in values
    inv = make_inventory(tmp_path)
    edit_cluster(inv, lambda c: c["components"]["cilium"].update(kube_proxy_replacement=True))
    with pytest.raises(GpufleetError, match=r"components\.cilium\.k8s_service_host: required"):
        render_inventory(inv)
    edit_cluster(inv, lambda c: c["components"]["cilium"].update(k8s_service_host="10.0.0.10"))
    kpr = yaml.safe_load(render_inventory(inv).files[f"{C}/platform/cilium/values.yaml"])
    assert (kpr["kubeProxyReplacement"], kpr["k8sServiceHost"], kpr["k8sServicePort"]) == ("true", "10.0.0.10", 6443)


def test_gpu_operator_driver_off_on_preinstalled_hosts(files, tmp_path) -> None:
    driver = yaml.safe_load(files[f"{C}/platform/gpu-operator/values.yaml"])["driver"]
    assert (
        driver["enabled"] is True and driver["upgradePolicy"]["autoUpgrade"] is True
    )  # render/platform/driver_upgrade.py
    inv = make_inventory(tmp_path)
    edit_cluster(inv, lambda c: c["components"].update(gpu_operator={"driver": "preinstalled"}))
    values = yaml.safe_load(render_inventory(inv).files[f"{C}/platform/gpu-operator/values.yaml"])
    assert values["driver"] == {"enabled": False}


def topology_names(text: str, plugin: str) -> set[str]:
    if plugin == "yaml":
        return {t["topology"] for t in yaml.safe_load(text)}
    return {"default"}  # topology.conf is always the topology named "default"


@pytest.mark.parametrize("plugin", ["tree", "block", "yaml"])
def test_topology_annotations_name_existing_topologies(tmp_path, plugin) -> None:
    inv = make_inventory(tmp_path)
    edit_cluster(inv, lambda c: c["topology"].update(plugin=plugin))
    files = render_inventory(inv).files
    for t in ("research", "llm-pretrain"):
        base = f"{C}/tenants/{t}/slurm"
        name = "topology.yaml" if plugin == "yaml" else "topology.conf"
        known = topology_names(files[f"{base}/{name}"].decode(), plugin)
        ann = yaml.safe_load(files[f"{base}/node-topology.yaml"])["nodes"]
        assert ann
        for node, spec in ann.items():
            for unit in spec.split(","):
                topo, sep, rest = unit.partition(":")
                assert topo in known and sep and rest, f"{t} {node}: {spec!r} names {topo!r}, file has {sorted(known)}"
