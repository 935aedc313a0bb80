"""The pool checks ``gpufleet.py validate`` runs short of parsing the fabric.

Per cluster: the nodes snapshot exists and reads, and every pool can be filled from it (sizes in nodes
or GPUs, ``gpu_product``, ``node_selector``, pins, excludes, whole NVLink domains), starting from the
pool lock as the render does. It is the render's own assignment (:func:`pools.assign.assign`), run
without leaf groups (those need the fabric): which nodes a pool gets may differ from the render's, whether
the pools can be filled does not. Problems of every cluster are returned together.
"""

from __future__ import annotations

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Fleet
from ansible_collections.gpufleet.core.plugins.module_utils.model.nodes import load_nodes
from ansible_collections.gpufleet.core.plugins.module_utils.pools.assign import assign
from ansible_collections.gpufleet.core.plugins.module_utils.pools.lock import LOCK_NAME, read_lock_entries


def capacity_problems(fleet: Fleet) -> list[str]:
    """Every cluster whose pools cannot be assigned from its nodes snapshot, one message each."""
    problems: list[str] = []
    for name in sorted(fleet.clusters):
        cluster = fleet.clusters[name]
        if not cluster.nodes_snapshot.is_file():
            problems.append(
                f"{cluster.nodes_snapshot}: nodes snapshot of cluster {name!r} not found (run discover first)"
            )
            continue
        try:
            previous = (read_lock_entries(cluster.snapshot_dir / LOCK_NAME, name) or (None, {}))[0]
            assign(fleet, name, load_nodes(cluster.nodes_snapshot), {}, previous)
        except GpufleetError as exc:
            problems.append(str(exc))
    return problems
