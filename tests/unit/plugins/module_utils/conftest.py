"""Fixtures of the core's unit tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from render_fixtures import copy_sample


@pytest.fixture
def inv(tmp_path: Path) -> Path:
    """A copy of the sample inventory (group_vars and hosts.yml, no snapshots) to edit."""
    return copy_sample(tmp_path)
