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
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.deps import missing
from ansible_collections.gpufleet.core.plugins.module_utils.errors import Issue, ModelError
from ansible_collections.gpufleet.core.plugins.module_utils.model import tenant_files
from ansible_collections.gpufleet.core.plugins.module_utils.model.variables import PREFIX, jinja_path, variable_problem

try:
    import yaml
except ImportError:  # importing works without it; the first use raises a clear error
    yaml = missing("yaml", "PyYAML")

# A key path: mapping keys and list indexes, e.g. ("gpufleet_pools", 1, "size"). Spelled out in each
# annotation (no alias): annotations are never evaluated, an alias would be (and fails on py3.9).


@dataclass
class RawModel:
    """The merged ``gpufleet_*`` variables plus, for every key path, its (file, line)."""

    inventory_dir: Path
    data: dict[str, Any] = field(default_factory=dict)
    where: dict[tuple[str | int, ...], tuple[str, int]] = field(default_factory=dict)
    # ("gpufleet_tenants", i) -> the tenant's own variable it came from (gpufleet_tenant_<t>), for messages
    aliases: dict[tuple[str | int, ...], str] = field(default_factory=dict)

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
        alias = self.aliases.get(tuple(path[:2]))
        shown = format_path((alias, *path[2:]) if alias else path)
        return Issue(file=file, line=line, path=shown, message=message)


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
MAX_DEPTH = 64  # nesting levels of one vars file
# Budgets of all the files one load reads together: the per-file bounds alone let many small files
# (each just under the bounds, e.g. a 1 KB alias tree per tenant file) add up to gigabytes.
MAX_TOTAL_NODES = 400_000  # YAML nodes, aliases expanded each time they are used
MAX_TOTAL_BYTES = 4 << 20


@dataclass
class _Totals:
    nodes: int = 0
    bytes: int = 0


_TOTALS: ContextVar[_Totals | None] = ContextVar("gpufleet_inventory_totals", default=None)
# file text -> (composed node, size): see shared_composes
_COMPOSED: ContextVar[dict[str, tuple[Any, int]] | None] = ContextVar("gpufleet_inventory_composed", default=None)


def _charge(nodes: int = 0, size: int = 0) -> None:
    """Count one file against the load's budgets; raises _FileIssue naming the file that passes one."""
    totals = _TOTALS.get()
    if totals is None:
        return
    totals.nodes += nodes
    totals.bytes += size
    if totals.nodes > MAX_TOTAL_NODES:
        raise _FileIssue(
            None,
            f"refused: the inventory's files together expand to more than {MAX_TOTAL_NODES} YAML nodes (aliases"
            " counted each time they are used); this file passes the budget: write values out, fewer aliases",
        )
    if totals.bytes > MAX_TOTAL_BYTES:
        raise _FileIssue(
            None,
            f"refused: the inventory's files together are larger than {MAX_TOTAL_BYTES} bytes; this file passes"
            " the budget (move data to a snapshot)",
        )


def _dir_vars_files(folder: Path) -> list[Path]:
    """Ansible's order and filter: sorted names, hidden and ``~`` files skipped, sub-directories
    without an extension searched, files with a vars extension or none."""
    found: list[Path] = []
    for name in sorted(os.listdir(folder)):
        if name.startswith(".") or name.endswith("~"):
            continue
        p = folder / name
        ext = os.path.splitext(name)[1]
        if p.is_symlink():  # never followed (a link to /etc): load_inventory refuses it by name
            found.append(p)
        elif p.is_dir() and not ext:
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


def other_vars_files(inventory_dir: Path) -> list[Path]:
    """Vars files Ansible reads for the other groups and the hosts: ``group_vars/<group>{,.yml,...}``
    and ``host_vars/<host>{,.yml,...}`` (and the files under such folders)."""
    files: list[Path] = []
    mine = set(vars_files(inventory_dir))
    for sub in ("group_vars", "host_vars"):
        d = inventory_dir / sub
        if not d.is_dir() or d.is_symlink():
            continue
        for p in _dir_vars_files(d):
            if p not in mine and not (sub == "group_vars" and p.relative_to(d).parts[0] in _ALL_NAMES):
                files.append(p)
    return files


