"""Atomic, minimal writes of a rendered file tree.

``plan(out, files)`` compares the rendered ``{relative path: bytes}`` with what is on disk;
``write(out, files)`` makes the tree on disk match, atomically:

* the new tree is built aside, in ``.<name>.gpufleet-new`` next to ``out`` (same filesystem):
  unchanged files and files the renderer does not own are **hard-linked** (same inode, bytes and
  mtime untouched), only new and changed files are written;
* then the two directories are swapped with one ``renameat2(RENAME_EXCHANGE)`` (Linux); where
  that is not available, two renames with a recovery step at the next run. A kill at any point
  leaves ``out`` holding the old tree or the new one, never a mix;
* ownership is tracked in manifests (sha256 and path of every file the renderer wrote): each tenant
  folder ``clusters/<c>/tenants/<t>/`` has its own ``.gpufleet-manifest`` (paths relative to the
  folder, so a tenant's change rewrites only files in the tenant's folder, which CODEOWNERS gives
  the tenant), ``out/.gpufleet-manifest`` lists every other file and names the tenant manifests.
  Owned files no longer produced are removed;
* the rendered cluster folders are **closed**: a file under ``clusters/`` that no manifest lists
  (one added by hand after the render, e.g. an extra object in a folder Argo CD syncs) is an error
  naming it, in check mode and when writing alike, and the render never keeps it. Outside
  ``clusters/`` files the renderer does not own are left alone; rendering a path that holds one is
  an error;
* nothing at all is written when nothing changed.

An ``flock`` on the parent directory serialises concurrent renders (no lock file is left behind).

Confinement: the writer never follows a symbolic link. ``out`` itself, every directory and file
inside it and the side directories must be real directories and files (checked with ``lstat``
under the lock); a symlink anywhere in the tree is an error naming it, so nothing is ever read or
written through a link that points out of the tree. In a Git work tree the index is read too: a
submodule, link or other non-regular entry under ``out`` and a ``.gitmodules`` anywhere are refused
(:mod:`.git_entries`; a checkout shows a submodule as an empty directory). Files are created with ``O_NOFOLLOW|O_EXCL``
in the fresh side directory the writer made itself.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import hashlib
import os
import shutil
import stat
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.render import git_entries

MANIFEST = ".gpufleet-manifest"
_MANIFEST_HEAD = "# gpufleet render manifest: files owned (written) by the renderer. sha256  path\n"
_SCOPE_HEAD = (
    "# gpufleet render manifest of this tenant folder: files owned (written) by the renderer."
    " sha256  path (relative to this folder)\n"
)
_SUB = "manifest"  # the digest column of a root manifest line that names a tenant folder's manifest
CLOSED = "clusters"  # every file under this folder must be listed in a manifest
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


class TreeError(GpufleetError):
    """The tree cannot be written as asked (ownership conflict, bad path, I/O error)."""


@dataclass
class Plan:
    """What writing ``files`` to ``out`` would do. Paths are relative, POSIX, sorted."""

    out: Path
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    before: dict[str, bytes] = field(default_factory=dict)  # old bytes of changed and removed files
    manifests: list[str] = field(default_factory=list)  # manifests added, changed or removed

    @property
    def changes(self) -> bool:
        return bool(self.added or self.changed or self.removed or self.manifests)

    def as_dict(self) -> dict[str, object]:
        return {
            "added": list(self.added),
            "changed": list(self.changed),
            "removed": list(self.removed),
            "unchanged": self.unchanged,
        }


def _check_rel(path: str) -> str:
    parts = path.split("/") if isinstance(path, str) and path[:1] != "/" and "\\" not in path else ()
    if parts and all(part not in ("", ".", "..", MANIFEST) for part in parts):
        return path  # already what the checks below return (no part for PurePosixPath to normalise)
    p = PurePosixPath(path)
    if p.is_absolute() or not p.parts or any(part in ("..", ".", "") for part in p.parts) or "\\" in path:
        raise TreeError(f"renderer produced a bad relative path {path!r}")
    if MANIFEST in p.parts:
        raise TreeError(f"renderer may not produce {MANIFEST}")
    return p.as_posix()


def scope(rel: str) -> str:
    """The tenant folder ``clusters/<c>/tenants/<t>`` that holds ``rel``, else ``""`` (the root manifest's)."""
    parts = rel.split("/")
    return "/".join(parts[:4]) if len(parts) >= 5 and parts[0] == CLOSED and parts[2] == "tenants" else ""


def check_confined(out: Path) -> None:
    """Refuse a tree that holds a symbolic link (``out`` itself, any directory or file in it).

    The renderer owns the tree; a link in it (``gitops/clusters -> /elsewhere``) would make it
    write or read outside. Nothing is followed: ``os.walk`` with ``followlinks=False`` and ``lstat``.
    """
    try:
        st = os.lstat(out)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        raise TreeError(f"{out} is a symbolic link (to {os.readlink(out)!r}); the GitOps tree must be a real directory")
    if not stat.S_ISDIR(st.st_mode):
        raise TreeError(f"{out} is not a directory")

    def boom(exc: OSError) -> None:
        raise TreeError(f"cannot read the GitOps tree {out}: {exc}")

    for root, dirs, names in os.walk(out, followlinks=False, onerror=boom):
        for n in sorted(dirs + names):
            p = os.path.join(root, n)
            m = os.lstat(p).st_mode
            if stat.S_ISLNK(m):
                raise TreeError(
                    f"{p} is a symbolic link (to {os.readlink(p)!r}); the renderer never writes through links:"
                    " remove it (the GitOps tree holds only real files and directories)"
                )
            if not (stat.S_ISDIR(m) or stat.S_ISREG(m)):
                raise TreeError(f"{p} is not a regular file or directory; remove it")
    check_git_entries(out)


def check_git_entries(out: Path) -> None:
    """Refuse what Git holds under ``out`` that a checkout hides (a submodule, a link; :mod:`.git_entries`)."""
    problems = git_entries.check_entries(out)
    if problems:
        what = "entry" if len(problems) == 1 else "entries"
        raise TreeError(f"{len(problems)} Git {what} refused: " + "; ".join(problems))


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def manifests(files: Mapping[str, bytes]) -> dict[str, bytes]:
    """Manifest path -> bytes for the rendered ``files``: one per tenant folder, the root one for the rest."""
    groups: dict[str, list[str]] = {}
    for p in files:
        groups.setdefault(scope(p), []).append(p)
    subs = sorted(s for s in groups if s)
    out: dict[str, bytes] = {}
    for s in subs:
        lines = [f"{_sha(files[p])}  {p[len(s) + 1 :]}\n" for p in sorted(groups[s])]
        out[f"{s}/{MANIFEST}"] = (_SCOPE_HEAD + "".join(lines)).encode("utf-8")
    lines = [f"{_sha(files[p])}  {p}\n" for p in sorted(groups.get("", []))]
    lines += [f"{_SUB}  {s}/{MANIFEST}\n" for s in subs]
    out[MANIFEST] = (_MANIFEST_HEAD + "".join(sorted(lines, key=lambda x: x.partition("  ")[2]))).encode("utf-8")
    return out


def manifest_bytes(files: Mapping[str, bytes]) -> bytes:
    """The root manifest of the rendered ``files``."""
    return manifests(files)[MANIFEST]


def _manifest_lines(f: Path, sub: bool) -> Iterator[tuple[int, str, str]]:
    data = _read(f)
    if data is None:
        if sub:
            raise TreeError(f"{f}: the tenant folder's manifest is missing (the root manifest names it); restore it")
        return
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise TreeError(f"{f}: corrupt manifest (not UTF-8); restore it from Git") from None
    for n, line in enumerate(text.splitlines(), 1):
        if not line or line.startswith("#"):
            continue
        digest, sep, rel = line.partition("  ")
        if not sep or not (len(digest) == 64 or (digest == _SUB and not sub)):
            raise TreeError(f"{f}:{n}: corrupt manifest line {line!r}; restore it from Git")
        yield n, digest, rel


def read_manifests(out: Path) -> tuple[dict[str, str], list[str]]:
    """(owned path -> sha256, manifest paths) from the root manifest and the tenant manifests it names."""
    owned: dict[str, str] = {}
    found = [MANIFEST] if _read(out / MANIFEST) is not None else []
    for n, digest, rel in list(_manifest_lines(out / MANIFEST, False)):
        rel = _check_manifest_rel(rel, out / MANIFEST, n, digest == _SUB)
        if digest != _SUB:
            owned[rel] = digest
            continue
        s = rel.rpartition("/")[0]
        if rel.rpartition("/")[2] != MANIFEST or scope(f"{s}/x") != s:
            raise TreeError(f"{out / MANIFEST}:{n}: {rel!r} is not a tenant folder's {MANIFEST}; restore it from Git")
        found.append(rel)
        for m, sub_digest, sub_rel in _manifest_lines(out / rel, True):
            owned[f"{s}/{_check_manifest_rel(sub_rel, out / rel, m)}"] = sub_digest
    return owned, found


def _check_manifest_rel(rel: str, f: Path, n: int, names_manifest: bool = False) -> str:
    """A path of a manifest line (``names_manifest``: the root's line naming a tenant manifest)."""
    parts = rel.split("/")
    inner = parts[:-1] if names_manifest else parts
    if "\\" in rel or any(p in ("", ".", "..") for p in parts) or MANIFEST in inner:
        raise TreeError(f"{f}:{n}: corrupt manifest line (bad path {rel!r}); restore it from Git")
    return rel


def read_manifest(out: Path) -> dict[str, str]:
    """Owned path -> sha256 from the manifests (empty when there is none)."""
    return read_manifests(out)[0]


def manifest_digest(out: Path) -> str | None:
    """sha256 of every manifest of ``out`` together (None when unreadable): a cache key of the tree."""
    try:
        _manifest, found = read_manifests(out)
        h = hashlib.sha256()
        for rel in sorted(found):
            h.update(rel.encode() + b"\0" + _sha(_read(out / rel) or b"").encode())
        return h.hexdigest()
    except (TreeError, OSError):
        return None


def check_closed(out: Path, owned: Mapping[str, str], found: list[str]) -> None:
    """Refuse a file under ``clusters/`` that no manifest lists: the render never wrote it."""
    root = out / CLOSED
    if not root.is_dir():
        return
    listed = set(owned) | set(found)
    foreign: list[str] = []
    for d, _dirs, names in os.walk(root, followlinks=False):
        rel_d = Path(d).relative_to(out).as_posix()
        foreign += [f"{rel_d}/{n}" for n in names if f"{rel_d}/{n}" not in listed]
    if foreign:
        foreign.sort()
        shown = ", ".join(str(out / f) for f in foreign[:10]) + (", ..." if len(foreign) > 10 else "")
        raise TreeError(
            f"{len(foreign)} file(s) in the rendered cluster folders were not written by the render (listed in no"
            f" {MANIFEST}): {shown}; Argo CD would apply them: remove them (change the inventory and re-render"
            " instead)"
        )


def _side(out: Path, tag: str) -> Path:
    return out.parent / f".{out.name}.gpufleet-{tag}"


def _read(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except NotADirectoryError as exc:
        raise TreeError(f"{path}: a parent of it is a file, the renderer needs a directory there") from exc
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise TreeError(f"{path} is a symbolic link; the renderer never follows links: remove it") from exc
        raise
    try:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise TreeError(f"{path} is a directory, the renderer needs a file there")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read()
    finally:
        os.close(fd)


def read_owned(path: Path) -> bytes | None:
    """The bytes of a file of the tree, never through a link (a link is an error naming it); None: absent."""
    return _read(path)


def plan(out: str | os.PathLike[str], files: Mapping[str, bytes]) -> Plan:
    """Compare the rendered files with ``out`` on disk; write nothing."""
    out = Path(out)
    files = {_check_rel(k): v for k, v in files.items()}
    check_confined(out)
    return _plan(out, files)


def plan_within(out: str | os.PathLike[str], files: Mapping[str, bytes], folders: tuple[str, ...]) -> Plan:
    """:func:`plan` of a render of the ``folders`` (``clusters/<c>/``) only: ``files`` are theirs, and
    what is outside them (the other folders, the fleet-wide files, the root manifest's lines for
    them) is not compared. The tree as a whole is still checked (links, files no manifest lists)."""
    out = Path(out)
    files = {_check_rel(k): v for k, v in files.items()}
    outside = sorted(k for k in files if not k.startswith(folders))
    if outside:
        raise ValueError(f"plan_within: {outside[0]} is outside {', '.join(folders)}")
    check_confined(out)
    p = _plan(out, files)
    p.removed = [r for r in p.removed if r.startswith(folders)]
    p.before = {r: b for r, b in p.before.items() if r.startswith(folders)}
    p.manifests = [m for m in p.manifests if m.startswith(folders)]

    def lines(data: bytes | None) -> list[str]:  # the root manifest's lines for the folders
        text = (data or b"").decode("utf-8", "replace")
        return [ln for ln in text.splitlines() if ln.partition("  ")[2].startswith(folders)]

    if lines(_read(out / MANIFEST) if out.is_dir() else None) != lines(manifests(files)[MANIFEST]):
        p.manifests.append(MANIFEST)
    return p


def _plan(out: Path, files: Mapping[str, bytes]) -> Plan:
    """:func:`plan` of paths already checked (``_check_rel``) in a tree already checked (``check_confined``)."""
    result = Plan(out=out)
    is_dir = out.is_dir()
    owned, found = read_manifests(out) if is_dir else ({}, [])
    check_closed(out, owned, found)
    for rel in sorted(files):
        data = files[rel]
        target = out / rel
        old = _read(target) if is_dir else None
        if old is None:
            if target.is_symlink():
                raise TreeError(f"{target} is a dangling symlink the renderer does not own; remove it")
            result.added.append(rel)
        elif rel not in owned:
            raise TreeError(f"{target} exists and is not owned by the renderer (not in {MANIFEST}); move it away")
        elif old != data:
            result.changed.append(rel)
            result.before[rel] = old
        else:
            result.unchanged += 1
    for rel in sorted(set(owned) - set(files)):
        old = _read(out / rel)
        if old is not None:
            result.removed.append(rel)
            result.before[rel] = old
    want = manifests(files)
    result.manifests = sorted(rel for rel in set(want) | set(found) if not is_dir or _read(out / rel) != want.get(rel))
    return result


@contextmanager
def _locked(out: Path) -> Iterator[None]:
    out.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(out.parent, os.O_RDONLY)  # flock on the parent directory: no lock file left behind
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def recover(out: Path) -> None:
    """Finish or undo an interrupted write: the old tree comes back if ``out`` went missing."""
    new, old = _side(out, "new"), _side(out, "old")
    for side in (new, old):
        if side.is_symlink():  # the writer never makes links: someone else put it there
            raise TreeError(
                f"{side} is a symbolic link (to {os.readlink(side)!r}); remove it, the renderer never follows links"
            )
    if not os.path.lexists(out) and old.is_dir() and not old.is_symlink():  # killed between the two renames
        os.rename(old, out)
    for stale in (new, old):
        if stale.exists() or stale.is_symlink():
            shutil.rmtree(stale) if stale.is_dir() and not stale.is_symlink() else stale.unlink()


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux renameat2). False when the platform cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    rc = fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise TreeError(f"cannot swap {a} and {b}: {os.strerror(err)}")


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _link_or_copy(src: Path, dst: Path) -> None:
    if src.is_symlink():  # check_confined refused links already; never copy one into the tree
        raise TreeError(f"{src} is a symbolic link; the renderer never follows links: remove it")
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _build(out: Path, new: Path, files: Mapping[str, bytes], p: Plan) -> None:
    want = manifests(files)
    drop = set(p.removed) | set(p.changed) | set(p.manifests)
    os.mkdir(new)
    if out.is_dir():
        for root, dirs, names in os.walk(out):
            rel_root = Path(root).relative_to(out)
            dirs.sort()
            for d in list(dirs):
                if (Path(root) / d).is_symlink():
                    raise TreeError(f"{Path(root) / d} is a symbolic link; the renderer never follows links: remove it")
            kept = [n for n in sorted(names) if (rel_root / n).as_posix() not in drop]
            if kept or (not names and not dirs):  # keep files, and directories that were empty already
                (new / rel_root).mkdir(parents=True, exist_ok=True)
            for n in kept:
                _link_or_copy(Path(root) / n, new / rel_root / n)
    for rel in sorted(set(p.added) | set(p.changed)):
        target = new / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        _create(target, files[rel])
    for rel in p.manifests:
        if rel in want:
            (new / rel).parent.mkdir(parents=True, exist_ok=True)
            _create(new / rel, want[rel])


def _create(target: Path, data: bytes) -> None:
    """Create a new file (never through a link, never over an existing one) and fsync it."""
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def write(out: str | os.PathLike[str], files: Mapping[str, bytes]) -> Plan:
    """Make ``out`` hold ``files`` (plus the files it does not own), atomically. Returns the plan."""
    out = Path(out).absolute()
    files = {_check_rel(k): v for k, v in files.items()}
    with _locked(out):
        recover(out)
        check_confined(out)
        p = _plan(out, files)  # paths and tree checked just above
        if not p.changes:
            return p
        new = _side(out, "new")
        try:
            _build(out, new, files, p)
            _fsync_dir(new)
            if not out.exists():
                os.rename(new, out)
            elif _exchange(new, out):
                shutil.rmtree(new)  # ``new`` now holds the old tree
            else:
                old = _side(out, "old")
                os.rename(out, old)
                os.rename(new, out)
                shutil.rmtree(old)
            _fsync_dir(out.parent)
        except OSError as exc:
            raise TreeError(f"writing {out} failed, the old tree is kept: {exc}") from exc
        finally:
            if new.exists():
                shutil.rmtree(new, ignore_errors=True)
        return p
