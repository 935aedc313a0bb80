"""Node moves between two pool assignments (node -> pool), as the pool locks record them.

The scale plan (``scale/plan.py``) and the publish step (``publish/publish_tree.py``) both compare an old
and a new pool lock; this is the one comparison they share.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Move:
    node: str
    from_pool: str | None
    to_pool: str | None


def node_moves(old: Mapping[str, str | None], new: Mapping[str, str | None]) -> list[Move]:
    """Nodes whose pool differs between two assignments (a node only on one side moves from/to None)."""
    return sorted(
        Move(node, old.get(node), new.get(node)) for node in set(old) | set(new) if old.get(node) != new.get(node)
    )


def pool_counts(old: Mapping[str, str | None], new: Mapping[str, str | None]) -> dict[str, tuple[int, int]]:
    """pool -> (nodes before, nodes after), only pools whose count changed."""
    before: dict[str, int] = {}
    after: dict[str, int] = {}
    for p in old.values():
        if p:
            before[p] = before.get(p, 0) + 1
    for p in new.values():
        if p:
            after[p] = after.get(p, 0) + 1
    return {
        p: (before.get(p, 0), after.get(p, 0))
        for p in sorted(set(before) | set(after))
        if before.get(p, 0) != after.get(p, 0)
    }
