"""Maintenance as a pull request: put nodes into maintenance (``start``) or return them (``end``).

``plan_maintenance(inventory, start=Maintenance(...) | end=name)`` edits ``gpufleet_maintenance`` in
memory, validates the edited inventory like any other, renders it and returns the change; nothing is
written. ``write_maintenance(change)`` then writes the GitOps tree (atomic, only changed files) and the
inventory file. Like ``scale``, a GitOps tree that is not current before the change is refused, so the
pull request holds the maintenance change alone; ``playbooks/publish.yml`` (``fleet_publish``) commits,
pushes and opens it.

The command owns one file, ``group_vars/all/maintenance.yml``: it writes the whole file (sorted by
name, a header saying so) and removes it when the last maintenance ends. An inventory that defines
``gpufleet_maintenance`` in another file is refused (move the list there first).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.files import replace_file
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Fleet
from ansible_collections.gpufleet.core.plugins.module_utils.model.inventory import RawModel, load_inventory
from ansible_collections.gpufleet.core.plugins.module_utils.model.maintenance_model import KEY, Maintenance
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import validate
from ansible_collections.gpufleet.core.plugins.module_utils.render import cache as render_cache
from ansible_collections.gpufleet.core.plugins.module_utils.render import tree as render_tree
from ansible_collections.gpufleet.core.plugins.module_utils.scale.run import _locate, _stale
from ansible_collections.gpufleet.core.plugins.module_utils.yaml_dump import dump_file

FILE = ("group_vars", "all", "maintenance.yml")
FILE_HEADER = (
    "Nodes in maintenance (platform-owned). Written by `gpufleet.py maintenance start|end` (or\n"
    "playbooks/maintenance.yml); edits by hand are kept only as data: the command rewrites this file."
)


class MaintenanceError(GpufleetError):
    """The maintenance change cannot be made (unknown or duplicate name, list defined elsewhere)."""


@dataclass
class MaintenanceChange:
    action: str  # start | end
    name: str
    file: Path
    old_text: bytes | None
    new_text: bytes | None  # None: the file is removed (no maintenance left)
    fleet: Fleet  # the fleet after the change
    result: render_tree.RenderResult
    out: Path
    report: render_tree.WriteReport

    def plan_markdown(self) -> str:
        """The rendered MAINTENANCE.md of every cluster after the change (what the pull request shows)."""
        parts = [
            data.decode("utf-8") for rel, data in sorted(self.result.files.items()) if rel.endswith("/MAINTENANCE.md")
        ]
        return "\n".join(parts) if parts else "No node is in maintenance.\n"

    def files(self) -> list[str]:
        p = self.report.plan
        return sorted({*p.added, *p.changed, *p.removed})


def _entries(raw: RawModel, file: Path) -> list[dict]:
    entries = raw.data.get(KEY) or []
    where = raw.locate((KEY,))[0] if KEY in raw.data else str(file)
    if Path(where).resolve() != file.resolve():
        raise MaintenanceError(
            f"{where}: defines {KEY}; the maintenance command writes {file}: move the list there first"
        )
    return [dict(e) for e in entries]


def _file_text(entries: list[dict]) -> bytes | None:
    if not entries:
        return None
    return dump_file({KEY: sorted(entries, key=lambda e: str(e.get("name")))}, FILE_HEADER)


def _refuse_stale(fleet: Fleet, out: Path, root: Path) -> None:
    """A tree that is not current before the change is refused: the pull request holds this change alone."""
    if render_cache.cached_current(out, render_cache.input_digest(fleet)) is not None:
        return
    stale = _stale(render_tree.render_fleet(fleet), out, root)
    if stale:
        raise MaintenanceError(
            f"{out} is not current with the inventory before the maintenance change ({len(stale)} file(s)); "
            "re-render and commit first, so the change is reviewed alone:\n  " + "\n  ".join(stale[:15])
        )


def plan_maintenance(
    inventory: str | os.PathLike[str],
    start: Maintenance | None = None,
    end: str | None = None,
    gitops_dir: str | os.PathLike[str] | None = None,
) -> MaintenanceChange:
    """The change that starts ``start`` or ends the maintenance named ``end``; writes nothing."""
    inv = Path(inventory)
    inv = inv.parent if inv.is_file() else inv
    file = inv.joinpath(*FILE)
    raw = load_inventory(inv)
    before = validate(raw)
    entries = _entries(raw, file)
    out, root = _locate(inv, before, gitops_dir)
    _refuse_stale(before, out, root)
    names = [e.get("name") for e in entries]
    if start is not None:
        if start.name in names:
            raise MaintenanceError(f"maintenance {start.name!r} is already in {file}; end it or pick another name")
        entries.append(start.as_dict())
        action, name = "start", start.name
    elif end is not None:
        if end not in names:
            known = ", ".join(str(n) for n in names) or "none"
            raise MaintenanceError(f"no maintenance named {end!r} in {file} (in maintenance: {known})")
        entries = [e for e in entries if e.get("name") != end]
        action, name = "end", end
    else:
        raise MaintenanceError("give a maintenance to start or the name of one to end")
    raw.data[KEY] = entries
    after = validate(raw)  # the edited inventory, checked like any other (names the entry and key)
    result = render_tree.render_fleet(after)  # resolves the nodes: unknown nodes or switches fail here
    report = render_tree.plan_render(result, out)
    old = file.read_bytes() if file.is_file() else None
    return MaintenanceChange(action, name, file, old, _file_text(entries), after, result, out, report)


def write_maintenance(change: MaintenanceChange) -> render_tree.WriteReport:
    """Write the tree (atomic, only changed files), then the inventory file (or remove it)."""
    report = render_tree.write_render(change.result, change.out)
    if change.new_text is None:
        change.file.unlink(missing_ok=True)
    else:
        change.file.parent.mkdir(parents=True, exist_ok=True)
        replace_file(change.file, change.new_text)
    return report
