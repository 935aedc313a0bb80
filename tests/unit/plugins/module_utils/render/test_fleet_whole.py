"""The fleet as a whole in the rendered tree: tenant roots, quota, storage, health checks (the Argo CD bed
proves the tenant roots on the real controller).

2. tenant roots do not gate the cluster root (parent-health override in the Application check);
3. Prometheus of the monitoring namespace reaches the tenant's slurmctld metrics port, nothing else;
4. LoadBalancer addresses: Cilium LB IPAM pool + announcement from the inventory, or a render error;
5. databases off NFS, GPU Operator agents tolerate the quarantine taint (test_observability),
   health checks for Slinky/MariaDB CRs, tenant removal leaves no app behind.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from render_fixtures import edit_vars, load, make_inventory, yaml_objects

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.render import argocd as argo
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_inventory

C = "clusters/gpu-east"


def applications(files: dict[str, bytes]) -> dict[str, tuple[str, dict]]:
    return {o["metadata"]["name"]: (r, o) for r, o in yaml_objects(files) if o.get("kind") == "Application"}


def render_with(tmp_path: Path, name: str, fn) -> dict[str, bytes]:
    inv = make_inventory(tmp_path / name)
    edit_vars(inv, "clusters.yml", fn)
    return render_inventory(inv).files


def cilium(fn):
    def edit(data):
        fn(data["gpufleet_clusters"][0]["components"]["cilium"])

    return edit


# ------------------------------------------------------------------ 2: root layout


def test_tenant_roots_do_not_gate_the_cluster_root(files) -> None:
    roots = [
        o
        for _unused, (r, o) in applications(files).items()
        if o["metadata"]["labels"].get(argo.LABEL_COMPONENT) == argo.TENANT_ROOT
    ]
    assert len(roots) == 3
    for root in roots:
        assert root["metadata"]["annotations"][argo.PARENT_HEALTH] == argo.PARENT_HEALTH_IGNORE
    # the check that honours it is the one Argo CD is installed with (argocd-cm via the chart values)
    cm = load(files, f"{C}/platform/argocd/values.yaml")["configs"]["cm"]
    lua = cm[argo.HEALTH_KEY]
    assert f'obj.metadata.annotations["{argo.PARENT_HEALTH}"] == "{argo.PARENT_HEALTH_IGNORE}"' in lua
    # nothing else is exempt: platform and tenant child apps still gate their waves
    others = [o for _unused, (r, o) in applications(files).items() if o not in roots]
    assert others and not [o for o in others if argo.PARENT_HEALTH in o["metadata"].get("annotations", {})]


# ------------------------------------------------------------------ 3: monitoring scrapes


def test_prometheus_reaches_the_slurmctld_metrics_port_only(files) -> None:
    for t in ("research", "llm-pretrain"):
        (pol,) = [d for d in yaml.safe_load_all(files[f"{C}/tenants/{t}/host/network-policy-metrics.yaml"]) if d]
        spec = pol["spec"]
        assert spec["endpointSelector"]["matchLabels"] == {
            "k8s:io.cilium.k8s.namespace.labels.gpufleet.io/tenant": t,
            "k8s:app.kubernetes.io/name": "slurmctld",
        }
        (rule,) = spec["ingress"]
        assert rule["fromEndpoints"] == [
            {
                "matchLabels": {
                    "k8s:io.kubernetes.pod.namespace": "monitoring",
                    "k8s:app.kubernetes.io/name": "prometheus",
                }
            }
        ]
        assert rule["toPorts"] == [{"ports": [{"port": "6817", "protocol": "TCP"}]}]
        # the PodMonitor selects the same pods, on the port of that number
        mon = load(files, f"{C}/tenants/{t}/host/monitoring.yaml")
        assert mon["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"] == "slurmctld"
        iso = load(files, f"{C}/tenants/{t}/host/network-policy.yaml")
        assert not [r for r in iso["spec"]["ingress"] if "monitoring" in str(r)]  # nothing wider
    assert f"{C}/tenants/inference/host/network-policy-metrics.yaml" not in files  # no slurmctld there


# ------------------------------------------------------------------ 4: LB IPAM


def test_lb_pool_and_bgp_advertisement_from_the_inventory(files) -> None:
    objs = [d for d in yaml.safe_load_all(files[f"{C}/platform/load-balancer/load-balancer.yaml"]) if d]
    pool = next(o for o in objs if o["kind"] == "CiliumLoadBalancerIPPool")
    assert pool["spec"]["blocks"] == [{"cidr": "10.30.0.0/26"}]
    adv = next(o for o in objs if o["kind"] == "CiliumBGPAdvertisement")
    assert adv["spec"]["advertisements"][0]["service"]["addresses"] == ["LoadBalancerIP"]
    assert load(files, f"{C}/platform/cilium/values.yaml")["bgpControlPlane"] == {"enabled": True}
    _unused, app = applications(files)["gpu-east-load-balancer"]
    assert int(app["metadata"]["annotations"][argo.WAVE]) > int(
        applications(files)["gpu-east-cilium"][1]["metadata"]["annotations"][argo.WAVE]
    )
    assert "SkipDryRunOnMissingResource=true" in app["spec"]["syncPolicy"]["syncOptions"]


def test_l2_announcement_needs_kube_proxy_replacement(tmp_path: Path) -> None:
    def l2(c):
        c["load_balancer"] = {"announce": "l2", "pools": ["10.30.0.0/26"], "interfaces": ["^eth[0-9]+"]}

    with pytest.raises(
        GpufleetError, match=r"components\.cilium\.load_balancer\.announce: l2 needs kube_proxy_replacement"
    ):
        render_with(tmp_path, "l2", cilium(l2))

    def l2_kpr(c):
        l2(c)
        c.update(kube_proxy_replacement=True, k8s_service_host="10.0.0.1")

    files = render_with(tmp_path, "l2kpr", cilium(l2_kpr))
    objs = [d for d in yaml.safe_load_all(files[f"{C}/platform/load-balancer/load-balancer.yaml"]) if d]
    pol = next(o for o in objs if o["kind"] == "CiliumL2AnnouncementPolicy")
    assert pol["spec"] == {"loadBalancerIPs": True, "externalIPs": False, "interfaces": ["^eth[0-9]+"]}
    assert load(files, f"{C}/platform/cilium/values.yaml")["l2announcements"] == {"enabled": True}


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda c: c.pop("load_balancer"),
            r"components\.cilium\.load_balancer: required: tenant\(s\) inference, research",
        ),
        (lambda c: c["load_balancer"].update(pools=[]), r"load_balancer\.pools: at least one CIDR"),
        (lambda c: c["load_balancer"].update(pools=["10.30.0.1/26"]), r"load_balancer\.pools\[0\]"),
    ],
)
def test_lb_inventory_errors(tmp_path: Path, edit, message: str) -> None:
    with pytest.raises(GpufleetError, match=message):
        render_with(tmp_path, "bad", cilium(edit))


def test_external_load_balancer_renders_nothing(tmp_path: Path) -> None:
    files = render_with(tmp_path, "ext", cilium(lambda c: c.update(load_balancer={"announce": "external"})))
    assert not [r for r in files if "load-balancer" in r]


# ------------------------------------------------------------------ 5: stores, health, removal


def test_databases_are_never_on_nfs_by_default(files, tmp_path: Path) -> None:
    (sc,) = [d for d in yaml.safe_load_all(files[f"{C}/platform/storage-class/gpufleet-nfs.yaml"]) if d]
    assert sc["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"] == "false"
    text = b"".join(v for r, v in files.items() if "/tenants/" in r).decode()
    assert "gpufleet-nfs" not in text  # no tenant volume names the NFS class

    def local(data):
        data["gpufleet_clusters"][0]["components"]["shared_storage"]["state_storage_class"] = "topolvm"

    files = render_with(tmp_path, "local", local)
    for t in ("research", "llm-pretrain"):
        vc = load(files, f"{C}/tenants/{t}/vcluster/values.yaml")
        assert vc["controlPlane"]["statefulSet"]["persistence"]["volumeClaim"]["storageClass"] == "topolvm"
        slurm = load(files, f"{C}/tenants/{t}/slurm/values.yaml")
        assert slurm["controller"]["persistence"]["storageClassName"] == "topolvm"
        db = load(files, f"{C}/tenants/{t}/accounting-db/mariadb.yaml")
        assert db["spec"]["storage"]["storageClassName"] == "topolvm"


def test_operator_crs_have_health_checks(files) -> None:
    cm = load(files, f"{C}/platform/argocd/values.yaml")["configs"]["cm"]
    for kind in (
        "slinky.slurm.net_Controller",
        "slinky.slurm.net_NodeSet",
        "slinky.slurm.net_LoginSet",
        "k8s.mariadb.com_MariaDB",
    ):
        lua = cm[f"resource.customizations.health.{kind}"]
        assert 'hs.status = "Healthy"' in lua and 'hs.status = "Progressing"' in lua, kind
    assert "readyReplicas" in cm["resource.customizations.health.slinky.slurm.net_NodeSet"]
    assert 'c.type == "Ready"' in cm["resource.customizations.health.k8s.mariadb.com_MariaDB"]
    assert argo.argocd_cm_health()["data"] == argo.health_checks()


def test_tenant_apps_are_removed_with_the_tenant(files, tmp_path: Path) -> None:
    for name, (rel, app) in applications(files).items():
        if "/tenants/" in rel:  # inside a tenant root: never outlives it
            assert argo.SYNC_OPTIONS not in app["metadata"].get("annotations", {}), name
    _unused, crds = applications(files)["research-mariadb-operator-crds"]
    assert "finalizers" not in crds["metadata"]  # deleting the app never deletes every MariaDB

    def drop_research(data):
        data["gpufleet_tenants"] = [t for t in data["gpufleet_tenants"] if t["name"] != "research"]

    inv = make_inventory(tmp_path / "gone")
    edit_vars(inv, "tenants.yml", drop_research)

    def spare(data):
        for p in data["gpufleet_pools"]:
            if p["name"].startswith("research"):
                p["kind"] = "spare"
                p.pop("slurm", None)

    edit_vars(inv, "pools.yml", spare)
    after = render_inventory(inv).files
    left = [r for r, v in after.items() if b"research" in v and r.endswith(".yaml") and "/apps/" in r]
    assert not left, left
