"""Change one pool's size in the inventory in place, keeping every other byte of the file.

The review diff of a scale pull request must be exactly the changed number. ruamel.yaml's
round-trip loader finds the node (whatever the file's style: block or flow mappings, comments,
quotes, anchors) and reports where its scalar sits; the edit is a splice of that scalar, and the
result is parsed again with the round-trip loader and compared with the expected data.

Why not ``YAML().dump()`` of the edited document: a round-trip dump reproduces a file only when
its indentation is uniform and matches the dumper's settings, when ``preserve_quotes`` and the
line width were set right, and when no construct is normalised (``"stor*"`` loses its quotes,
mixed sequence indents are unified). Any of those shows up as noise in review; a splice cannot.
"""

from __future__ import annotations

import difflib
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.deps import missing
from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError, Issue, ModelError
from ansible_collections.gpufleet.core.plugins.module_utils.model.inventory import vars_files

try:
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.error import YAMLError
except ImportError:  # importing works without it; the first use raises a clear error
    _ruamel = missing("ruamel.yaml", "ruamel.yaml")
    YAML, CommentedMap, CommentedSeq, YAMLError = _ruamel, dict, list, _ruamel.YAMLError

UNITS = ("nodes", "gpus")
_INT = re.compile(r"[0-9]+")


class ScaleError(GpufleetError):
    """A scale request that cannot be carried out; nothing was changed."""


@dataclass(frozen=True)
class SizeEdit:
    """One pool size change: where it is and the file's text before and after."""

    file: Path
    line: int  # 1-based line of the size value
    pool: str
    old_unit: str | None  # None: the pool had no size (a spare taking the rest)
    old_size: int | None
    unit: str
    size: int
    old_text: str
    new_text: str

    @property
    def changed(self) -> bool:
        return self.old_text != self.new_text


def round_trip_yaml() -> YAML:
    """ruamel's round-trip YAML as the scale edits use it: quotes kept, no line folded when dumped."""
    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.width = 4096
    return y


def _load_rt(text: str, file: Path) -> Any:
    try:
        return round_trip_yaml().load(text)
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ModelError([Issue(str(file), mark.line + 1 if mark else None, "", f"not valid YAML: {exc}")]) from None


_POOLS_KEY = re.compile(r"^(gpufleet_pools|\"gpufleet_pools\"|'gpufleet_pools')\s*:", re.MULTILINE)


def pools_file(inventory_dir: Path) -> Path:
    """The vars file that defines ``gpufleet_pools`` (a top-level key: it starts a line)."""
    for f in vars_files(Path(inventory_dir)):
        text = f.read_text(encoding="utf-8")
        if text.lstrip().startswith("$ANSIBLE_VAULT"):
            continue
        if _POOLS_KEY.search(text):
            return f
    raise ScaleError(f"{Path(inventory_dir) / 'group_vars' / 'all'}: gpufleet_pools is not defined in any vars file")


def _offset(text: str, line: int, col: int) -> int:
    """Character offset of 0-based (line, col) in text."""
    lines = text.splitlines(keepends=True)
    return sum(len(x) for x in lines[:line]) + col


def _scalar_span(text: str, start: int) -> tuple[int, int]:
    """The span of a plain integer scalar starting at ``start``."""
    m = _INT.match(text, start)
    if not m:
        return start, start
    return m.start(), m.end()