_ALL_NAMES = {"all", *(f"all{ext}" for ext in VARS_EXTENSIONS)}


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

        def compose_node(self, parent: Any, index: Any) -> Any:
            # bounds while composing (before anything is built): nodes and nesting depth
            self.gf_nodes = getattr(self, "gf_nodes", 0) + 1
            self.gf_depth = getattr(self, "gf_depth", 0) + 1
            try:
                if self.gf_nodes > MAX_NODES:
                    raise _FileIssue(None, f"refused: more than {MAX_NODES} YAML nodes")
                if self.gf_depth > MAX_DEPTH:
                    mark = self.peek_event().start_mark
                    raise _FileIssue(mark.line + 1, f"refused: nested deeper than {MAX_DEPTH} levels")
                return super().compose_node(parent, index)
            finally:
                self.gf_depth -= 1

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


@contextmanager
def shared_composes() -> Iterator[None]:
    """Loads inside the block compose each distinct file text once: a review loads an inventory at the
    base and at the head, which share every file the change leaves alone. Each load still constructs
    its own values from the composed nodes (nothing built is shared) and is charged its budgets."""
    token = _COMPOSED.set({})
    try:
        yield
    finally:
        _COMPOSED.reset(token)


def _compose(loader: Any, text: str) -> tuple[yaml.Node | None, int]:
    """The file's node graph and its size with aliases expanded (bounded); from :func:`shared_composes`
    when this text was composed before. Raises _FileIssue."""
    composed = _COMPOSED.get()
    if "<<" in text:  # constructing flattens merge keys into the node itself: such a node is not reused
        composed = None
    if composed is not None and text in composed:
        return composed[text]
    node = loader.get_single_node()
    if node is None:
        return None, 0
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
    if composed is not None:
        composed[text] = (node, n)
    return node, n


def _parse(f: Path, text: str) -> tuple[yaml.Node | None, Any]:
    """Compose (bounded), then construct one vars file. Raises _FileIssue."""
    loader = _loader_class()(text)
    try:
        node, n = _compose(loader, text)
        if node is None:
            return None, None
        _charge(nodes=n)
        try:
            return node, loader.construct_document(node)
        except (ValueError, OverflowError, RecursionError) as exc:  # e.g. an int of 5,000 digits
            raise _FileIssue(None, f"refused: a value cannot be read ({str(exc)[:120]})") from None
        except DuplicateKey as exc:
            raise _FileIssue(
                exc.again,
                f"key {exc.key!r} is defined twice in one mapping (first on line {exc.first}); Ansible would keep"
                " the last one silently: define it once",
            ) from None
    finally:
        loader.dispose()


def _file_issue(f: Path | str, message: str, line: int | None = None) -> Issue:
    """A problem of a whole file (no key path)."""
    return Issue(file=str(f), line=line, path="", message=message)


class _FileIssue(Exception):
    def __init__(self, line: int | None, message: str):
        super().__init__(message)
        self.line, self.message = line, message


MAX_FILE_BYTES = 256 << 10  # one vars or inventory file: refused above 256 KiB, before parsing


def _read_vars(f: Path, issues: list[Issue]) -> tuple[yaml.Node, dict[Any, Any]] | None:
    """Parse one vars (or inventory) file the way the loader does; problems go to ``issues``."""
    try:
        return _vars_file(f)
    except _FileIssue as exc:
        issues.append(_file_issue(f, exc.message, exc.line))
        return None


