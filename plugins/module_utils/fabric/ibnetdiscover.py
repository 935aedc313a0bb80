"""Parsers for ``ibnetdiscover`` output: the default format and the ``-p`` ports report.

Both run in one pass over the lines, keep each link once (it is printed from both ends) and
raise :class:`FabricError` with the line number for anything they do not understand.
"""

from __future__ import annotations

import re

from ansible_collections.gpufleet.core.plugins.module_utils.fabric.model import Fabric, FabricError

_HEADER_KEYS = ("vendid", "devid", "sysimgguid", "switchguid", "caguid", "rtguid")
_NODE = re.compile(r'^(Switch|Ca|Rt)\s+(\d+)\s+"([SHR])-([0-9a-fA-F]{1,16})"\s*(?:#\s*"([^"]*)"(.*))?$')
_PORT = re.compile(
    r"^\[(\d+)\](?:\[ext \d+\])?(?:\(([0-9a-fA-F]{1,16})\))?\s*"
    r'"([SHR])-([0-9a-fA-F]{1,16})"\[(\d+)\](?:\[ext \d+\])?(?:\(([0-9a-fA-F]{1,16})\))?\s*(?:#(.*))?$'
)
_QUOTED = re.compile(r'"([^"]*)"')
_PREFIX = {"S": "S-", "H": "H-", "R": "R-"}
_KIND = {"Switch": "S", "Ca": "H", "Rt": "R"}


def _gid(kind: str, hexid: str, cache: dict[str, str]) -> str:
    key = kind + hexid
    got = cache.get(key)
    if got is None:
        got = _PREFIX[kind] + hexid.lower().zfill(16)
        cache[key] = got
    return got


def _add_node(fab: Fabric, kind: str, gid: str, desc: str | None, lineno: int) -> None:
    if kind == "S":
        fab.switch(gid, desc, lineno)
    elif kind == "H":
        fab.ca(gid, desc, lineno)
    # routers: links through them are not part of a Slurm tree; ignored


def parse_default(text: str, source: str = "<text>") -> Fabric:
    """Parse the default ``ibnetdiscover`` output (``Switch``/``Ca`` blocks with ``[port]`` lines)."""
    fab = Fabric(source=source, kind="ibnetdiscover")
    cache: dict[str, str] = {}
    ports_seen: set[tuple[str, int]] = set()
    cur: str | None = None  # id of the node whose block we are in
    cur_kind = ""
    headers: dict[str, int] = {}  # node id -> line of its block header
    switches, cas = fab.switches, fab.cas
    node_match = _NODE.match
    port_match = _PORT.match
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] == "#":
            continue
        c = line[0]
        if c == "[":
            if cur is not None:
                # the same cable printed from its other end (switches come first): skip the regex
                i = line.find("]")
                ps = line[1:i]
                if ps.isdigit() and ps.isascii() and (cur, int(ps)) in ports_seen:
                    continue
            m = port_match(line)
            if m is None:
                raise FabricError(f"cannot parse port line: {_clip(line)}", source, lineno)
            ps, rkind, rhex, rps, comment = m.group(1, 3, 4, 5, 7)
            if cur is None:
                raise FabricError("port line outside a Switch/Ca block", source, lineno)
            port, rport = int(ps), int(rps)
            rid = _gid(rkind, rhex, cache)
            known = switches.get(rid) if rkind == "S" else cas.get(rid) if rkind == "H" else None
            if known is None or not known.desc:
                q = _QUOTED.search(comment or "")
                _add_node(fab, rkind, rid, q.group(1) if q else None, lineno)
            if cur_kind == "R" or rkind == "R":
                continue
            a = (cur, port)
            if a in ports_seen:
                continue
            ports_seen.add(a)
            ports_seen.add((rid, rport))
            if cur_kind == "S":
                if rkind == "S":
                    fab.link_switches(cur, rid)
                else:
                    fab.link_ca(rid, cur)
            elif rkind == "S":
                fab.link_ca(cur, rid)
            continue
        if c in "SCR":
            m = node_match(line)
            if m is None:
                raise FabricError(f"cannot parse node line: {_clip(line)}", source, lineno)
            kind = _KIND[m.group(1)]
            if kind != m.group(3):
                raise FabricError(f"{m.group(1)} line with a {m.group(3)}- GUID", source, lineno)
            cur = _gid(kind, m.group(4), cache)
            cur_kind = kind
            if cur in headers:  # two blocks with one GUID would silently merge two devices
                raise FabricError(
                    f"duplicate {'switch' if kind == 'S' else 'device'} GUID {m.group(4)} (first block at line"
                    f" {headers[cur]}); a GUID names one device: fix the dump",
                    source,
                    lineno,
                )
            headers[cur] = lineno
            _add_node(fab, kind, cur, m.group(5) if m.group(5) is not None else "", lineno)
            continue
        key, eq, _value = line.partition("=")
        if eq and key in _HEADER_KEYS:
            continue
        raise FabricError(f"unrecognised line: {_clip(line)}", source, lineno)
    return fab.finish()