def plan_size_edit(inventory_dir: str | Path, pool: str, size: int, unit: str | None = None) -> SizeEdit:
    """Compute (without writing) the edit that sets ``pool``'s size; ScaleError on bad input."""
    if isinstance(size, bool) or not isinstance(size, int):
        raise ScaleError(f"size must be a whole number, got {size!r}")
    if size < 0:
        raise ScaleError(f"size must be 0 or more, got {size}")
    if unit is not None and unit not in UNITS:
        raise ScaleError(f"size_unit must be one of {', '.join(UNITS)}, got {unit!r}")
    file = pools_file(Path(inventory_dir))
    text = file.read_bytes().decode("utf-8")  # not read_text: keep CRLF line ends as they are
    doc = _load_rt(text, file)
    if not isinstance(doc, CommentedMap) or "gpufleet_pools" not in doc:
        raise ScaleError(f"{file}: gpufleet_pools is not a top-level key of this file")
    pools = doc["gpufleet_pools"]
    if not isinstance(pools, CommentedSeq):
        raise ScaleError(f"{file}: gpufleet_pools must be a list")
    names = [p.get("name") for p in pools if isinstance(p, CommentedMap)]
    matches = [p for p in pools if isinstance(p, CommentedMap) and p.get("name") == pool]
    if not matches:
        raise ScaleError(f"{file}: gpufleet_pools: unknown pool {pool!r} (known: {', '.join(sorted(map(str, names)))})")
    entry = matches[0]
    index = list(pools).index(entry)
    where = f"{file}:{entry.lc.line + 1}: gpufleet_pools[{index}]"
    sz = entry.get("size")
    if sz is None:
        raise ScaleError(
            f"{where}: pool {pool!r} has no size (a {entry.get('kind', '?')} pool that takes the rest of the "
            "cluster); scale the pools around it instead"
        )
    if not isinstance(sz, CommentedMap) or len(sz) != 1 or next(iter(sz)) not in UNITS:
        raise ScaleError(f"{where}.size: expected a mapping with exactly one of nodes/gpus")
    old_unit = str(next(iter(sz)))
    new_unit = unit or old_unit
    vline, vcol = sz.lc.value(old_unit)
    kline, kcol = sz.lc.key(old_unit)
    vstart = _offset(text, vline, vcol)
    s, e = _scalar_span(text, vstart)
    old_value = sz[old_unit]
    if s == e or isinstance(old_value, bool) or not isinstance(old_value, int) or int(text[s:e]) != old_value:
        raise ScaleError(
            f"{file}:{vline + 1}: gpufleet_pools[{index}].size.{old_unit}: not a literal whole number "
            f"({text[vstart : vstart + 20].splitlines()[0]!r}); change it by hand"
        )
    new_text = text[:s] + str(size) + text[e:]
    if new_unit != old_unit:
        kstart = _offset(text, kline, kcol)
        if text[kstart : kstart + len(old_unit)] != old_unit:
            raise ScaleError(
                f"{file}:{kline + 1}: cannot rename key {old_unit!r} (quoted or unusual key); edit by hand"
            )
        if kstart > s:  # keys precede values; guard anyway
            raise ScaleError(f"{file}:{kline + 1}: unexpected layout of size; edit by hand")
        new_text = new_text[:kstart] + new_unit + new_text[kstart + len(old_unit) :]
    _verify(_plain(doc), new_text, file, index, new_unit, size, text)
    return SizeEdit(
        file=file,
        line=vline + 1,
        pool=pool,
        old_unit=old_unit,
        old_size=old_value,
        unit=new_unit,
        size=size,
        old_text=text,
        new_text=new_text,
    )


def _plain(node: Any) -> Any:
    if isinstance(node, dict):
        return {str(k): _plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v) for v in node]
    return node


def _verify(expected: dict, new_text: str, file: Path, index: int, unit: str, size: int, old_text: str) -> None:
    """The new text parses and differs from the old one (``expected``: its data) exactly in that pool's size."""
    expected["gpufleet_pools"][index]["size"] = {unit: size}
    got = _plain(_load_rt(new_text, file))
    if got != expected:
        raise ScaleError(f"{file}: editing the size in place would change more than the size; edit by hand")
    old_lines, new_lines = old_text.splitlines(keepends=True), new_text.splitlines(keepends=True)
    if len(old_lines) != len(new_lines) or sum(a != b for a, b in zip(old_lines, new_lines, strict=True)) > 1:
        raise ScaleError(f"{file}: editing the size in place would change more than one line; edit by hand")


def unified_line_diff(edit: SizeEdit) -> str:
    """A small human diff of the edit (for module diff output and logs)."""
    buf = io.StringIO()
    buf.writelines(
        difflib.unified_diff(
            edit.old_text.splitlines(keepends=True),
            edit.new_text.splitlines(keepends=True),
            fromfile=f"a/{edit.file.name}",
            tofile=f"b/{edit.file.name}",
            n=2,
        )
    )
    return buf.getvalue()
