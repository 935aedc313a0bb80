"""The lead ``tests/conftest.py`` (``require_tool``, ``require_path``: a skip locally, a failure with
CI=true) for harnesses and test libraries, loaded by file path under one fixed name, so it is loaded
once: with nested conftests ``import conftest`` yields whichever one pytest imported last."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

NAME = "gpufleet_tests_conftest"
PATH = Path(__file__).resolve().parent.parent / "conftest.py"


def lead_conftest() -> ModuleType:
    if NAME not in sys.modules:
        spec = importlib.util.spec_from_file_location(NAME, PATH)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {PATH}")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[NAME] = mod
        spec.loader.exec_module(mod)
    return sys.modules[NAME]
