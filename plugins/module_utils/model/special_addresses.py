"""Which networks are private and which reach the world: one explicit, versioned table, the same on every
Python.

Python's ``ipaddress`` answers ``is_private`` from a list that changed between releases (3.12.4, 3.11.10,
3.13 narrowed ``2001::/23``), so a laptop and CI could judge the same tenant network differently. This
table is the IANA special-purpose address registries' "Globally Reachable" column, written down:

- a block marked not globally reachable is private;
- a block marked globally reachable (an anycast service inside an otherwise private block, ORCHIDv2,
  AS112, AMT, Drone Remote ID, NAT64) is world, and so is a block the registry marks N/A (Teredo,
  6to4) or deprecated;
- everything the table does not list is world (public unicast, multicast).

A network is private when every address in it is: it lies inside a private block and overlaps no world
block listed inside one. Versions: ``REGISTRIES``; a registry update is a change of this table and its
test (tests/unit/plugins/module_utils/model/test_cidr_datapath.py runs it against Go's parsers).
"""

from __future__ import annotations

import ipaddress

REGISTRIES = {
    "iana-ipv4-special-registry": "2025-10 (RFC 6890, 7723, 8155, 8880)",
    "iana-ipv6-special-registry": "2025-10-09 (RFC 6890, 9374, 9602, 9637, 9665, 9780)",
}

# (block, globally reachable, name); the registries' rows, most specific rows included
SPECIAL: tuple[tuple[str, bool, str], ...] = (
    ("0.0.0.0/8", False, "this network"),
    ("10.0.0.0/8", False, "private-use"),
    ("100.64.0.0/10", False, "shared address space"),
    ("127.0.0.0/8", False, "loopback"),
    ("169.254.0.0/16", False, "link local"),
    ("172.16.0.0/12", False, "private-use"),
    ("192.0.0.0/24", False, "IETF protocol assignments"),
    ("192.0.0.9/32", True, "port control protocol anycast"),
    ("192.0.0.10/32", True, "traversal using relays around NAT anycast"),
    ("192.0.2.0/24", False, "documentation (TEST-NET-1)"),
    ("192.31.196.0/24", True, "AS112-v4"),
    ("192.52.193.0/24", True, "AMT"),
    ("192.88.99.0/24", True, "deprecated 6to4 relay anycast"),
    ("192.168.0.0/16", False, "private-use"),
    ("192.175.48.0/24", True, "direct delegation AS112 service"),
    ("198.18.0.0/15", False, "benchmarking"),
    ("198.51.100.0/24", False, "documentation (TEST-NET-2)"),
    ("203.0.113.0/24", False, "documentation (TEST-NET-3)"),
    ("240.0.0.0/4", False, "reserved"),
    ("255.255.255.255/32", False, "limited broadcast"),
    ("::/128", False, "unspecified address"),
    ("::1/128", False, "loopback address"),
    ("::ffff:0:0/96", False, "IPv4-mapped address"),
    ("64:ff9b::/96", True, "IPv4-IPv6 translation"),
    ("64:ff9b:1::/48", False, "IPv4-IPv6 translation, local use"),
    ("100::/64", False, "discard-only address block"),
    ("100:0:0:1::/64", False, "dummy IPv6 prefix"),
    ("2001::/23", False, "IETF protocol assignments"),
    ("2001::/32", True, "Teredo (N/A in the registry)"),
    ("2001:1::1/128", True, "port control protocol anycast"),
    ("2001:1::2/128", True, "traversal using relays around NAT anycast"),
    ("2001:1::3/128", True, "DNS-SD service registration protocol anycast"),
    ("2001:2::/48", False, "benchmarking"),
    ("2001:3::/32", True, "AMT"),
    ("2001:4:112::/48", True, "AS112-v6"),
    ("2001:10::/28", False, "deprecated (previously ORCHID)"),
    ("2001:20::/28", True, "ORCHIDv2"),
    ("2001:30::/28", True, "Drone Remote ID protocol entity tags"),
    ("2001:db8::/32", False, "documentation"),
    ("2002::/16", True, "6to4 (N/A in the registry)"),
    ("2620:4f:8000::/48", True, "direct delegation AS112 service"),
    ("3fff::/20", False, "documentation"),
    ("5f00::/16", False, "segment routing SIDs"),
    ("fc00::/7", False, "unique-local"),
    ("fe80::/10", False, "link-local unicast"),
)

_PRIVATE = [ipaddress.ip_network(row[0]) for row in SPECIAL if not row[1]]
_WORLD = [ipaddress.ip_network(row[0]) for row in SPECIAL if row[1]]


def is_private(net: ipaddress.IPv4Network | ipaddress.IPv6Network) -> bool:
    """Every address of ``net`` is in a block the registries mark not globally reachable, and none is in
    one they mark globally reachable (or N/A)."""
    inside = any(net.version == p.version and net.subnet_of(p) for p in _PRIVATE)  # type: ignore[arg-type]
    return inside and not any(net.version == w.version and net.overlaps(w) for w in _WORLD)


def world_block(net: ipaddress.IPv4Network | ipaddress.IPv6Network) -> str | None:
    """The globally reachable block of the table that ``net`` overlaps, named, else None."""
    for n, world, name in SPECIAL:
        block = ipaddress.ip_network(n)
        if world and block.version == net.version and net.overlaps(block):  # type: ignore[arg-type]
            return f"{n} ({name})"
    return None


def is_loopback(addr: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """``addr`` is in a block the table names loopback (``127.0.0.0/8``, ``::1/128``). An IPv4-mapped
    form (``::ffff:127.0.0.1``) is not: Python 3.13 counts it as loopback, earlier releases do not."""
    return any(name.startswith("loopback") and addr in ipaddress.ip_network(n) for n, _world, name in SPECIAL)
