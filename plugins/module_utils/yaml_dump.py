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


@functools.lru_cache(maxsize=1)
def _dumper() -> Any:
    """SafeDumper (libyaml's when there) with literal blocks for multi-line strings and no aliases."""
    base: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

    class Dumper(base):  # type: ignore[misc,valid-type]
        def ignore_aliases(self, data: Any) -> bool:
            return True

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
