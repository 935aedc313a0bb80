"""Fabric model: switches, channel adapters (HCAs) and the links between them.

A :class:`Fabric` is what every input (``ibnetdiscover`` default or ``-p`` output, Kubernetes Node
labels, a fabric YAML file) is parsed into, and what :mod:`topology` turns into a Slurm topology.
It is deliberately small: switch-to-switch adjacency with link counts, and for each HCA the
switches it is cabled to. No Ansible imports.
"""

from __future__ import annotations

import gc
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError

# Slots keep 16k-HCA fabrics small; dataclass(slots=) exists from Python 3.10, and this runs on 3.9 hosts too.
_SLOTS: dict[str, bool] = {"slots": True} if sys.version_info >= (3, 10) else {}


class FabricError(GpufleetError):
    """Bad fabric input or a topology Slurm would reject; names the file and line when known."""

    def __init__(self, message: str, file: str | None = None, line: int | None = None, key: str | None = None):
        self.message = message
        self.file = file
        self.line = line
        self.key = key
        where = ""
        if file:
            where = file + (f":{line}" if line else "")
        elif line:
            where = f"line {line}"
        if key:
            where = f"{where}: {key}" if where else key
        super().__init__(f"{where}: {message}" if where else message)


# Kinds of channel adapter.
HOST = "host"  # NodeDescription is "<host> <device>"
SHARP = "sharp"  # "Mellanox Technologies Aggregation Node" on a switch's management port
UNNAMED = "unnamed"  # firmware default description (rdma-ndd not running), e.g. "MT4129 ConnectX7 ..."
ROUTER = "router"

_HOST_TOKEN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_NOT_HOSTS = {"mellanox", "nvidia", "mt4115", "mt4119", "mt4123", "mt4129", "mt4131", "connectx"}
_SWITCH_ND = re.compile(r"^MF0;([^:]+):")
_FW_MODEL = re.compile(r"^MT\d{4}$")


def classify_ca(desc: str) -> tuple[str, str | None, str | None]:
    """Return (kind, host, device) for an HCA NodeDescription.

    rdma-ndd's default format is ``"%h %d"``: short host name, one space, device. Anything else
    (SHARP aggregation nodes, firmware defaults such as ``"MT4123 ConnectX6 Mellanox Technologies"``)
    is not a host.
    """
    if "aggregation node" in desc.lower():
        return SHARP, None, None
    parts = desc.split()
    if len(parts) == 2 and _HOST_TOKEN.match(parts[0]) and parts[0].lower() not in _NOT_HOSTS:
        if not _FW_MODEL.match(parts[0]):
            return HOST, parts[0], parts[1]
    return UNNAMED, None, None


def switch_label(desc: str, guid: str) -> str:
    """Human name of a switch: ``MF0;<name>:<model>/U1`` gives ``<name>``; otherwise the ND or the GUID."""
    m = _SWITCH_ND.match(desc)
    if m:
        return m.group(1)
    d = desc.strip()
    if d and not re.search(r"mellanox technologies|^quantum|^switch-?ib|^nvidia", d, re.IGNORECASE):
        return d
    return "S-" + guid


@dataclass(**_SLOTS)
class Switch:
    id: str
    desc: str = ""
    name: str = ""
    line: int | None = None
    # neighbouring switch id -> number of cables
    peers: dict[str, int] = field(default_factory=dict)
    # HCA ids cabled to this switch
    cas: list[str] = field(default_factory=list)


@dataclass(**_SLOTS)
class CA:
    id: str
    desc: str = ""
    kind: str = UNNAMED
    host: str | None = None
    device: str | None = None
    line: int | None = None
    switches: list[str] = field(default_factory=list)


