"""yaml_dump's fast representer gives the bytes PyYAML's own SafeRepresenter gives."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.core.plugins.module_utils import yaml_dump

# Strings whose implicit tag is not str (must be quoted), multi-line ones (literal blocks), unicode,
# keys of mixed types (not sortable: PyYAML keeps their order), and types left to SafeRepresenter.
CASES: list[Any] = [
    {"b": 1, "a": [1, 2, {"z": None, "y": True}], "c": {}, "d": []},
    ["1", "1.5", "true", "yes", "no", "null", "~", "", " lead", "trail ", "0x1F", "1e3", "2024-01-01", ".inf"],
    {"script": "#!/bin/sh\necho hi\n", "no-newline-at-end": "a\nb", "trailing": "a\n\n", "tab": "\tx"},
    {"unicode": "héllo ✓", "colon": "a: b", "hash": "a #b", "dash": "- x", "quote": 'it\'s "q"'},
    {1: "int key", "s": "str key"},
    {"float": 1.5, "nan": float("nan"), "big": 10**30, "neg": -3, "false": False},
    {"date": datetime.date(2024, 1, 2), "bytes": b"\x00\x01", "set": {"x"}},
    [[[]], [{}], {"nested": [{"deep": ["x", {"k": "v"}]}]}],
    {"long": "x" * 300, "long-int": "1" * 300, "long-script": "line\n" * 100},  # tags not remembered
    "plain",
    None,
    7,
]


def _reference(obj: Any) -> str:
    """The dump before the fast path: SafeDumper (C emitter when there), _str, no aliases."""
    base: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

    class Plain(base):  # type: ignore[misc,valid-type]
        def ignore_aliases(self, data: Any) -> bool:
            return True

    Plain.add_representer(str, yaml_dump._str)
    kw = {"sort_keys": True, "default_flow_style": False, "allow_unicode": True, "width": 1_000_000, "indent": 2}
    return yaml.dump(obj, Dumper=Plain, **kw)


@pytest.mark.parametrize("obj", CASES, ids=range(len(CASES)))
def test_same_bytes_as_safe_representer(obj: Any) -> None:
    assert yaml_dump.dump(obj) == _reference(obj)


def test_shared_values_are_not_aliased() -> None:
    shared = {"k": ["v"]}
    out = yaml_dump.dump({"a": shared, "b": shared})
    assert "&" not in out and out == _reference({"a": shared, "b": shared})


def test_unknown_type_still_refused() -> None:
    with pytest.raises(yaml.representer.RepresenterError):
        yaml_dump.dump({"x": object()})


# The block emitter (yaml_dump._Emitter) writes the layout itself: every shape of nesting, and
# strings near each rule of PyYAML's scalar analysis (indicators, ": ", " #", quotes, leading and
# trailing spaces and newlines, resolver look-alikes, long keys, non-ASCII, other line breaks).
EMITTER_CASES: list[Any] = [
    {"a": {"b": {"c": [1, [2, [3, {}]], {"d": []}]}}},
    [{"a": [{"b": "x\ny\n"}, ["p\nq", "r"]]}, [[["deep\nblock"]]], {"k": {"l": "m\n\nn"}}],
    {"lit": " leading space\nx", "nl-first": "\nx\n", "keep": "x\n\n", "only": "\n", "cr": "a\r\nb"},
    {"sp": "a  b", "colon-end": "a:", "colon-in": "a:b", "colon-sp": "a: b", "dash-sp": "- a", "dash": "-a"},
    {"dots": "...x", "dashes": "---", "q?": "?x", "hash-in": "a#b", "hash-sp": "a #b", "tilde": "~"},
    {"k" * 127: 1, "k" * 128: 2, "multi\nkey": 3, "": "", "<<": "=", "yes": "on", "0o7": "1:20"},
    {"ls": "a\u2028b", "nel": "a\x85b", "bom": "\ufeffx", "ctl": "a\x07b", "tab-end": "x\t", "é": "ü ✓"},
    {"t": "x" * 2000, "nested": [{"t": "line\n" * 50 + "end"}]},
    {True: "bool key", None: "null key", 3: "int key"},
    {"a": [[]], "b": [{}], "c": [[], {}]},
]


@pytest.mark.parametrize("obj", EMITTER_CASES, ids=range(len(EMITTER_CASES)))
def test_emitter_same_bytes_as_pyyaml(obj: Any) -> None:
    assert yaml_dump.dump(obj) == _reference(obj)


_ALPHABET = "ab1_-.:/ #'\"\n\t\\?!&*|>%@`[]{},=~\u2028é"
_texts = st.text(alphabet=_ALPHABET, max_size=12) | st.sampled_from(["yes", "null", "1e3", "0x1F", "2024-01-01", ""])
_scalars = _texts | st.integers(-(10**20), 10**20) | st.booleans() | st.none()
_data = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_texts, inner, max_size=4),
    max_leaves=25,
)


@given(st.dictionaries(_texts, _data, min_size=1, max_size=5) | st.lists(_data, min_size=1, max_size=5))
@settings(max_examples=400, deadline=None)
def test_emitter_same_bytes_as_pyyaml_generated(obj: Any) -> None:
    assert yaml_dump.dump(obj) == _reference(obj)


@given(st.text(alphabet="aZ09_./=-: #'\t", max_size=16) | st.sampled_from(["/x", "a=b", "=", "/", "a:b", "1:20"]))
@settings(max_examples=1500, deadline=None)
def test_plain_strings_are_what_pyyaml_writes(text: str) -> None:
    """What the emitter writes without asking PyYAML (yaml_dump._plain) is PyYAML's own output."""
    if yaml_dump._plain(text):
        assert _reference({"k": text}) == f"k: {text}\n"
        assert _reference({text: 0}) == f"{text}: 0\n"
