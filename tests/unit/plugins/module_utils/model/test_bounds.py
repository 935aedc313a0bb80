"""Bounds of the model: backtracking-free node_name_map patterns, hostlist sizes counted
without expanding, strict integers, quantities."""

from __future__ import annotations

from fractions import Fraction

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.hostlist import expand
from ansible_collections.gpufleet.core.plugins.module_utils.model import grammar
from ansible_collections.gpufleet.core.plugins.module_utils.model.bounds import hostlist_size
from ansible_collections.gpufleet.core.plugins.module_utils.model.nodes import parse_quantity
from ansible_collections.gpufleet.core.plugins.module_utils.model.tenant_values import quantity
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import regex_problem


@pytest.mark.parametrize(
    "pattern", ["gpu(.*)", r"gpu([0-9]+) mlx5_[0-9]+", r"([a-z]+)-(\d{3})", "node-(?P<n>[0-9]{1,4})", "(gpu)(x)?"]
)
def test_linear_patterns_pass(pattern: str) -> None:
    assert regex_problem(pattern) is None


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("(a+)+$", "quantifier inside a quantified group"),
        ("(a*)*b", "quantifier inside a quantified group"),
        ("(a|aa)+$", "alternation inside a quantified group"),
        (r"(\w+)\1", "backreferences"),
        ("(?=a)a", "lookarounds"),
        ("(?<!a)b", "lookarounds"),
        ("a*b*c*", "more than 2 unbounded"),
        ("(", "not a valid regular expression"),
    ],
)
def test_backtracking_patterns_refused(pattern: str, why: str) -> None:
    assert why in (regex_problem(pattern) or "")


@pytest.mark.parametrize("expr", ["gpu[001-128]", "a[1-2]b[3-4]", "x", "gpu[1,3,5-7],n[01-02]", "s[1-3]-p[1-2]"])
def test_hostlist_size_is_the_expansion_size(expr: str) -> None:
    assert hostlist_size(expr) == len(expand(expr))


def test_hostlist_size_of_a_huge_range_without_expanding() -> None:
    assert hostlist_size("n[0-999999999999]") == 10**12


def test_strict_integers() -> None:
    v = grammar.validator_for({"type": "integer"})
    assert v.is_valid(3) and not v.is_valid(3.0) and not v.is_valid(True)
    n = grammar.validator_for({"type": "number"})
    assert n.is_valid(2.5) and not n.is_valid(float("inf")) and not n.is_valid(float("nan")) and not n.is_valid(False)


@pytest.mark.parametrize("text", ["\u00b2", "1e99999", "inf", "nan", "1.5.5", "", "\u0663"])
def test_quantities_refused(text: str) -> None:
    assert parse_quantity(text) is None
    assert quantity(text) is None


def test_long_quantities_refused() -> None:
    assert parse_quantity("9" * 65) is None  # bounded by length, not parsed
    assert parse_quantity("2113363548Ki") == 2113363548 * 1024


def test_quantity_containers_never_stringified() -> None:
    assert parse_quantity([1, 2]) is None and parse_quantity({"a": 1}) is None
    assert parse_quantity(float("inf")) is None and parse_quantity(float("nan")) is None


@pytest.mark.parametrize(
    ("text", "value"),
    [("64", 64), ("2113363548Ki", 2113363548 * 1024), ("3k", 3000), ("1E", 10**18), ("007", 7), (" 8 ", 8),
     ("500m", Fraction(1, 2)), ("1.5Gi", 3 * 2**29), ("0.5", Fraction(1, 2)), ("1e3", 1000), ("+2", 2),
     ("-1", -1), ("250n", Fraction(1, 4_000_000)), ("12u", Fraction(3, 250_000))],
)  # fmt: skip
def test_quantities_exact(text: str, value: int | Fraction) -> None:
    """Whole quantities come back as ints (no Fraction built), the rest as exact Fractions."""
    got = parse_quantity(text)
    assert got == value
    assert isinstance(got, int) == text.strip().rstrip("KkMGTPEi").isdigit()
