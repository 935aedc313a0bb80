"""Which variables an inventory may set, and where: ``gpufleet_*`` only in the model's files, no
variable of the collection's roles, only the listed connection variables, no Jinja in the model."""

from __future__ import annotations

import re
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.model import components

PREFIX = "gpufleet_"
# Variables the collection's roles and playbooks read: never from the inventory (the playbooks set
# them from the validated model). A test keeps this list equal to the roles/ folder.
ROLES = tuple(
    sorted(
        {
            *components.ROLES,
            "cluster_access",
            "component",
            "fabric_discovery",
            "gitops_render",
            "node_pools",
            "tenant",
            "validate_inventory",
        }
    )
)
# Connection variables an inventory may set (anything else ansible_* can run commands on the
# controller: *_args with a ProxyCommand, *_executable, become methods and exes, interpreters).
ANSIBLE_VARS: dict[str, Any] = {
    "ansible_host": r"^[A-Za-z0-9][-A-Za-z0-9.:]{0,252}$",
    "ansible_port": None,
    "ansible_user": r"^[a-z_][-a-z0-9_]{0,31}$",
    "ansible_connection": r"^(local|ssh)$",
    "ansible_become": bool,
    "ansible_ssh_private_key_file": r"^(~|/)[-A-Za-z0-9_./]{1,255}$",
    "ansible_python_interpreter": r"^(\{\{ ansible_playbook_python \}\}|/usr(/local)?/bin/python3(\.[0-9]{1,2})?)$",
}
JINJA = ("{{", "{%", "{#")


def variable_problem(name: str, value: Any, platform_file: bool) -> str | None:
    """Why the inventory may not set variable ``name`` here (None: fine). ``platform_file``: one of
    the model's files (``group_vars/all``), where ``gpufleet_*`` variables belong."""
    if name.startswith(PREFIX):
        if platform_file:
            return None
        return (
            "gpufleet_* variables belong in group_vars/all (the validated model); here the apply step would"
            " read it unchecked"
        )
    for role in ROLES:
        if name.startswith(role + "_"):
            return f"a variable of role {role!r}: the playbooks set it from the validated model, never the inventory"
    if name.startswith("ansible_"):
        if name not in ANSIBLE_VARS:
            return (
                "not an allowed connection variable (allowed: " + ", ".join(sorted(ANSIBLE_VARS)) + "); others can"
                " run commands on the controller"
            )
        rx = ANSIBLE_VARS[name]
        if rx is bool:
            ok = isinstance(value, bool)
        elif rx is None:
            ok = isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535
        else:
            ok = isinstance(value, str) and re.fullmatch(rx.replace("$", r"\Z"), value) is not None
        if not ok:
            want = "true or false" if rx is bool else f"must match {rx}" if rx else "a port 1-65535"
            return f"{value!r} is not allowed here ({want})"
    return None


def jinja_path(value: Any, path: tuple[str | int, ...]) -> tuple[str | int, ...] | None:
    """The first key path under ``value`` holding a Jinja template (a lookup runs on the controller
    when a playbook reads it), or None."""
    if isinstance(value, str):
        return path if any(j in value for j in JINJA) else None
    if isinstance(value, dict):
        for k, v in value.items():
            got = jinja_path(v, (*path, k))
            if got:
                return got
    if isinstance(value, list):
        for i, v in enumerate(value):
            got = jinja_path(v, (*path, i))
            if got:
                return got
    return None
