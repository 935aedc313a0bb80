"""Parsers for ``ibnetdiscover`` output: the default format and the ``-p`` ports report.

Both run in one pass over the lines, keep each link once (it is printed from both ends) and
raise :class:`FabricError` with the line number for anything they do not understand.
"""

from __future__ import annotations

import re

from ansible_collections.gpufleet.core.plugins.module_utils.fabric import Fabric, FabricError

_HEADER_KEYS = ("vendid", "devid", "sysimgguid", "switchguid", "caguid", "rtguid")
_NODE = re.compile(r'^(Switch|Ca|Rt)\s+(\d+)\s+"([SHR])-([0-9a-fA-F]{1,16})"\s*(?:#\s*"([^"]*)"(.*))?$')
_PORT = re.compile(
    r'^\[(\d+)\](?:\[ext \d+\])?(?:\(([0-9a-fA-F]{1,16})\))?\s*'
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


def _add_link(fab: Fabric, seen: set, a: tuple[str, int], b: tuple[str, int]) -> None:
    key = (a, b) if a <= b else (b, a)
    if key in seen:
        return
    seen.add(key)
    ka, kb = a[0][0], b[0][0]
    if ka == "S" and kb == "S":
        fab.link_switches(a[0], b[0])
    elif ka == "H" and kb == "S":
        fab.link_ca(a[0], b[0])
    elif ka == "S" and kb == "H":
        fab.link_ca(b[0], a[0])


def parse_default(text: str, source: str = "<text>") -> Fabric:
    """Parse the default ``ibnetdiscover`` output (``Switch``/``Ca`` blocks with ``[port]`` lines)."""
    fab = Fabric(source=source, kind="ibnetdiscover")
    cache: dict[str, str] = {}
    ports_seen: set[tuple[str, int]] = set()
    cur: str | None = None  # id of the node whose block we are in
    cur_kind = ""
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
    seen: set = set()
    match = _PLINE.match
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] == "#":
            continue
        m = match(line)
        if m is None:
            d = _PDOWN.match(line)
            if d is None:
                raise FabricError(f"cannot parse ports line: {_clip(line)}", source, lineno)
            k = _PKIND[d.group(1)]
            _add_node(fab, k, _gid(k, d.group(4), cache), d.group(6), lineno)
            continue
        ka, kb = _PKIND[m.group(1)], _PKIND[m.group(6)]
        a = _gid(ka, m.group(4), cache)
        b = _gid(kb, m.group(9), cache)
        _add_node(fab, ka, a, m.group(10), lineno)
        _add_node(fab, kb, b, m.group(11), lineno)
        if ka == "R" or kb == "R":
            continue
        _add_link(fab, seen, (a, int(m.group(3))), (b, int(m.group(8))))
    return fab.finish()


def _clip(line: str) -> str:
    return line if len(line) <= 120 else line[:117] + "..."
