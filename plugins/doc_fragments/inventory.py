# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    """The inventory directory option of the modules that read the fleet.

    The argument spec is in plugins/module_utils/module.py.
    """

    DOCUMENTATION = r"""
options:
  inventory_dir:
    description:
      - The inventory directory (the folder holding C(hosts.yml) and C(group_vars/)), or its C(hosts.yml).
    type: path
    required: true
"""
