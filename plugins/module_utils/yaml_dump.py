"""Deterministic YAML: the same data always gives the same bytes; and fast snapshot loading.

Keys sorted, block style, no line wrapping, multi-line strings as literal blocks (``|``) so that
scripts and config files embedded in values stay readable in review diffs. Uses libyaml's emitter
when PyYAML was built with it (same output, faster).
"""

from __future__ import annotations

import functools
import io
import json
import re
from collections.abc import Callable, Iterable, Iterator
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


def safe_load_all(data: str | bytes) -> Iterator[Any]:
    """``yaml.safe_load_all`` through libyaml's parser when PyYAML has it (a review reads every rendered
    file of the clusters it renders, twice)."""
    return yaml.load_all(data, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


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


def _pyyaml_dump(obj: Any) -> str:
    return yaml.dump(
        obj,
        Dumper=_dumper(),
        sort_keys=True,
        default_flow_style=False,
        allow_unicode=True,
        width=1_000_000,
        indent=2,
    )


# ------------------------------------------------------------------ block emitter
#
# A render dumps some 2,600 documents (10,000 nodes, 100 tenants) of dicts, lists and a few scalar
# types. Their block layout is fixed by the settings above (sorted keys, 2-space indent, sequences
# under a key not indented, empty collections as {} and [], no line wrapping), so _Emitter writes the
# structure itself and asks PyYAML only how each scalar is written: ``_pyyaml_dump({"k": value})``,
# remembered per (type, value) as keys and values repeat across documents. Anything outside that
# (other types, keys written as complex keys, literal blocks that keep trailing newlines, lines long
# enough to be wrapped) raises _Unsupported and the whole document goes through PyYAML. Same bytes
# either way (tests/unit/plugins/module_utils/test_yaml_dump.py compares with PyYAML's own dump).
#
# Why not the library alone (bench/bench_yaml_dump.py, CPU seconds, best of 3, 2 shared cores): the
# 3,097 documents (3.9 MB) of the 10,000-node render take 0.27 s here, 0.67 s through PyYAML's
# libyaml CSafeDumper with the representer fast path above (2.5x), 0.77 s through CSafeDumper as
# documented (2.9x) and 8.9 s through ruamel.yaml (33x; pure Python here, and its YAML 1.2 resolver
# writes YES/NO unquoted, which YAML 1.1 readers take for booleans). The whole render_fleet: 4.72 s
# with this emitter, 5.66 s without it (+20%, past the 5 s bar). The sample: 0.01 s against 0.02 s.


class _Unsupported(Exception):
    """The document is left to PyYAML."""


_SCALAR_TYPES = (str, int, bool, type(None))
_LONG = 200  # longer strings (scripts, config files) are not remembered
_WIDE = 100_000  # a longer line could reach the 1,000,000-column width: PyYAML wraps it
_MEMO_MAX = 100_000  # entries per memo; cleared when full
# Strings PyYAML writes plain, as key or value, when its resolver reads them back as strings: no
# indicator, quote, "#", ": " or line break, no leading or trailing space, under 128 characters (a
# simple key). Others (and those the resolver reads as numbers, booleans, null, dates) ask PyYAML.
_OTHER_BREAKS = re.compile("[\x85\u2028\u2029]")  # line breaks to YAML, not to str.split("\\n")
_PLAIN = re.compile(r"[A-Za-z0-9_/](?:[A-Za-z0-9_./= -]|:(?=[^ ]))*")


@functools.lru_cache(maxsize=1)
def _resolver() -> Any:
    return _dumper()(io.StringIO())


def reads_as_str(token: str) -> bool:
    """A plain YAML scalar ``token`` loads as that string (not a number, boolean, null, date...)."""
    return _resolver().resolve(yaml.ScalarNode, token, (True, False)) == _STR


def _plain(value: Any) -> bool:
    """``value`` is a string PyYAML writes as is (see _PLAIN)."""
    return (
        value.__class__ is str
        and len(value) < 128
        and value[-1:] != " "
        and _PLAIN.fullmatch(value) is not None
        and reads_as_str(value)
    )


class _Emitter:
    """Lines of the block YAML PyYAML writes for dict/list/str/int/bool/None data (see above)."""

    values: dict[tuple[type, Any], tuple[str, tuple[str, ...]]] = {}
    keys: dict[tuple[type, Any], str] = {}

    def __init__(self) -> None:
        self.out: list[str] = []

    @classmethod
    def value_text(cls, value: Any) -> tuple[str, tuple[str, ...]]:
        """(text after ``key: ``, literal block lines indented by 2 or ()) of a scalar value."""
        memo = (type(value), value)
        hit = cls.values.get(memo)
        if hit is not None:
            return hit
        text = f"k: {value}\n" if _plain(value) else _pyyaml_dump({"k": value})
        if not text.startswith("k: ") or _OTHER_BREAKS.search(text):
            raise _Unsupported  # lines broken at U+2028 and the like are indented like the rest
        first, _sep, rest = text[3:].partition("\n")
        lines = tuple(rest.split("\n")[:-1])
        if len(first) > _WIDE or (
            lines and (first[:1] != "|" or "+" in first or any(ln and ln[:2] != "  " for ln in lines))
        ):
            raise _Unsupported  # only literal blocks span lines; "|+" may end the document with "..."
        hit = (first, lines)
        if value.__class__ is not str or len(value) <= _LONG:
            if len(cls.values) > _MEMO_MAX:
                cls.values.clear()
            cls.values[memo] = hit
        return hit

    @classmethod
    def key_text(cls, key: Any) -> str:
        """How a mapping key is written (before ``:``)."""
        if type(key) not in _SCALAR_TYPES:
            raise _Unsupported
        memo = (type(key), key)
        hit = cls.keys.get(memo)
        if hit is None:
            text = f"{key}: 0\n" if _plain(key) else _pyyaml_dump({key: 0})
            if (
                not text.endswith(": 0\n")
                or "\n" in text[:-1]
                or text[:2] == "? "
                or len(text) > _WIDE
                or _OTHER_BREAKS.search(text)
            ):
                raise _Unsupported  # a complex key (long or multi-line)
            hit = text[:-4]
            if len(cls.keys) > _MEMO_MAX:
                cls.keys.clear()
            cls.keys[memo] = hit
        return hit

    def mapping(self, data: dict, indent: int, lead: str) -> None:
        """``data`` with its keys at column ``indent``; the first line starts with ``lead``."""
        items = list(data.items())
        try:
            items = sorted(items)
        except TypeError:  # keys of mixed types: PyYAML keeps their order
            pass
        pad, keys = " " * indent, self.keys
        for k, v in items:
            self.item(f"{lead}{keys.get((type(k), k)) or self.key_text(k)}:", v, indent, True)
            lead = pad

    def sequence(self, data: list, indent: int, lead: str) -> None:
        pad = " " * indent
        for v in data:
            self.item(f"{lead}-", v, indent, False)
            lead = pad

    def item(self, line: str, v: Any, indent: int, in_mapping: bool) -> None:
        """Entry ``line`` (``key:`` or ``-``) of a collection at ``indent``, then its value ``v``."""
        kind = type(v)
        if kind is dict or kind is list:
            if not v:
                self.out.append(f"{line} {{}}" if kind is dict else f"{line} []")
            elif in_mapping:  # the value on the next lines; a sequence under a key is not indented
                self.out.append(line)
                if kind is dict:
                    self.mapping(v, indent + 2, " " * (indent + 2))
                else:
                    self.sequence(v, indent, " " * indent)
            elif kind is dict:  # "- " then the first key or item on the same line
                self.mapping(v, indent + 2, line + " ")
            else:
                self.sequence(v, indent + 2, line + " ")
        elif kind in _SCALAR_TYPES:
            text, block = self.values.get((kind, v)) or self.value_text(v)
            self.out.append(f"{line} {text}")
            if block:  # literal block lines: at the collection's indent + 2
                pad = " " * indent
                self.out.extend(pad + ln if ln else ln for ln in block)
        else:
            raise _Unsupported


def _fast_dump(obj: Any) -> str | None:
    """:func:`dump` by :class:`_Emitter`; None when the document is left to PyYAML."""
    kind = type(obj)
    if (kind is not dict and kind is not list) or not obj:
        return None
    em = _Emitter()
    try:
        if kind is dict:
            em.mapping(obj, 0, "")
        else:
            em.sequence(obj, 0, "")
    except (_Unsupported, RecursionError):
        return None
    em.out.append("")
    return "\n".join(em.out)


def dump(obj: Any) -> str:
    """One YAML document, keys sorted."""
    text = _fast_dump(obj)
    return _pyyaml_dump(obj) if text is None else text


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
