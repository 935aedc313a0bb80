"""Streamed fabric parsing: block boundaries, the regex pass against the plain line loop, and the
encoding checks (linear, C-level) with their line numbers. Timings live in bench/, not here."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpufleet_testlib import fabric_gen
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.core.plugins.module_utils.fabric import ibnetdiscover, load
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.ibnetdiscover import parse_default, parse_ports
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.load import load_fabric
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.model import Fabric, FabricError

SPEC = fabric_gen.GenSpec(hosts=96, rails=4, su_size=8, tiers=3, sharp=-1, unnamed=3, cut_cables=3, seed=3)
TEXT = fabric_gen.render_ibnetdiscover(fabric_gen.generate(SPEC))


def _dump(fab: Fabric) -> tuple:
    sws = {k: (s.id, s.desc, s.name, s.line, dict(s.peers), list(s.cas)) for k, s in fab.switches.items()}
    cas = {k: (c.id, c.desc, c.kind, c.host, c.device, c.line, list(c.switches)) for k, c in fab.cas.items()}
    return sws, cas, list(fab.switches), list(fab.cas)


def test_regex_pass_and_plain_loop_agree() -> None:
    fast = parse_default(TEXT, "f")
    assert ibnetdiscover._rows(TEXT) is not None  # the generated dump takes the regex pass
    crlf = TEXT.replace("\n", "\r\n")  # carriage returns: the plain loop, same lines
    assert ibnetdiscover._rows(crlf) is None
    assert _dump(parse_default(crlf, "f")) == _dump(fast)
    assert fast.summary()["hosts"] == SPEC.hosts


def test_small_blocks_give_the_same_fabric(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = _dump(parse_default(TEXT, "f"))
    p = tmp_path / "f.out"
    p.write_text(TEXT, encoding="utf-8")
    monkeypatch.setattr(load, "_BLOCK", 97)  # lines cross block ends; some blocks hold no line break
    monkeypatch.setattr(ibnetdiscover, "_STEP", 61)
    assert _dump(load_fabric(p)) == whole
    assert _dump(parse_default(TEXT, "f")) == whole


def test_error_line_in_a_late_block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = TEXT.splitlines()
    lines.insert(700, "garbage here")
    p = tmp_path / "f.out"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setattr(load, "_BLOCK", 4096)
    with pytest.raises(FabricError, match="unrecognised line: garbage here") as e:
        load_fabric(p)
    assert (e.value.file, e.value.line) == (str(p), 701)


def test_bad_bytes_named_by_line_in_any_block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(load, "_BLOCK", 1000)
    lines = TEXT.encode().splitlines(keepends=True)
    at = next(i for i in range(900, len(lines)) if b'"' in lines[i])
    for bad in (b"\xe9", "\ufffd".encode()):  # latin-1 (not UTF-8), and U+FFFD written by a lossy decoder
        changed = list(lines)
        changed[at] = changed[at].replace(b'"', b'"' + bad, 1)
        p = tmp_path / "f.out"
        p.write_bytes(b"".join(changed))
        with pytest.raises(FabricError, match="not UTF-8 text") as e:
            load_fabric(p)
        assert e.value.line == at + 1, bad
    p.write_bytes(b"".join(lines[:10]) + b"\xff" + b"".join(lines[10:]))
    with pytest.raises(FabricError, match=rf"byte {len(b''.join(lines[:10]))}\)") as e:
        load_fabric(p)
    assert e.value.line == 11


@pytest.mark.parametrize("bad", ["\udc80", "\udcff", "\ufffd"])
def test_surrogates_in_text_named_by_line(bad: str) -> None:
    lines = TEXT.splitlines(keepends=True)
    text = "".join(lines[:40]) + lines[40].replace('"', '"' + bad, 1) + "".join(lines[41:])
    with pytest.raises(FabricError, match="not UTF-8 text") as e:
        load_fabric(text)
    assert e.value.line == 41


def test_empty_and_binary_files_in_several_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(load, "_BLOCK", 16)
    p = tmp_path / "f.out"
    p.write_text(" \n\t\n" * 50)
    with pytest.raises(FabricError, match="snapshot is empty"):
        load_fabric(p)
    p.write_bytes(TEXT[:500].encode() + b"\x00\x01" + TEXT[500:].encode())
    with pytest.raises(FabricError, match="binary"):
        load_fabric(p)


def test_overlong_port_numbers_fail_clearly() -> None:
    head = 'Switch\t65 "S-0000000000000001"\t\t# "MF0;leaf:X/U1" enhanced port 0 lid 1 lmc 0\n'
    for line in (
        f'[{"9" * 5000}]\t"H-0000000000000002"[1](0000000000000002) \t\t# "gpu001 mlx5_0" lid 2 4xNDR\n',
        f'[1]\t"H-0000000000000002"[{"9" * 5000}](0000000000000002) \t\t# "gpu001 mlx5_0" lid 2 4xNDR\n',
    ):
        for text in (head + line, (head + line).replace("\n", "\r\n")):
            with pytest.raises(FabricError, match="port number out of range") as e:
                parse_default(text, "f")
            assert e.value.line == 2


_SMALL = fabric_gen.render_ibnetdiscover(
    fabric_gen.generate(fabric_gen.GenSpec(hosts=8, rails=2, su_size=4, sharp=1, unnamed=1, cut_cables=1))
)
_JUNK = st.sampled_from(["[", "]", '"', "#", " ", "\t", "9", "S", "Ca", "x", "=", "(", "\x00", "é", "\x0b", "H-"])


def _outcome(text: str) -> tuple:
    try:
        return ("ok", _dump(parse_default(text, "f")))
    except FabricError as e:
        return ("error", str(e), e.line)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_fuzz_regex_pass_is_the_plain_loop(data: st.DataObject) -> None:
    """Mutated dumps: the regex pass (LF) and the plain loop (CRLF) agree on the fabric or the error."""
    lines = _SMALL.splitlines()
    for _round in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(lines) - 1))
        op = data.draw(st.sampled_from(["cut", "dup", "junk", "del", "swap"]))
        if op == "cut":
            lines[i] = lines[i][: data.draw(st.integers(0, max(0, len(lines[i]) - 1)))]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "junk":
            j = data.draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:j] + "".join(data.draw(st.lists(_JUNK, min_size=1, max_size=3))) + lines[i][j:]
        elif op == "del":
            del lines[i]
        else:
            j = data.draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
    text = "\n".join(lines) + "\n"
    assert _outcome(text) == _outcome(text.replace("\n", "\r\n"))


PORTS = fabric_gen.render_ports(fabric_gen.generate(SPEC))
_SMALL_PORTS = fabric_gen.render_ports(
    fabric_gen.generate(fabric_gen.GenSpec(hosts=8, rails=2, su_size=4, sharp=1, unnamed=1, cut_cables=1))
)


def test_ports_regex_pass_and_plain_loop_agree() -> None:
    fast = parse_ports(PORTS, "f")
    rows, _unused = ibnetdiscover._port_rows(PORTS)
    assert rows and all(r[1] for r in rows)  # every line of the generated report takes the regex pass
    crlf = PORTS.replace("\n", "\r\n")  # carriage returns: the plain loop, same lines
    assert not any(r[1] for r in ibnetdiscover._port_rows(crlf)[0])
    assert _dump(parse_ports(crlf, "f")) == _dump(fast)
    assert fast.summary()["hosts"] == SPEC.hosts
    # the same fabric as the default format of the same generated fabric
    default = _dump(parse_default(TEXT, "f"))
    assert {k: v[4] for k, v in _dump(fast)[0].items()} == {k: v[4] for k, v in default[0].items()}
    assert {k: v[6] for k, v in _dump(fast)[1].items()} == {k: v[6] for k, v in default[1].items()}


def test_ports_small_blocks_and_late_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = _dump(parse_ports(PORTS, "f"))
    lines = PORTS.splitlines()
    p = tmp_path / "f.out"
    p.write_text(PORTS, encoding="utf-8")
    monkeypatch.setattr(load, "_BLOCK", 97)  # lines cross block ends; some blocks hold no line break
    monkeypatch.setattr(ibnetdiscover, "_STEP", 61)
    assert _dump(load_fabric(p, kind="ibnetdiscover-ports")) == whole
    assert _dump(parse_ports(PORTS, "f")) == whole
    lines.insert(700, "  # a comment")
    lines.insert(701, "")
    lines.insert(702, "garbage here")
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setattr(load, "_BLOCK", 4096)
    with pytest.raises(FabricError, match="cannot parse ports line: garbage here") as e:
        load_fabric(p)
    assert (e.value.file, e.value.line) == (str(p), 703)


def _ports_outcome(text: str) -> tuple:
    try:
        return ("ok", _dump(parse_ports(text, "f")))
    except FabricError as e:
        return ("error", str(e), e.line)


_PORTS_JUNK = st.sampled_from(
    ["'", "#", " ", "\t", "9", "SW", "CA", "RT", "x", "-", "(", ")", "é", "\x0b", "0x", "1234567"]
)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_fuzz_ports_regex_pass_is_the_plain_loop(data: st.DataObject) -> None:
    """Mutated ports reports: the regex pass (LF) and the plain loop (CRLF) agree on the fabric or the error."""
    lines = _SMALL_PORTS.splitlines()
    for _round in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(lines) - 1))
        op = data.draw(st.sampled_from(["cut", "dup", "junk", "del", "swap", "upper"]))
        if op == "cut":
            lines[i] = lines[i][: data.draw(st.integers(0, max(0, len(lines[i]) - 1)))]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "junk":
            j = data.draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:j] + "".join(data.draw(st.lists(_PORTS_JUNK, min_size=1, max_size=3))) + lines[i][j:]
        elif op == "del":
            del lines[i]
        elif op == "upper":
            lines[i] = lines[i].upper()
        else:
            j = data.draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
    text = "\n".join(lines) + "\n"
    assert _ports_outcome(text) == _ports_outcome(text.replace("\n", "\r\n"))
