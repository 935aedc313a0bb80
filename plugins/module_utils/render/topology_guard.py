"""A topology that loses nodes is an error, never a silent deletion of topology.conf.

Before this check, fabric hosts whose names matched no node (a renamed host, a wrong
``node_name_map``) were dropped and the tenant's topology.conf and node-topology.yaml disappeared
with rc=0. Now, for a cluster with a fabric source:

* a fabric host whose (mapped) name is not a valid Slurm/Kubernetes host name is an error, and
  so is an HCA whose description names a host in an invalid form (``"gpu 001 mlx5_0"``), which
  the parser cannot take as a host;
* fabric hosts that match no node of the nodes snapshot are an error, unless the cluster sets
  ``fabric.allow_unmatched_hosts: true`` (documented opt-in): then a warning names the hosts;
* nodes of Slurm pools that the fabric does not place are always an error (slurmctld would run
  with nodes no switch reaches: "switches lack access to N nodes");
* a switch tree with problems is an error: dangling switches (no nodes and at most one other switch:
  a typo in a fabric file's switch name, a cable to nowhere), switches with no link at all, and more
  than one root (no switch reaches every node: Slurm's tree plugin cannot span them, jobs asking for
  ``--switches`` across them never start). ``fabric.allow_topology_problems: true`` (documented
  opt-in) renders anyway and warns, naming them.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import Issue, ModelError
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.model import _FW_MODEL, _NOT_HOSTS
from ansible_collections.gpufleet.core.plugins.module_utils.model import grammar
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Cluster, Fleet

# Slurm host names: no whitespace, ',', '=', brackets or '#'; what Kubernetes allows for a Node.
SLURM_HOST = r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,252}[A-Za-z0-9])?$"
_SHOW = 20


def _looks_like_host(desc: str) -> bool:
    """An HCA description that is not a firmware default ("MT4129 ConnectX7 ...") nor empty: it
    names a host, but not as ``<valid host> <device>`` (``"gpu 001 mlx5_0"``, ``"gpu=1 mlx5_0"``)."""
    parts = desc.split()
    if not parts or _FW_MODEL.match(parts[0]) or parts[0].lower() in _NOT_HOSTS:
        return False
    return True


def _names(items: list[str]) -> str:
    head = ", ".join(repr(x) for x in items[:_SHOW])
    return head + (f" and {len(items) - _SHOW} more" if len(items) > _SHOW else "")


def _issue(fleet: Fleet, cluster: Cluster, key: tuple[str, ...], message: str) -> Issue:
    raw = fleet.source
    if raw is not None:
        for i, c in enumerate(raw.data.get("gpufleet_clusters") or []):
            if isinstance(c, dict) and c.get("name") == cluster.name:
                return raw.issue(("gpufleet_clusters", i, *key), message)
    return Issue(file=str(fleet.inventory_dir), line=None, path=f"cluster {cluster.name}", message=message)


def check(fleet: Fleet, cluster: Cluster, topo: Any, slurm_nodes: list[str]) -> list[str]:
    """Raise ModelError for lost topology; return the warnings of the opt-in (to be shown loudly)."""
    if topo is None:
        return []
    fab, src = cluster.fabric, cluster.fabric_input
    health = topo.health
    unmatched = sorted(set(health.get("fabric_not_in_nodes") or []) | set(health.get("unmapped_hosts") or []))
    bad = [h for h in unmatched if not grammar.fullmatch(SLURM_HOST, h)]
    bad += [d["description"] for d in health.get("unnamed_hcas") or [] if _looks_like_host(d.get("description", ""))]
    errors: list[str] = []
    if bad:
        errors.append(
            f"{src}: fabric host name(s) {_names(bad)} are not valid Slurm host names (letters, digits,"
            " '-', '_', '.'; no spaces, ',', '=' or brackets); fix the fabric or fabric.node_name_map"
        )
    lost = [n for n in slurm_nodes if n not in topo.node_group]
    warnings: list[str] = []
    extra = [h for h in unmatched if h not in bad]
    if extra:
        msg = f"{src}: {len(extra)} fabric host(s) match no node of the nodes snapshot: {_names(extra)}"
        if fab.allow_unmatched_hosts:
            warnings.append(f"cluster {cluster.name!r}: {msg}; left out (fabric.allow_unmatched_hosts is set)")
        else:
            errors.append(
                f"{msg}; fix fabric.node_name_map or the snapshot, exclude them (fabric.exclude_hosts),"
                " or set fabric.allow_unmatched_hosts: true"
            )
    if lost:  # never allowed: slurmctld would run with nodes no switch reaches
        errors.append(
            f"{src}: {len(lost)} node(s) of Slurm pools are not in the fabric, the topology would lose them:"
            f" {_names(lost)}; re-discover the fabric or fix fabric.node_name_map"
        )
    problems = tree_problems(topo)
    if problems:
        msg = f"{src}: the switch tree has problems: {'; '.join(problems)}"
        if fab.allow_topology_problems:
            warnings.append(f"cluster {cluster.name!r}: {msg} (fabric.allow_topology_problems is set)")
        else:
            errors.append(f"{msg}; fix the fabric (a switch name's typo?) or set fabric.allow_topology_problems: true")
    if errors:
        raise ModelError([_issue(fleet, cluster, ("fabric",), e) for e in errors])
    return warnings


def tree_problems(topo: Any) -> list[str]:
    """What is wrong with the switch tree, one line each (empty when it is sound)."""
    health = topo.health
    out = []
    dangling = health.get("dangling_switches") or []
    if dangling:
        out.append(
            f"{len(dangling)} dangling switch(es) with no nodes and at most one other switch ({_names(dangling)})"
        )
    isolated = health.get("isolated_switches") or []
    if isolated:
        out.append(f"{len(isolated)} switch(es) linked to nothing ({_names(isolated)})")
    if len(topo.roots) > 1:
        out.append(
            f"{len(topo.roots)} roots ({_names(list(topo.roots))}): no switch reaches every node, so Slurm cannot"
            " place a job across them"
        )
    return out
