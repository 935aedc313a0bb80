# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    """Options several gpufleet modules share, one attribute each (``gpufleet.core.common.<name>``), with
    the Python libraries they need (Ansible merges a fragment's ``requirements`` into the module's).

    The argument specs are in plugins/module_utils/module.py (``inventory_spec``, ``gitops_spec``,
    ``kube_spec``).
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
