"""Parsers for ``ibnetdiscover`` output: the default format and the ``-p`` ports report.

Both run in one pass over the lines, keep each link once (it is printed from both ends) and
raise :class:`FabricError` with the line number for anything they do not understand.

Input is the text itself or an iterable of text chunks that each end at a line break (what
``fabric.load`` streams from a file), so a dump of hundreds of MB is never held whole, nor as one
list of lines. The hot loop is written for fabrics of 10^5 HCAs: the second sighting of a cable
(every cable is printed from both ends) is skipped on the port number alone, before any regex.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator
from typing import Optional, Union

from ansible_collections.gpufleet.core.plugins.module_utils.fabric.model import (
    CA,
    Fabric,
    FabricError,
    Switch,
    bulk_build,
)

_HEADERS = ("vendid=", "devid=", "sysimgguid=", "switchguid=", "caguid=", "rtguid=")
_NODE = re.compile(r'^(Switch|Ca|Rt)\s+(\d+)\s+"([SHR])-([0-9a-fA-F]{1,16})"\s*(?:#\s*"([^"]*)"(.*))?$')
_PORT = re.compile(
    r"^\[(\d+)\](?:\[ext \d+\])?(?:\(([0-9a-fA-F]{1,16})\))?\s*"
    r'"([SHR])-([0-9a-fA-F]{1,16})"\[(\d+)\](?:\[ext \d+\])?(?:\(([0-9a-fA-F]{1,16})\))?\s*(?:#(.*))?$'
)
_QUOTED = re.compile(r'"([^"]*)"')
_KIND = {"Switch": "S", "Ca": "H", "Rt": "R"}
_STEP = 1 << 20  # characters per chunk of a text given whole
_MASK_PORTS = 256  # IB port numbers are 8 bits; seen ports below this live in one int per node
_MAX_PORT_DIGITS = 6  # a longer port number is garbage (and int() of 4,300+ digits raises)

Text = Union[str, Iterable[str]]  # runtime alias: Union, as the module runs on Python 3.9 hosts

# A block of plain ASCII without carriage returns or other odd separators is parsed by one regex
# pass in C (``_ROWS``: each port and node line with its fields, plus the blank, comment and header
# lines before it), so Python sees one tuple per port/node line and never a header line. Any other
# line comes whole (the last alternative) and gets the plain line checks, which name it. Other
# blocks go through the plain line loop (``_plain_rows``), line by line, into the same rows.
# A port line comes as its port number (enough to skip a cable seen from its other end, half of
# them) and the rest of the line, which ``_TAIL`` splits for a first sighting only.
_HDR = r"(?:#|vendid=|devid=|sysimgguid=|switchguid=|caguid=|rtguid=)"
# The run of header and blank lines is possessive where the re module knows it (3.11+) to keep no
# backtrack points; the greedy form matches the same (whatever follows the run matches any line or
# the end), so Python 3.9 hosts parse alike.
_RUN = "*+" if sys.version_info >= (3, 11) else "*"
_ROWS = re.compile(
    r"\n((?:[ \t]*" + _HDR + r"[^\n]*\n|[ \t]*\n)" + _RUN + r")[ \t]*(?:"
    # a port line: its port number and the rest of the line
    r"\[([0-9]{1,6})\]([^\n]*)"
    # a node line: _NODE on one line (anything may follow the description: the match ends there, and
    # the search for the next row skips the rest of the line in C)
    r'|(Switch|Ca|Rt)[ \t]+\d+[ \t]+"([SHR])-([0-9a-fA-F]{1,16})"[ \t]*(?:#[ \t]*"([^"\n]*)"|(?=\n))'
    # any other line (not blank, a comment or a header) for the plain checks and their errors
    r"|(?!" + _HDR + r")([^\n]*[^\s])"
    # the end of the block: the last match, its pre holding the lines after the last row
    r"|\Z)"
)
# The rest of a port line as _PORT takes it (ports of 1 to 6 digits): remote id (canonical, else
# kind and hex), remote port. A line it does not take goes to _plain_line for its error.
_TAIL = re.compile(
    r'(?:\[ext [0-9]+\])?(?:\([0-9a-fA-F]{1,16}\))?[ \t]*"(?:([SHR]-[0-9a-f]{16})|([SHR])-([0-9a-fA-F]{1,16}))"'
    r"\[([0-9]{1,6})\](?:\[ext [0-9]+\])?(?:\([0-9a-fA-F]{1,16}\))?[ \t]*(?:#|$)"
)  # the comment is the rest of the line after the match: sliced for a new remote only
_ODD = "\r\x0b\x0c\x1c\x1d\x1e\x1f"  # what str.strip / str.splitlines treat as space or line break
# pre, port, rest of a port line, node type, kind, hex, description, plain line
_Row = tuple[str, str, str, str, str, str, str, str]


def _rows(chunk: str) -> tuple[list[_Row], int] | None:
    """The block's rows from the one regex pass and the number of lines after the last row, or
    None for the plain loop.

    Every line is accounted for: a line that is not blank, a comment or a header (those go into the
    next row's ``pre``, or the end match's) is a row, the last alternative taking any line. So the
    lines of a block are the rows, their ``pre`` and the end's: nothing counts them again."""
    if not chunk.isascii() or any(c in chunk for c in _ODD):
        return None
    rows = _ROWS.findall("\n" + chunk if chunk.endswith("\n") else "\n" + chunk + "\n")
    return rows, rows.pop()[0].count("\n")  # the end match is always the last


