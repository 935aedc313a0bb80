"""LoadBalancer addresses on a Cilium cluster: LB IPAM pools and how they are announced.

Cilium's LB IPAM is on by default but assigns nothing without a ``CiliumLoadBalancerIPPool``, and an
assigned address is reachable only once something announces it (L2 ARP/NDP or BGP). A tenant's
``expose`` (login LoadBalancer, inference ports) therefore needs, from the platform inventory,
``components.cilium.load_balancer``:

* ``announce: l2``: pools + ``CiliumL2AnnouncementPolicy`` (``l2announcements.enabled``; Cilium
  requires kube-proxy replacement for it, so ``kube_proxy_replacement: true`` is required);
* ``announce: bgp``: pools + a ``CiliumBGPAdvertisement`` of LoadBalancer addresses labelled
  ``gpufleet.io/advertise: load-balancer`` (``bgpControlPlane.enabled``); the peering
  (``CiliumBGPClusterConfig``/``CiliumBGPPeerConfig``, whose families select that label) is the
  site's network and stays outside gpufleet;
* ``announce: external``: another load balancer (MetalLB, a cloud's) assigns and announces; nothing
  is rendered.

A cluster with Cilium and an exposed tenant but no ``load_balancer`` is a render error (its
Services would stay ``<pending>`` for ever). The CRDs are registered by the cilium-operator at run
time, hence ``SkipDryRunOnMissingResource`` and a wave after Cilium.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.model.exposure import cidr_problem
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Cluster, Fleet
from ansible_collections.gpufleet.core.plugins.module_utils.render import argocd as argo

POOL_API = "cilium.io/v2"  # CiliumLoadBalancerIPPool (v2 since Cilium 1.18)
L2_API = "cilium.io/v2alpha1"  # CiliumL2AnnouncementPolicy
BGP_API = "cilium.io/v2"  # CiliumBGPAdvertisement
ADVERTISE_LABEL = "gpufleet.io/advertise"
ANNOUNCE = ("l2", "bgp", "external")
# Cilium's L2 announcer takes a lease per Service through the API server: its docs ask to raise the
# agent's client rate limit (default 10 qps / 20 burst) with it.
L2_RATE_LIMIT = {"qps": 30, "burst": 60}


def _key(fleet: Fleet, cluster: Cluster, *rest: str) -> str:
    """The option's key, after the file and line that set it (or the cluster's entry) when known."""
    key = ".".join((f"gpufleet_clusters[{cluster.name}].components.cilium.load_balancer", *rest))
    if fleet.source is None or cluster.name not in fleet.clusters:
        return key
    ci = list(fleet.clusters).index(cluster.name)
    file, line = fleet.source.locate(("gpufleet_clusters", ci, "components", "cilium", "load_balancer", *rest))
    return f"{file}:{line}: {key}" if line else f"{file}: {key}"


def exposed_tenants(fleet: Fleet, cluster: Cluster) -> list[str]:
    return sorted(t.name for t in fleet.cluster_tenants(cluster.name) if t.expose.login_lb or t.expose.inference)


def options(fleet: Fleet, cluster: Cluster) -> dict[str, Any] | None:
    """The checked ``load_balancer`` options, or None when nothing is to be rendered."""
    comp = cluster.components["cilium"]
    if not comp.enabled:
        return None  # another CNI: its load balancer is the site's
    lb = comp.options.get("load_balancer")
    exposed = exposed_tenants(fleet, cluster)
    if lb is None:
        if exposed:
            raise GpufleetError(
                f"{_key(fleet, cluster)}: required: tenant(s) {', '.join(exposed)} expose LoadBalancer Services, which"
                " Cilium's LB IPAM leaves without an address unless a pool exists; set announce: l2 or bgp"
                " with pools: [CIDR, ...], or announce: external when another load balancer assigns them"
            )
        return None
    announce = lb.get("announce")
    if announce not in ANNOUNCE:
        raise GpufleetError(f"{_key(fleet, cluster, 'announce')}: {announce!r} is not one of {', '.join(ANNOUNCE)}")
    if announce == "external":
        return None
    pools = lb.get("pools") or []
    if not pools:
        raise GpufleetError(f"{_key(fleet, cluster, 'pools')}: at least one CIDR is required with announce: {announce}")
    for i, cidr in enumerate(pools):
        why = cidr_problem(cidr)
        if why:
            raise GpufleetError(f"{_key(fleet, cluster, f'pools[{i}]')}: {why}")
    if announce == "l2" and not comp.options.get("kube_proxy_replacement", False):
        raise GpufleetError(
            f"{_key(fleet, cluster, 'announce')}: l2 needs kube_proxy_replacement: true (Cilium's L2 announcements"
            " require kube-proxy replacement); use bgp, or external for another load balancer"
        )
    return {"announce": announce, "pools": list(pools), "interfaces": list(lb.get("interfaces") or [])}


def cilium_fragment(fleet: Fleet, cluster: Cluster) -> dict[str, Any]:
    opts = options(fleet, cluster)
    if opts is None:
        return {}
    if opts["announce"] == "l2":
        return {"l2announcements": {"enabled": True}, "k8sClientRateLimit": dict(L2_RATE_LIMIT)}
    return {"bgpControlPlane": {"enabled": True}}


def objects(fleet: Fleet, cluster: Cluster) -> list[dict[str, Any]]:
    opts = options(fleet, cluster)
    if opts is None:
        return []
    labels = argo.labels(cluster.name, "load-balancer")
    name = f"gpufleet-{cluster.name}"
    out: list[dict[str, Any]] = [
        {
            "apiVersion": POOL_API,
            "kind": "CiliumLoadBalancerIPPool",
            "metadata": {"name": name, "labels": labels},
            "spec": {"blocks": [{"cidr": c} for c in opts["pools"]]},
        }
    ]
    if opts["announce"] == "l2":
        spec: dict[str, Any] = {"loadBalancerIPs": True, "externalIPs": False}
        if opts["interfaces"]:
            spec["interfaces"] = opts["interfaces"]
        out.append(
            {
                "apiVersion": L2_API,
                "kind": "CiliumL2AnnouncementPolicy",
                "metadata": {"name": name, "labels": labels},
                "spec": spec,
            }
        )
    else:
        out.append(
            {
                "apiVersion": BGP_API,
                "kind": "CiliumBGPAdvertisement",
                "metadata": {"name": name, "labels": {**labels, ADVERTISE_LABEL: "load-balancer"}},
                "spec": {
                    "advertisements": [
                        {
                            "advertisementType": "Service",
                            "service": {"addresses": ["LoadBalancerIP"]},
                            # every Service: an empty selector matches none for Service advertisements
                            "selector": {
                                "matchExpressions": [{"key": ADVERTISE_LABEL, "operator": "NotIn", "values": ["never"]}]
                            },
                        }
                    ]
                },
            }
        )
    return out
