# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``sssd_bind_snippet`` filter: the SSSD conf.d snippet holding a tenant's directory bind password."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants.sssd import bind_snippet


def sssd_bind_snippet(password, domain):
    """``[domain/<domain>]`` + ``ldap_default_authtok = <password>`` (render/tenants/sssd.py's format)."""
    try:
        return bind_snippet(str(domain), str(password))
    except GpufleetError as exc:
        raise AnsibleFilterError(f"sssd_bind_snippet: {exc}") from None


class FilterModule:
    def filters(self):
        return {"sssd_bind_snippet": sssd_bind_snippet}
