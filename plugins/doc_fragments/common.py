# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    """Options several gpufleet modules share, one attribute each (``gpufleet.core.common.<name>``), with
    the Python libraries they need (Ansible merges a fragment's ``requirements`` into the module's).

    The argument specs are in plugins/module_utils/module.py (``inventory_spec``, ``gitops_spec``,
    ``kube_spec``, ``fabric_spec``).
    """

    DOCUMENTATION = r"""
options: {}
"""

    # the inventory, for the modules that read the fleet
    INVENTORY = r"""
requirements:
  - jsonschema
  - PyYAML
options:
  inventory_dir:
    description:
      - The inventory directory (the folder holding C(hosts.yml) and C(group_vars/)), or its C(hosts.yml).
    type: path
    required: true
"""

    # the GitOps tree, for the modules that render, publish or scale
    GITOPS = r"""
options:
  gitops_dir:
    description:
      - Root of the GitOps tree (the directory holding C(clusters/)).
      - Default is C(gpufleet_fleet.gitops.path) under the Git work tree that holds the inventory.
    type: path
"""

    # access to the Kubernetes API, for the modules that read or patch a cluster
    KUBE = r"""
requirements:
  - kubernetes (Python client)
options:
  kubeconfig:
    description:
      - Path to the kubeconfig of the cluster.
      - Without it and O(context), the client's default (C(KUBECONFIG), C(~/.kube/config)) or the in-cluster config.
    type: path
  context:
    description: Kubeconfig context to use; default the current one.
    type: str
"""

    # the fabric besides ibnetdiscover output and the nodes it is for (``fabric_spec``), for the modules
    # that build a topology (slurm_topology, fabric_facts), which run where those files are
    FABRIC = r"""
options:
  fabric:
    description: Path of a fabric YAML file (switch tree and blocks; topograph model format).
    type: path
  nodes_snapshot:
    description:
      - Path of a Kubernetes Node list (C(kubectl get nodes -o yaml)). Supplies NVLink cliques
        (C(nvidia.com/gpu.clique)) for blocks, and the fabric itself (topograph or cloud topology labels)
        when no C(ibnetdiscover) output and no O(fabric) is given.
    type: path
  nodes:
    description:
      - Restrict the topology to these nodes (names or hostlist expressions); the health report compares
        the fabric with them.
    type: list
    elements: str
  node_name_map:
    description:
      - Turns fabric host names (from HCA descriptions) into Slurm node names. Either a mapping
        from host to node (unlisted hosts keep their name, an empty value drops the host), or a dict
        with keys C(pattern) (a regular expression, full match) and C(replacement) (its expansion
        template, for example C(slinky-\\1)); the inventory's C(fabric.node_name_map) has the same form.
      - C(node_map) is the former name of this option, still accepted.
    type: dict
    aliases: [node_map]
  exclude:
    description: Glob patterns of HCA descriptions (C(stor* mlx5_0)), devices or switch names to leave out.
    type: list
    elements: str
attributes:
  platform:
    support: full
    platforms: posix
    description: Runs on the host that has the files (or the HCA); pure Python otherwise.
"""
