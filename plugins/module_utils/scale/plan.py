"""The plan of a scale change: what moves, as data and as Markdown tables for the pull request.

Built from three before/after pairs, all already in memory:

- the pool assignment (node -> pool) of the pool lock, old and new: node moves and pool counts;
- the rendered files that changed (path -> old bytes / new bytes): Slurm partitions and NodeSets
  that change are found inside them wherever they are (a ``kind: NodeSet`` object, the Slinky
  chart's ``nodesets:``/``partitions:`` values, embedded values strings, ``PartitionName=`` /
  ``NodeSet=`` lines of a slurm.conf), and topology files (``topology.conf``/``topology.yaml`` as
  files or as keys of a ConfigMap or of the chart's ``configFiles``);
- the inventory edit (file, line, old and new size).

Everything is sorted; the Markdown is deterministic.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.deps import missing
from ansible_collections.gpufleet.core.plugins.module_utils.hostlist import compress
from ansible_collections.gpufleet.core.plugins.module_utils.pools.lock import LOCK_NAME
from ansible_collections.gpufleet.core.plugins.module_utils.pools.moves import Move, node_moves, pool_counts

try:
    import yaml
except ImportError:  # importing works without it; the first use raises a clear error
    yaml = missing("yaml", "PyYAML")

_TOPOLOGY_NAME = re.compile(r"(^|[/._-])topology([._-]|$)", re.IGNORECASE)  # file names
_TOPOLOGY_KEY = re.compile(r"topology[^/]*\.(conf|ya?ml)$", re.IGNORECASE)  # ConfigMap / configFiles keys
_SLURM_LINE = re.compile(r"^\s*(PartitionName|NodeSet)=(\S+)(.*)$", re.MULTILINE)
_MAX_FIELDS = 6  # field changes listed per object in the Markdown table
_PARSED = (".yaml", ".yml", ".json", ".conf")  # files searched for partitions, NodeSets, topology
_NOT_PARSED = (LOCK_NAME,)  # node -> pool only: the moves come from it, not objects


@dataclass(frozen=True, order=True)
class ObjectChange:
    """A Slurm partition or NodeSet that is added, removed or changed; ``fields``: (key, old, new)."""

    name: str
    file: str
    change: str  # added | removed | changed
    fields: tuple[tuple[str, str, str], ...] = ()

    def summary(self) -> str:
        if self.change != "changed":
            return self.change
        if len(self.fields) == 1 and self.fields[0][0] == "lines":
            return f"{self.fields[0][1]} {self.fields[0][2]} lines"
        shown = [f"{k}: {n}" if o == "" else f"{k}: {o} → {n}" for k, o, n in self.fields[:_MAX_FIELDS]]
        more = len(self.fields) - _MAX_FIELDS
        return "; ".join(shown) + (f"; … {more} more" if more > 0 else "")


@dataclass
class ScalePlan:
    pool: str
    cluster: str
    old_unit: str | None
    old_size: int | None
    unit: str
    size: int
    inventory_file: str = ""
    inventory_line: int | None = None
    moves: list[Move] = field(default_factory=list)
    pool_nodes: dict[str, tuple[int, int]] = field(default_factory=dict)  # pool -> (before, after)
    partitions: list[ObjectChange] = field(default_factory=list)
    nodesets: list[ObjectChange] = field(default_factory=list)
    topology: list[ObjectChange] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    @property
    def files(self) -> list[str]:
        return sorted({*self.added, *self.changed, *self.removed})

    @property
    def required_moves(self) -> int:
        """Node assignments the size change needs: the change of the scaled pool's node count."""
        before, after = self.pool_nodes.get(self.pool, (0, 0))
        return abs(after - before)

    def size_text(self, old: bool = False) -> str:
        if old:
            return "none" if self.old_size is None else f"{self.old_size} {self.old_unit}"
        return f"{self.size} {self.unit}"

    def summary(self) -> str:
        """One line: what changes and how many nodes move."""
        routes: dict[tuple[str, str], int] = {}
        for m in self.moves:
            key = (m.from_pool or "unassigned", m.to_pool or "unassigned")
            routes[key] = routes.get(key, 0) + 1
        how = ", ".join(f"{n} {a} → {b}" for (a, b), n in sorted(routes.items()))
        n = len(self.moves)
        text = f"scale {self.pool}: {self.size_text(old=True)} → {self.size_text()}; "
        text += f"{n} node{'s' if n != 1 else ''} move" + (f" ({how})" if how else "")
        nfiles = len(self.files)
        return text + f"; {nfiles} file{'s' if nfiles != 1 else ''} change"

    def as_dict(self) -> dict[str, Any]:
        return {
            "pool": self.pool,
            "cluster": self.cluster,
            "before": {"size": self.old_size, "unit": self.old_unit},
            "after": {"size": self.size, "unit": self.unit},
            "inventory": {"file": self.inventory_file, "line": self.inventory_line},
            "summary": self.summary(),
            "moves": [{"node": m.node, "from": m.from_pool, "to": m.to_pool} for m in self.moves],
            "required_moves": self.required_moves,
            "pool_nodes": {p: {"before": b, "after": a} for p, (b, a) in sorted(self.pool_nodes.items())},
            "partitions": [_change_dict(c) for c in self.partitions],
            "nodesets": [_change_dict(c) for c in self.nodesets],
            "topology": [_change_dict(c) for c in self.topology],
            "files": {"added": list(self.added), "changed": list(self.changed), "removed": list(self.removed)},
        }

    def markdown(self) -> str:
        return render_markdown(self)


