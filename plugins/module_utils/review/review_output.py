"""Where ``gpufleet review --markdown FILE`` may write: outside the Git work tree under review, never
through a link.

The review runs on a pull request's checkout: whatever lies inside it is the pull request's (a committed
``review.md`` could be a link to ``.git/config``, where a checkout may keep the job's token). So the file
is refused inside the work tree (CI writes it to ``$RUNNER_TEMP`` or a fresh temporary directory) and
opened with ``O_NOFOLLOW``: an existing link at the path is an error, never followed, and a comment step
that posts the file posts only what the review wrote.
"""

from __future__ import annotations

import os
from pathlib import Path

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.render.git_entries import work_tree


def check_output(path: str | os.PathLike[str], repo: str | os.PathLike[str] = ".") -> Path:
    """``path`` made absolute; refused inside the Git work tree of ``repo`` (links in its parents resolved)."""
    target = Path(os.path.abspath(path))
    parent = target.parent.resolve()
    root = work_tree(Path(repo).resolve())
    if root is not None and (parent == root.resolve() or parent.is_relative_to(root.resolve())):
        raise GpufleetError(
            f"--markdown {path}: inside the Git work tree {root}, which the change under review controls;"
            ' write it outside the checkout (CI: --markdown "$RUNNER_TEMP/gpufleet-review.md")'
        )
    return parent / target.name


def write_output(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` without following a link at it (an existing link is an error)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        if os.path.islink(path):
            raise GpufleetError(f"--markdown {path}: a symbolic link; the review never writes through links") from None
        raise GpufleetError(f"--markdown {path}: cannot write: {exc.strerror or exc}") from None
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
