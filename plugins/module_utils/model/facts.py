"""The validated fleet model as plain data, for playbooks and roles.

``fleet_facts(inventory_dir)`` loads and validates the inventory (``validation.load_fleet``) and
returns the typed model as JSON-ready dicts with every default filled in, so roles read one shape
no matter how terse the inventory is. Paths are strings; order follows the inventory.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.model import components
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Fleet
from ansible_collections.gpufleet.core.plugins.module_utils.model.paths import default_out
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def _add_releases(fleet: Fleet, cluster: str, comps: dict[str, Any]) -> None:
    """Each component's row facts for the apply step: its Helm ``releases`` (values files relative to
    the cluster's folder of the tree) and whether the bootstrap of a fresh cluster installs it."""
    slurm = [t.name for t in fleet.cluster_tenants(cluster) if fleet.tenant_pools(t.name, "slurm")]
    for name, comp in comps.items():
        row = components.ROWS[name]
        comp["releases"] = components.helm_releases(row, comp["namespace"], slurm, fleet.versions)
        comp["bootstrap"] = row.bootstrap


def fleet_to_dict(fleet: Fleet) -> dict[str, Any]:
    """The fleet as dicts and lists; clusters, tenants and pools become lists in inventory order."""
    out = _plain(fleet)
    for name, cluster in out["clusters"].items():
        _add_releases(fleet, name, cluster["components"])
    for key in ("clusters", "tenants", "pools"):
        out[key] = list(out[key].values())
    # the resolved tree of the fleet repository, for the stages that read it (apply, reservations)
    out["gitops"]["dir"] = str(default_out(fleet))
    out["summary"] = {
        "clusters": len(fleet.clusters),
        "tenants": len(fleet.tenants),
        "pools": len(fleet.pools),
    }
    return out


def fleet_facts(inventory_dir: str | Path) -> dict[str, Any]:
    """Load, validate and export the fleet of ``inventory_dir``; ModelError lists every problem."""
    return fleet_to_dict(load_fleet(inventory_dir))
