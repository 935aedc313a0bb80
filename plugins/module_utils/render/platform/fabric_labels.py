"""The fabric on the Kubernetes side: the topology labels of a cluster's Nodes and the Kueue
``Topology`` of its Kubernetes-native tenants.

Both come from ``inputs.topology``, the one build of the cluster's fabric that the Slurm topology
files (``tenant_slurm.slurm_values``) are cut from, through ``topology.labels``: a node's Slurm leaf
switch, its ancestors and its block are its label values. Rendered beside the cluster:

- ``clusters/<cluster>/node-labels.yaml``: ``{scheme, sets: [{labels, nodes}]}``, which the apply step
  (``node_pools``) puts on the Nodes. Derived only: nothing a tenant writes reaches it.
- per Kubernetes-native tenant, inside its vCluster: the ``Topology`` ``gpufleet-fabric`` (levels:
  the tiers root first, the NVLink domain when it nests in a leaf, then ``kubernetes.io/hostname``)
  and its ResourceFlavors name it (``spec.topologyName``). vCluster copies every label of the host
  Nodes it syncs, and it syncs only the Nodes of the tenant's pools (the fence selector).
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.model import fence
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Cluster
from ansible_collections.gpufleet.core.plugins.module_utils.pools.apply import LABELS_FILE
from ansible_collections.gpufleet.core.plugins.module_utils.render.inputs import ClusterInputs
from ansible_collections.gpufleet.core.plugins.module_utils.topology import labels

TOPOLOGY_NAME = "gpufleet-fabric"
__all__ = ["LABELS_FILE", "TOPOLOGY_NAME", "kueue_topology", "node_labels_doc"]


def _topology(inputs: ClusterInputs) -> Any | None:
    topo = inputs.topology
    return topo if topo is not None and topo.leaf_groups else None


def node_labels_doc(cluster: Cluster, inputs: ClusterInputs) -> dict[str, Any] | None:
    """The ``node-labels.yaml`` document of ``cluster`` (None without a fabric)."""
    topo = _topology(inputs)
    if topo is None:
        return None
    scheme = cluster.topology.node_labels
    return {"scheme": scheme, "sets": labels.label_sets(topo, scheme)}


def kueue_topology(cluster: Cluster, inputs: ClusterInputs) -> dict[str, Any] | None:
    """The Kueue ``Topology`` for the cluster's fabric labels (None without a fabric)."""
    topo = _topology(inputs)
    if topo is None:
        return None
    return labels.kueue_topology(topo, TOPOLOGY_NAME, cluster.topology.node_labels, fence.KUEUE_API)