def _plain_rows(chunk: str) -> tuple[list[_Row], int]:
    """The same rows, line by line (any text): every line but blanks, comments and headers, unparsed;
    and the number of lines after the last row."""
    rows: list[_Row] = []
    gap = 0
    for raw in chunk.splitlines():
        line = raw.strip()
        if not line or line[0] == "#" or line.startswith(_HEADERS):
            gap += 1
            continue
        rows.append(("\n" * gap, "", "", "", "", "", "", line))
        gap = 0
    return rows, gap


def chunks(text: Text) -> Iterator[str]:
    """The input as chunks ending at line breaks: a str is sliced (never split into one big list)."""
    if not isinstance(text, str):
        yield from text
        return
    n, step, i = len(text), _STEP, 0
    while i < n:
        j = text.find("\n", min(i + step, n) - 1)
        j = n if j < 0 else j + 1
        yield text[i:j]
        i = j


class _Ids:
    """Canonical node ids (``S-`` + 16 lower-case hex digits), one string object per device."""

    __slots__ = ("nodes", "odd")

    def __init__(self, fab: Fabric) -> None:
        self.odd: dict[str, str] = {}  # non-canonical spellings (short, upper case) -> id
        self.nodes = {"S": fab.switches, "H": fab.cas}

    def odd_id(self, kind: str, hexid: str) -> str:
        key = kind + hexid
        got = self.odd.get(key)
        if got is None:
            got = self.odd[key] = kind + "-" + hexid.lower().zfill(16)
        return got

    def get(self, kind: str, hexid: str) -> str:
        gid = kind + "-" + hexid if len(hexid) == 16 and hexid.lower() == hexid else self.odd_id(kind, hexid)
        known = self.nodes.get(kind, {}).get(gid)
        return known.id if known is not None else gid


def _add_node(fab: Fabric, kind: str, gid: str, desc: str | None, lineno: int) -> Switch | CA | None:
    if kind == "S":
        return fab.switch(gid, desc, lineno)
    if kind == "H":
        return fab.ca(gid, desc, lineno)
    return None  # routers: links through them are not part of a Slurm tree; ignored


# port, remote id, remote kind and hex (a non-canonical id), remote port, comment; node type, kind, hex, description
_Fields = tuple[str, str, str, str, str, Optional[str], str, str, str, str]


def _plain_line(
    line: str, cur: str | None, cur_mask: int, big: set[tuple[str, int]], source: str, lineno: int
) -> _Fields | None:
    """A line the regex pass did not split (the plain loop, or a line no row pattern takes): the
    row's fields after ``pre``, as ``_ROWS`` gives them; None for the second sighting of a cable."""
    c = line[0]
    if c == "[":
        if cur is not None:  # the same cable printed from its other end (switches come first): skip the regex
            ps = line[1 : line.find("]")]
            if ps.isdigit() and ps.isascii() and len(ps) <= _MAX_PORT_DIGITS:
                p = int(ps)
                if (cur_mask >> p) & 1 if p < _MASK_PORTS else (cur, p) in big:
                    return None
        m = _PORT.match(line)
        if m is None:
            raise FabricError(f"cannot parse port line: {_clip(line)}", source, lineno)
        if cur is None:
            raise FabricError("port line outside a Switch/Ca block", source, lineno)
        ps, rkind, rhex, rps, comment = m.group(1, 3, 4, 5, 7)
        if len(ps) > _MAX_PORT_DIGITS or len(rps) > _MAX_PORT_DIGITS:
            raise FabricError(f"port number out of range: {_clip(line)}", source, lineno)
        return (ps, "", rkind, rhex, rps, comment, "", "", "", "")
    if c in "SCR":
        m = _NODE.match(line)
        if m is None:
            raise FabricError(f"cannot parse node line: {_clip(line)}", source, lineno)
        return ("", "", "", "", "", None, *m.group(1, 3, 4), m.group(5) or "")
    raise FabricError(f"unrecognised line: {_clip(line)}", source, lineno)


