"""natural_key orders names as people count: n9 before n10, text parts compared as text."""

from __future__ import annotations

import re

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.topology.names import natural_key

NAMES = ["n10", "n9", "n009", "", "7", "a", "a1b2", "a1b10", "gpu-east-0001", "1rack", "x.y.z", "sw2-3", "n"]


def _reference(s: str) -> tuple:
    """The key before the slice conversion: one isdigit test per part."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", s))


@pytest.mark.parametrize("name", NAMES)
def test_same_key_as_per_part_test(name: str) -> None:
    assert natural_key(name) == _reference(name)


def test_natural_order() -> None:
    assert sorted(["n10", "n9", "n1", "m100"], key=natural_key) == ["m100", "n1", "n9", "n10"]
    assert sorted(["a1b10", "a1b2", "a10b1"], key=natural_key) == ["a1b2", "a1b10", "a10b1"]
