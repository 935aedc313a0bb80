"""Split an inventory's ``gpufleet_tenants`` list into one file per tenant (tests only)."""

from __future__ import annotations

from pathlib import Path

import yaml

from ansible_collections.gpufleet.core.plugins.module_utils.model.tenant_files import variable_name


def split_tenants(inv: Path, keep_in_list: int = 0) -> list[str]:
    """Move the sample's tenants (all but the first ``keep_in_list``) to their own files."""
    single = inv / "group_vars" / "all" / "tenants.yml"
    tenants = yaml.safe_load(single.read_text())["gpufleet_tenants"]
    folder = single.parent / "tenants"
    folder.mkdir()
    for t in tenants[keep_in_list:]:
        (folder / f"{t['name']}.yml").write_text(yaml.safe_dump({variable_name(t["name"]): t}, sort_keys=False))
    if keep_in_list:
        single.write_text(yaml.safe_dump({"gpufleet_tenants": tenants[:keep_in_list]}, sort_keys=False))
    else:
        single.unlink()
    return [t["name"] for t in tenants]
