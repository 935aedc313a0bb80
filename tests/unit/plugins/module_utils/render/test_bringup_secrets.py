"""No vCluster may read host Secrets.

The vcluster chart turns ``sync.fromHost.secrets`` (and ``configMaps``) into a ClusterRole rule
``resources: [secrets], verbs: [list, watch]`` without ``resourceNames`` (template
``vcluster.rbac.rulesForFromHostSyncerForGivenCoreResource`` in chart/templates/_rbac.tpl of
loft-sh/vcluster, the 0.2x-0.36 chart line), i.e. cluster-wide. The render must not enable it and
must refuse an inventory that does (tenants edit ``vcluster.values`` by pull request). The real
RBAC check on the test apiserver is tests/integration/kube/test_kube_bringup.py.

Fails before the fix: the Slurm tenants' values enabled ``sync.fromHost.secrets`` and an inventory
override was merged without a check.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from render_fixtures import edit_vars, make_inventory

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_inventory

C = "clusters/gpu-east"


def edit_tenant(inv: Path, name: str, **changes) -> None:
    path = inv / "group_vars" / "all" / "tenants.yml"
    data = yaml.safe_load(path.read_text())
    for t in data["gpufleet_tenants"]:
        if t["name"] == name:
            t.update(changes)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_rendered_vclusters_sync_no_secret_like_kind_from_the_host(tmp_path) -> None:
    files = render_inventory(make_inventory(tmp_path)).files
    for t in ("research", "llm-pretrain", "inference"):
        values = yaml.safe_load(files[f"{C}/tenants/{t}/vcluster/values.yaml"])
        from_host = values["sync"]["fromHost"]
        assert "secrets" not in from_host and "configMaps" not in from_host, t
        assert "rbac" not in values


@pytest.mark.parametrize(
    "override",
    [
        {"sync": {"fromHost": {"secrets": {"enabled": True, "mappings": {"byName": {"argocd/*": "x/*"}}}}}},
        {"sync": {"fromHost": {"configMaps": {"enabled": True}}}},
        {"rbac": {"clusterRole": {"extraRules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}]}}},
        {"rbac": {"clusterRole": {"extraRules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}}},
    ],
)
def test_inventory_cannot_let_a_vcluster_read_host_secrets(tmp_path, override) -> None:
    """Refused in the tenant's entry (outside the allow-list) and, as defence in depth,
    even when the platform sets it in ``tenant_overrides``."""
    inv = make_inventory(tmp_path)
    edit_tenant(inv, "research", vcluster={"values": override})
    with pytest.raises(GpufleetError, match=r"gpufleet_tenants\[1\]\.vcluster\.values\.(sync|rbac): .*tenant may not"):
        render_inventory(inv)
    edit_tenant(inv, "research", vcluster={})
    edit_vars(
        inv,
        "clusters.yml",
        lambda d: d["gpufleet_clusters"][0].__setitem__(
            "tenant_overrides", {"research": {"reason": "test", "vcluster": {"values": override}}}
        ),
    )
    with pytest.raises(
        GpufleetError,
        match=r"clusters\.yml:\d+: gpufleet_clusters\[0\]\.tenant_overrides\.research\.vcluster\.values\.",
    ):
        render_inventory(inv)
