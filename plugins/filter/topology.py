# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fabric topology filters: ``fabric_topology``, ``slurm_topology_conf``, ``slinky_topology_spec``,
``kueue_topology_labels``, ``kueue_topology``.

The input is the fabric itself: ``ibnetdiscover`` output (either format) or a fabric YAML file, as
text or a path on the controller, or a list of Kubernetes Node objects (topology labels).
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.core.plugins.module_utils.fabric.load import load_fabric
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.node_labels import (
    domains_from_nodes,
    fabric_from_nodes,
)
from ansible_collections.gpufleet.core.plugins.module_utils.topology import labels as fabric_labels
from ansible_collections.gpufleet.core.plugins.module_utils.topology.build import build_topology
from ansible_collections.gpufleet.core.plugins.module_utils.topology.render import render
from ansible_collections.gpufleet.core.plugins.module_utils.topology.render import (
    slinky_topology_spec as _slinky,
)
from ansible_collections.gpufleet.core.plugins.module_utils.topology.task import topology_summary
from ansible_collections.gpufleet.core.plugins.plugin_utils.filter_errors import core_errors


def _topo(name, src, kind="auto", nodes=None, node_map=None, exclude=None, domains=None):
    """The topology of ``src``; the calling filter (``name``, decorated with ``core_errors``) names core errors."""
    if isinstance(src, Mapping) or isinstance(src, list):
        fab = fabric_from_nodes(src)
    elif isinstance(src, str):
        fab = load_fabric(src, kind=kind)
    else:
        raise AnsibleFilterError(f"{name}: expected fabric text, a path or a Node list, got {type(src).__name__}")
    if domains is not None and not (isinstance(domains, Mapping) and "items" not in domains):
        domains = domains_from_nodes(domains)
    return build_topology(fab, node_map=node_map, nodes=nodes, exclude=exclude, domains=domains)


@core_errors("fabric_topology")
def fabric_topology(src, kind="auto", nodes=None, node_map=None, exclude=None, domains=None):
    """Leaf groups, node -> group, blocks, roots and the health report of a fabric."""
    topo = _topo("fabric_topology", src, kind, nodes, node_map, exclude, domains)
    return {**topology_summary(topo), "health": topo.health}


@core_errors("slurm_topology_conf")
def slurm_topology_conf(
    src,
    format="tree",
    kind="auto",
    nodes=None,
    node_map=None,
    exclude=None,
    domains=None,
    block_sizes=None,
    topologies=None,
):
    """topology.conf (tree or block) or topology.yaml text, validated against Slurm's rules."""
    topo = _topo("slurm_topology_conf", src, kind, nodes, node_map, exclude, domains)
    return render(topo, format, block_sizes=block_sizes, topologies=topologies)


@core_errors("slinky_topology_spec")
def slinky_topology_spec(
    src, tree="default", block=None, kind="auto", nodes=None, node_map=None, exclude=None, domains=None
):
    """Node -> value of the ``topology.slinky.slurm.net/spec`` annotation."""
    topo = _topo("slinky_topology_spec", src, kind, nodes, node_map, exclude, domains)
    return _slinky(topo, tree=tree, block=block)


@core_errors("kueue_topology_labels")
def kueue_topology_labels(
    src, prefix="topology.gpufleet.io", kind="auto", nodes=None, node_map=None, exclude=None, domains=None
):
    """Node -> the topology labels a Kueue ``Topology`` with the same prefix needs."""
    topo = _topo("kueue_topology_labels", src, kind, nodes, node_map, exclude, domains)
    return fabric_labels.node_labels(topo, fabric_labels.LabelScheme.from_prefix(prefix))


@core_errors("kueue_topology")
def kueue_topology(
    src,
    name="gpufleet-fabric",
    prefix="topology.gpufleet.io",
    api_version="kueue.x-k8s.io/v1beta1",
    kind="auto",
    nodes=None,
    node_map=None,
    exclude=None,
    domains=None,
):
    """The Kueue ``Topology`` object (levels coarse to fine, hostname last) for the same labels."""
    topo = _topo("kueue_topology", src, kind, nodes, node_map, exclude, domains)
    return fabric_labels.kueue_topology(topo, name, fabric_labels.LabelScheme.from_prefix(prefix), api_version)


class FilterModule:
    def filters(self):
        return {
            "fabric_topology": fabric_topology,
            "slurm_topology_conf": slurm_topology_conf,
            "slinky_topology_spec": slinky_topology_spec,
            "kueue_topology_labels": kueue_topology_labels,
            "kueue_topology": kueue_topology,
        }
