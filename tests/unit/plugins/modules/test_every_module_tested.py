"""Every module has an in-process unit test here (docs/adr/code-shape.md, "One module skeleton"): some
test file of this folder runs it through ``module_harness.run_module``."""

from __future__ import annotations

import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODULES = HERE.parents[3] / "plugins" / "modules"


def test_every_module_has_an_in_process_test() -> None:
    modules = {p.stem for p in MODULES.glob("*.py") if p.stem != "__init__"}
    assert len(modules) >= 10
    run = set()
    for f in HERE.glob("test_*.py"):
        run |= set(re.findall(r"run_module\(\s*[\"'](\w+)[\"']", f.read_text(encoding="utf-8")))
    assert sorted(modules - run) == []
