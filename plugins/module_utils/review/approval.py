"""Who approves a change, and whom it concerns without needing them: the review's reading of CODEOWNERS
and the tenants a platform change takes nodes from.

- GitHub and GitLab (without sections, as ``init`` writes it) take, for each changed file, the *last*
  matching line of the base's CODEOWNERS; one approval from *any* owner on that line satisfies it. So the
  owners that can approve the whole change alone are those on every deciding line (``covering``). A
  GitLab ``[section]`` would require one approval per section on top: the parser skips no section line,
  it is a pattern GitHub would read; ``init`` writes none.
- a tenant's change needs that tenant: its file has the tenant alone as owner;
- a platform change needs the platform alone: the rendered tenant trees it re-renders (an upgrade, a
  scale, maintenance) list the platform beside the tenant. A CODEOWNERS that does not (written by hand,
  or before ``init`` did) is named in a note with the lines that would ask a tenant;
- a platform change that takes a tenant's nodes down (maintenance, a Slurm or driver upgrade, nodes
  leaving a pool) says so to that tenant: a *notice* naming the tenant's code owners (mentioned in the
  pull-request comment, which informs them), never an approval it waits for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.daytwo import upgrade, version_change
from ansible_collections.gpufleet.core.plugins.module_utils.hostlist import compress
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Fleet
from ansible_collections.gpufleet.core.plugins.module_utils.model.tenant_files import TENANTS_DIR
from ansible_collections.gpufleet.core.plugins.module_utils.pools.cordon import FILE as MAINTENANCE_FILE
from ansible_collections.gpufleet.core.plugins.module_utils.pools.lock import lock_path, parse_lock
from ansible_collections.gpufleet.core.plugins.module_utils.review import codeowners as co

try:
    import yaml
except ImportError:  # pragma: no cover - the review imports PyYAML through the renderer first
    yaml = None  # type: ignore[assignment]


@dataclass(frozen=True, order=True)
class Notice:
    """What a change does to a tenant's nodes, for the tenant to know (no approval asked)."""

    tenant: str
    text: str
    handles: tuple[str, ...] = ()  # the tenant's code owners (CODEOWNERS of its file), mentioned


@dataclass(frozen=True)
class Approvers:
    """``covering``: owners any one of whom approves every committed file of the change (the same on
    GitHub and GitLab); ``platform``: the platform's owners (CODEOWNERS' own line); ``asks_tenants``:
    the files of a platform change whose deciding line lacks the platform (a tenant must approve)."""

    covering: tuple[str, ...]
    platform: tuple[str, ...]
    asks_tenants: tuple[str, ...] = ()


def approvers(rv: Any) -> Approvers:
    """The approvers of the review's committed files (``rv.approvals``) under the base's CODEOWNERS."""
    platform_rule = rv.codeowners.match(rv.codeowners.path) if rv.codeowners.path else None
    platform = platform_rule.owners if platform_rule else ()
    lines = [a.rule.owners if a.rule else () for a in rv.approvals]
    covering = set(lines[0]) if lines else set()
    for owners in lines[1:]:
        covering &= set(owners)
    asks: tuple[str, ...] = ()
    if rv.kind == "platform" and platform:
        asks = tuple(
            a.path for a in rv.approvals if a.rule and a.rule.owners and not set(platform) & set(a.rule.owners)
        )
    return Approvers(tuple(sorted(covering)), tuple(platform), asks)


def tenant_handles(codeowners: co.CodeOwners, inventory_rel: str, tenant: str) -> tuple[str, ...]:
    """The code owners of a tenant: the owners CODEOWNERS gives its own file."""
    for ext in ("yml", "yaml"):
        rule = codeowners.match(f"{inventory_rel}/{'/'.join(TENANTS_DIR)}/{tenant}.{ext}")
        if rule is not None and rule.owners and tenant in rule.pattern:  # not the catch-all line
            return rule.owners
    return ()


