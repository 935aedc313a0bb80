"""Read a fabric input of any kind into a :class:`Fabric`: find its kind, hand it to its parser.

The parsers (``ibnetdiscover``, ``labels``, ``file``) know only the model (``fabric/model.py``);
this module alone knows every parser, so nothing imports back.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from ansible_collections.gpufleet.core.plugins.module_utils.fabric.file import parse_fabric_yaml
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.ibnetdiscover import parse_default, parse_ports
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.model import Fabric, FabricError, merge_into
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.node_labels import parse_nodes_text
from ansible_collections.gpufleet.core.plugins.module_utils.model.nodes import MAX_FABRIC_BYTES

# kind -> parser(text, source); "auto" detects the kind from the first lines
PARSERS: dict[str, Callable[[str, str], Fabric]] = {
    "ibnetdiscover": parse_default,
    "ibnetdiscover-ports": parse_ports,
    "labels": parse_nodes_text,
    "file": parse_fabric_yaml,
}

_PATH_SUFFIXES = (".out", ".txt", ".yaml", ".yml", ".json", ".ibnetdiscover", ".ibnd")

MAX_DIGITS = 64  # digits in one number of a fabric snapshot (checked before parsing: int() of 5,000 fails)
_LONG_NUMBER = re.compile(r"\d{65}")  # Unicode digits too (as the parsers' \d); linear: <= 65 steps a position
# ASCII text: every digit becomes "0", every other byte a space, then one substring search (C, ~20x the regex)
_DIGITS_ONLY = bytes(48 if 48 <= b <= 57 else 32 for b in range(256))
_LONG_RUN = b"0" * (MAX_DIGITS + 1)

# parsers that take the text as an iterable of blocks (each ending at a line break)
STREAMED: dict[str, Callable[[Iterable[str], str], Fabric]] = {
    "ibnetdiscover": parse_default,
    "ibnetdiscover-ports": parse_ports,
}

KINDS = ("auto", *PARSERS)
# fabric.source (model/fabric_sources.py) -> the kind its file is read as ("auto": detected from its head);
# a source that reads the nodes snapshot has no file of its own
SOURCE_KIND = {"ibnetdiscover": "auto", "file": "file"}


_BLOCK = 1 << 20  # bytes read at a time (cut at a line break): a dump is streamed, never held whole
_HEAD = 1 << 20  # detect_kind looks at the first lines only
_BAD_CHARS = re.compile("[\udc80-\udcff\ufffd]")  # undecodable command output (surrogates), U+FFFD
_BINARY = "the fabric snapshot is binary, not ibnetdiscover text; run discover again"
_NOT_UTF8 = (
    "not UTF-8 text; node descriptions must be ASCII: fix the host's NodeDescription (rdma-ndd) and run discover again"
)


def _path_of(path_or_text: str | Path) -> Path | None:
    """The path named by ``path_or_text``, or None when it is the text itself."""
    if isinstance(path_or_text, Path):
        return path_or_text
    if (
        "\n" not in path_or_text
        and len(path_or_text) < 4096
        and (
            Path(path_or_text).is_file()
            or (
                not any(c.isspace() for c in path_or_text)
                and not path_or_text.startswith(("{", "["))
                and ("/" in path_or_text or path_or_text.endswith(_PATH_SUFFIXES))
            )
        )
    ):
        return Path(path_or_text)
    return None


def _line_at(text: str, pos: int) -> int:
    """Line number (as ``str.splitlines`` counts them) of the character at ``pos``."""
    before = text[:pos].splitlines(keepends=True)
    if not before:
        return 1
    last = before[-1]
    return len(before) + (1 if last.splitlines()[0] != last else 0)


def _check_text(text: str, source: str) -> None:
    """Surrogates or U+FFFD anywhere: one C-level search (none possible in ASCII text, O(1) to know)."""
    if text.isascii():
        return
    m = _BAD_CHARS.search(text)
    if m is not None:
        raise FabricError(_NOT_UTF8, file=source, line=_line_at(text, m.start()))


def _blocks(p: Path) -> Iterator[str]:
    """The file as text blocks of about ``_BLOCK`` bytes, each ending at a line break, checked
    (strict UTF-8, no U+FFFD) block by block; a bad byte is reported with its line."""
    source = str(p)
    try:
        if p.stat().st_size > MAX_FABRIC_BYTES:  # bound before reading (a PR can commit any file)
            raise FabricError(f"refused: larger than {MAX_FABRIC_BYTES} bytes", file=source)
        with p.open("rb") as f:
            offset = 0  # bytes before ``data``
            parts: list[bytes] = []  # a line longer than a block, so far
            while True:
                more = f.read(_BLOCK)
                cut = more.rfind(b"\n") + 1 if more else len(more)
                if more and cut == 0:  # no line break yet: read on
                    parts.append(more)
                    continue
                data = b"".join([*parts, more[:cut]])
                parts = [more[cut:]] if cut < len(more) else []
                if not data:
                    return
                cut = len(data)
                if data.isascii():
                    yield data.decode("ascii")
                else:
                    try:
                        text = data.decode("utf-8")
                    except UnicodeDecodeError as e:
                        raise FabricError(
                            f"not UTF-8 text (byte {offset + e.start}); node descriptions must be ASCII: fix the"
                            " host's NodeDescription (rdma-ndd) and run discover again",
                            file=source,
                            line=_lines_before(p, offset) + data[: int(e.start)].count(b"\n") + 1,
                        ) from None
                    m = _BAD_CHARS.search(text)
                    if m is not None:
                        with p.open("rb") as g:  # the error path only: count lines as splitlines does
                            before = g.read(offset).decode("utf-8", "replace")
                        raise FabricError(_NOT_UTF8, file=source, line=_line_at(before + text, len(before) + m.start()))
                    yield text
                offset += cut
    except IsADirectoryError:
        raise FabricError("is a directory, expected a fabric file", file=source) from None
    except FileNotFoundError:
        raise FabricError("fabric file not found", file=source) from None
    except OSError as e:
        raise FabricError(f"cannot read fabric file: {e.strerror or e}", file=source) from None


def _lines_before(p: Path, offset: int, chars: bool = False) -> int:
    """Line breaks in the first ``offset`` bytes (``chars``: characters) of a file that decoded
    cleanly that far: counted on an error path only, so a streamed read counts no lines."""
    if chars:
        with p.open(encoding="utf-8", newline="") as g:
            return g.read(offset).count("\n")
    with p.open("rb") as g:
        return g.read(offset).count(b"\n")


def _check_numbers(text: str, source: str, path: Path | None = None, chars_before: int = 0) -> None:
    """No number longer than MAX_DIGITS (one linear pass over the text in C). ``text`` follows
    ``chars_before`` characters of the file at ``path`` (for the line of a fault)."""
    if text.isascii():
        pos = text.encode("ascii").translate(_DIGITS_ONLY).find(_LONG_RUN)
    else:
        long = _LONG_NUMBER.search(text)
        pos = long.start() if long else -1
    if pos >= 0:
        line = (_lines_before(path, chars_before, chars=True) if path else 0) + text.count("\n", 0, pos) + 1
        raise FabricError(f"refused: a number longer than {MAX_DIGITS} digits", file=source, line=line)


def _scan(p: Path) -> tuple[str, bool, bool]:
    """Check a whole file before parsing it (encoding first, as for text): (head, any non-blank, any NUL)."""
    head, blank, nul = "", True, False
    chars = 0
    for text in _blocks(p):
        _check_numbers(text, str(p), p, chars)
        chars += len(text)
        if len(head) < _HEAD:
            head += text[: _HEAD - len(head)]
        if blank and not text.isspace():
            blank = False
        if not nul and "\x00" in text:
            nul = True
    return head, not blank, nul


def _checked(blocks: Iterator[str], p: Path, binary: bool) -> Iterator[str]:
    """The blocks of a streamed file, each checked before the parser sees it: the checks of
    :func:`_scan` (``binary``: a NUL is the binary-file error), in one read of the file."""
    chars = 0
    for text in blocks:
        _check_numbers(text, str(p), p, chars)
        if binary and "\x00" in text:
            raise FabricError(_BINARY, file=str(p))
        chars += len(text)
        yield text


def _stream_head(p: Path) -> tuple[str, list[str], Iterator[str]] | None:
    """The first blocks of a file (at least ``_HEAD`` characters, or all of it) when they hold a
    non-blank line and no NUL, with the blocks read and the rest; None otherwise (the full scan
    names the fault)."""
    blocks = _blocks(p)
    first: list[str] = []
    size = 0
    for text in blocks:
        first.append(text)
        size += len(text)
        if size >= _HEAD:
            break
    head = "".join(first)[:_HEAD]
    if not head or head.isspace() or "\x00" in head:
        blocks.close()
        return None
    return head, first, blocks


def detect_kind(text: str) -> str:
    """Guess the input format from its first meaningful lines."""
    for raw in text[:_HEAD].splitlines()[:400]:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith(
            (
                "Switch\t",
                "Switch ",
                "Ca\t",
                "Ca ",
                "Rt\t",
                "vendid=",
                "devid=",
                "sysimgguid=",
                "switchguid=",
                "caguid=",
                "rtguid=",
            )
        ):
            return "ibnetdiscover"
        if re.match(r"^(SW|CA|RT)\s+\d+\s+\d+\s+0x[0-9a-fA-F]+", line):
            return "ibnetdiscover-ports"
        if line.startswith(("apiVersion:", "kind:", "{", "items:")):
            return "labels"
        if line.startswith(("switches:", "blocks:", "domains:", "---")):
            return "file"
        break
    raise FabricError(
        "cannot tell the fabric format (expected ibnetdiscover output, -p ports output, "
        "a Kubernetes Node list or a fabric YAML file); pass kind="
    )


def load_source(source: str, path: str | Path, kind: str = "auto") -> Fabric:
    """The fabric of one input file of ``source`` (a row of model/fabric_sources.py); ``kind`` narrows it
    to one of the source's own formats (``ibnetdiscover-ports`` for ``ibnetdiscover``), else detected."""
    if source not in SOURCE_KIND:
        raise FabricError(f"unknown fabric source {source!r}; expected one of {', '.join(SOURCE_KIND)}")
    return load_fabric(str(path), kind=kind if kind != "auto" and kind.startswith(source) else SOURCE_KIND[source])


