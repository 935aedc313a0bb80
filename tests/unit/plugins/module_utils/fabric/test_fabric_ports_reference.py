"""The ``ibnetdiscover -p`` parser against a reference: every line parsed whole by the report's line
regex, one line at a time, with none of the parser's shortcuts (runs of one device's lines, the
regex pass per block, the far end split from the rest of the line, links written inline).

The one rule the reference shares with the parser: a line whose local end (type, GUID, port of at
most 6 digits, read as the line regex reads them) names a port already linked is the cable printed
from its other end, and is skipped without reading the rest. On generated reports and on mutated
ones (GUID spellings, quotes and dashes in descriptions and speeds, routers, long ports, lines moved
away from their device's run), the parser on LF text (the regex pass), on CRLF text (the plain line
loop) and the reference give the same fabric or the same error on the same line."""

from __future__ import annotations

import re

from gpufleet_testlib import fabric_gen
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.core.plugins.module_utils.fabric.ibnetdiscover import parse_default, parse_ports
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.model import Fabric, FabricError

LINE = re.compile(
    r"^(SW|CA|RT)\s+(\d+)\s+(\d+)\s+0x([0-9a-fA-F]{1,16})\s+(.*?)\s+-\s+(SW|CA|RT)\s+(\d+)\s+(\d+)\s+"
    r"0x([0-9a-fA-F]{1,16})\s+\(\s*'(.*)'\s+-\s+'(.*)'\s*\)$"
)
DOWN = re.compile(r"^(SW|CA|RT)\s+(\d+)\s+(\d+)\s+0x([0-9a-fA-F]{1,16})\s+(.*?)\s*'(.*)'$")
HEAD = re.compile(r"(SW|CA|RT)\s+\d+\s+(\d+)\s+0x([0-9a-fA-F]{1,16})\s")
KIND = {"SW": "S", "CA": "H", "RT": "R"}


def _clip(line: str) -> str:
    return line if len(line) <= 120 else line[:117] + "..."


def _id(fab: Fabric, kind: str, hexid: str) -> str:
    gid = f"{kind}-{hexid.lower().zfill(16)}"
    known = (fab.switches if kind == "S" else fab.cas if kind == "H" else {}).get(gid)
    return known.id if known is not None else gid


def _add(fab: Fabric, kind: str, gid: str, desc: str, lineno: int) -> None:
    if kind == "S":
        fab.switch(gid, desc, lineno)
    elif kind == "H":
        fab.ca(gid, desc, lineno)


def _has_desc(fab: Fabric, kind: str, gid: str) -> bool:
    node = (fab.switches if kind == "S" else fab.cas if kind == "H" else {}).get(gid)
    return node is not None and bool(node.desc)


def reference(text: str) -> Fabric:
    fab = Fabric(source="f", kind="ibnetdiscover-ports")
    linked: set[tuple[str, int]] = set()
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] == "#":
            continue
        h = HEAD.match(line)
        if h and len(h.group(2)) <= 6 and (_id(fab, KIND[h.group(1)], h.group(3)), int(h.group(2))) in linked:
            continue  # the cable printed from its other end
        m = LINE.match(line)
        if m is None:
            d = DOWN.match(line)
            if d is None:
                raise FabricError(f"cannot parse ports line: {_clip(line)}", "f", lineno)
            _add(fab, KIND[d.group(1)], _id(fab, KIND[d.group(1)], d.group(4)), d.group(6), lineno)
            continue
        t1, p1, g1, t2, p2, g2, d1, d2 = m.group(1, 3, 4, 6, 8, 9, 10, 11)
        if len(p1) > 6 or len(p2) > 6:
            raise FabricError(f"port number out of range: {_clip(line)}", "f", lineno)
        ka, kb = KIND[t1], KIND[t2]
        a = _id(fab, ka, g1)
        if not _has_desc(fab, ka, a):
            _add(fab, ka, a, d1, lineno)
        b = _id(fab, kb, g2)
        if not _has_desc(fab, kb, b):
            _add(fab, kb, b, d2, lineno)
        if "R" in (ka, kb):
            continue
        linked.update(((a, int(p1)), (b, int(p2))))
        if ka == "S" and kb == "S":
            fab.link_switches(a, b)
        elif ka == "S" and kb == "H":
            fab.link_ca(b, a)
        elif ka == "H" and kb == "S":
            fab.link_ca(a, b)
    return fab.finish()


def _dump(fab: Fabric) -> tuple:
    sws = {k: (s.id, s.desc, s.name, s.line, dict(s.peers), list(s.cas)) for k, s in fab.switches.items()}
    cas = {k: (c.id, c.desc, c.kind, c.host, c.device, c.line, list(c.switches)) for k, c in fab.cas.items()}
    return sws, cas, list(fab.switches), list(fab.cas)


def _outcome(parse, text: str) -> tuple:
    try:
        return ("ok", _dump(parse(text)))
    except FabricError as e:
        return ("error", str(e), e.line)


def _all_agree(text: str) -> tuple:
    want = _outcome(reference, text)
    assert _outcome(lambda t: parse_ports(t, "f"), text) == want
    assert _outcome(lambda t: parse_ports(t, "f"), text.replace("\n", "\r\n")) == want
    return want


_SPECS = st.builds(
    fabric_gen.GenSpec,
    hosts=st.integers(2, 40),
    rails=st.integers(1, 4),
    su_size=st.sampled_from([2, 4, 8]),
    tiers=st.sampled_from([2, 3]),
    sharp=st.integers(-1, 2),
    unnamed=st.integers(0, 2),
    cut_cables=st.integers(0, 2),
    seed=st.integers(0, 99),
)


