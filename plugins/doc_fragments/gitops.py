# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    """The GitOps tree option of the modules that render, publish or scale.

    The argument spec is in plugins/module_utils/module.py.
    """

    DOCUMENTATION = r"""
options:
  gitops_dir:
    description:
      - Root of the GitOps tree (the directory holding C(clusters/)).
      - Default is C(gpufleet_fleet.gitops.path) under the Git work tree that holds the inventory.
    type: path
"""
