"""One file per tenant: ``group_vars/all/tenants/<tenant>.yml`` defines ``gpufleet_tenant_<id>``.

A single ``gpufleet_tenants`` list cannot be split across files (Ansible replaces a variable defined
twice, it does not append), and one shared file cannot give each tenant its own CODEOWNERS entry. So a
tenant may instead live in its own file, as one variable named after it::

    # group_vars/all/tenants/llm-pretrain.yml   (owned by the llm-pretrain team)
    gpufleet_tenant_llm_pretrain:
      name: llm-pretrain
      cluster: gpu-east
      pools: [pretrain]

Ansible reads the file like any other vars file of group ``all`` (the variable is visible as
``hostvars[...].gpufleet_tenant_llm_pretrain``); the renderer reads the same files and appends every
``gpufleet_tenant_*`` value, in file order, to ``gpufleet_tenants`` (which may still hold tenants
itself: the single-list form keeps working). Ownership is fenced by layout, deny by default:

- a ``gpufleet_tenant_*`` variable may only be defined in ``group_vars/all/tenants/<name>.yml``;
- that file defines exactly one variable, ``gpufleet_tenant_<name with - as _>``, whose ``name`` is
  ``<name>``; nothing else (no other ``gpufleet_*`` and no Ansible variable such as
  ``ansible_connection``: a tenant's file must not steer the platform's plays).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import Issue

TENANT_VAR_PREFIX = "gpufleet_tenant_"
TENANTS_DIR = ("group_vars", "all", "tenants")


def variable_name(tenant: str) -> str:
    """The variable a tenant's own file defines: ``gpufleet_tenant_<name, - as _>``."""
    return TENANT_VAR_PREFIX + tenant.replace("-", "_")


def tenant_file(inventory_dir: Path, tenant: str) -> Path:
    """Where the tenant's own file lives in an inventory."""
    return inventory_dir.joinpath(*TENANTS_DIR, f"{tenant}.yml")


def owning_tenant(inventory_dir: Path, f: Path) -> str | None:
    """The tenant a vars file belongs to (its stem) when it lies in ``group_vars/all/tenants/``, else None."""
    try:
        rel = f.relative_to(inventory_dir.joinpath(*TENANTS_DIR))
    except ValueError:
        return None
    return rel.stem if len(rel.parts) == 1 else ""


def check_file(
    inventory_dir: Path, f: Path, value: dict[Any, Any], where: dict[tuple[str | int, ...], tuple[str, int]]
) -> list[Issue]:
    """Issues of one parsed vars file against the per-tenant layout (empty when it is fine)."""
    tenant = owning_tenant(inventory_dir, f)
    issues: list[Issue] = []

    def line(key: Any) -> int | None:
        return where.get((key,), (str(f), None))[1]

    if tenant is None:
        for key in value:
            if str(key).startswith(TENANT_VAR_PREFIX):
                issues.append(
                    Issue(
                        str(f),
                        line(key),
                        str(key),
                        "a per-tenant variable belongs in its tenant's own file, "
                        f"{'/'.join(TENANTS_DIR)}/<tenant>.yml (one tenant, one file, one owner)",
                    )
                )
        return issues
    expected = variable_name(tenant) if tenant else None
    if (
        not tenant
        or not tenant.replace("-", "").isalnum()
        or tenant != tenant.lower()
        or f.suffix not in (".yml", ".yaml")
    ):
        return [
            Issue(
                str(f),
                None,
                "",
                f"{'/'.join(TENANTS_DIR)}/ holds one <tenant>.yml per tenant (a lower-case DNS label), nothing else",
            )
        ]
    for key in value:
        if key != expected:
            issues.append(
                Issue(
                    str(f),
                    line(key),
                    str(key),
                    f"a tenant's file may define only {expected} (the tenant named like the file); move other"
                    " variables to the platform's files",
                )
            )
    if expected not in value:
        issues.append(Issue(str(f), 1, "", f"defines no {expected}: a tenant's file defines its tenant"))
    elif isinstance(value[expected], dict) and value[expected].get("name") != tenant:
        issues.append(
            Issue(
                str(f),
                where.get((expected, "name"), (str(f), line(expected)))[1],
                f"{expected}.name",
                f"must be {tenant!r}, the name of the file (a tenant's file defines that tenant only)",
            )
        )
    return issues


def fold_into_list(
    data: dict[str, Any],
    where: dict[tuple[str | int, ...], tuple[str, int]],
    aliases: dict[tuple[str | int, ...], str] | None = None,
) -> None:
    """Append every ``gpufleet_tenant_*`` value to ``gpufleet_tenants`` (in load order), moving the
    recorded locations with them, and drop the per-tenant variables from ``data``; ``aliases`` records
    each entry's variable (``("gpufleet_tenants", i)`` -> ``gpufleet_tenant_<t>``), the name messages use."""
    names = [k for k in data if k.startswith(TENANT_VAR_PREFIX)]
    if not names:
        return
    tenants = data.get("gpufleet_tenants")
    if tenants is None:
        tenants = data["gpufleet_tenants"] = []
        where[("gpufleet_tenants",)] = where[(names[0],)]
    if not isinstance(tenants, list):
        return  # the schema reports the wrong type; the per-tenant variables stay and are reported too
    for name in names:
        index = len(tenants)
        tenants.append(data.pop(name))
        if aliases is not None:
            aliases[("gpufleet_tenants", index)] = name
        for path in [p for p in where if p and p[0] == name]:
            where[("gpufleet_tenants", index, *path[1:])] = where.pop(path)
