"""A dump file is read once: its head picks the parser, and the whole-file checks (long numbers, NUL,
encoding) run block by block before the parser reads each block, with the same errors and lines as
the full scan they replace. Timings live in bench/, not here."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from gpufleet_testlib import fabric_gen

from ansible_collections.gpufleet.core.plugins.module_utils.fabric import load
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.load import load_fabric
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.model import FabricError

TEXT = fabric_gen.render_ibnetdiscover(
    fabric_gen.generate(fabric_gen.GenSpec(hosts=32, rails=2, su_size=8, sharp=1, unnamed=1, cut_cables=1, seed=5))
)


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Blocks of 512 bytes, a head of 1,024 characters; returns the list of reads (one per file read)."""
    monkeypatch.setattr(load, "_BLOCK", 512)
    monkeypatch.setattr(load, "_HEAD", 1024)
    reads: list[int] = []
    real = load._blocks

    def counted(p: Path) -> Iterator[str]:
        reads.append(1)
        yield from real(p)

    monkeypatch.setattr(load, "_blocks", counted)
    return reads


def _write(tmp_path: Path, lines: list[str]) -> Path:
    p = tmp_path / "fabric.ibnetdiscover"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def test_a_dump_is_read_once_and_parses_as_the_text(tmp_path: Path, small_blocks: list[int]) -> None:
    p = _write(tmp_path, TEXT.splitlines())
    fab = load_fabric(p)
    assert len(small_blocks) == 1
    whole = load_fabric(TEXT)
    assert sorted(fab.switches) == sorted(whole.switches)
    assert {k: c.switches for k, c in fab.cas.items()} == {k: c.switches for k, c in whole.cas.items()}
    assert fab.summary() == whole.summary()


def test_a_long_number_past_the_head_is_refused_with_its_line(tmp_path: Path, small_blocks: list[int]) -> None:
    lines = TEXT.splitlines()
    at = len(lines) - 10  # far past the 1,024-character head
    lines[at] = lines[at] + " lid " + "7" * 65
    with pytest.raises(FabricError, match="refused: a number longer than 64 digits") as e:
        load_fabric(_write(tmp_path, lines))
    assert e.value.line == at + 1
    lines[at] = lines[at].replace("7" * 65, "7" * 64)  # 64 digits are allowed
    load_fabric(_write(tmp_path, lines))


def test_a_late_fault_is_named_by_its_line_after_non_ascii_blocks(tmp_path: Path, small_blocks: list[int]) -> None:
    """The lines before a late fault are counted from the file only then (no count per block): in
    characters for a long number, in bytes for a bad byte, both past blocks where the two differ."""
    lines = TEXT.splitlines()
    for i in range(0, 200, 7):  # two-byte characters in comments over the first blocks
        lines.insert(i, "# r\u00e9seau \u00e9tage")
    at = len(lines) - 10
    lines[at] = lines[at] + " lid " + "7" * 65
    with pytest.raises(FabricError, match="longer than 64 digits") as e:
        load_fabric(_write(tmp_path, lines))
    assert e.value.line == at + 1
    lines[at] = lines[at].replace("7" * 65, "7")
    p = _write(tmp_path, lines)
    data = p.read_bytes()
    cut = data.index(lines[at].encode())
    p.write_bytes(data[:cut] + b"\xff" + data[cut:])
    with pytest.raises(FabricError, match="not UTF-8 text") as e:
        load_fabric(p)
    assert e.value.line == at + 1


@pytest.mark.parametrize("kind", ["auto", "ibnetdiscover"])
def test_a_nul_past_the_head(tmp_path: Path, small_blocks: list[int], kind: str) -> None:
    """auto: the binary-file error, as the full scan gave; an explicit kind: the parser names the line."""
    lines = TEXT.splitlines()
    at = len(lines) - 5
    lines[at] = "\x00" + lines[at]
    with pytest.raises(FabricError, match="binary" if kind == "auto" else "unrecognised line") as e:
        load_fabric(_write(tmp_path, lines), kind=kind)
    assert e.value.file is not None and e.value.file.endswith("fabric.ibnetdiscover")


def test_bad_bytes_past_the_head_are_named_by_line(tmp_path: Path, small_blocks: list[int]) -> None:
    lines = TEXT.encode().splitlines()
    at = len(lines) - 3
    lines[at] = lines[at] + b" \xe9"
    p = tmp_path / "fabric.ibnetdiscover"
    p.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(FabricError, match="not UTF-8 text") as e:
        load_fabric(p)
    assert e.value.line == at + 1


def test_a_blank_head_falls_back_to_the_full_scan(tmp_path: Path, small_blocks: list[int]) -> None:
    """A head of blank lines: the whole-file scan decides (empty), or the head shows no format, as before."""
    p = _write(tmp_path, [" "] * 700)
    with pytest.raises(FabricError, match="snapshot is empty"):
        load_fabric(p)
    assert len(small_blocks) == 2  # the head, then the scan
    p = _write(tmp_path, [" "] * 600 + TEXT.splitlines())  # 1,200 characters of blank lines first
    with pytest.raises(FabricError, match="cannot tell the fabric format"):
        load_fabric(p)
    assert load_fabric(p, kind="ibnetdiscover").summary() == load_fabric(TEXT).summary()


@pytest.mark.parametrize(
    ("text", "bad"),
    [("7" * 64, False), ("7" * 65, True), ("x" + "7" * 65, True), ("\u0667" * 65, True), ("\u0667" * 64 + "é", False)],
)
def test_long_numbers_in_ascii_and_other_digits(text: str, bad: bool) -> None:
    """The ASCII fast path (translate, substring search) and the regex for other text agree."""
    if bad:
        with pytest.raises(FabricError, match="longer than 64 digits") as e:
            load._check_numbers("a\nb\n" + text + "\n", "f")
        assert e.value.line == 3
    else:
        load._check_numbers("a\nb\n" + text + "\n", "f")