def load_fabric(path_or_text: str | Path | Iterable[str | Path], kind: str = "auto") -> Fabric:
    """Parse one fabric input (a path or the text itself) into a :class:`Fabric`.

    ``kind``: ``auto`` | ``ibnetdiscover`` | ``ibnetdiscover-ports`` | ``labels`` | ``file``.
    A list of inputs (e.g. one ibnetdiscover dump per rail subnet) is merged into one fabric.
    """
    if kind not in KINDS:
        raise FabricError(f"unknown fabric kind {kind!r}; expected one of {', '.join(KINDS)}")
    if not isinstance(path_or_text, (str, Path)):
        items = list(path_or_text)
        if not items:
            raise FabricError("no fabric input given")
        merged = Fabric(source=", ".join(str(i) for i in items))
        for item in items:
            merge_into(merged, load_fabric(item, kind))
        return merged.finish()
    p = _path_of(path_or_text)
    if p is None:
        text = str(path_or_text)
        source = "<text>"
        _check_text(text, source)
        _check_numbers(text, source)
        head, nonblank, nul = text, bool(text) and not text.isspace(), "\x00" in text  # no copy of the text
        k = _kind(kind, head, nonblank, nul, source)
        return PARSERS[k](text, source)
    source = str(p)
    got = _stream_head(p)
    if got is not None:  # one read: the checks run block by block as the parser reads on
        head, first, rest = got
        k = _kind(kind, head, True, False, source)
        blocks = _checked(itertools.chain(first, rest), p, kind == "auto")
    else:
        head, nonblank, nul = _scan(p)
        k = _kind(kind, head, nonblank, nul, source)
        blocks = _blocks(p)
    if k in STREAMED:  # line by line, block by block: the dump is never held whole
        return STREAMED[k](blocks, source)
    return PARSERS[k]("".join(blocks), source)


def _kind(kind: str, head: str, nonblank: bool, nul: bool, source: str) -> str:
    """The parser for an input: ``kind``, or the one its head shows (``auto``: empty and binary
    inputs refused first)."""
    if kind != "auto":
        return kind
    if not nonblank:
        raise FabricError("the fabric snapshot is empty; run discover again", file=source)
    if nul:
        raise FabricError(_BINARY, file=source)
    try:
        return detect_kind(head)
    except FabricError as exc:
        raise FabricError(
            f"{exc.message.removesuffix('; pass kind=')}: check the file, or the fabric source"
            " (gpufleet_clusters[].fabric.source, or the kind option of the fabric_facts module)",
            file=source,
        ) from None
