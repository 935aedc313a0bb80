"""Deterministic YAML: the same data always gives the same bytes; and fast snapshot loading.

Keys sorted, block style, no line wrapping, multi-line strings as literal blocks (``|``) so that
scripts and config files embedded in values stay readable in review diffs. Uses libyaml's emitter
when PyYAML was built with it (same output, faster).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.deps import missing

try:
    import yaml
except ImportError:  # importing works without it; the first use raises a clear error
    yaml = missing("yaml", "PyYAML")


def safe_load(text: str) -> Any:
    """``yaml.safe_load``, fast: a JSON document (JSON is a subset of YAML; ``kubectl get nodes -o json``
    writes one) goes through the json module, 40x faster than even libyaml on a 10k-node snapshot;
    anything else through libyaml's parser when PyYAML has it. Errors are ``yaml.YAMLError`` with a
    ``problem_mark`` line, also for broken JSON (it is re-read as YAML to locate the problem)."""
    if text.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(text)
        except ValueError:
            pass
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def load_or_raise(text: str, source: str, error: Callable[[str], Exception]) -> Any:
    """:func:`safe_load`, turning a YAML error into ``error("<source>:<line>: not valid YAML: ...")``."""
    try:
        return safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark else ""
        raise error(f"{source}{line}: not valid YAML: {getattr(exc, 'problem', None) or exc}") from None
    except (ValueError, OverflowError, RecursionError) as exc:  # a 5,000-digit int, deep nesting
        raise error(f"{source}: refused: a value cannot be read ({str(exc)[:120]})") from None


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_STR, _INT, _BOOL, _NULL = (f"tag:yaml.org,2002:{t}" for t in ("str", "int", "bool", "null"))
_MAP, _SEQ = "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"


def _node_builder(dumper: Any) -> Callable[[Any], Any]:
    """data -> the node tree SafeRepresenter makes of it (see _dumper), plain types by a closure."""
    scalar, mapping, sequence = yaml.ScalarNode, yaml.MappingNode, yaml.SequenceNode
    flow, sort, other = dumper.default_flow_style, dumper.sort_keys, dumper.represent_data

    def node(data: Any) -> Any:
        kind = type(data)
        if kind is str:
            return scalar(_STR, data, None, None, "|" if "\n" in data else None)
        if kind is dict:
            items = list(data.items())
            if sort:
                try:
                    items = sorted(items)
                except TypeError:
                    pass
            return mapping(_MAP, [(node(k), node(v)) for k, v in items], None, None, flow)
        if kind is list:
            return sequence(_SEQ, [node(v) for v in data], None, None, flow)
        if kind is int:
            return scalar(_INT, str(data), None, None, None)
        if kind is bool:
            return scalar(_BOOL, "true" if data else "false", None, None, None)
        if data is None:
            return scalar(_NULL, "null", None, None, None)
        return other(data)  # SafeRepresenter (floats, dates, sets, ...; refuses unknown types)

    return node


@functools.lru_cache(maxsize=1)
def _dumper() -> Any:
    """SafeDumper (libyaml's when there) with literal blocks for multi-line strings and no aliases.

    A render dumps some 2,600 files (10,000 nodes): PyYAML's representer, not the C emitter, was
    most of that time. ``_node_builder`` builds the very nodes SafeRepresenter builds for the
    plain types we emit (dict, list, str, int, bool, None: exact types, as SafeRepresenter looks
    them up) without its per-value alias bookkeeping and MRO lookup, and hands anything else to
    SafeRepresenter; ``resolve`` remembers the implicit tag of a scalar (keys and values repeat
    across files; SafeDumper has no path resolvers, so the answer depends on value and flags only).
    Same nodes, same emitter: same bytes (tests/unit/plugins/module_utils/test_yaml_dump.py)."""
    base: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    scalar = yaml.ScalarNode
    tags: dict[tuple[str, tuple[bool, bool]], str] = {}

    class Dumper(base):  # type: ignore[misc,valid-type]
        def ignore_aliases(self, data: Any) -> bool:
            return True

        def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
            if kind is not scalar or len(value) > 200:  # long values (scripts) are not kept alive
                return super().resolve(kind, value, implicit)
            tag = tags.get((value, implicit))
            if tag is None:
                if len(tags) > 100_000:
                    tags.clear()
                tag = tags[value, implicit] = super().resolve(kind, value, implicit)
            return tag

        def represent(self, data: Any) -> None:
            if self.default_flow_style is None or self.default_style is not None:
                return super().represent(data)  # not how dump() calls it: no shortcut
            self.serialize(_node_builder(self)(data))
            self.represented_objects, self.object_keeper, self.alias_key = {}, [], None
            return None

    Dumper.add_representer(str, _str)
    return Dumper


def dump(obj: Any) -> str:
    """One YAML document, keys sorted."""
    return yaml.dump(
        obj,
        Dumper=_dumper(),
        sort_keys=True,
        default_flow_style=False,
        allow_unicode=True,
        width=1_000_000,
        indent=2,
    )


def dump_docs(objs: Iterable[Any], header: str = "") -> bytes:
    """A YAML stream (``---`` separated) with an optional ``#`` comment header, as UTF-8 bytes."""
    parts = []
    if header:
        parts.append("".join(f"# {line}\n" if line else "#\n" for line in header.splitlines()))
    for obj in objs:
        parts.append("---\n" + dump(obj))
    return "".join(parts).encode("utf-8")


def dump_file(obj: Any, header: str = "") -> bytes:
    """A single-document file (values files): header comment, then the mapping, no ``---``."""
    head = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines()) if header else ""
    return (head + dump(obj)).encode("utf-8")
