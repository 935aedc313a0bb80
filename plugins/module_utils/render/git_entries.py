"""What Git holds, not what a checkout shows: the entries of the index (``git ls-files --stage``) with
their modes, and the ones no fleet repository may hold.

A checkout hides what an entry is: a submodule (a *gitlink*, mode ``160000``) becomes an empty
directory, a symbolic link (``120000``) reads as the file it points to. Argo CD clones the repository
and runs ``git submodule update --init --recursive`` whenever a ``.gitmodules`` is present, and a
submodule it cannot fetch fails every Application at that revision. So, whatever the checkout looks
like:

- under a guarded path (the GitOps tree, an inventory) every entry is a regular file (``100644`` or
  ``100755``); a symlink, gitlink or anything else is refused with its path;
- a gitlink anywhere and a ``.gitmodules`` anywhere (any folder, any case) are refused.

The index is what a commit of the work tree holds; in CI (a fresh clone) it is ``HEAD``'s tree. Pure
but for ``git`` (read-only); outside a Git work tree there are no entries and nothing to refuse.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

REGULAR = ("100644", "100755")
SYMLINK = "120000"
GITLINK = "160000"
_KIND = {SYMLINK: "a symbolic link", GITLINK: "a submodule (gitlink)"}


def work_tree(path: Path) -> Path | None:
    """The top of the Git work tree holding ``path`` (an existing directory or its nearest parent), else None."""
    here = path
    while not here.is_dir() and here != here.parent:
        here = here.parent
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], cwd=here, capture_output=True, check=False, timeout=60
        )
    except (FileNotFoundError, OSError):
        return None
    return Path(proc.stdout.decode().strip()) if proc.returncode == 0 and proc.stdout.strip() else None


def index_entries(root: Path) -> dict[str, str]:
    """Repository-relative path -> mode of every entry in the index of the work tree ``root``."""
    proc = subprocess.run(
        ["git", "-c", "core.quotePath=false", "ls-files", "--stage", "-z"],
        cwd=root,
        capture_output=True,
        check=False,
        timeout=300,
    )
    if proc.returncode != 0:
        raise OSError(f"`git ls-files --stage` failed in {root}: {proc.stderr.decode(errors='replace').strip()}")
    out: dict[str, str] = {}
    for rec in proc.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if rec:
            meta, _tab, path = rec.partition("\t")
            out[path] = meta.split(" ", 1)[0]
    return out


def _under(path: str, guarded: str) -> bool:
    return guarded in ("", ".") or path == guarded or path.startswith(guarded + "/")


def entry_problems(entries: dict[str, str], guarded: list[str]) -> list[str]:
    """Every entry no fleet repository may hold: a non-regular entry under a ``guarded`` path (repository-
    relative), a gitlink or a ``.gitmodules`` anywhere; each names its path."""
    problems: list[str] = []
    for path, mode in sorted(entries.items()):
        name = path.rsplit("/", 1)[-1]
        if name.lower() == ".gitmodules":
            problems.append(
                f"`{path}` is a .gitmodules: Argo CD would run `git submodule update` on every checkout and a"
                " submodule it cannot fetch stops every Application of the fleet; remove it"
            )
        elif mode == GITLINK or (mode not in REGULAR and any(_under(path, g) for g in guarded)):
            kind = _KIND.get(mode, f"an entry of mode {mode}")
            problems.append(f"`{path}` is {kind} in Git, not a regular file; remove it (a checkout hides what it is)")
    return problems


def check_entries(out: Path) -> list[str]:
    """The :func:`entry_problems` of the Git work tree holding ``out``, ``out`` guarded (none outside Git)."""
    root = work_tree(out)
    if root is None:
        return []
    try:
        rel = out.resolve().relative_to(root).as_posix()
    except ValueError:
        return []
    return entry_problems(index_entries(root), [rel])
