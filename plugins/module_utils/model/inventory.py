"""Read the fleet model out of an Ansible inventory directory, remembering where each key came from.

The model lives in ``<inventory>/group_vars/all.yml`` or ``<inventory>/group_vars/all/*.yml``
(kubespray layout: one topic per file); a tenant may have its own file, ``group_vars/all/tenants/<t>.yml``
(see :mod:`.tenant_files`). Only ``gpufleet_*`` variables belong to the model; other
variables are left to Ansible. Each value's file and line is kept so that errors can point at them.
Vault-encrypted files are skipped and inline ``!vault`` values on other variables ignored: secrets
are not part of the model (a ``!vault`` inside a ``gpufleet_*`` variable is an error). Unlike
Ansible, a key defined twice in one mapping is an error (Ansible warns and keeps the last), and a
file whose YAML aliases expand past :data:`MAX_NODES` nodes is refused before it is built.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.deps import missing
from ansible_collections.gpufleet.core.plugins.module_utils.errors import Issue, ModelError
from ansible_collections.gpufleet.core.plugins.module_utils.model import tenant_files

try:
    import yaml
except ImportError:  # importing works without it; the first use raises a clear error
    yaml = missing("yaml", "PyYAML")

PREFIX = "gpufleet_"
# A key path: mapping keys and list indexes, e.g. ("gpufleet_pools", 1, "size"). Spelled out in each
# annotation (no alias): annotations are never evaluated, an alias would be (and fails on py3.9).


@dataclass
class RawModel:
    """The merged ``gpufleet_*`` variables plus, for every key path, its (file, line)."""

    inventory_dir: Path
    data: dict[str, Any] = field(default_factory=dict)
    where: dict[tuple[str | int, ...], tuple[str, int]] = field(default_factory=dict)

    def locate(self, path: tuple[str | int, ...]) -> tuple[str, int | None]:
        """File and line of ``path``, or of its nearest located ancestor."""
        p = tuple(path)
        while p:
            if p in self.where:
                return self.where[p]
            p = p[:-1]
        return (str(self.inventory_dir / "group_vars" / "all"), None)

    def issue(self, path: tuple[str | int, ...], message: str) -> Issue:
        file, line = self.locate(path)
        return Issue(file=file, line=line, path=format_path(path), message=message)


def format_path(path: tuple[str | int, ...]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _record(
    node: yaml.Node, path: tuple[str | int, ...], file: str, where: dict[tuple[str | int, ...], tuple[str, int]]
) -> None:
    where[path] = (file, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                _record(value, (*path, key.value), file, where)
                where[(*path, key.value)] = (file, key.start_mark.line + 1)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _record(item, (*path, i), file, where)


VARS_EXTENSIONS = (".yml", ".yaml", ".json")  # Ansible's default yaml_valid_extensions
MAX_NODES = 200_000  # YAML nodes one vars file may expand to (aliases counted each time they are used)


def _dir_vars_files(folder: Path) -> list[Path]:
    """Ansible's order and filter: sorted names, hidden and ``~`` files skipped, sub-directories
    without an extension searched, files with a vars extension or none."""
    found: list[Path] = []
    for name in sorted(os.listdir(folder)):
        if name.startswith(".") or name.endswith("~"):
            continue
        p = folder / name
        ext = os.path.splitext(name)[1]
        if p.is_dir() and not ext:
            found.extend(_dir_vars_files(p))
        elif p.is_file() and (not ext or ext in VARS_EXTENSIONS):
            found.append(p)
    return found


def vars_files(inventory_dir: Path) -> list[Path]:
    """The files Ansible reads for group ``all``: ``group_vars/all{,.yml,.yaml,.json}`` and every
    vars file under ``group_vars/all/``."""
    gv = inventory_dir / "group_vars"
    files: list[Path] = []
    for single in (gv / "all", *(gv / f"all{ext}" for ext in VARS_EXTENSIONS)):
        if single.is_file():
            files.append(single)
    folder = gv / "all"
    if folder.is_dir():
        files.extend(_dir_vars_files(folder))
    return files


class VaultValue(str):
    """An inline ``!vault`` value: opaque here (secrets are not part of the fleet model)."""


class DuplicateKey(Exception):
    def __init__(self, key: Any, first: int, again: int):
        super().__init__(key)
        self.key, self.first, self.again = key, first, again


@functools.lru_cache(maxsize=1)
def _loader_class() -> Any:
    """SafeLoader plus Ansible's tags (``!vault``, ``!unsafe``) and refusal of duplicate keys (built
    on first use, so importing this file needs no PyYAML)."""

    class Loader(yaml.SafeLoader):
        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
            seen: dict[Any, int] = {}
            for key_node, _value in node.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                    key = self.construct_object(key_node, deep=deep)
                    if key in seen:
                        raise DuplicateKey(key, seen[key], key_node.start_mark.line + 1)
                    seen[key] = key_node.start_mark.line + 1
            return super().construct_mapping(node, deep=deep)

    Loader.add_constructor("!vault", lambda loader, node: VaultValue("<vault>"))
    Loader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))
    return Loader


def _expanded_size(root: yaml.Node, limit: int) -> int:
    """Nodes of ``root`` with every alias expanded (memoised: linear in the composed graph). Stops
    at ``limit`` + 1; raises ValueError on a recursive alias."""
    memo: dict[int, int] = {}
    active: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in memo:
            return memo[key]
        if key in active:
            raise ValueError("a recursive alias (a node that contains itself)")
        active.add(key)
        total = 1
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                total += size(k) + size(v)
                if total > limit:
                    break
        elif isinstance(node, yaml.SequenceNode):
            for item in node.value:
                total += size(item)
                if total > limit:
                    break
        active.discard(key)
        memo[key] = total
        return total

    return size(root)


def _has_vault(value: Any) -> bool:
    if isinstance(value, VaultValue):
        return True
    if isinstance(value, dict):
        return any(_has_vault(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_vault(v) for v in value)
    return False


def _parse(f: Path, text: str) -> tuple[yaml.Node | None, Any]:
    """Compose (bounded), then construct one vars file. Raises _FileIssue."""
    loader = _loader_class()(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, None
        try:
            n = _expanded_size(node, MAX_NODES)
        except ValueError as exc:
            raise _FileIssue(node.start_mark.line + 1, f"refused: {exc}") from None
        if n > MAX_NODES:
            raise _FileIssue(
                None,
                f"refused: its YAML aliases expand to more than {MAX_NODES} nodes (an alias bomb?);"
                " write the values out instead of nesting aliases",
            )
        try:
            return node, loader.construct_document(node)
        except DuplicateKey as exc:
            raise _FileIssue(
                exc.again,
                f"key {exc.key!r} is defined twice in one mapping (first on line {exc.first}); Ansible would keep"
                " the last one silently: define it once",
            ) from None
    finally:
        loader.dispose()


class _FileIssue(Exception):
    def __init__(self, line: int | None, message: str):
        super().__init__(message)
        self.line, self.message = line, message


def load_inventory(inventory: str | Path) -> RawModel:
    """Load and merge the ``gpufleet_*`` variables; raise ModelError listing every problem found."""
    inv = Path(inventory)
    if inv.is_file():  # hosts.yml given: the inventory is its folder
        inv = inv.parent
    raw = RawModel(inventory_dir=inv)
    issues: list[Issue] = []
    if not inv.is_dir():
        raise ModelError([Issue(file=str(inv), line=None, path="", message="inventory directory not found")])
    files = vars_files(inv)
    if not files:
        raise ModelError(
            [Issue(file=str(inv / "group_vars"), line=None, path="", message="no group_vars/all(.yml|/) found")]
        )
    for f in files:
        if f.is_symlink():
            issues.append(
                Issue(
                    file=str(f),
                    line=None,
                    path="",
                    message=f"a vars file may not be a symbolic link (to {os.readlink(f)!r}): copy the file in",
                )
            )
            continue
        data = f.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            issues.append(
                Issue(file=str(f), line=line, path="", message=f"not UTF-8 text (byte {exc.start}); save it as UTF-8")
            )
            continue
        if text.lstrip().startswith("$ANSIBLE_VAULT"):
            continue
        try:
            node, value = _parse(f, text)
        except _FileIssue as exc:
            issues.append(Issue(file=str(f), line=exc.line, path="", message=exc.message))
            continue
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            issues.append(
                Issue(
                    file=str(f),
                    line=mark.line + 1 if mark else None,
                    path="",
                    message=f"not valid YAML: {getattr(exc, 'problem', None) or exc}",
                )
            )
            continue
        if value is None:
            continue
        if not isinstance(value, dict) or not isinstance(node, yaml.MappingNode):
            issues.append(Issue(file=str(f), line=1, path="", message="a vars file must be a mapping"))
            continue
        where: dict[tuple[str | int, ...], tuple[str, int]] = {}
        _record(node, (), str(f), where)
        file_issues = tenant_files.check_file(inv, f, value, where)  # one file per tenant, nothing else in it
        if file_issues:
            issues += file_issues
            continue
        for key, val in value.items():
            if not str(key).startswith(PREFIX):
                continue
            if _has_vault(val):
                issues.append(
                    Issue(
                        file=str(f),
                        line=where.get((key,), (str(f), None))[1],
                        path=str(key),
                        message="holds a !vault value: secrets are not part of the fleet model (keep them out of"
                        " gpufleet_* variables)",
                    )
                )
                continue
            if key in raw.data:
                first, line = raw.where[(key,)]
                issues.append(
                    Issue(
                        file=str(f),
                        line=where.get((key,), (str(f), None))[1],
                        path=key,
                        message=f"defined again (first defined in {first}:{line}); define each variable once",
                    )
                )
                continue
            raw.data[key] = val
            raw.where.update({p: w for p, w in where.items() if p and p[0] == key})
    tenant_files.fold_into_list(raw.data, raw.where)
    if issues:
        raise ModelError(issues)
    return raw