def _maintenance(files: dict[str, bytes], cluster: str) -> dict[str, dict[str, str]]:
    data = files.get(f"clusters/{cluster}/{MAINTENANCE_FILE}")
    doc = yaml.safe_load(data) if data else None
    nodes = doc.get("nodes") if isinstance(doc, dict) else None
    return {str(k): v for k, v in nodes.items() if isinstance(v, dict)} if isinstance(nodes, dict) else {}


def _tenant_of(fleet: Fleet, assignment: dict[str, str]) -> dict[str, str]:
    """node -> tenant of its pool ('' for the platform's)."""
    return {n: (fleet.pools[p].tenant or "") if p in fleet.pools else "" for n, p in assignment.items()}


def _maintenance_notices(fleet: Fleet, base: dict[str, bytes], head: dict[str, bytes], cluster: str) -> list[Notice]:
    """Nodes of a tenant that go into maintenance (or come back) with this change."""
    old, new = _maintenance(base, cluster), _maintenance(head, cluster)
    path = lock_path(fleet, cluster)
    owner = _tenant_of(fleet, parse_lock(path.read_bytes(), str(path), cluster) if path.is_file() else {})
    groups: dict[tuple[str, str, str], list[str]] = {}
    for node in sorted(set(old) | set(new)):
        if old.get(node) == new.get(node) or not owner.get(node):
            continue
        entry = new.get(node) or old[node]
        when = (
            f" from {entry['start']} to {entry.get('end', '?')}" if entry.get("start") else " once merged and applied"
        )
        verb = "cordons and drains" if node in new else "returns"
        what = f"maintenance `{entry.get('maintenance')}` ({entry.get('reason', '')}){when if node in new else ''}"
        groups.setdefault((owner[node], verb, what), []).append(node)
    return [
        Notice(t, f"{what} {verb} `{compress(nodes)}` ({len(nodes)} node(s), cluster `{cluster}`)")
        for (t, verb, what), nodes in sorted(groups.items())
    ]


def _upgrade_notices(old: Fleet, new: Fleet) -> list[Notice]:
    """The Slurm tenants whose slurmd pods a Slinky upgrade restarts, and every tenant a driver upgrade
    takes nodes from (the most at once, as the upgrade plan computes it)."""
    out: list[Notice] = []
    if upgrade._changed(old, new, upgrade.SLINKY):
        for x in upgrade.losses(new):
            waves = ", ".join(f"`{ns}` (wave {w})" for ns, w in x.waves)
            out.append(
                Notice(
                    x.tenant,
                    f"the Slurm upgrade restarts NodeSets {waves}: at most {x.nodes} of {x.of_nodes} node(s)"
                    f" ({x.gpus} of {x.of_gpus} GPUs) down at once, {x.when}",
                )
            )
    for c in sorted(set(old.clusters) & set(new.clusters)):
        if version_change.driver_version(old, c) != version_change.driver_version(new, c):
            out += [
                Notice(
                    x.tenant,
                    f"the GPU driver upgrade of `{c}` drains at most {x.nodes} of {x.of_nodes} node(s) at once",
                )
                for x in upgrade.driver_losses(new, c)
                if x.of_nodes
            ]
    return out


def tenant_notices(rv: Any, inventory_rel: str, base: Any, head: Any) -> list[Notice]:
    """Every notice of one reviewed inventory (``base``/``head``: its two RenderResults), with the
    tenant's code owners; none for a tenant's own change (the tenant made it)."""
    if rv.tenant_pr or base is None:
        return []
    out: list[Notice] = []
    for cluster in sorted(set(head.fleet.clusters) & set(base.fleet.clusters)):
        out += _maintenance_notices(head.fleet, base.files, head.files, cluster)
    out += _upgrade_notices(base.fleet, head.fleet)
    out += [
        Notice(
            d.tenant, f"`{compress(list(d.nodes))}` leave pool `{d.pool}` (partition `{d.partition}`): drain them first"
        )
        for d in rv.drains
        if d.tenant != "-"
    ]
    return sorted({Notice(n.tenant, n.text, tenant_handles(rv.codeowners, inventory_rel, n.tenant)) for n in out})
