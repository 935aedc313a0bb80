"""The vCluster host quota holds every claim the tenant's rendered apps make.

The claims are collected independently of render/tenants/quota.py (tests/lib/rendered_claims.py): every
PersistentVolumeClaim and mariadb-operator MariaDB in the tenant's manifests, plus the chart-made
claims (vCluster data, slurmctld state) from the values files with the defaults of the pinned
charts' values.yaml (../shared/upstream/charts). The rendered quota must equal their sum exactly, so a
quota one byte too small (or a claim the formula forgets, like the accounting MariaDB) fails.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import rendered_claims
import yaml
from render_fixtures import edit_vars, make_inventory

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants import quota
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_inventory

C = "clusters/gpu-east"
CHARTS = Path()


@pytest.fixture(scope="module", autouse=True)
def _charts(shared_dir: Path) -> None:
    global CHARTS
    CHARTS = shared_dir / "upstream" / "charts"


def upstream(chart: str, *path: str):
    return rendered_claims.upstream(CHARTS, chart, *path)


def size(q: str) -> int:
    return rendered_claims.size(q)


def claims_of(files: dict[str, bytes], tenant: str) -> dict[str, int]:
    return rendered_claims.claims_of(files, tenant, CHARTS)


@pytest.mark.parametrize("tenant", ["llm-pretrain", "research", "inference"])
def test_storage_quota_is_the_sum_of_the_rendered_claims(files, tenant: str) -> None:
    claims = claims_of(files, tenant)
    vc = yaml.safe_load(files[f"{C}/tenants/{tenant}/vcluster/values.yaml"])
    hard = size(vc["policies"]["resourceQuota"]["quota"]["requests.storage"])
    assert hard == sum(claims.values()), (hard, claims)
    if tenant != "inference":  # the accounting database is one of them (the defect: it was not counted)
        assert any(k.startswith("mariadb ") for k in claims), claims
        assert hard - 1 < sum(claims.values())  # one byte less would refuse the last claim


def test_chart_defaults_are_the_pinned_charts() -> None:
    vc, ctld = quota.CHART_CLAIMS["vcluster"][0], quota.CHART_CLAIMS["slurm"][0]
    assert vc.default_size == upstream("vcluster", *vc.size)
    assert upstream("vcluster", *vc.enabled) == "auto"
    assert quota.CHART_CLAIMS["vcluster"][1].default_size == upstream(
        "vcluster", *quota.CHART_CLAIMS["vcluster"][1].size
    )
    assert upstream("vcluster", *quota.CHART_CLAIMS["vcluster"][1].requires) is False
    assert ctld.default_size == upstream("slurm", *ctld.size)
    assert upstream("slurm", *ctld.enabled) is True


def _set_quota(value: str):
    """The platform's quota for research (tenant_overrides: a tenant's own values cannot set quota)."""

    def fn(data):
        data["gpufleet_clusters"][0]["tenant_overrides"] = {
            "research": {
                "reason": "fixed storage budget",
                "vcluster": {"values": {"policies": {"resourceQuota": {"quota": {"requests.storage": value}}}}},
            }
        }

    return fn


def test_an_explicit_quota_one_byte_too_small_is_refused(files, tmp_path: Path) -> None:
    need = sum(claims_of(files, "research").values())
    inv = make_inventory(tmp_path / "small")
    edit_vars(inv, "clusters.yml", _set_quota(str(need - 1)))
    with pytest.raises(GpufleetError) as exc:
        render_inventory(inv)
    msg = str(exc.value)
    assert "tenant_overrides.research.vcluster.values.policies.resourceQuota.quota.requests.storage" in msg
    assert "MariaDB slurm-accounting-db" in msg and "slurm-home" in msg
    inv = make_inventory(tmp_path / "exact")
    edit_vars(inv, "clusters.yml", _set_quota(str(need)))
    vc = yaml.safe_load(render_inventory(inv).files[f"{C}/tenants/research/vcluster/values.yaml"])
    assert vc["policies"]["resourceQuota"]["quota"]["requests.storage"] == str(need)


def test_claims_follow_the_values() -> None:
    """Disabled persistence, an existing claim, replicas and a deployed etcd change the sum."""
    vc_pv = {
        "controlPlane": {
            "statefulSet": {"persistence": {"volumeClaim": {"size": "7Gi"}}, "highAvailability": {"replicas": 3}}
        }
    }
    assert sum(c.total for c in quota.chart_claims("vcluster", vc_pv, "v")) == 21 * 2**30
    off = {"controlPlane": {"statefulSet": {"persistence": {"volumeClaim": {"enabled": False}}}}}
    assert quota.chart_claims("vcluster", off, "v") == []
    etcd = {"controlPlane": {"backingStore": {"etcd": {"deploy": {"enabled": True}}}}}
    assert sum(c.total for c in quota.chart_claims("vcluster", etcd, "v")) == 10 * 2**30
    assert quota.chart_claims("slurm", {"controller": {"persistence": {"existingClaim": "x"}}}, "s") == []
    db = {
        "apiVersion": "k8s.mariadb.com/v1alpha1",
        "kind": "MariaDB",
        "metadata": {"name": "d"},
        "spec": {"replicas": 3, "storage": {"size": "1Mi"}},
    }
    assert sum(c.total for c in quota.manifest_claims([db], "m")) == 3 * 2**20
    assert quota.exact_quantity(2**40 + 2**30) == "1025Gi" and quota.exact_quantity(2**30 - 1) == str(2**30 - 1)