@dataclass
class Fabric:
    """Switches, HCAs and links; ``domains`` maps host -> accelerator (NVLink) domain when known."""

    source: str = "<text>"
    switches: dict[str, Switch] = field(default_factory=dict)
    cas: dict[str, CA] = field(default_factory=dict)
    domains: dict[str, str] = field(default_factory=dict)
    kind: str = "ibnetdiscover"

    # ---- construction helpers (used by the parsers) ----
    def switch(self, sid: str, desc: str | None = None, line: int | None = None) -> Switch:
        sw = self.switches.get(sid)
        if sw is None:
            sw = Switch(sid, line=line)
            self.switches[sid] = sw
        if desc is not None and not sw.desc:
            sw.desc = desc
            sw.name = switch_label(desc, sid[2:] if sid.startswith("S-") else sid)
            if line is not None:
                sw.line = line
        return sw

    def ca(self, cid: str, desc: str | None = None, line: int | None = None) -> CA:
        ca = self.cas.get(cid)
        if ca is None:  # made whole at once (a dump makes 10^5 of them)
            if desc is None:
                ca = self.cas[cid] = CA(cid, line=line)
            else:
                ca = self.cas[cid] = CA(cid, desc, *classify_ca(desc), line)
            return ca
        if desc is not None and not ca.desc:
            ca.desc = desc
            ca.kind, ca.host, ca.device = classify_ca(desc)
            if line is not None:
                ca.line = line
        return ca

    def link_switches(self, a: str, b: str, count: int = 1) -> None:
        if a == b:
            return
        pa = self.switches[a].peers
        pb = self.switches[b].peers
        pa[b] = pa.get(b, 0) + count
        pb[a] = pb.get(a, 0) + count

    def link_ca(self, cid: str, sid: str) -> None:
        ca = self.cas[cid]
        if sid not in ca.switches:
            ca.switches.append(sid)
            self.switches[sid].cas.append(cid)

    def finish(self) -> Fabric:
        """Fill switch names for switches only seen as link ends; GUID names where descriptions repeat."""
        for sw in self.switches.values():
            if not sw.name:
                sw.name = switch_label(sw.desc, sw.id[2:] if sw.id.startswith("S-") else sw.id)
        if self.kind.startswith("ibnetdiscover"):
            seen: dict[str, int] = {}
            for sw in self.switches.values():
                seen[sw.name] = seen.get(sw.name, 0) + 1
            for sw in self.switches.values():
                if seen[sw.name] > 1 and sw.id.startswith("S-"):
                    sw.name = sw.id
        return self

    # ---- queries ----
    def hosts(self) -> list[str]:
        return sorted(self._host_set())

    def _host_set(self) -> set[str]:
        return {ca.host for ca in self.cas.values() if ca.kind == HOST and ca.host and ca.switches}

    def summary(self) -> dict[str, int]:
        kinds: dict[str, int] = {}
        for ca in self.cas.values():
            kinds[ca.kind] = kinds.get(ca.kind, 0) + 1
        return {
            "switches": len(self.switches),
            "hcas": kinds.get(HOST, 0),
            "hosts": len(self._host_set()),  # counted, not sorted
            "sharp_nodes": kinds.get(SHARP, 0),
            "unnamed_hcas": kinds.get(UNNAMED, 0),
            "switch_links": sum(sum(s.peers.values()) for s in self.switches.values()) // 2,
        }


def merge_into(dst: Fabric, src: Fabric) -> None:
    """Merge ``src`` into ``dst`` (same GUIDs are the same devices)."""
    for sw in src.switches.values():
        d = dst.switch(sw.id, sw.desc or None, sw.line)
        for peer, n in sw.peers.items():
            dst.switch(peer)
            if d.peers.get(peer, 0) < n:
                delta = n - d.peers.get(peer, 0)
                d.peers[peer] = n
                q = dst.switches[peer].peers
                q[sw.id] = q.get(sw.id, 0) + delta
    for ca in src.cas.values():
        c = dst.ca(ca.id, ca.desc or None, ca.line)
        if ca.desc == "" and c.desc == "":
            c.kind, c.host, c.device = ca.kind, ca.host, ca.device
        for sid in ca.switches:
            dst.switch(sid)
            dst.link_ca(ca.id, sid)
    for host, dom in src.domains.items():
        dst.domains.setdefault(host, dom)


@contextmanager
def bulk_build() -> Iterator[None]:
    """Build a fabric's hundreds of thousands of objects (none in a reference cycle) without the
    cycle collector walking the growing heap again and again (about a tenth of a 16,384-host
    parse); it is switched back on afterwards, errors included."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