def _open_block(
    fab: Fabric,
    ids: _Ids,
    headers: dict[str, int],
    node: tuple[str, str, str, str | None],
    prev: tuple[dict[str, Switch | CA], dict[str, int], str | None, int],
    source: str,
    lineno: int,
) -> tuple[str, str, Switch | CA | None, int]:
    """A ``Switch``/``Ca``/``Rt`` line: (id, kind, node, port mask) of the block it opens (node None
    for a router: links through routers are not part of a Slurm tree). ``prev``: the node table,
    the port masks, the block before and its mask (written back). Once per device, off the per-port path."""
    nodes, mask, before, before_mask = prev
    if before is not None:
        mask[before] = before_mask
    ntype, nkind, nhex, ndesc = node
    known = nodes.get(nkind + "-" + nhex)  # a canonical id only (the keys are)
    if known is not None and known.desc and _KIND[ntype] == nkind and known.id not in headers:
        headers[known.id] = lineno  # the common case: a device already described from its other end
        return known.id, nkind, known, mask.get(known.id, 0)
    kind = _KIND[ntype]
    if kind != nkind:
        raise FabricError(f"{ntype} line with a {nkind}- GUID", source, lineno)
    cur = kind + "-" + nhex if len(nhex) == 16 and nhex.lower() == nhex else ids.odd_id(kind, nhex)
    if cur in headers:  # two blocks with one GUID would silently merge two devices
        raise FabricError(
            f"duplicate {'switch' if kind == 'S' else 'device'} GUID {nhex} (first block at line"
            f" {headers[cur]}); a GUID names one device: fix the dump",
            source,
            lineno,
        )
    headers[cur] = lineno
    cur_node: Switch | CA | None = None
    if kind == "S":
        cur_node = fab.switches.get(cur)
        if cur_node is None or not cur_node.desc:
            cur_node = fab.switch(cur, ndesc or "", lineno)
    elif kind == "H":
        cur_node = fab.cas.get(cur)
        if cur_node is None or not cur_node.desc:
            cur_node = fab.ca(cur, ndesc or "", lineno)
    if cur_node is None:
        return cur, kind, None, mask.get(cur, 0)
    nodes[cur_node.id] = cur_node
    return cur_node.id, kind, cur_node, mask.get(cur_node.id, 0)


def _remote(
    fab: Fabric, ids: _Ids, rid: str, okind: str, ohex: str, comment: str | None, lineno: int
) -> Switch | CA | None:
    """The far end of a port line when it is new or has no description yet (None: a router)."""
    if not rid:
        if okind == "R":
            return None
        rid = ids.odd_id(okind, ohex)
    q = _QUOTED.search(comment or "")
    desc = q.group(1) if q else None
    if rid[0] == "S":
        return fab.switch(rid, desc, lineno)
    return fab.ca(rid, desc, lineno) if rid[0] == "H" else None


def parse_default(text: Text, source: str = "<text>") -> Fabric:
    """Parse the default ``ibnetdiscover`` output (``Switch``/``Ca`` blocks with ``[port]`` lines)."""
    with bulk_build():
        return _parse_default(text, source)


