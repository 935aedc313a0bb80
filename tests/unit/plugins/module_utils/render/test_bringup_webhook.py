"""The Slinky webhook gets its caBundle inside the vCluster.

Chart facts (slurm-operator chart, templates/webhook/webhook.yaml, the 1.x line pinned at 1.2.1):
with ``certManager.enabled: true`` the Validating/MutatingWebhookConfigurations carry no caBundle,
only the annotation ``cert-manager.io/inject-ca-from: <namespace>/<certManager.secretName>``; the
caBundle comes from a cert-manager cainjector watching the same API server. With ``false`` the chart
mints a CA with ``genCA`` at every render (a new caBundle each sync). The decision is in
docs/adr/slinky-webhook-tls.md.

Fails before the fix: no cert-manager was deployed into the vCluster (the host one never sees its
webhook configurations) and the vCluster relied on the licensed cert-manager integration.
"""

from __future__ import annotations

import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.module_utils.render import argocd as argo

C = "clusters/gpu-east"


def app(files, t: str, fname: str) -> dict:
    (doc,) = [d for d in yaml.safe_load_all(files[f"{C}/tenants/{t}/apps/{fname}"]) if d]
    return doc


def wave(a: dict) -> int:
    return int(a["metadata"]["annotations"][argo.WAVE])


@pytest.mark.parametrize("t", ["research", "llm-pretrain"])
def test_cert_manager_runs_inside_the_vcluster_before_the_operator(files, t) -> None:
    cm = app(files, t, "3-cert-manager.yaml")
    op = app(files, t, "4-slurm-operator.yaml")
    vc = app(files, t, "2-vcluster.yaml")
    assert cm["spec"]["destination"]["server"] == op["spec"]["destination"]["server"] == f"https://{t}.vc-{t}:443"
    assert wave(vc) < wave(cm) < wave(app(files, t, "3-slurm-operator-crds.yaml")) < wave(op)
    chart = cm["spec"]["sources"][0]
    assert chart["chart"] == "cert-manager" and chart["targetRevision"].startswith("v1.")
    values = yaml.safe_load(files[f"{C}/tenants/{t}/cert-manager/values.yaml"])
    assert values["crds"] == {"enabled": True, "keep": True}
    assert "finalizers" not in cm["metadata"] and "Delete=false" in cm["spec"]["syncPolicy"]["syncOptions"]
    assert yaml.safe_load(files[f"{C}/tenants/{t}/slurm-operator/values.yaml"])["certManager"]["enabled"] is True


def test_no_licensed_vcluster_cert_manager_integration(files) -> None:
    for t in ("research", "llm-pretrain", "inference"):
        assert "integrations" not in yaml.safe_load(files[f"{C}/tenants/{t}/vcluster/values.yaml"])


def test_kubernetes_only_tenant_gets_no_cert_manager(files) -> None:
    assert not [r for r in files if r.startswith(f"{C}/tenants/inference/") and "cert-manager" in r]
