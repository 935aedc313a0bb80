# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``chart`` filter: pinned Helm chart coordinates from plugins/module_utils/versions.py."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.core.plugins.module_utils.versions import CHARTS, helm_chart


def chart(component, overrides=None):
    """Return ``{repo_url, chart, version, oci}`` for ``component``, with inventory overrides applied."""
    if component not in CHARTS:
        raise AnsibleFilterError(f"unknown chart component {component!r}; known: {', '.join(sorted(CHARTS))}")
    if overrides is not None and not isinstance(overrides, dict):
        raise AnsibleFilterError("chart: overrides must be a dict like gpufleet_versions")
    return helm_chart(component, overrides or {})


class FilterModule:
    def filters(self):
        return {"chart": chart}
