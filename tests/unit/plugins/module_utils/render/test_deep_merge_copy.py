"""deep_merge copies like copy.deepcopy: equal values, nothing shared with its inputs, and objects
shared inside an input (YAML aliases) shared in the same places of the result."""

from __future__ import annotations

import copy
from collections import OrderedDict
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.render.values import deep_merge


def _reference(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """deep_merge as it was, with copy.deepcopy."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _reference(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _shape(x: Any, seen: dict[int, int] | None = None) -> Any:
    """Value plus where objects repeat (object identity as first-seen numbers), for comparing sharing."""
    seen = {} if seen is None else seen
    if isinstance(x, dict | list):
        if id(x) in seen:
            return ("same-as", seen[id(x)])
        seen[id(x)] = len(seen)
        items = x.items() if isinstance(x, dict) else enumerate(x)
        return (type(x).__name__, [(k, _shape(v, seen)) for k, v in items])
    return (type(x).__name__, x)


def _ids(x: Any, out: set[int]) -> set[int]:
    if isinstance(x, dict | list) and id(x) not in out:
        out.add(id(x))
        for v in x.values() if isinstance(x, dict) else x:
            _ids(v, out)
    return out


def test_same_copy_as_deepcopy() -> None:
    shared = {"k": ["v", 1]}
    seq = [shared, shared, 1.5, None, True]
    base = {"a": shared, "b": shared, "c": {"d": seq, "e": seq}, "o": OrderedDict(x=[1]), 3: (1, 2)}
    over = {"c": {"d": [shared], "f": shared}, "g": {"h": shared, "i": shared}, "a": {"k": "w"}}
    got, want = deep_merge(base, over), _reference(base, over)
    assert got == want
    assert _shape(got) == _shape(want)
    assert got["o"].__class__ is OrderedDict
    assert not _ids(got, set()) & (_ids(base, set()) | _ids(over, set()))  # nothing shared with the inputs


def test_self_containing_list() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    got = deep_merge({"l": loop}, {})
    assert got["l"][1] is got["l"] and got["l"] is not loop
