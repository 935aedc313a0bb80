"""No function in plugins/, scripts/ or bench/ (the folders of SCANNED) is longer than MAX_LINES, but the named
exceptions.

A function's length is its ``def`` line to its last line (``end_lineno - lineno + 1``: signature,
docstring, body, blank lines and comments inside), nested functions counted inside their parent and on
their own. EXCEPTIONS may only shrink: an entry must still be over the limit (else remove it), and
docs/adr/code-shape.md names each one and why.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCANNED = ("plugins", "scripts", "bench")
MAX_LINES = 80

# "path relative to the repository::function": why it is still over MAX_LINES (empty)
EXCEPTIONS: dict[str, str] = {}


def _lengths() -> dict[str, int]:
    out: dict[str, int] = {}
    for path in sorted(p for folder in SCANNED for p in (ROOT / folder).rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                key = f"{rel}::{node.name}"
                out[key] = max(out.get(key, 0), node.end_lineno - node.lineno + 1)  # type: ignore[operator]
    return out


LENGTHS = _lengths()


def test_the_scan_sees_the_plugins_scripts_and_benches() -> None:
    assert len(LENGTHS) > 500
    assert "plugins/module_utils/model/validation.py::reference_issues" in LENGTHS
    assert "scripts/gpufleet.py::main" in LENGTHS
    assert "bench/compare.py::main" in LENGTHS


def test_no_function_over_the_limit_but_the_exceptions() -> None:
    over = {k: n for k, n in LENGTHS.items() if n > MAX_LINES and k not in EXCEPTIONS}
    assert not over, (
        f"functions over {MAX_LINES} lines (split them into named helpers or a table of rows): "
        + ", ".join(f"{k} ({n})" for k, n in sorted(over.items()))
    )


def test_every_exception_is_still_over_the_limit() -> None:
    gone = [k for k in EXCEPTIONS if k not in LENGTHS]
    assert not gone, f"no such function any more, remove from EXCEPTIONS: {gone}"
    short = {k: LENGTHS[k] for k in EXCEPTIONS if LENGTHS[k] <= MAX_LINES}
    assert not short, f"no longer over the limit, remove from EXCEPTIONS (and docs/adr/code-shape.md): {short}"


def test_every_exception_is_named_in_the_adr() -> None:
    adr = (ROOT / "docs" / "adr" / "code-shape.md").read_text(encoding="utf-8")
    missing = [k for k in EXCEPTIONS if f"`{k.split('::')[1]}`" not in adr]
    assert not missing, f"name these in docs/adr/code-shape.md: {missing}"
