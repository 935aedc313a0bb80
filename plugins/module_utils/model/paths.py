"""Where the GitOps tree goes: ``gpufleet_fleet.gitops.path`` under the Git work tree of the inventory,
confined to the repository (relative, no ``..``, no symbolic link on the way).

The renderer, the publish and scale steps and ``node_pools`` (the rendered node annotations) all
resolve the tree here.
"""

from __future__ import annotations

import os
from pathlib import Path

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Fleet


def inventory_root(inventory: str | os.PathLike[str]) -> Path:
    """The inventory folder, also when its ``hosts.yml`` is given."""
    inv = Path(inventory)
    return inv.parent if inv.is_file() else inv


def fleet_root(inventory_dir: Path) -> Path:
    """The fleet repository holding ``inventory_dir``: the nearest folder above it that is a Git work
    tree, else the nearest one with an ``ansible.cfg`` (a repository not yet under Git), else the current
    directory. Never the installed collection: the playbooks pass the inventory, not their own folder."""
    d = inventory_dir.resolve()
    for marker in (".git", "ansible.cfg"):
        root = next((cand for cand in (d, *d.parents) if (cand / marker).exists()), None)
        if root is not None:
            return root
    return Path.cwd()


def default_out(fleet: Fleet) -> Path:
    """``gitops.path`` in the fleet repository holding the inventory (``fleet_root``)."""
    return confined(fleet_root(fleet.inventory_dir), fleet.gitops.path, "gpufleet_fleet.gitops.path")


def confined(root: Path, rel: str, key: str) -> Path:
    """``root/rel`` when ``rel`` is relative, has no ``..`` and no part of it is a symbolic link
    (the schema already refuses ``..`` and absolute paths; this holds for any caller)."""
    parts = Path(rel).parts
    if not parts or Path(rel).is_absolute() or any(p in ("..", ".") for p in parts):
        raise GpufleetError(f"{key}: {rel!r} must be a path inside the repository (relative, no '..')")
    cur = root
    for part in parts:
        cur = cur / part
        if cur.is_symlink():
            raise GpufleetError(
                f"{key}: {cur} is a symbolic link (to {os.readlink(cur)!r}); the renderer writes only into"
                " real directories of the repository"
            )
    return cur
