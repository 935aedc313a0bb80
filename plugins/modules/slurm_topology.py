#!/usr/bin/python
# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: slurm_topology
short_description: Render Slurm topology.conf (tree or block) or topology.yaml from the discovered fabric
version_added: 0.1.0
description:
  - Reads the fabric from C(ibnetdiscover) output (default or C(-p) format), a fabric YAML file or
    Kubernetes Node labels, folds rail-optimized leaves into leaf groups, builds a single-rooted switch
    tree and renders C(topology.conf) for C(topology/tree) or C(topology/block), or C(topology.yaml)
    (Slurm 25.05+) with several named topologies.
  - Every rule slurmctld enforces (unique names up to 64 characters, no trailing digit run over 18,
    defined children, no cycles, no line with both C(Nodes=) and C(Switches=), valid C(BlockSizes))
    is checked before anything is written.
  - Writes O(dest) atomically and reports C(changed) only when its bytes change, so a handler can run
    C(scontrol reconfigure) only then.
author:
  - gpufleet maintainers (@gpufleet)
requirements:
  - Python 3.9 or later on the target
  - PyYAML on the target only for O(fabric) and O(nodes_snapshot) (YAML files) and O(format=yaml)
    (C(topology.yaml)); C(topology.conf) from C(ibnetdiscover) output needs no library
extends_documentation_fragment:
  - gpufleet.core.common.fabric
options:
  ibnetdiscover:
    description: Path(s) of saved C(ibnetdiscover) output (one per subnet/rail is fine; they are merged).
    type: list
    elements: path
  fabric_kind:
    description: Format of O(ibnetdiscover); C(auto) detects it.
    type: str
    choices: [auto, ibnetdiscover, ibnetdiscover-ports]
    default: auto
  format:
    description: C(tree) and C(block) render C(topology.conf); C(yaml) renders C(topology.yaml).
    type: str
    choices: [tree, block, yaml]
    default: tree
  block_sizes:
    description: C(BlockSizes) for C(block); default base = smallest block, doubled up to the block count.
    type: list
    elements: int
  topologies:
    description:
      - For C(yaml), the named topologies; each a dict with C(name), C(plugin) (tree, block, flat),
        optional C(nodes), C(block_sizes), C(cluster_default). Default is C(topo-tree) (cluster default)
        and C(topo-block) when blocks exist.
    type: list
    elements: dict
  use_cliques:
    description: Use NVLink cliques from O(nodes_snapshot) as blocks; false uses fabric leaf groups.
    type: bool
    default: true
  slinky_tree_name:
    description:
      - For C(tree), the topology name used in the returned Slinky C(topology.slinky.slurm.net/spec) values.
      - For C(yaml) the names come from O(topologies) (first tree and first block topology).
    type: str
    default: default
  strict:
    description: Fail when the fabric health report is not clean (missing rails, unnamed HCAs, ...).
    type: bool
    default: false
  dest:
    description: Where to write the file. Without it the content is only returned.
    type: path
  mode:
    description: File mode of O(dest).
    type: str
    default: "0644"
attributes:
  check_mode:
    support: full
    description: Renders and compares; never writes.
  diff_mode:
    support: full
    description: Shows the old and new file content.
"""

EXAMPLES = r"""
- name: Tree topology from a saved fabric dump, only for the Slurm nodes of tenant A
  gpufleet.core.slurm_topology:
    ibnetdiscover: snapshots/prod/ibnetdiscover.out
    nodes: ["gpu[001-032]"]
    node_name_map: {pattern: 'gpu(\d+)', replacement: 'gpu\1'}
    dest: /etc/slurm/topology.conf
  notify: scontrol reconfigure

- name: topology.yaml with a tree and an NVLink block topology
  gpufleet.core.slurm_topology:
    ibnetdiscover: snapshots/prod/ibnetdiscover.out
    nodes_snapshot: snapshots/prod/nodes.yaml
    format: yaml
    topologies:
      - {name: topo-tree, plugin: tree, cluster_default: true}
      - {name: topo-block, plugin: block, block_sizes: [8, 16, 32]}
    dest: "{{ gitops_dir }}/slurm/topology.yaml"
"""

RETURN = r"""
content:
  description: The rendered file.
  returned: success
  type: str
dest:
  description: The file written (or that would be written in check mode).
  returned: when dest is set
  type: str
health:
  description:
    - Fabric health report. Keys include C(hosts_missing_rails), C(unnamed_hcas), C(uplink_anomalies),
      C(asymmetric_switches), C(hosts_outside_unit), C(nodes_not_in_fabric), C(fabric_not_in_nodes),
      C(summary) and C(ok).
  returned: success
  type: dict
topology:
  description: Roots, leaf groups (in network order), node to leaf group map and blocks.
  returned: success
  type: dict
slinky_spec:
  description: Node name to C(topology.slinky.slurm.net/spec) annotation value.
  returned: success
  type: dict
"""

from ansible_collections.gpufleet.core.plugins.module_utils.module import GpufleetModule, fabric_spec
from ansible_collections.gpufleet.core.plugins.module_utils.topology.task import run_slurm_topology

ARGUMENT_SPEC = {
    "ibnetdiscover": {"type": "list", "elements": "path"},
    **fabric_spec(),
    "fabric_kind": {"type": "str", "default": "auto", "choices": ["auto", "ibnetdiscover", "ibnetdiscover-ports"]},
    "format": {"type": "str", "default": "tree", "choices": ["tree", "block", "yaml"]},
    "block_sizes": {"type": "list", "elements": "int"},
    "topologies": {"type": "list", "elements": "dict"},
    "use_cliques": {"type": "bool", "default": True},
    "slinky_tree_name": {"type": "str", "default": "default"},
    "strict": {"type": "bool", "default": False},
    "dest": {"type": "path"},
    "mode": {"type": "str", "default": "0644"},
}


def topology(module: GpufleetModule) -> dict:
    return run_slurm_topology(module.params, check_mode=module.check_mode, diff_mode=module.diff_mode)


def main() -> None:
    # no requirements: a tree or block topology from ibnetdiscover output needs no library; PyYAML,
    # for YAML inputs and topology.yaml, fails on use with MissingLibraryError (deps.py)
    module = GpufleetModule(
        ARGUMENT_SPEC,
        required_one_of=[("ibnetdiscover", "fabric", "nodes_snapshot")],
        mutually_exclusive=[("ibnetdiscover", "fabric")],
    )
    module.run(topology)


if __name__ == "__main__":
    main()
