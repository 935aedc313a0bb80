"""Where a cluster's fabric can come from: one row per source (``gpufleet_clusters[].fabric.source``).

The schema's ``fabric.source`` choices, the "needs a path" check of validation, the fleet model's
``Cluster.fabric_input``, the topology loader (``topology/topology_load.py``) and the fabric modules'
inputs all derive from :data:`SOURCES`. The name is also the key under which ``fabric/load.py`` reads
the file (``SOURCE_KIND``). A new format is a row here, its parser ``fabric/<format>.py`` and its lines in
``fabric/load.py`` (CONTRIBUTING.md; tests/unit/plugins/module_utils/model/test_fabric_sources.py).
"""

from __future__ import annotations

from dataclasses import dataclass

NONE = "none"  # no fabric: a flat topology


@dataclass(frozen=True)
class FabricSource:
    name: str  # fabric.source in the inventory, and the kind fabric/load.py reads its input as
    needs_path: bool  # fabric.path names the input file (a snapshot in the inventory)
    reads_nodes: bool  # the input is the nodes snapshot itself (the fabric labels of its Nodes)
    module_option: str | None  # the slurm_topology / fabric_facts option that names such files


SOURCES: tuple[FabricSource, ...] = (
    FabricSource("ibnetdiscover", needs_path=True, reads_nodes=False, module_option="ibnetdiscover"),
    FabricSource("labels", needs_path=False, reads_nodes=True, module_option=None),
    FabricSource("file", needs_path=True, reads_nodes=False, module_option="fabric"),
)
BY_NAME = {s.name: s for s in SOURCES}
CHOICES = (*BY_NAME, NONE)  # the schema's enum
