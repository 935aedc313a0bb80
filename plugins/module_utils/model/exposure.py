"""Per-tenant exposure (``gpufleet_tenants[].expose``): what outside traffic may reach a tenant.

Default closed: nothing from outside the tenant reaches it. ``login: loadbalancer`` makes the Slurm
login Service a LoadBalancer (``loadBalancerSourceRanges`` = ``from_cidrs``) and admits TCP 22;
``inference: [ports]`` admits those TCP ports of a Kubernetes tenant's pods. Traffic is admitted
only from ``from_cidrs``, which must be canonical networks (``10.20.0.0/16``, not ``10.20.0.1/16``).
The inventory is edited by tenants through pull requests: anything unexpected is refused.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import Issue
from ansible_collections.gpufleet.core.plugins.module_utils.model import special_addresses

LOGIN_MODES = ("none", "loadbalancer")
LOGIN_PORT = 22
MAX_CIDRS = 32
MAX_PORTS = 16

SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "outside traffic the tenant admits (default: none)",
    "properties": {
        "login": {"enum": list(LOGIN_MODES), "default": "none"},
        "inference": {
            "type": "array",
            "items": {"type": "integer", "minimum": 1, "maximum": 65535},
            "uniqueItems": True,
            "maxItems": MAX_PORTS,
        },
        "from_cidrs": {
            "type": "array",
            "items": {"type": "string", "minLength": 1, "maxLength": 43},
            "uniqueItems": True,
            "maxItems": MAX_CIDRS,
        },
    },
}


@dataclass(frozen=True)
class Exposure:
    login: str = "none"
    inference: tuple[int, ...] = ()
    from_cidrs: tuple[str, ...] = ()

    @property
    def login_lb(self) -> bool:
        return self.login == "loadbalancer"

    @property
    def any(self) -> bool:
        return self.login_lb or bool(self.inference)

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> Exposure:
        d = d or {}
        return cls(
            login=d.get("login", "none"),
            inference=tuple(sorted(d.get("inference", ()))),
            from_cidrs=tuple(d.get("from_cidrs", ())),
        )


# IPv6 ranges that carry an IPv4 address, and so read as IPv4 by some datapath: Go's ``net.ParseCIDR``
# (Cilium, kube-proxy, cloud load-balancer controllers) turns ``::ffff:0:0/96`` into ``0.0.0.0/0``;
# NAT64 gateways, Teredo and 6to4 relays forward to the embedded IPv4 address. Python's ``ipaddress``
# calls several of them private. A network that overlaps one is refused: write the IPv4 network.
TRANSITION_NETWORKS = {
    "::ffff:0:0/96": "IPv4-mapped (Go's parser reads it as the IPv4 network: ::ffff:0:0/96 is 0.0.0.0/0)",
    "::/96": "IPv4-compatible (deprecated IPv4 embedding; also the unspecified and loopback addresses)",
    "::ffff:0:0:0/96": "IPv4-translated (SIIT)",
    "64:ff9b::/96": "NAT64 well-known prefix (the gateway forwards to the embedded IPv4 address)",
    "64:ff9b:1::/48": "NAT64 local-use prefix (the gateway forwards to the embedded IPv4 address)",
    "2001::/32": "Teredo (tunnels to an embedded IPv4 address)",
    "2002::/16": "6to4 (tunnels to an embedded IPv4 address)",
}
_TRANSITION = [(ipaddress.IPv6Network(n), why) for n, why in TRANSITION_NETWORKS.items()]


def transition_problem(net: ipaddress.IPv4Network | ipaddress.IPv6Network) -> str | None:
    """Why an IPv6 network reaches IPv4 through a transition form (it overlaps one), or None."""
    if net.version != 6:
        return None
    for t, why in _TRANSITION:
        if net.overlaps(t):
            return f"overlaps {t}, {why}; write the IPv4 network instead"
    return None


def cidr_problem(text: Any) -> str | None:
    """Why ``text`` is not a canonical IPv4/IPv6 network, or None."""
    if not isinstance(text, str) or "/" not in text or text != text.strip() or "%" in text:
        return f"{text!r} is not a network in CIDR notation (like 10.20.0.0/16; no zone id)"
    try:
        net = ipaddress.ip_network(text, strict=True)
    except ValueError as exc:
        return f"{text!r} is not a valid network: {exc}"
    if str(net) != text:
        return f"{text!r} is not written canonically (expected {str(net)!r})"
    return None


def exposure_issues(raw: Any) -> list[Issue]:
    """Cross-field checks of every tenant's ``expose`` (shape errors are the schema's)."""
    issues: list[Issue] = []
    tenants = raw.data.get("gpufleet_tenants")
    if not isinstance(tenants, list):
        return issues
    all_pools = raw.data.get("gpufleet_pools")
    pools = {
        p["name"]: p
        for p in (all_pools if isinstance(all_pools, list) else [])
        if isinstance(p, dict) and isinstance(p.get("name"), str)
    }
    for ti, t in enumerate(tenants):
        if not isinstance(t, dict) or not isinstance(t.get("expose"), dict):
            continue
        e = t["expose"]
        base = ("gpufleet_tenants", ti, "expose")
        cidrs = e.get("from_cidrs") if isinstance(e.get("from_cidrs"), list) else []
        allowed = _allowed_networks(raw, t.get("cluster"))
        for ci, c in enumerate(cidrs):
            why = cidr_problem(c) or breadth_problem(c, allowed)
            if why:
                issues.append(raw.issue((*base, "from_cidrs", ci), why))
        names = t.get("pools") if isinstance(t.get("pools"), list) else []
        kinds = {str(pools[p].get("kind")) for p in names if isinstance(p, str) and p in pools}
        exposed = e.get("login", "none") == "loadbalancer" or bool(e.get("inference"))
        if exposed and not cidrs:
            issues.append(
                raw.issue(
                    (*base, "from_cidrs"),
                    "required when login or inference is exposed: the networks allowed in (nothing is open to all)",
                )
            )
        if e.get("login", "none") == "loadbalancer" and "slurm" not in kinds:
            issues.append(raw.issue((*base, "login"), "only a tenant with a Slurm pool has a login node to expose"))
        if e.get("inference") and "kubernetes" not in kinds:
            issues.append(raw.issue((*base, "inference"), "only a tenant with a Kubernetes pool serves inference"))
        slurm = t.get("slurm") if isinstance(t.get("slurm"), dict) else {}
        if e.get("login", "none") == "loadbalancer" and slurm.get("login_replicas", 1) == 0:
            issues.append(raw.issue((*base, "login"), "slurm.login_replicas is 0: there is no login node to expose"))
    return issues


def _allowed_networks(raw: Any, cluster: Any) -> list[Any] | None:
    """The cluster's ``expose_allowed_cidrs`` (platform-owned) as networks; None when not set."""
    clusters = raw.data.get("gpufleet_clusters")
    for c in clusters if isinstance(clusters, list) else []:
        if isinstance(c, dict) and c.get("name") == cluster and isinstance(c.get("expose_allowed_cidrs"), list):
            return [
                ipaddress.ip_network(x) for x in c["expose_allowed_cidrs"] if isinstance(x, str) and not cidr_problem(x)
            ]
    return None


def breadth_problem(text: str, allowed: list[Any] | None) -> str | None:
    """A tenant's network must lie inside the platform's ``expose_allowed_cidrs`` or, without that
    list, be a private network (:mod:`.special_addresses`: the IANA registries' table, not the Python
    release's opinion); the world (``0.0.0.0/0``, ``::/0``, or halves of it) never is, nor an IPv6
    network that embeds IPv4 (checked first: a datapath may read it as an IPv4 network)."""
    net = ipaddress.ip_network(text)
    why = transition_problem(net)
    if why:
        return f"{text!r} {why}"
    if allowed is None:
        if net.prefixlen == 0 or not special_addresses.is_private(net):
            world = special_addresses.world_block(net)
            return (
                f"{text!r} is not a private network{f' (it overlaps {world}, globally reachable)' if world else ''}:"
                " opening a tenant to it needs the platform's gpufleet_clusters[].expose_allowed_cidrs"
            )
        return None
    if not any(net.version == a.version and net.subnet_of(a) for a in allowed):
        return f"{text!r} is not inside the cluster's expose_allowed_cidrs ({', '.join(map(str, allowed)) or 'none'})"
    return None
