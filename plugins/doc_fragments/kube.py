# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    """Access to the Kubernetes API of the modules that read or patch a cluster.

    The argument spec is in plugins/module_utils/module.py.
    """

    DOCUMENTATION = r"""
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