def _parse_default(text: Text, source: str) -> Fabric:
    fab = Fabric(source=source, kind="ibnetdiscover")
    ids = _Ids(fab)
    nodes: dict[str, Switch | CA] = {}  # every switch and HCA by id (one lookup per port line)
    nodes_get = nodes.get
    mask: dict[str, int] = {}  # node id -> bit mask of its ports already linked (cables print twice)
    mask_get = mask.get
    big: set[tuple[str, int]] = set()  # the same for ports >= 256 (not valid IB, parsed as before)
    cur: str | None = None  # id of the node whose block we are in
    cur_mask = 0  # mask[cur] while in its block (written back when the next block opens)
    cur_node: Switch | CA | None = None
    cur_kind = ""
    headers: dict[str, int] = {}  # node id -> line of its block header
    tail_match = _TAIL.match
    lineno = 0
    for chunk in chunks(text):
        rows, rest = _rows(chunk) or _plain_rows(chunk)
        for pre, ps, tail, ntype, nkind, nhex, ndesc, line in rows:
            lineno += pre.count("\n") + 1 if pre else 1
            if ps:  # a port line: the same cable printed from its other end? (cur_mask is 0 outside a block)
                p = int(ps)
                if (cur_mask >> p) & 1 if p < _MASK_PORTS else (cur, p) in big:
                    continue
                m = tail_match(tail)
                if m is not None:
                    rid, okind, ohex, rps = m.groups()
                else:  # not as _PORT takes it: the plain checks name the fault
                    line = "[" + ps + "]" + tail.rstrip()
            if line:  # not split by the regex pass: the checks line by line
                got = _plain_line(line, cur, cur_mask, big, source, lineno)
                if got is None:
                    continue
                ps, rid, okind, ohex, rps, comment, ntype, nkind, nhex, ndesc = got
                p = int(ps) if ps else 0
            if not ps:  # a node line: Switch / Ca / Rt
                node, prev = (ntype, nkind, nhex, ndesc), (nodes, mask, cur, cur_mask)
                cur, cur_kind, cur_node, cur_mask = _open_block(fab, ids, headers, node, prev, source, lineno)
                continue
            if cur is None:
                raise FabricError("port line outside a Switch/Ca block", source, lineno)
            known = nodes_get(rid)  # None for a non-canonical id (rid None): _remote makes it
            if known is None or not known.desc:
                if not line:  # split by _TAIL (m): the comment follows its match
                    comment = tail[m.end() :]  # type: ignore[union-attr]
                known = _remote(fab, ids, rid, okind, ohex, comment, lineno)
                if known is None:
                    continue  # routers: links through them are not part of a Slurm tree
                nodes[known.id] = known
            rid = known.id  # one string object per device
            if cur_kind == "R":
                continue
            if p < _MASK_PORTS:  # checked again: the plain loop's port numbers may be other digits
                if (cur_mask >> p) & 1:
                    continue
                cur_mask |= 1 << p
            elif (cur, p) in big:
                continue
            else:
                big.add((cur, p))
            rport = int(rps)
            if rport >= _MASK_PORTS:
                big.add((rid, rport))
            elif rid is cur:
                cur_mask |= 1 << rport
            else:
                mask[rid] = mask_get(rid, 0) | (1 << rport)
            if cur_kind == "S":
                if rid[0] == "S":
                    if rid is not cur:  # switch peers, counted per cable
                        pa, pb = cur_node.peers, known.peers  # type: ignore[union-attr]
                        pa[rid] = pa.get(rid, 0) + 1
                        pb[cur] = pb.get(cur, 0) + 1
                elif cur not in known.switches:  # type: ignore[union-attr]
                    known.switches.append(cur)  # type: ignore[union-attr]
                    cur_node.cas.append(rid)  # type: ignore[union-attr]
            elif rid[0] == "S" and rid not in cur_node.switches:  # type: ignore[union-attr]
                cur_node.switches.append(rid)  # type: ignore[union-attr]
                known.cas.append(cur)  # type: ignore[union-attr]
        lineno += rest
    return fab.finish()


_PLINE = re.compile(
    r"^(SW|CA|RT)\s+(\d+)\s+(\d+)\s+0x([0-9a-fA-F]{1,16})\s+(.*?)\s+-\s+(SW|CA|RT)\s+(\d+)\s+(\d+)\s+"
    r"0x([0-9a-fA-F]{1,16})\s+\(\s*'(.*)'\s+-\s+'(.*)'\s*\)$"
)
_PDOWN = re.compile(r"^(SW|CA|RT)\s+(\d+)\s+(\d+)\s+0x([0-9a-fA-F]{1,16})\s+(.*?)\s*'(.*)'$")
# A line's local end as _PLINE reads it: type, port, GUID (what the second-sighting skip needs)
_PHEAD = re.compile(r"(?=SW|CA|RT)([SCR])[WAT]\s+\d+\s+(\d+)\s+0x([0-9a-fA-F]{1,16})\s")
_PKIND = {"SW": "S", "CA": "H", "RT": "R", "S": "S", "C": "H", "R": "R"}  # by type, or its first letter
_PID = {"S": "S-", "C": "H-", "R": "R-"}  # by the type's first letter