_PLINE = re.compile(
    r"^(SW|CA|RT)\s+(\d+)\s+(\d+)\s+0x([0-9a-fA-F]{1,16})\s+(.*?)\s+-\s+(SW|CA|RT)\s+(\d+)\s+(\d+)\s+"
    r"0x([0-9a-fA-F]{1,16})\s+\(\s*'(.*)'\s+-\s+'(.*)'\s*\)$"
)
_PDOWN = re.compile(r"^(SW|CA|RT)\s+(\d+)\s+(\d+)\s+0x([0-9a-fA-F]{1,16})\s+(.*?)\s*'(.*)'$")
_PKIND = {"SW": "S", "CA": "H", "RT": "R"}


def parse_ports(text: str, source: str = "<text>") -> Fabric:
    """Parse ``ibnetdiscover -p`` (one line per port: local end, ``-``, remote end, both descriptions)."""
    fab = Fabric(source=source, kind="ibnetdiscover-ports")
    cache: dict[str, str] = {}
    ports_seen: set[tuple[str, int]] = set()
    match = _PLINE.match
    switches, cas = fab.switches, fab.cas
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] == "#":
            continue
        head = line.split(None, 4)
        if len(head) == 5 and head[2].isdigit() and head[2].isascii():
            known = cache.get(head[0][:1] + head[3][2:])
            if known is not None and (known, int(head[2])) in ports_seen:
                continue  # the cable printed from its other end
        m = match(line)
        if m is None:
            d = _PDOWN.match(line)
            if d is None:
                raise FabricError(f"cannot parse ports line: {_clip(line)}", source, lineno)
            k = _PKIND[d.group(1)]
            _add_node(fab, k, _gid(k, d.group(4), cache), d.group(6), lineno)
            continue
        t1, p1, g1, t2, p2, g2, d1, d2 = m.group(1, 3, 4, 6, 8, 9, 10, 11)
        ka, kb = _PKIND[t1], _PKIND[t2]
        a = _gid(ka, g1, cache)
        b = _gid(kb, g2, cache)
        cache[t1[:1] + g1] = a
        cache[t2[:1] + g2] = b
        for k, gid, desc in ((ka, a, d1), (kb, b, d2)):
            node = switches.get(gid) if k == "S" else cas.get(gid) if k == "H" else None
            if node is None or not node.desc:
                _add_node(fab, k, gid, desc, lineno)
        if ka == "R" or kb == "R":
            continue
        pa, pb = (a, int(p1)), (b, int(p2))
        if pa in ports_seen:
            continue
        ports_seen.add(pa)
        ports_seen.add(pb)
        if ka == "S":
            if kb == "S":
                fab.link_switches(a, b)
            else:
                fab.link_ca(b, a)
        elif kb == "S":
            fab.link_ca(a, b)
    return fab.finish()


def _clip(line: str) -> str:
    return line if len(line) <= 120 else line[:117] + "..."
