"""``gpufleet_rollout``: how much of the fleet an upgrade may take down at once (platform-owned).

``max_unavailable_per_block`` (default 1): the most nodes of one topology block (or leaf group) that a
rolling update may have down at the same time. A Slinky NodeSet rolls its pods by ordinal, not by
block, so its ``maxUnavailable`` is set to this number: then no block can lose more, whichever nodes
the update picks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

KEY = "gpufleet_rollout"

SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "rolling updates (platform-owned): how many nodes of one topology block may be down at once",
    "properties": {
        "max_unavailable_per_block": {
            "type": "integer",
            "minimum": 1,
            "maximum": 64,
            "description": "NodeSet maxUnavailable: the most nodes of a block an update takes down at once (1)",
        }
    },
}


@dataclass(frozen=True)
class Rollout:
    max_unavailable_per_block: int = 1


def from_dict(d: dict[str, Any] | None) -> Rollout:
    return Rollout(**(d or {}))
