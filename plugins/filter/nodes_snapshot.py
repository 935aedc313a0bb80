# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``nodes_snapshot`` filter: live Node objects -> deterministic nodes snapshot YAML."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError

try:
    from ansible_collections.gpufleet.core.plugins.module_utils.model.node_snapshot import snapshot_text
except ImportError as _exc:  # PyYAML is an ansible-core requirement; kept for a clear message
    snapshot_text = None
    _IMPORT_ERROR = _exc
else:
    _IMPORT_ERROR = None


def nodes_snapshot(nodes):
    if snapshot_text is None:
        raise AnsibleFilterError(f"nodes_snapshot needs PyYAML: {_IMPORT_ERROR}")
    if not isinstance(nodes, list):
        raise AnsibleFilterError("nodes_snapshot expects a list of Node objects (k8s_info resources)")
    try:
        return snapshot_text(nodes)
    except GpufleetError as exc:
        raise AnsibleFilterError(f"nodes_snapshot: {exc}") from exc


class FilterModule:
    def filters(self):
        return {"nodes_snapshot": nodes_snapshot}