def _loader() -> Any:
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when PyYAML has it: 10k-line files


def _change_dict(c: ObjectChange) -> dict[str, Any]:
    return {
        "name": c.name,
        "file": c.file,
        "change": c.change,
        "fields": [{"key": k, "before": o, "after": n} for k, o, n in c.fields],
    }


# ------------------------------------------------------------------------ objects inside files


def _flat(value: Any, prefix: str = "") -> dict[str, str]:
    """Dotted-path -> scalar text for a nested value (lists by index)."""
    out: dict[str, str] = {}
    if isinstance(value, Mapping):
        if not value and prefix:
            out[prefix] = "{}"
        for k in sorted(value, key=str):
            out.update(_flat(value[k], f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(value, list):
        if not value and prefix:
            out[prefix] = "[]"
        for i, v in enumerate(value):
            out.update(_flat(v, f"{prefix}[{i}]"))
    else:
        text = "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
        out[prefix or "."] = text if len(text) <= 80 else text[:77] + "..."
    return out


def _docs(data: bytes) -> list[Any]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return []
    try:
        return [d for d in yaml.load_all(text, Loader=_loader()) if d is not None]
    except yaml.YAMLError:
        return [text]


def _objects(value: Any, found: dict[tuple[str, str], Any], depth: int = 0) -> None:
    """Collect ('nodeset'|'partition'|'topology', name) -> definition from anywhere inside ``value``."""
    if depth > 40:
        return
    if isinstance(value, Mapping):
        if value.get("kind") == "NodeSet" and isinstance(value.get("metadata"), Mapping):
            meta = value["metadata"]
            name = f"{meta.get('namespace')}/{meta.get('name')}" if meta.get("namespace") else str(meta.get("name"))
            found[("nodeset", name)] = value.get("spec")
        for key, sub in value.items():
            if key == "nodesets" and isinstance(sub, Mapping):
                for n, spec in sub.items():
                    if isinstance(spec, Mapping):
                        found[("nodeset", str(n))] = spec
            elif key == "partitions" and isinstance(sub, Mapping):
                for n, spec in sub.items():
                    if isinstance(spec, Mapping):
                        found[("partition", str(n))] = spec
            elif isinstance(key, str) and isinstance(sub, str) and _TOPOLOGY_KEY.search(key):
                found[("topology", key)] = sub
            _objects(sub, found, depth + 1)
    elif isinstance(value, list):
        for sub in value:
            _objects(sub, found, depth + 1)
    elif isinstance(value, str) and "\n" in value:
        for m in _SLURM_LINE.finditer(value):
            kind = "partition" if m.group(1) == "PartitionName" else "nodeset"
            found[(kind, m.group(2))] = f"{m.group(1)}={m.group(2)}{m.group(3)}".strip()
        stripped = value.lstrip()
        if ":" in value and not stripped.startswith(("#!", "-----")) and "PartitionName=" not in value:
            try:
                inner = yaml.load(value, Loader=_loader())
            except yaml.YAMLError:
                return
            if isinstance(inner, (Mapping, list)):
                _objects(inner, found, depth + 1)


def objects_in(data: bytes | None) -> dict[tuple[str, str], Any]:
    found: dict[tuple[str, str], Any] = {}
    if data is None:
        return found
    for doc in _docs(data):
        _objects(doc, found)
    return found


def _slurm_line_fields(old: str, new: str) -> tuple[tuple[str, str, str], ...]:
    def kv(line: str) -> dict[str, str]:
        return dict(p.split("=", 1) if "=" in p else (p, "") for p in line.split())

    a, b = kv(old), kv(new)
    return tuple((k, a.get(k, "-"), b.get(k, "-")) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k))


def _compare(name: str, file: str, old: Any, new: Any, missing: object) -> ObjectChange | None:
    if old is missing:
        return ObjectChange(name, file, "added")
    if new is missing:
        return ObjectChange(name, file, "removed")
    if old == new:
        return None
    if isinstance(old, str) and isinstance(new, str) and "=" in old and "\n" not in old:
        return ObjectChange(name, file, "changed", _slurm_line_fields(old, new))
    if isinstance(old, str) and isinstance(new, str):
        return ObjectChange(name, file, "changed", _line_delta(old.encode(), new.encode()))
    fo, fn = _flat(old), _flat(new)
    fields = tuple((k, fo.get(k, "-"), fn.get(k, "-")) for k in sorted(set(fo) | set(fn)) if fo.get(k) != fn.get(k))
    return ObjectChange(name, file, "changed", fields)


def _membership(
    pool: str, moves: list[Move], counts: Mapping[str, tuple[int, int]]
) -> tuple[tuple[str, str, str], ...]:
    """Node count and the nodes that join and leave ``pool`` (hostlist-compressed)."""
    joined = [m.node for m in moves if m.to_pool == pool]
    left = [m.node for m in moves if m.from_pool == pool]
    if not joined and not left:
        return ()
    out: list[tuple[str, str, str]] = []
    if pool in counts:
        before, after = counts[pool]
        out.append(("nodes", str(before), str(after)))
    if joined:
        out.append(("in", "", compress(joined)))
    if left:
        out.append(("out", "", compress(left)))
    return tuple(out)


def file_changes(
    path: str, old: bytes | None, new: bytes | None
) -> tuple[list[ObjectChange], list[ObjectChange], list[ObjectChange]]:
    """(partitions, nodesets, topology) that differ between two versions of one file."""
    missing = object()
    name = PurePosixPath(path).name
    parsed = name.endswith(_PARSED) and name not in _NOT_PARSED
    before, after = (objects_in(old), objects_in(new)) if parsed else ({}, {})
    parts: list[ObjectChange] = []
    nsets: list[ObjectChange] = []
    topo: list[ObjectChange] = []
    whole_file = _TOPOLOGY_NAME.search(PurePosixPath(path).name) is not None
    for key in sorted(set(before) | set(after)):
        kind, name = key
        if whole_file and kind == "topology":
            continue
        c = _compare(name, path, before.get(key, missing), after.get(key, missing), missing)
        if c is None:
            continue
        {"partition": parts, "nodeset": nsets, "topology": topo}[kind].append(c)
    if whole_file and old != new:
        change = "added" if old is None else "removed" if new is None else "changed"
        fields: tuple[tuple[str, str, str], ...] = ()
        if change == "changed" and old is not None and new is not None:
            fields = _line_delta(old, new)
        topo.append(ObjectChange(PurePosixPath(path).name, path, change, fields))
    return parts, nsets, topo


def _line_delta(old: bytes, new: bytes) -> tuple[tuple[str, str, str], ...]:
    """("lines", "-removed", "+added") between two texts, like ``git diff --stat`` counts them."""
    a = old.decode("utf-8", "replace").splitlines()
    b = new.decode("utf-8", "replace").splitlines()
    removed = added = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            removed += i2 - i1
            added += j2 - j1
    return (("lines", f"-{removed}", f"+{added}"),)


# ------------------------------------------------------------------------------------- build


def build_plan(
    *,
    pool: str,
    cluster: str,
    old_unit: str | None,
    old_size: int | None,
    unit: str,
    size: int,
    old_assignment: Mapping[str, str | None],
    new_assignment: Mapping[str, str | None],
    files_before: Mapping[str, bytes | None],
    files_after: Mapping[str, bytes | None],
    inventory_file: str = "",
    inventory_line: int | None = None,
    slurm_pools: Mapping[str, tuple[str, str]] | None = None,
    lock_file: str = "",
    pool_files: Mapping[str, str] | None = None,
) -> ScalePlan:
    """Assemble the plan. ``files_before``/``files_after``: repo-relative path -> bytes (None: absent).

    Only paths in either mapping are considered; pass exactly the files that changed.
    ``slurm_pools``: pool -> (partition, NodeSet) labels; a Slurm pool whose members change is listed
    as a partition and a NodeSet change (node count, nodes in and out) even when its rendered
    definition is the same (membership follows the pool label on the Node, not the values file).
    ``pool_files``: pool -> the file that defines its partition and NodeSet (the tenant's rendered
    ``slurm/values.yaml``), shown with those changes; ``lock_file`` when a pool has none.
    """
    plan = ScalePlan(
        pool=pool,
        cluster=cluster,
        old_unit=old_unit,
        old_size=old_size,
        unit=unit,
        size=size,
        inventory_file=inventory_file,
        inventory_line=inventory_line,
    )
    plan.moves = node_moves(old_assignment, new_assignment)
    plan.pool_nodes = pool_counts(old_assignment, new_assignment)
    for path in sorted(set(files_before) | set(files_after)):
        old, new = files_before.get(path), files_after.get(path)
        if old == new:
            continue
        if old is None:
            plan.added.append(path)
        elif new is None:
            plan.removed.append(path)
        else:
            plan.changed.append(path)
        parts, nsets, topo = file_changes(path, old, new)
        plan.partitions += parts
        plan.nodesets += nsets
        plan.topology += topo
    for pool_name, (partition, nodeset) in sorted((slurm_pools or {}).items()):
        fields = _membership(pool_name, plan.moves, plan.pool_nodes)
        if fields:
            where = (pool_files or {}).get(pool_name, lock_file)
            plan.partitions.append(ObjectChange(partition, where, "changed", fields))
            plan.nodesets.append(ObjectChange(nodeset, where, "changed", fields))
    plan.partitions.sort()
    plan.nodesets.sort()
    plan.topology.sort()
    return plan


# ---------------------------------------------------------------------------------- markdown


def _cell(text: Any) -> str:
    s = "" if text is None else str(text)
    return s.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _code(text: Any) -> str:
    s = _cell(text)
    return f"`{s}`" if s else "—"


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _col in head) + " |"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def table_section(
    title: str, count: int, head: list[str], rows: list[list[str]], empty: str, more: str | None = None
) -> list[str]:
    """``### title (count)``, then the table of ``rows`` or, when ``count`` is 0, the line ``empty``; a blank
    line after. ``rows`` may hold the first of ``count`` items only: with ``more`` (a suffix), a line then
    says how many more there are."""
    lines = [f"### {title} ({count})", ""]
    if not count:
        return [*lines, empty, ""]
    lines += _table(head, rows)
    if more is not None and count > len(rows):
        lines.append(f"\n… and {count - len(rows)} more{more}.")
    return [*lines, ""]


