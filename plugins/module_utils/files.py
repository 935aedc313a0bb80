"""The one atomic single-file writer of the collection.

``replace_file(path, data)`` makes ``path`` hold ``data`` when its bytes differ: a temporary file
in the same folder, flushed to disk, then renamed over ``path`` (``os.replace``), so a reader or a
kill at any moment sees the old bytes or the new ones, never a mix. Nothing is written when the
bytes are the same (re-runs change nothing), or in check mode. The pool locks, ``slurm_topology``'s
``dest``, ``fabric_facts``' saved dump and the inventory edit of ``fleet_scale`` all go through it.
Whole GitOps trees are swapped by ``render/writer.py``, which builds on the same rules.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def replace_file(
    path: str | os.PathLike[str], data: bytes | str, *, mode: int | None = None, check: bool = False
) -> tuple[bool, bytes | None]:
    """Atomically write ``data`` to ``path`` when its bytes differ; return (changed, old bytes or None).

    ``mode``: the file mode to set; None keeps the mode of the file it replaces (0644 for a new file).
    Missing parent folders are created. ``check``: report only, write nothing.
    """
    p = Path(path)
    new = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    try:
        old: bytes | None = p.read_bytes()
    except FileNotFoundError:
        old = None
    if old == new:
        return False, old
    if check:
        return True, old
    if mode is None:
        mode = p.stat().st_mode & 0o7777 if old is not None else 0o644
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".gpufleet-tmp", dir=str(p.parent))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(new)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return True, old


def as_text(data: bytes | None) -> str:
    """Old bytes as text for diffs ("" for a missing file)."""
    return "" if data is None else data.decode("utf-8", errors="replace")