def _vars_file(f: Path) -> tuple[yaml.Node, dict[Any, Any]] | None:
    """One vars file as (node, value); None for an empty or vaulted file. Raises _FileIssue."""
    if f.is_symlink():
        raise _FileIssue(None, f"a vars file may not be a symbolic link (to {os.readlink(f)!r}): copy the file in")
    try:
        with open(f, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise _FileIssue(None, f"cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise _FileIssue(None, f"refused: larger than {MAX_FILE_BYTES} bytes (split it or move data to a snapshot)")
    _charge(size=len(data))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise _FileIssue(line, f"not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    if text.lstrip().startswith("$ANSIBLE_VAULT"):
        return None
    try:
        node, value = _parse(f, text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else None
        raise _FileIssue(line, f"not valid YAML: {getattr(exc, 'problem', None) or exc}") from None
    if value is None:
        return None
    if not isinstance(value, dict) or not isinstance(node, yaml.MappingNode):
        raise _FileIssue(1, "a vars file must be a mapping")
    return node, value


def _key_lines(node: yaml.Node) -> dict[Any, int]:
    return {k.value: k.start_mark.line + 1 for k, _v in getattr(node, "value", []) if isinstance(k, yaml.ScalarNode)}


def _check_vars(
    f: Path, node: yaml.Node, variables: dict[Any, Any], platform_file: bool, issues: list[Issue], prefix: str = ""
) -> None:
    lines = _key_lines(node)
    for key, val in variables.items():
        why = variable_problem(str(key), val, platform_file)
        if why:
            issues.append(Issue(file=str(f), line=lines.get(key), path=f"{prefix}{key}", message=why))


# What Ansible skips in an inventory directory (INVENTORY_IGNORE_EXTS) and the folder the
# repository's ansible.cfg ignores (``ignore_patterns = snapshots``).
ANSIBLE_IGNORED_EXTS = (".md", ".txt", ".rst", ".orig", ".ini", ".cfg", ".retry", ".pyc", ".pyo", ".swp", ".bak", "~")
IGNORED_DIRS = ("snapshots",)
YAML_INVENTORY_EXTS = (".yml", ".yaml", ".json")


def _inventory_files(inv: Path, issues: list[Issue]) -> list[Path]:
    """YAML inventory sources in the folder (hosts.yml, ...), to be checked like vars files. Anything
    else Ansible would read as an inventory source is refused (an executable file is run on the
    controller as a dynamic inventory script; extensionless files are parsed as INI, ``.toml`` as
    TOML), and so is an executable file anywhere in the inventory, snapshots included."""
    found: list[Path] = []
    for dirpath, dirs, names in os.walk(inv, followlinks=False):
        d = Path(dirpath)
        rel = d.relative_to(inv).parts
        skip = bool(rel) and rel[0] in (*IGNORED_DIRS, "group_vars", "host_vars")  # checked elsewhere
        for name in sorted(names + [x for x in dirs if (d / x).is_symlink()]):
            p = d / name
            st = os.lstat(p)
            if stat.S_ISREG(st.st_mode) and st.st_mode & 0o111:
                issues.append(
                    _file_issue(
                        p,
                        "an executable file in the inventory: Ansible runs it as an inventory script on the"
                        " controller (chmod -x it)",
                    )
                )
            elif skip:
                continue
            elif stat.S_ISLNK(st.st_mode):
                issues.append(_file_issue(p, "a symbolic link in the inventory: copy the file in"))
            elif name.endswith(YAML_INVENTORY_EXTS) and not name.startswith("."):
                found.append(p)
            elif not name.endswith(ANSIBLE_IGNORED_EXTS):
                issues.append(
                    _file_issue(
                        p,
                        "Ansible would read this file as an inventory source (INI, TOML or a script):"
                        " keep data under snapshots/, documents as .md",
                    )
                )
        dirs[:] = sorted(x for x in dirs if not (d / x).is_symlink() and (rel or x not in ("group_vars", "host_vars")))
    return found


def _check_inventory_file(f: Path, issues: list[Issue]) -> None:
    """Variables set inline in a YAML inventory (``hosts:`` entries and ``vars:`` of groups)."""
    got = _read_vars(f, issues)
    if got is None:
        return
    node, doc = got
    # walk groups: {group: {hosts: {h: vars}, vars: {...}, children: {group: ...}}}
    todo: list[tuple[Any, Any, str]] = [(node, doc, "")]
    while todo:
        gnode, groups, path = todo.pop()
        if not isinstance(groups, dict):
            continue
        nodes = {k.value: v for k, v in getattr(gnode, "value", []) if isinstance(k, yaml.ScalarNode)}
        for gname, group in groups.items():
            if not isinstance(group, dict):
                continue
            gn = nodes.get(gname)
            gnodes = {k.value: v for k, v in getattr(gn, "value", []) if isinstance(k, yaml.ScalarNode)}
            base = f"{path}{gname}."
            if isinstance(group.get("vars"), dict):
                _check_vars(f, gnodes.get("vars"), group["vars"], False, issues, base + "vars.")
            hosts = group.get("hosts")
            hnodes = {
                k.value: v for k, v in getattr(gnodes.get("hosts"), "value", []) if isinstance(k, yaml.ScalarNode)
            }
            if isinstance(hosts, dict):
                for h, hv in hosts.items():
                    if isinstance(hv, dict):
                        _check_vars(f, hnodes.get(h), hv, False, issues, f"{base}hosts.{h}.")
            if isinstance(group.get("children"), dict):
                todo.append((gnodes.get("children"), group["children"], base + "children."))


def _inventory_dir(inventory: str | Path) -> Path:
    """The inventory folder (``hosts.yml`` given: its folder); raise ModelError if it is missing or
    its vars folders are symbolic links."""
    inv = Path(inventory)
    if inv.is_file():  # hosts.yml given: the inventory is its folder
        inv = inv.parent
    if not inv.is_dir():
        raise ModelError([_file_issue(inv, "inventory directory not found")])
    for sub in ("group_vars", "host_vars"):  # never followed: a link would read another tree's vars
        if (inv / sub).is_symlink():
            raise ModelError(
                [
                    _file_issue(
                        inv / sub,
                        f"a symbolic link (to {os.readlink(inv / sub)!r}): the vars folders must be real"
                        " folders of the inventory",
                    )
                ]
            )
    return inv


def _variable_issue(
    raw: RawModel, f: Path, key: str, val: Any, where: dict[tuple[str | int, ...], tuple[str, int]]
) -> Issue | None:
    """Why a ``gpufleet_*`` variable of a model file cannot join the model: a vault value, a Jinja
    template, or a second definition."""
    line = where.get((key,), (str(f), None))[1]
    if _has_vault(val):
        return Issue(
            file=str(f),
            line=line,
            path=str(key),
            message="holds a !vault value: secrets are not part of the fleet model (keep them out of"
            " gpufleet_* variables)",
        )
    templ = jinja_path(val, (key,))
    if templ:
        return Issue(
            file=str(f),
            line=where.get(templ, where.get((key,), (str(f), None)))[1],
            path=format_path(templ),
            message="holds a Jinja template ('{{', '{%' or '{#'): Ansible would evaluate it (lookups run"
            " commands on the controller); the model is plain data",
        )
    if key in raw.data:
        first, first_line = raw.where[(key,)]
        return Issue(
            file=str(f),
            line=line,
            path=key,
            message=f"defined again (first defined in {first}:{first_line}); define each variable once",
        )
    return None


def _merge_model_file(raw: RawModel, inv: Path, f: Path, issues: list[Issue]) -> None:
    """Add the ``gpufleet_*`` variables of one model file (group_vars/all) to ``raw``."""
    got = _read_vars(f, issues)
    if got is None:
        return
    node, value = got
    where: dict[tuple[str | int, ...], tuple[str, int]] = {}
    _record(node, (), str(f), where)
    file_issues = tenant_files.check_file(inv, f, value, where)  # one file per tenant, nothing else in it
    if file_issues:
        issues += file_issues
        return
    _check_vars(f, node, value, True, issues)
    for key, val in value.items():
        if not str(key).startswith(PREFIX):
            continue
        issue = _variable_issue(raw, f, key, val, where)
        if issue:
            issues.append(issue)
            continue
        raw.data[key] = val
        raw.where.update({p: w for p, w in where.items() if p and p[0] == key})


def load_inventory(inventory: str | Path) -> RawModel:
    """Load and merge the ``gpufleet_*`` variables; raise ModelError listing every problem found.

    Every file the apply step's Ansible reads is checked too: ``gpufleet_*`` variables only in
    ``group_vars/all`` (the model), role variables nowhere, ``ansible_*`` only the connection
    variables in ``model/variables.ANSIBLE_VARS``, no Jinja in the model (see ``variable_problem``)."""
    token = _TOTALS.set(_Totals())
    try:
        return _load_inventory(inventory)
    finally:
        _TOTALS.reset(token)


def _load_inventory(inventory: str | Path) -> RawModel:
    inv = _inventory_dir(inventory)
    raw = RawModel(inventory_dir=inv)
    issues: list[Issue] = []
    files = vars_files(inv)
    if not files:
        raise ModelError([_file_issue(inv / "group_vars", "no group_vars/all(.yml|/) found")])
    for f in files:
        _merge_model_file(raw, inv, f, issues)
    tenant_files.fold_into_list(raw.data, raw.where, raw.aliases)
    for f in other_vars_files(inv):
        got = _read_vars(f, issues)
        if got is not None:
            _check_vars(f, got[0], got[1], False, issues)
    for f in _inventory_files(inv, issues):
        _check_inventory_file(f, issues)
    if issues:
        raise ModelError(issues)
    return raw
