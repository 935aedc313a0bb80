"""Make this checkout importable as ``ansible_collections.gpufleet.core``.

Scripts and benchmarks run from a checkout without installing the collection. Python finds the
collection's code under ``ansible_collections/gpufleet/core`` only, so this module keeps the symlink
``.build/collections/ansible_collections/gpufleet/core -> <repo root>`` and puts ``.build/collections``
first on ``sys.path``; after ``use_checkout()`` the absolute imports
``ansible_collections.gpufleet.core.plugins...`` work as they do under Ansible. ``tests/lib`` (code
for tests, scripts and benchmarks only, e.g. ``gpufleet_testlib.fabric_gen``) goes on ``sys.path`` too.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COLLECTIONS = REPO / ".build" / "collections"
TESTLIB = REPO / "tests" / "lib"


def use_checkout() -> Path:
    """Link the collection into ``.build/collections``, put that first on ``sys.path``; return the repo root."""
    link = COLLECTIONS / "ansible_collections" / "gpufleet" / "core"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        try:
            link.symlink_to(REPO, target_is_directory=True)
        except FileExistsError:  # made meanwhile by a parallel run
            pass
    if str(COLLECTIONS) not in sys.path:
        sys.path.insert(0, str(COLLECTIONS))
    if str(TESTLIB) not in sys.path:
        sys.path.append(str(TESTLIB))
    return REPO
