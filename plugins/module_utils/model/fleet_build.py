"""The typed Fleet (model/fleet.py) built from a raw inventory model that ``model/validation.py``
found valid: defaults filled in, paths made absolute under the inventory, settings converted."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, TypeVar

from ansible_collections.gpufleet.core.plugins.module_utils.model import (
    accounting_model,
    bridge_model,
    components,
    identity,
    maintenance_model,
    rollout_model,
)
from ansible_collections.gpufleet.core.plugins.module_utils.model.exposure import Exposure
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import (
    COMPONENTS,
    Cluster,
    ClusterMonitoring,
    Component,
    FabricSource,
    Fleet,
    Forge,
    GitOps,
    Pool,
    PoolSlurm,
    Tenant,
    TenantHealth,
    TenantMonitoring,
    TopologyConfig,
)
from ansible_collections.gpufleet.core.plugins.module_utils.model.inventory import RawModel

_T = TypeVar("_T")
_COMPONENT_KEYS = ("enabled", "install_method", "namespace", "values")


def _component(name: str, spec: dict[str, Any] | None) -> Component:
    spec = spec or {}
    return Component(
        name=name,
        enabled=spec.get("enabled", not components.ROWS[name].opt_in or bool(spec)),
        install_method=spec.get("install_method", "gitops"),
        namespace=spec.get("namespace"),
        values=spec.get("values", {}),
        options={k: v for k, v in spec.items() if k not in _COMPONENT_KEYS},
    )


def _settings(cls: type[_T], spec: dict[str, Any], keys: tuple[str, ...], **converted: Any) -> _T:
    """``cls()`` with each of ``keys`` that ``spec`` sets taken as is, then the ``converted`` values."""
    return dataclasses.replace(cls(), **{k: spec[k] for k in keys if k in spec}, **converted)


def _cluster_monitoring(m: dict[str, Any]) -> ClusterMonitoring:
    labels = dict(sorted(m.get("labels", {}).items()))
    return _settings(ClusterMonitoring, m, ("prometheus_operator", "namespace", "dashboard_label"), labels=labels)


def _tenant_monitoring(m: dict[str, Any]) -> TenantMonitoring:
    return _settings(TenantMonitoring, m, ("enabled", "scrape_interval"))


def _tenant_health(h: dict[str, Any]) -> TenantHealth:
    return _settings(
        TenantHealth,
        h,
        ("enabled", "interval", "node_state", "dcgm_diag_level"),
        checks=tuple(sorted(h.get("checks", TenantHealth.checks))),
        xids=tuple(sorted(h.get("xids", TenantHealth.xids))),
    )


def _identity(raw: RawModel, t: dict[str, Any]) -> identity.Identity | None:
    spec = identity.merged_spec(raw.data.get("gpufleet_identity"), t.get("identity"))
    if spec is None:
        return None
    return identity.build_identity(spec, t["name"])


def _gitops(g: dict[str, Any]) -> GitOps:
    return GitOps(
        repo_url=g["repo_url"],
        revision=g.get("revision", "main"),
        path=g.get("path", "gitops"),
        remote=g.get("remote", "origin"),
        forge=Forge(**g.get("forge", {})),
    )


def _cluster(inv: Path, c: dict[str, Any]) -> Cluster:
    fab = c.get("fabric", {})
    topo = c.get("topology", {})
    comps = c.get("components", {})
    return Cluster(
        name=c["name"],
        server=c.get("server", "https://kubernetes.default.svc"),
        nodes_snapshot=inv / c.get("nodes_snapshot", f"snapshots/{c['name']}/nodes.yaml"),
        fabric=FabricSource(
            source=fab.get("source", "none"),
            path=inv / fab["path"] if fab.get("path") else None,
            node_name_map=fab.get("node_name_map"),
            exclude_hosts=tuple(fab.get("exclude_hosts", ())),
            exclude_switches=tuple(fab.get("exclude_switches", ())),
            allow_unmatched_hosts=fab.get("allow_unmatched_hosts", False),
            allow_topology_problems=fab.get("allow_topology_problems", False),
        ),
        topology=TopologyConfig(
            plugin=topo.get("plugin", "tree"),
            block_sizes=tuple(topo.get("block_sizes", ())),
            node_labels=topo.get("node_labels", "gpufleet"),
        ),
        components={name: _component(name, comps.get(name)) for name in COMPONENTS},
        kubeconfig=c.get("kubeconfig"),
        context=c.get("context"),
        monitoring=_cluster_monitoring(c.get("monitoring", {})),
        tenant_overrides=dict(sorted(c.get("tenant_overrides", {}).items())),
        allow_node_moves=tuple(h for m in c.get("allow_node_moves", ()) for h in m["nodes"]),
        allow_alpha_feature_gates={a["gate"]: a["reason"] for a in c.get("allow_alpha_feature_gates", ())},
    )


def _pool(p: dict[str, Any], tenant: str | None) -> Pool:
    size = p.get("size", {})
    slurm = None
    if p["kind"] == "slurm":
        s = p.get("slurm", {})
        slurm = PoolSlurm(
            partition=s.get("partition", p["name"]),
            default=s.get("default", False),
            max_time=s.get("max_time"),
            autoscale=s.get("autoscale", False),
            allow_groups=tuple(s.get("allow_groups", ())),
            allow_accounts=tuple(s.get("allow_accounts", ())),
        )
    return Pool(
        name=p["name"],
        cluster=p["cluster"],
        kind=p["kind"],
        tenant=tenant,
        size_nodes=size.get("nodes"),
        size_gpus=size.get("gpus"),
        gpu_product=p.get("gpu_product"),
        node_selector=dict(p.get("node_selector", {})),
        pin=tuple(p.get("pin", ())),
        exclude=tuple(p.get("exclude", ())),
        split_nvlink_domains=p.get("split_nvlink_domains", False),
        slurm=slurm,
    )


def _tenant(raw: RawModel, t: dict[str, Any]) -> Tenant:
    s = t.get("slurm", {})
    return Tenant(
        name=t["name"],
        cluster=t["cluster"],
        pools=tuple(t["pools"]),
        description=t.get("description", ""),
        namespaces=tuple(t.get("namespaces", ())),
        accounting=accounting_model.build_accounting(s.get("accounting", True)),
        login_replicas=s.get("login_replicas", 1),
        slurm_values=s.get("values", {}),
        vcluster_values=t.get("vcluster", {}).get("values", {}),
        monitoring=_tenant_monitoring(t.get("monitoring", {})),
        health=_tenant_health(t.get("health", {})),
        expose=Exposure.from_dict(t.get("expose")),
        identity=_identity(raw, t),
        bridge=bridge_model.build(bridge_model.platform_entries(raw.data).get(t["name"]), s.get("bridge")),
    )


def build_fleet(raw: RawModel) -> Fleet:
    """The typed Fleet of a valid raw model, defaults filled in (one builder per object kind)."""
    d = raw.data
    f = d["gpufleet_fleet"]
    owner = {p: t["name"] for t in d.get("gpufleet_tenants", []) for p in t["pools"]}
    return Fleet(
        name=f["name"],
        inventory_dir=raw.inventory_dir,
        gitops=_gitops(f["gitops"]),
        clusters={c["name"]: _cluster(raw.inventory_dir, c) for c in d["gpufleet_clusters"]},
        tenants={t["name"]: _tenant(raw, t) for t in d.get("gpufleet_tenants", [])},
        pools={p["name"]: _pool(p, owner.get(p["name"])) for p in d["gpufleet_pools"]},
        versions=d.get("gpufleet_versions", {}),
        source=raw,
        chart_mirrors=dict(d.get("gpufleet_chart_mirrors") or {}),
        maintenance=tuple(maintenance_model.from_dict(m) for m in d.get(maintenance_model.KEY) or ()),
        rollout=rollout_model.from_dict(d.get(rollout_model.KEY)),
        image_mirror=d.get("gpufleet_image_mirror"),
    )
