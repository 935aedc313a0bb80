# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``hostlist_compress`` and ``hostlist_expand`` filters: Slurm hostlist expressions."""

from __future__ import annotations

from collections.abc import Iterable

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.core.plugins.module_utils.hostlist import compress, expand
from ansible_collections.gpufleet.core.plugins.plugin_utils.filter_errors import core_errors


@core_errors("hostlist_compress")
def hostlist_compress(names, sort=True):
    """``['gpu001', 'gpu002', 'gpu003']`` -> ``'gpu[001-003]'`` (Slurm's own compression)."""
    if isinstance(names, str) or not isinstance(names, Iterable):
        raise AnsibleFilterError(f"hostlist_compress expects a list of host names, got {type(names).__name__}")
    if not isinstance(sort, bool):
        raise AnsibleFilterError("hostlist_compress: sort must be a boolean")
    return compress(list(names), sort=sort)


@core_errors("hostlist_expand")
def hostlist_expand(expr):
    """``'gpu[001-003]'`` -> ``['gpu001', 'gpu002', 'gpu003']``; a list of expressions is joined first."""
    if isinstance(expr, (list, tuple)):
        expr = ",".join(str(e) for e in expr)
    if not isinstance(expr, str):
        raise AnsibleFilterError(f"hostlist_expand expects a hostlist string, got {type(expr).__name__}")
    return expand(expr)


class FilterModule:
    def filters(self):
        return {"hostlist_compress": hostlist_compress, "hostlist_expand": hostlist_expand}
