"""On the real test apiserver: the rendered vCluster host quota admits every claim
the tenant's apps make in ``vc-<tenant>`` (collected independently: tests/lib/rendered_claims.py),
and the same quota one byte smaller refuses the last one with the apiserver's own message.

The claims are created as vCluster's syncer would create them on the host (translated names, the
rendered classes); the quota is the rendered one merged over the pinned chart's defaults as Helm
would (``effective_quota``), admitted by the real ResourceQuota admission plugin.
"""

from __future__ import annotations

import pytest
import rendered_claims
import yaml
from controlplane import REPO_ROOT
from test_kube_bringup import create, effective_quota, quota_namespace

from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants.quota import exact_quantity

pytestmark = pytest.mark.kube

C = "clusters/gpu-east"
CHARTS = REPO_ROOT.parent / "shared" / "upstream" / "charts"


def claim(name: str, ns: str, n_bytes: int) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "",
            "resources": {"requests": {"storage": exact_quantity(n_bytes)}},
        },
    }


@pytest.mark.parametrize("tenant", ["llm-pretrain", "research"])
def test_rendered_quota_admits_every_claim_and_not_one_byte_more(kube_cluster, files, tenant: str) -> None:
    if not CHARTS.is_dir():
        pytest.skip(f"{CHARTS} missing (pinned chart values)")
    claims = rendered_claims.claims_of(files, tenant, CHARTS)
    assert any(k.startswith("mariadb ") for k in claims), claims  # the accounting database is counted
    rendered = yaml.safe_load(files[f"{C}/tenants/{tenant}/vcluster/values.yaml"])["policies"]["resourceQuota"]["quota"]
    ordered = sorted(claims.items(), key=lambda kv: kv[1])  # the largest (home) last
    for label, hard in (("rendered", effective_quota(rendered)), ("one byte less", None)):
        if hard is None:
            need = rendered_claims.size(rendered["requests.storage"]) - 1
            hard = effective_quota({**rendered, "requests.storage": str(need)})
        ns = f"quota-{tenant}-{'ok' if label == 'rendered' else 'short'}"
        quota_namespace(kube_cluster, ns, hard)
        results = []
        for i, (what, n) in enumerate(ordered):
            proc = create(kube_cluster, claim(f"c{i}-{what.split()[0]}", ns, n))
            results.append((what, proc.returncode, proc.stderr.strip()))
        if label == "rendered":
            assert all(rc == 0 for _, rc, _ in results), results
        else:
            assert all(rc == 0 for _, rc, _ in results[:-1]), results
            what, rc, err = results[-1]
            assert rc != 0 and "exceeded quota" in err and "requests.storage" in err, results