# The ports report's one regex pass per block (plain ASCII without odd separators, as ``_ROWS``): a
# row per line that is not blank or a comment (those fold into the next row's ``pre``). A line that
# starts as a port line does (type, LID, port of at most 6 digits, 0x GUID, then more) comes as its
# head (type, LID, port, GUID) with the local type, port and GUID in their own groups, and the rest of
# the line: enough to skip a cable seen from its other end without looking at the rest. Any other line
# comes whole, for the plain checks. Both give the stripped line (head + rest, or the whole).
_PROWS = re.compile(
    r"\n((?:[ \t]*(?:#[^\n]*)?\n)" + _RUN + r")[ \t]*(?:"
    r"((?=SW|CA|RT)([SCR])[WAT][ \t]+[0-9]+[ \t]+([0-9]{1,6})[ \t]+0x([0-9a-fA-F]{1,16}))([ \t][^\n]*[^ \t\n])"
    r"|([^\n]*[^ \t\n])"
    r"|\Z)"
)
# The rest of a port line (after the local GUID) as _PLINE takes it when neither the speed nor the
# descriptions hold a quote (the common case; any other line goes to _PLINE whole): remote type, port,
# GUID (canonical: 16 lower-case hex digits, else as printed), the two descriptions. Where it matches,
# _PLINE matches with the same groups: the remote end is the first ' - ' the rest of the line follows.
_PTAIL = re.compile(
    r"[ \t][^']*?[ \t]-[ \t]+(?=SW|CA|RT)([SCR])[WAT][ \t]+[0-9]+[ \t]+([0-9]{1,6})[ \t]+"
    r"0x(?:([0-9a-f]{16})|([0-9a-fA-F]{1,16}))[ \t]+\([ \t]*'([^']*)'[ \t]+-[ \t]+'([^']*)'[ \t]*\)\Z"
)  # on the rest of one line (no line break in it): [^'] is the regex engine's fastest loop
# pre, head, the type's first letter, port, GUID, rest of a port line; any other line
_PRow = tuple[str, str, str, str, str, str, str]


def _port_rows(chunk: str) -> tuple[list[_PRow], int]:
    """A block of the ports report as rows, and the number of lines after the last row: one regex
    pass, or line by line for text the regex pass does not take (``_rows``' rule)."""
    if chunk.isascii() and not any(c in chunk for c in _ODD):
        rows = _PROWS.findall("\n" + chunk if chunk.endswith("\n") else "\n" + chunk + "\n")
        return rows, rows.pop()[0].count("\n")
    out: list[_PRow] = []
    gap = 0
    for raw in chunk.splitlines():
        line = raw.strip()
        if not line or line[0] == "#":
            gap += 1
            continue
        out.append(("\n" * gap, "", "", "", "", "", line))
        gap = 0
    return out, gap


# local port; remote type, port, canonical GUID, GUID as printed; local and remote description
_PFields = tuple[int, str, str, str, str, str, str]


def _ports_line(
    fab: Fabric, ids: _Ids, nodes: dict[str, Switch | CA], line: str, source: str, lineno: int
) -> _PFields | None:
    """A port line the fast split did not take, by _PLINE whole: its far end as ``_PTAIL`` gives it, or
    None for a down port (a device line, added here)."""
    m = _PLINE.match(line)
    if m is None:
        d = _PDOWN.match(line)
        if d is None:
            raise FabricError(f"cannot parse ports line: {_clip(line)}", source, lineno)
        k = _PKIND[d.group(1)]
        node = _add_node(fab, k, ids.get(k, d.group(4)), d.group(6), lineno)
        if node is not None:
            nodes[node.id] = node
        return None
    if len(m.group(3)) > _MAX_PORT_DIGITS or len(m.group(8)) > _MAX_PORT_DIGITS:
        raise FabricError(f"port number out of range: {_clip(line)}", source, lineno)
    return int(m.group(3)), m.group(6)[0], m.group(8), "", m.group(9), m.group(10), m.group(11)


def _line_head(line: str) -> tuple[str, str, str]:
    """A line's local end by _PHEAD: type letter, port, GUID; no port for a longer port number (no
    skip: the checks name it), nothing for a line with no such head (the checks refuse it)."""
    h = _PHEAD.match(line)
    if h is None:
        return "", "", ""
    ltype, ps, lhex = h.groups()
    return ltype, ps if len(ps) <= _MAX_PORT_DIGITS else "", lhex


