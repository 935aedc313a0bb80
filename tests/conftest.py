"""Shared test setup.

``scripts/checkout_path.use_checkout()`` puts ``.build/collections`` on ``sys.path``; inside it
``ansible_collections/gpufleet/core`` is a symlink to the repository root, so tests import the
collection exactly as Ansible does (``ansible_collections.gpufleet.core.plugins...``).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
BIN = REPO / ".build" / "bin"


sys.path.append(str(REPO / "scripts"))
sys.path.insert(0, str(REPO / "tests" / "lib"))  # test helpers (render_fixtures, fabric_helpers, ...)
from checkout_path import use_checkout  # the same link the scripts and benchmarks use

use_checkout()

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require_tool(name: str, why: str = "") -> str:
    """Return the path of an external tool a test needs.

    Outside CI a missing tool skips the test with a clear reason; in CI (``CI=true``) a missing
    prerequisite is a failure, never a silent skip.
    """
    found = shutil.which(name) or (str(BIN / name) if (BIN / name).exists() else None)
    if found:
        return found
    msg = f"required tool {name!r} not found on PATH or in {BIN}" + (f" ({why})" if why else "")
    msg += "; run `make setup` (README) to install it"
    if IN_CI:
        pytest.fail(msg, pytrace=False)
    pytest.skip(msg)
    raise AssertionError("unreachable")


def require_path(path: Path, why: str = "") -> Path:
    """Like require_tool, for a file or directory (e.g. ../shared upstream data)."""
    if path.exists():
        return path
    msg = f"required path {path} missing" + (f" ({why})" if why else "")
    if IN_CI:
        pytest.fail(msg, pytrace=False)
    pytest.skip(msg)
    raise AssertionError("unreachable")


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    return require_path(SHARED, "upstream CRDs, chart values and fabric samples")


@pytest.fixture(scope="session")
def files(tmp_path_factory: pytest.TempPathFactory) -> Mapping[str, bytes]:
    """The sample fleet with generated snapshots (``render_fixtures.make_inventory``) rendered once per
    session: {path in the GitOps tree: bytes}, read-only (``render_fixtures.load`` parses one file)."""
    from render_fixtures import make_inventory

    from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_inventory

    return MappingProxyType(render_inventory(make_inventory(tmp_path_factory.mktemp("inv"))).files)
