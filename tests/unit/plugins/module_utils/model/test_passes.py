"""``validate()`` is the table ``PASSES``; each pass names its rows of docs/threat-model.md and each
row names its passes back, and every file and function the threat model names exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.errors import ModelError
from ansible_collections.gpufleet.core.plugins.module_utils.model import validation
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import PASSES

REPO = Path(__file__).resolve().parents[5]
CORE = REPO / "plugins" / "module_utils"
ROW = re.compile(r"^\| (\d+) \| .* \| ([^|]*) \|$")
PASS_NAMES = re.compile(r"validate pass(?:es)?: ((?:`\w+`(?:, )?)+)")
FILE_FUNCS = re.compile(r"`([\w/]+\.py)`(?: \(((?:`\w+`(?:, )?)+)\))?")


def _rows() -> dict[int, str]:
    """Row number -> its "where" cell, from the threat table."""
    rows = {}
    for line in (REPO / "docs" / "threat-model.md").read_text(encoding="utf-8").splitlines():
        m = ROW.match(line)
        if m:
            rows[int(m.group(1))] = m.group(2)
    return rows


def _named_passes(cell: str) -> set[str]:
    m = PASS_NAMES.search(cell)
    return set(re.findall(r"`(\w+)`", m.group(1))) if m else set()


def test_the_threat_table_is_read() -> None:
    rows = _rows()
    assert sorted(rows) == list(range(1, len(rows) + 1)) and len(rows) >= 18


def test_every_pass_names_rows_that_name_it_back() -> None:
    rows = _rows()
    for check in PASSES:
        assert check.threats, f"pass {check.name!r} names no threat-model row"
        for row in check.threats:
            assert row in rows, f"pass {check.name!r} names threat row {row}, which does not exist"
            assert check.name in _named_passes(rows[row]), f"threat row {row} does not name pass {check.name!r}"


def test_every_row_names_passes_that_exist_and_code_that_exists() -> None:
    names = {check.name for check in PASSES}
    assert len(names) == len(PASSES), "two passes share a name"
    for row, cell in _rows().items():
        for name in _named_passes(cell):
            assert name in names, f"threat row {row} names pass {name!r}; PASSES has {sorted(names)}"
            assert row in next(c for c in PASSES if c.name == name).threats, f"pass {name!r} omits row {row}"
        found = FILE_FUNCS.findall(cell)
        assert found or _named_passes(cell), f"threat row {row} names no code that enforces it"
        for path, funcs in found:
            candidates = [CORE / path, REPO / path, *REPO.glob(f"tests/**/{path}")]
            where = next((p for p in candidates if p.is_file()), None)
            assert where, f"threat row {row} names {path}, which does not exist"
            text = where.read_text(encoding="utf-8")
            for func in re.findall(r"`(\w+)`", funcs):
                assert re.search(rf"^\s*(def|class) {func}\b|^{func}\s*[:=]", text, re.M), (
                    f"threat row {row} names {func} in {path}, which does not define it"
                )


def test_validate_runs_every_pass(inv: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pass added to the table is run: each pass, made to fail, fails validate()."""
    from ansible_collections.gpufleet.core.plugins.module_utils.model.inventory import load_inventory

    raw = load_inventory(inv)
    validation.validate(raw)
    for check in PASSES:
        failing = tuple(
            c if c is not check else validation.Pass(c.name, c.threats, lambda r: [r.issue(("x",), "planted")])
            for c in PASSES
        )
        monkeypatch.setattr(validation, "PASSES", failing)
        with pytest.raises(ModelError, match="planted"):
            validation.validate(raw)
