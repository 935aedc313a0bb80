"""Maintenance cordons: the part of a Node the apply step owns for ``gpufleet_maintenance``.

The renderer writes ``clusters/<cluster>/maintenance.yaml`` (node -> maintenance name, reason, window);
the apply step (``node_pools``, through :mod:`.apply`) makes each Node match it:

- a node in a maintenance that is due (no window, or its start has passed) is cordoned
  (``spec.unschedulable: true``) and annotated with ``OWNER_ANNOTATION`` (the maintenance name) and
  ``REASON_ANNOTATION`` (Slinky's ``node-cordon-reason``: the operator drains the Slurm node behind a
  cordoned Node with ``slurm-operator: <reason>``; both land in one patch, so the reason is there when
  the operator sees the cordon);
- a node carrying ``OWNER_ANNOTATION`` that is no longer in a due maintenance is uncordoned and both
  annotations are removed (the operator then resumes the Slurm node it drained);
- a Node cordoned by someone else (no ``OWNER_ANNOTATION``) and not in maintenance is left alone.

``read_maintenance(gitops_dir, cluster)`` returns None (not managed) when the tree is missing, and ``{}``
when the tree holds no maintenance file for the cluster (nothing in maintenance: every gpufleet cordon
is lifted).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.deps import missing
from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.model.contracts import (
    NODE_CORDON_REASON as REASON_ANNOTATION,
)
from ansible_collections.gpufleet.core.plugins.module_utils.model.maintenance_model import parse_start

try:
    import yaml
except ImportError:  # importing works without it; the first use raises a clear error
    yaml = missing("yaml", "PyYAML")

OWNER_ANNOTATION = "gpufleet.io/maintenance"
OWNED_ANNOTATIONS = (OWNER_ANNOTATION, REASON_ANNOTATION)
SLURM_REASON_PREFIX = "slurm-operator: "  # what the operator puts before the annotation's reason
FILE = "maintenance.yaml"


class CordonError(GpufleetError):
    """The rendered maintenance file cannot be read."""


def maintenance_file(gitops_dir: str | Path, cluster: str) -> Path:
    return Path(gitops_dir, "clusters", cluster, FILE)


def _entry(path: Path, node: str, value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(isinstance(value.get(k), str) for k in ("maintenance", "reason")):
        raise CordonError(f"{path}: nodes.{node}: expected a mapping with maintenance and reason strings")
    out = {k: str(value[k]) for k in ("maintenance", "reason", "start", "end") if value.get(k) is not None}
    if "start" in out:
        try:
            parse_start(out["start"])
        except ValueError:
            raise CordonError(f"{path}: nodes.{node}.start: {out['start']!r} is not a UTC time") from None
    return out


def read_maintenance(gitops_dir: str | Path | None, cluster: str) -> tuple[dict[str, dict[str, str]] | None, str]:
    """node -> {maintenance, reason[, start, end]} from the rendered tree, and a message saying why (not)."""
    if not gitops_dir or not Path(gitops_dir).is_dir():
        return None, f"cordons not managed: no rendered tree at {gitops_dir}"
    path = maintenance_file(gitops_dir, cluster)
    if not path.is_file():
        return {}, f"no node of {cluster} in maintenance ({path} absent)"
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise CordonError(f"{path}: cannot read the maintenance file: {exc}") from None
    nodes = doc.get("nodes") if isinstance(doc, Mapping) else None
    if not isinstance(nodes, Mapping):
        raise CordonError(f"{path}: nodes: expected a mapping of node name to its maintenance")
    out = {str(n): _entry(path, str(n), v) for n, v in nodes.items()}
    return dict(sorted(out.items())), f"{len(out)} node(s) of {cluster} in maintenance ({path})"


def due(entries: Mapping[str, Mapping[str, str]], now: datetime) -> dict[str, Mapping[str, str]]:
    """The entries whose maintenance has begun at ``now`` (no window, or its start has passed)."""
    return {n: e for n, e in entries.items() if "start" not in e or parse_start(e["start"]) <= now}


def view(node: Mapping[str, Any]) -> dict[str, Any]:
    """The owned part of a Node: its cordon and the two maintenance annotations."""
    ann = (node.get("metadata") or {}).get("annotations") or {}
    return {
        "unschedulable": bool((node.get("spec") or {}).get("unschedulable")),
        "annotations": {k: ann[k] for k in OWNED_ANNOTATIONS if k in ann},
    }


def plan(node: Mapping[str, Any], entry: Mapping[str, str] | None) -> tuple[dict, dict, dict] | None:
    """(before, after, merge-patch fragment) that puts ``node`` in (``entry``) or out of maintenance;
    None when nothing changes or the Node is not gpufleet's to uncordon."""
    before = view(node)
    if entry is not None:
        after = {
            "unschedulable": True,
            "annotations": {OWNER_ANNOTATION: entry["maintenance"], REASON_ANNOTATION: entry["reason"]},
        }
    elif OWNER_ANNOTATION in before["annotations"]:
        after = {"unschedulable": False, "annotations": {}}
    else:
        return None
    if before == after:
        return None
    patch: dict[str, Any] = {"metadata": {"annotations": {k: after["annotations"].get(k) for k in OWNED_ANNOTATIONS}}}
    if before["unschedulable"] != after["unschedulable"]:
        patch["spec"] = {"unschedulable": after["unschedulable"]}
    return before, after, patch