def object_sections(
    partitions: list[ObjectChange], nodesets: list[ObjectChange], topology: list[ObjectChange]
) -> list[str]:
    """Markdown sections (one table each) of the Slurm partitions, NodeSets and topology files that change."""
    lines: list[str] = []
    for title, items in (("Slurm partitions", partitions), ("Slurm NodeSets", nodesets), ("Topology", topology)):
        rows = [[_code(c.name), _code(c.file), _cell(c.summary())] for c in items]
        lines += table_section(title, len(items), ["name", "file", "change"], rows, "No change.")
    return lines


def render_markdown(plan: ScalePlan, max_moves: int = 200) -> str:
    """The plan as Markdown: headline, inventory change, then one table per kind of change."""
    lines = [f"## Scale pool `{plan.pool}` ({plan.cluster}): {plan.size_text(old=True)} → {plan.size_text()}", ""]
    lines.append(plan.summary() + ".")
    lines.append("")
    if plan.inventory_file:
        where = plan.inventory_file + (f":{plan.inventory_line}" if plan.inventory_line else "")
        lines += [f"Inventory change (the only edit by hand): `{where}`", ""]

    rows = [[_code(m.node), _code(m.from_pool), _code(m.to_pool)] for m in plan.moves[:max_moves]]
    head = ["node", "from pool", "to pool"]
    lines += table_section(
        "Node moves", len(plan.moves), head, rows, "No node changes pool.", " (see the pool lock diff)"
    )

    if plan.pool_nodes:
        lines += ["### Pool sizes (nodes)", ""]
        rows = [[_code(p), str(b), str(a), f"{a - b:+d}"] for p, (b, a) in sorted(plan.pool_nodes.items())]
        lines += [*_table(["pool", "before", "after", "change"], rows), ""]

    lines += object_sections(plan.partitions, plan.nodesets, plan.topology)

    rows = [[_code(p), "added"] for p in plan.added]
    rows += [[_code(p), "changed"] for p in plan.changed]
    rows += [[_code(p), "removed"] for p in plan.removed]
    lines += table_section("Files", len(plan.files), ["file", "change"], sorted(rows), "No file changes.")
    return "\n".join(lines)


def iter_moves_by_route(plan: ScalePlan) -> Iterator[tuple[str | None, str | None, list[str]]]:
    """(from, to, nodes) groups of the moves, sorted; for compact summaries."""
    groups: dict[tuple[str | None, str | None], list[str]] = {}
    for m in plan.moves:
        groups.setdefault((m.from_pool, m.to_pool), []).append(m.node)
    for (a, b), nodes in sorted(groups.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1]))):
        yield a, b, sorted(nodes)