def parse_ports(text: Text, source: str = "<text>") -> Fabric:
    """Parse ``ibnetdiscover -p`` (one line per port: local end, ``-``, remote end, both descriptions).

    The lines of one device's ports follow each other (ibnetdiscover prints them so): the device and
    its port mask are looked up once per run of lines with the same local GUID, and a line whose local
    port is linked already (the cable was printed from its other end) is skipped on its head alone."""
    with bulk_build():
        return _parse_ports(text, source)


def _parse_ports(text: Text, source: str) -> Fabric:
    fab = Fabric(source=source, kind="ibnetdiscover-ports")
    ids = _Ids(fab)
    nodes: dict[str, Switch | CA] = {}  # every switch and HCA by id
    nodes_get = nodes.get
    mask: dict[str, int] = {}  # node id -> bit mask of its ports already linked (cables print twice)
    mask_get = mask.get
    big: set[tuple[str, int]] = set()  # the same for ports >= 256 (not valid IB, parsed as before)
    cur, cur_kind, cur_node, cur_mask, cur_type, cur_hex = "", "", None, 0, "", ""
    tail_match = _PTAIL.match
    lineno = 0
    for chunk in chunks(text):
        rows, rest = _port_rows(chunk)
        for pre, head, ltype, ps, lhex, tail, line in rows:
            lineno += pre.count("\n") + 1 if pre else 1
            if line:  # not split by the regex pass: its head by _PHEAD
                ltype, ps, lhex = _line_head(line)
            if lhex and (lhex != cur_hex or ltype != cur_type):  # the next device's lines: open it
                if cur:
                    mask[cur] = cur_mask
                cur_type, cur_hex, cur_kind = ltype, lhex, _PKIND[ltype]
                cur = cur_kind + "-" + lhex if len(lhex) == 16 and lhex.lower() == lhex else ids.odd_id(cur_kind, lhex)
                cur_node = nodes_get(cur)
                if cur_node is not None:
                    cur = cur_node.id  # one string object per device
                cur_mask = mask_get(cur, 0)
            if ps:  # the same cable printed from its other end? (on the local port alone)
                p = int(ps)
                if (cur_mask >> p) & 1 if p < _MASK_PORTS else (cur, p) in big:
                    continue
            m = None if line else tail_match(tail)
            if m is not None:
                t2, rps, rcanon, rhex, d1, d2 = m.groups()
            else:
                got = _ports_line(fab, ids, nodes, line or head + tail, source, lineno)
                if got is None:
                    continue
                p, t2, rps, rcanon, rhex, d1, d2 = got
            if cur_node is None or not cur_node.desc:
                cur_node = _add_node(fab, cur_kind, cur, d1, lineno)
                if cur_node is not None:
                    nodes[cur] = cur_node
            rid = _PID[t2] + rcanon if rcanon else ids.odd_id(_PKIND[t2], rhex)
            known = nodes_get(rid)
            if known is None or not known.desc:
                known = _add_node(fab, rid[0], rid, d2, lineno)
                if known is not None:
                    nodes[rid] = known
            if cur_kind == "R" or known is None:
                continue  # routers: links through them are not part of a Slurm tree
            rid = known.id
            if p < _MASK_PORTS:
                cur_mask |= 1 << p
            else:
                big.add((cur, p))
            rport = int(rps)
            if rport >= _MASK_PORTS:
                big.add((rid, rport))
            elif rid == cur:
                cur_mask |= 1 << rport
            else:
                mask[rid] = mask_get(rid, 0) | (1 << rport)
            if cur_kind == "S":
                if rid[0] == "S":
                    if rid != cur:  # switch peers, counted per cable
                        pa, pb = cur_node.peers, known.peers  # type: ignore[union-attr]
                        pa[rid] = pa.get(rid, 0) + 1
                        pb[cur] = pb.get(cur, 0) + 1
                elif cur not in known.switches:  # type: ignore[union-attr]
                    known.switches.append(cur)  # type: ignore[union-attr]
                    cur_node.cas.append(rid)  # type: ignore[union-attr]
            elif rid[0] == "S" and rid not in cur_node.switches:  # type: ignore[union-attr]
                cur_node.switches.append(rid)  # type: ignore[union-attr]
                known.cas.append(cur)  # type: ignore[union-attr]
        lineno += rest
    return fab.finish()


def _clip(line: str) -> str:
    return line if len(line) <= 120 else line[:117] + "..."