@settings(max_examples=40, deadline=None)
@given(_SPECS)
def test_generated_reports_match_the_reference_and_the_default_format(spec: fabric_gen.GenSpec) -> None:
    g = fabric_gen.generate(spec)
    got = _all_agree(fabric_gen.render_ports(g))
    assert got[0] == "ok"
    default = _dump(parse_default(fabric_gen.render_ibnetdiscover(g), "f"))
    assert {k: v[4] for k, v in got[1][0].items()} == {k: v[4] for k, v in default[0].items()}
    assert {k: sorted(v[6]) for k, v in got[1][1].items()} == {k: sorted(v[6]) for k, v in default[1].items()}


_SMALL = fabric_gen.render_ports(
    fabric_gen.generate(fabric_gen.GenSpec(hosts=8, rails=2, su_size=4, sharp=1, unnamed=1, cut_cables=1))
)
_JUNK = st.sampled_from(["'", " - ", "-", " ", "\t", "9", "SW", "CA", "RT", "0x", "1234567", "(", ")", "#", "é"])


def _mutate(line: str, op: str, data: st.DataObject) -> str:
    """One edit of a report line: what a hostile or broken dump may hold."""
    if op == "guid":  # the same GUID spelled otherwise: upper case, leading zeros dropped
        return re.sub(r"0x0*([0-9a-f]+)", lambda m: "0x" + m.group(1).upper(), line, count=data.draw(st.integers(1, 2)))
    if op == "router":
        return line.replace(data.draw(st.sampled_from(["SW", "CA"])), "RT", 1)
    if op == "self":  # a cable from a device to itself
        guids = re.findall(r"0x[0-9a-f]+", line)
        return line.replace(guids[-1], guids[0]) if len(guids) == 2 else line
    if op == "drop":  # one character less (a separator, a quote, a digit)
        j = data.draw(st.integers(0, max(0, len(line) - 1)))
        return line[:j] + line[j + 1 :]
    j = data.draw(st.integers(0, len(line)))
    return line[:j] + "".join(data.draw(st.lists(_JUNK, min_size=1, max_size=3))) + line[j:]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_mutated_reports_match_the_reference(data: st.DataObject) -> None:
    lines = _SMALL.splitlines()
    for _edit in range(data.draw(st.integers(1, 5))):
        i = data.draw(st.integers(0, len(lines) - 1))
        op = data.draw(st.sampled_from(["guid", "router", "self", "junk", "drop", "move", "dup", "del"]))
        if op == "move":  # away from its device's run of lines
            lines.insert(data.draw(st.integers(0, len(lines) - 1)), lines.pop(i))
        elif op == "dup":
            lines.insert(data.draw(st.integers(0, len(lines))), lines[i])
        elif op == "del":
            del lines[i]
        else:
            lines[i] = _mutate(lines[i], op, data)
    _all_agree("\n".join(lines) + "\n")


def test_lines_the_tail_regex_leaves_to_the_line_regex() -> None:
    """Quotes in a description and a ' - ' in the speed: the whole-line regex decides, as the reference."""
    head = "SW     1 33 0x2c5eab0300000000 "
    tail = "- CA    10  1 0xe09d730300000000 ( 'MF0;leaf:MQM9700/U1' - 'gpu001 mlx5_0' )"
    for text in (
        head + "4x NDR " + tail.replace("gpu001 mlx5_0", "gpu001 'x' mlx5_0"),
        head + "4x - NDR " + tail,
        head + "4x NDR - junk " + tail,
        head + " " + tail,  # speed empty, two spaces: still a port line
        head + tail,  # one space before the dash: not a port line
        head + "4x NDR " + tail.replace(" ( ", "( "),  # no space before the parenthesis
        head + "4x NDR " + tail.replace("' - '", "'- '"),
        head + "4x NDR " + tail.replace("0xe09d", "0x1e09d"),  # 17 hex digits
        head + "4x NDR " + tail.replace("  1 0x", " 1234567 0x"),  # a 7-digit remote port
        head + "4x NDR " + tail + " x",
        head + "4x NDR " + tail.replace("CA", "Ca", 1),
    ):
        got = _all_agree(text + "\n")
        assert got[0] == "ok" or re.search("cannot parse ports line|port number out of range", got[1]), (text, got)
    assert _all_agree(head + " " + tail + "\n")[1][1]["H-e09d730300000000"][6] == ["S-2c5eab0300000000"]
    assert _all_agree(head + tail + "\n")[0] == "error"


def test_a_cable_to_the_same_device_skips_its_other_end() -> None:
    """Port 33 cabled to port 5 of the same switch: the line for port 5 is that cable's other end,
    skipped unread (here it is garbage after its head), in a run of the device's lines or not."""
    loop = "SW 1 33 0x2c5eab0300000000 4x NDR - SW 1 5 0x2c5eab0300000000 ( 'MF0;a:X/U1' - 'MF0;a:X/U1' )"
    other = "SW 2 1 0x2c5eab0300000001 4x NDR - SW 3 1 0x2c5eab0300000002 ( 'MF0;b:X/U1' - 'MF0;c:X/U1' )"
    for text in (f"{loop}\nSW 1 5 0x2c5eab0300000000 junk\n", f"{loop}\n{other}\nSW 1 5 0x2c5eab0300000000 junk\n"):
        got = _all_agree(text)
        assert got[0] == "ok" and got[1][0]["S-2c5eab0300000000"][4] == {}, got
