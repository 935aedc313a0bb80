# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``chart`` filter: pinned Helm chart coordinates from plugins/module_utils/versions.py."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.core.plugins.module_utils.versions import CHARTS
from ansible_collections.gpufleet.core.plugins.module_utils.versions import chart as _chart


def chart(component, overrides=None):
    """Return ``{repo_url, chart, version, oci}`` for ``component``, with inventory overrides applied."""
    if component not in CHARTS:
        raise AnsibleFilterError(f"unknown chart component {component!r}; known: {', '.join(sorted(CHARTS))}")
    if overrides is not None and not isinstance(overrides, dict):
        raise AnsibleFilterError("chart: overrides must be a dict like gpufleet_versions")
    out = _chart(component, overrides or {})
    url = out["repo_url"]
    out["oci"] = "://" not in url
    # kubernetes.core.helm takes an OCI chart as one reference and a repo chart as url + name
    out["chart_ref"] = f"oci://{url}/{out['chart']}" if out["oci"] else out["chart"]
    out["chart_repo_url"] = None if out["oci"] else url
    return out


class FilterModule:
    def filters(self):
        return {"chart": chart}
