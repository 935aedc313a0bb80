# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``nodes_snapshot`` filter: live Node objects -> deterministic nodes snapshot YAML."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.core.plugins.module_utils.model.node_snapshot import snapshot_text
from ansible_collections.gpufleet.core.plugins.plugin_utils.filter_errors import core_errors


@core_errors("nodes_snapshot")  # also a missing PyYAML (MissingLibraryError), named
def nodes_snapshot(nodes):
    if not isinstance(nodes, list):
        raise AnsibleFilterError("nodes_snapshot expects a list of Node objects (k8s_info resources)")
    return snapshot_text(nodes)


class FilterModule:
    def filters(self):
        return {"nodes_snapshot": nodes_snapshot}
