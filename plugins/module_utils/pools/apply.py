"""Apply the pool fence (labels + taints from ``fence``) to the Nodes of a cluster.

Planning is pure: ``plan(nodes, mapping)`` compares each Node's labels and taints under the keys
gpufleet owns (``fence.OWNED_LABEL_KEYS``, ``fence.OWNED_TAINT_KEYS``) with what its pool wants and
returns one ``NodeChange`` per Node to change; labels and taints under other keys are never
touched. A Node not in the mapping loses the owned labels/taints (it left every pool).

The Node annotations under ``fence.OWNED_ANNOTATION_KEYS`` (the Slinky topology spec) are owned
too when the caller passes them (``annotations``: node -> {key: value}); a Node without a value
loses them, other annotations are never touched. ``annotations_from_gitops(gitops_dir, cluster)``
reads them from the rendered ``tenants/<tenant>/slurm/node-topology.yaml`` files.

Applying uses the ``kubernetes`` Python client: ``core_api(kubeconfig, context)``, ``list_nodes``,
``apply_changes`` (JSON merge patch carrying the ``resourceVersion`` read, so a concurrent writer
makes the patch fail with 409 instead of being overwritten; retried after a fresh read).

The fabric labels (``topology.labels``: switch tiers and NVLink domain) are owned too when the
caller passes them (``fabric``: scheme, node -> labels): every label under the scheme's keys is
planned like the fence labels. ``fabric_labels_from_gitops(gitops_dir, cluster)`` reads them from
the rendered ``clusters/<cluster>/node-labels.yaml``.
The slurm-bridge node-name label (``fence.BRIDGE_NODENAME_LABEL``) is owned too when the caller passes
``names`` (node -> its Slurm node name): ``bridge_names_from_gitops(gitops_dir, cluster)`` reads them from
the rendered ``tenants/<tenant>/slurm-bridge/node-names.yaml`` files (none: every Node loses the label).
Maintenance cordons (``cordon``) are owned too when the caller passes the due maintenance entries
(``maintenance``: node -> {maintenance, reason}); they travel in the same patch.

``mapping_from_inventory(inventory, cluster)`` reads node -> pool from the lock file
(``pools.lock``) and the pools' kind/tenant from the fleet model.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.deps import missing
from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.kubeclient import core_v1_api
from ansible_collections.gpufleet.core.plugins.module_utils.model import fence
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Fleet, Pool
from ansible_collections.gpufleet.core.plugins.module_utils.model.paths import default_out
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.pools import cordon
from ansible_collections.gpufleet.core.plugins.module_utils.pools.lock import lock_path, read_lock
from ansible_collections.gpufleet.core.plugins.module_utils.topology import labels as fabric_labels

try:
    import yaml
except ImportError:  # importing works without it; the first use raises a clear error
    yaml = missing("yaml", "PyYAML")

TOPOLOGY_FILE = "node-topology.yaml"
LABELS_FILE = "node-labels.yaml"  # clusters/<cluster>/, rendered by render.platform.fabric_labels


class ApplyError(GpufleetError):
    """The fence could not be planned or applied."""


@dataclass(frozen=True)
class PoolRef:
    """What the fence needs of a pool (``fence.PoolLike``)."""

    name: str
    kind: str | None = None
    tenant: str | None = None


@dataclass
class NodeChange:
    node: str
    pool: str | None
    resource_version: str | None
    before: dict[str, Any]
    after: dict[str, Any]
    patch: dict[str, Any] = field(default_factory=dict)


# the fabric labels a Node should carry: their scheme (whose keys gpufleet owns) and node -> labels
FabricLabels = tuple[fabric_labels.LabelScheme, Mapping[str, Mapping[str, str]]]


def _label_owner(fabric: FabricLabels | None, names: Mapping[str, str] | None = None) -> Callable[[str], bool]:
    """Whether a label key is gpufleet's: the fence keys, the fabric scheme's keys and the bridge's
    node-name label when managed."""
    keys = set(fence.OWNED_LABEL_KEYS) | ({fence.BRIDGE_NODENAME_LABEL} if names is not None else set())
    if fabric is None:
        return keys.__contains__
    owns = fabric[0].owns
    return lambda k: k in keys or owns(k)


def _owned_view(
    labels: Mapping[str, str],
    taints: list[dict[str, Any]],
    annotations: Mapping[str, str] | None = None,
    owned: Callable[[str], bool] = fence.OWNED_LABEL_KEYS.__contains__,
) -> dict[str, Any]:
    """The owned part of a Node; ``annotations`` only when they are managed (not None)."""
    view: dict[str, Any] = {
        "labels": {k: labels[k] for k in sorted(labels) if owned(k)},
        "taints": sorted(
            (t for t in taints if t.get("key") in fence.OWNED_TAINT_KEYS),
            key=lambda t: (t.get("key", ""), t.get("value", ""), t.get("effect", "")),
        ),
    }
    if annotations is not None:
        view["annotations"] = {k: annotations[k] for k in sorted(annotations) if k in fence.OWNED_ANNOTATION_KEYS}
    return view


def _clean_taint(t: Mapping[str, Any]) -> dict[str, Any]:
    return {k: t[k] for k in ("key", "value", "effect", "timeAdded") if t.get(k) is not None}


def _with_cordon(
    node: Mapping[str, Any], change: NodeChange | None, maintenance: Mapping[str, Mapping[str, str]] | None
) -> NodeChange | None:
    """``change`` with the maintenance cordon of ``node`` folded in (``maintenance`` None: not managed)."""
    meta = node.get("metadata") or {}
    found = cordon.plan(node, maintenance.get(meta.get("name"))) if maintenance is not None else None
    if found is None:
        return change
    before, after, fragment = found
    if change is None:
        patch: dict[str, Any] = {"metadata": {}}
        if meta.get("resourceVersion"):
            patch["metadata"]["resourceVersion"] = meta["resourceVersion"]
        pool = (meta.get("labels") or {}).get(fence.POOL_KEY)
        change = NodeChange(meta.get("name"), pool, meta.get("resourceVersion"), {}, {}, patch)
    change.before["cordon"], change.after["cordon"] = before, after
    change.patch["metadata"].setdefault("annotations", {}).update(fragment["metadata"]["annotations"])
    if "spec" in fragment:
        change.patch.setdefault("spec", {}).update(fragment["spec"])
    return change


def plan_node(
    node: Mapping[str, Any],
    pool: fence.PoolLike | str | None,
    annotations: Mapping[str, str] | None = None,
    *,
    fabric: FabricLabels | None = None,
    maintenance: Mapping[str, Mapping[str, str]] | None = None,
    names: Mapping[str, str] | None = None,
) -> NodeChange | None:
    """``_plan_fence`` plus the maintenance cordon: ``maintenance`` maps node -> its due maintenance
    entry (``cordon.due``); None leaves cordons alone. ``names``: node -> Slurm node name of the bridged
    Nodes (None: the label is not managed)."""
    return _with_cordon(node, _plan_fence(node, pool, annotations, fabric, names), maintenance)


def _plan_fence(
    node: Mapping[str, Any],
    pool: fence.PoolLike | str | None,
    annotations: Mapping[str, str] | None = None,
    fabric: FabricLabels | None = None,
    names: Mapping[str, str] | None = None,
) -> NodeChange | None:
    """The change that gives ``node`` (a v1 Node dict) the fence of ``pool`` (None: no pool).

    ``annotations``: the owned annotations the Node should carry (``{key: value}``, keys outside
    ``fence.OWNED_ANNOTATION_KEYS`` are ignored; an owned key left out is removed). None leaves
    every annotation alone and keeps them out of ``before``/``after``.
    ``fabric``: (scheme, node -> labels): the Node gets its fabric labels and loses any other label
    under the scheme's keys; None leaves fabric labels alone.
    """
    meta = node.get("metadata") or {}
    name = meta.get("name")
    labels = dict(meta.get("labels") or {})
    taints = [_clean_taint(t) for t in (node.get("spec") or {}).get("taints") or []]
    owned = _label_owner(fabric, names)
    want_labels = fence.node_labels(pool) if pool is not None else {}
    if fabric is not None:
        want_labels = {k: v for k, v in (fabric[1].get(name) or {}).items() if owned(k)} | want_labels
    if names is not None and name in names:
        want_labels[fence.BRIDGE_NODENAME_LABEL] = names[name]
    want_taints = fence.node_taints(pool) if pool is not None else []
    new_labels = {k: v for k, v in labels.items() if not owned(k)} | want_labels
    others = [t for t in taints if t.get("key") not in fence.OWNED_TAINT_KEYS]
    new_taints = others + [dict(t) for t in want_taints]
    current_ann: dict[str, str] | None = None
    want_ann: dict[str, str] | None = None
    if annotations is not None:
        current_ann = dict(meta.get("annotations") or {})
        want_ann = {k: str(annotations[k]) for k in fence.OWNED_ANNOTATION_KEYS if annotations.get(k) is not None}
    before = _owned_view(labels, taints, current_ann, owned)
    after = _owned_view(new_labels, new_taints, want_ann, owned)
    if before == after:
        return None
    patch: dict[str, Any] = {"metadata": {"labels": {}}}
    for k in sorted(set(before["labels"]) | set(after["labels"])):
        if labels.get(k) != new_labels.get(k):
            patch["metadata"]["labels"][k] = new_labels.get(k)  # None removes the label
    if current_ann is not None and want_ann is not None and before["annotations"] != after["annotations"]:
        patch["metadata"]["annotations"] = {
            k: want_ann.get(k)  # None removes the annotation
            for k in fence.OWNED_ANNOTATION_KEYS
            if current_ann.get(k) != want_ann.get(k)
        }
    if before["taints"] != after["taints"]:
        patch["spec"] = {"taints": new_taints}  # a list: replaced whole, other taints kept as read
    if meta.get("resourceVersion"):
        patch["metadata"]["resourceVersion"] = meta["resourceVersion"]
    pool_name = fence.node_selector(pool)[fence.POOL_KEY] if pool is not None else None
    return NodeChange(name, pool_name, meta.get("resourceVersion"), before, after, patch)


def _node_annotations(annotations: Mapping[str, Mapping[str, str]] | None, name: str) -> Mapping[str, str] | None:
    return None if annotations is None else annotations.get(name, {})


def plan(
    nodes: list[Mapping[str, Any]],
    mapping: Mapping[str, fence.PoolLike | str],
    annotations: Mapping[str, Mapping[str, str]] | None = None,
    *,
    fabric: FabricLabels | None = None,
    maintenance: Mapping[str, Mapping[str, str]] | None = None,
    names: Mapping[str, str] | None = None,
) -> tuple[list[NodeChange], list[str]]:
    """Changes for every Node (sorted by name) and the mapped node names absent from the cluster.

    ``annotations``: node -> owned annotations (``plan_node``); None: annotations not managed.
    ``fabric``: the fabric labels (``plan_node``); None: not managed.
    ``maintenance``: node -> due maintenance entry (``plan_node``); None: cordons not managed.
    ``names``: node -> Slurm node name of the bridged Nodes (``plan_node``); None: not managed.
    """
    present = {(n.get("metadata") or {}).get("name"): n for n in nodes}
    changes = []
    for name in sorted(present):
        wanted = _node_annotations(annotations, name)
        change = plan_node(
            present[name], mapping.get(name), wanted, fabric=fabric, maintenance=maintenance, names=names
        )
        if change is not None:
            changes.append(change)
    missing = sorted(set(mapping) - set(present))
    return changes, missing


def mapping_from_explicit(assignment: Mapping[str, Any]) -> dict[str, PoolRef]:
    """``{node: pool}`` or ``{node: {pool, kind, tenant}}`` to node -> PoolRef."""
    out: dict[str, PoolRef] = {}
    for node, value in assignment.items():
        if isinstance(value, str) and value:
            out[str(node)] = PoolRef(value)
        elif isinstance(value, Mapping) and isinstance(value.get("pool"), str) and value["pool"]:
            unknown = sorted(set(value) - {"pool", "kind", "tenant"})
            if unknown:
                raise ApplyError(f"assignment.{node}: unknown key(s) {', '.join(unknown)}; expected pool, kind, tenant")
            out[str(node)] = PoolRef(value["pool"], value.get("kind"), value.get("tenant"))
        else:
            raise ApplyError(
                f"assignment.{node}: expected a pool name or a mapping with pool (kind, tenant), got {value!r}"
            )
    return dict(sorted(out.items()))


def mapping_from_inventory(inventory: str | Path, cluster: str) -> tuple[dict[str, Pool], Path]:
    """node -> Pool from the cluster's lock file; the lock must exist (render first)."""
    return mapping_from_fleet(load_fleet(inventory), cluster)


def mapping_from_fleet(fleet: Fleet, cluster: str) -> tuple[dict[str, Pool], Path]:
    """``mapping_from_inventory`` for a loaded fleet."""
    if cluster not in fleet.clusters:
        raise ApplyError(
            f"cluster {cluster!r} is not defined in gpufleet_clusters (known: {', '.join(sorted(fleet.clusters))})"
        )
    path = lock_path(fleet, cluster)
    lock = read_lock(path, cluster)
    if lock is None:
        raise ApplyError(f"{path}: no pool lock for cluster {cluster!r}; render the inventory first")
    out: dict[str, Pool] = {}
    for node, pool in lock.items():
        p = fleet.pools.get(pool)
        if p is None or p.cluster != cluster:
            raise ApplyError(
                f"{path}: nodes.{node}: pool {pool!r} is not a pool of cluster {cluster!r} in the inventory"
            )
        out[node] = p
    return out, path


def default_gitops_dir(fleet: Fleet) -> Path:
    """Where the renderer writes by default: ``gitops.path`` in the Git work tree of the inventory."""
    return default_out(fleet)


def topology_files(gitops_dir: str | Path, cluster: str) -> list[Path]:
    """The rendered ``node-topology.yaml`` files of ``cluster`` (one per Slurm tenant with a topology)."""
    return sorted(Path(gitops_dir, "clusters", cluster, "tenants").glob(f"*/slurm/{TOPOLOGY_FILE}"))


def annotations_from_gitops(
    gitops_dir: str | Path | None, cluster: str
) -> tuple[dict[str, dict[str, str]] | None, list[Path], str]:
    """node -> owned annotations from the rendered tree, the files read and a message.

    None (annotations not managed) when the directory or the files are missing; the message says why.
    """
    if not gitops_dir:
        return None, [], "node annotations not managed: no gitops_dir"
    root = Path(gitops_dir)
    if not root.is_dir():
        return None, [], f"node annotations not managed: gitops_dir {root} does not exist (render first)"
    files = topology_files(root, cluster)
    if not files:
        where = root / "clusters" / cluster / "tenants" / "*" / "slurm" / TOPOLOGY_FILE
        return None, [], f"node annotations not managed: no {where} in the rendered tree"
    out: dict[str, dict[str, str]] = {}
    for path in files:
        try:
            doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise ApplyError(f"{path}: cannot read the node topology: {exc}") from None
        if not isinstance(doc, Mapping):
            raise ApplyError(f"{path}: expected a mapping with annotation and nodes")
        key = doc.get("annotation")
        if key not in fence.OWNED_ANNOTATION_KEYS:
            raise ApplyError(
                f"{path}: annotation: {key!r} is not an annotation gpufleet manages "
                f"({', '.join(fence.OWNED_ANNOTATION_KEYS)})"
            )
        nodes = doc.get("nodes")
        if not isinstance(nodes, Mapping):
            raise ApplyError(f"{path}: nodes: expected a mapping of node name to annotation value")
        for node, value in nodes.items():
            if not isinstance(value, str):
                raise ApplyError(f"{path}: nodes.{node}: expected a string, got {value!r}")
            have = out.setdefault(str(node), {})
            if key in have and have[key] != value:
                raise ApplyError(f"{path}: nodes.{node}: {key} differs from another tenant's file")
            have[key] = value
    msg = f"node annotations managed from {len(files)} file(s) under {root}"
    return dict(sorted(out.items())), files, msg


def fabric_labels_from_gitops(
    gitops_dir: str | Path | None, cluster: str
) -> tuple[FabricLabels | None, Path | None, str]:
    """(scheme, node -> fabric labels) from the rendered ``clusters/<cluster>/node-labels.yaml``, the
    file read and a message; None (fabric labels not managed) when the directory or file is missing."""
    if not gitops_dir or not Path(gitops_dir).is_dir():
        return None, None, f"fabric labels not managed: gitops_dir {gitops_dir or '(none)'} does not exist"
    path = Path(gitops_dir, "clusters", cluster, LABELS_FILE)
    if not path.is_file():
        return None, None, f"fabric labels not managed: no {path} in the rendered tree (no fabric)"
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ApplyError(f"{path}: cannot read the node labels: {exc}") from None
    if not isinstance(doc, Mapping) or set(doc) != {"scheme", "sets"}:
        raise ApplyError(f"{path}: expected a mapping with exactly scheme and sets")
    try:
        scheme = fabric_labels.scheme(doc["scheme"])
        per_node = fabric_labels.read_label_sets(doc["sets"], scheme)
    except GpufleetError as exc:
        raise ApplyError(f"{path}: {exc}") from None
    return (scheme, per_node), path, f"fabric labels ({scheme.name}) of {len(per_node)} node(s) from {path}"


def bridge_names_from_gitops(gitops_dir: str | Path | None, cluster: str) -> tuple[dict[str, str] | None, str]:
    """node -> Slurm node name from the rendered ``tenants/*/slurm-bridge/node-names.yaml`` of
    ``cluster`` and a message; None (the label not managed) without a rendered tree of the cluster.
    With the tree but no file, {}: no Node keeps the label (the bridge was turned off)."""
    root = Path(gitops_dir, "clusters", cluster) if gitops_dir else None
    if root is None or not root.is_dir():
        return None, f"slurm-bridge node names not managed: no rendered clusters/{cluster} in {gitops_dir}"
    out: dict[str, str] = {}
    files = sorted(root.glob(f"tenants/*/slurm-bridge/{fence.BRIDGE_NAMES_FILE}"))
    for path in files:
        try:
            doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise ApplyError(f"{path}: cannot read the node names: {exc}") from None
        nodes = doc.get("nodes") if isinstance(doc, Mapping) else None
        if (
            not isinstance(doc, Mapping)
            or doc.get("label") != fence.BRIDGE_NODENAME_LABEL
            or not isinstance(nodes, Mapping)
        ):
            raise ApplyError(f"{path}: expected label: {fence.BRIDGE_NODENAME_LABEL} and nodes: a mapping")
        for node, value in nodes.items():
            if not isinstance(value, str) or not re.match(fence.LABEL_VALUE, value):
                raise ApplyError(f"{path}: nodes.{node}: {value!r} is not a label value")
            if out.setdefault(str(node), value) != value:
                raise ApplyError(f"{path}: nodes.{node}: differs from another tenant's file")
    return dict(sorted(out.items())), f"slurm-bridge node names of {len(out)} node(s) from {len(files)} file(s)"


# ------------------------------------------------------------------------------------------- API


def core_api(kubeconfig: str | None = None, context: str | None = None) -> Any:
    """A ``CoreV1Api`` from a kubeconfig file/context, or in-cluster config when neither is given."""
    return core_v1_api(kubeconfig, context, ApplyError)


def list_nodes(api: Any) -> list[dict[str, Any]]:
    try:
        resp = api.list_node()
    except Exception as exc:
        raise ApplyError(f"cannot list Nodes: {_api_reason(exc)}") from None
    return [api.api_client.sanitize_for_serialization(n) for n in resp.items]


def _api_reason(exc: Exception) -> str:
    status, reason = getattr(exc, "status", None), getattr(exc, "reason", None)
    return f"HTTP {status} {reason}" if status else str(exc)


def apply_changes(
    api: Any,
    changes: list[NodeChange],
    mapping: Mapping[str, Any],
    retries: int = 3,
    annotations: Mapping[str, Mapping[str, str]] | None = None,
    *,
    fabric: FabricLabels | None = None,
    maintenance: Mapping[str, Mapping[str, str]] | None = None,
    names: Mapping[str, str] | None = None,
) -> list[NodeChange]:
    """Patch every changed Node; on a 409 conflict re-read the Node and re-plan. Returns what was done."""
    done: list[NodeChange] = []
    for change in changes:
        current = change
        for attempt in range(retries + 1):
            try:
                api.patch_node(current.node, copy.deepcopy(current.patch), _content_type="application/merge-patch+json")
                done.append(current)
                break
            except Exception as exc:
                if getattr(exc, "status", None) != 409 or attempt == retries:
                    raise ApplyError(f"cannot patch Node {current.node}: {_api_reason(exc)}") from None
                try:
                    node = api.api_client.sanitize_for_serialization(api.read_node(current.node))
                except Exception as exc2:
                    raise ApplyError(f"cannot read Node {current.node}: {_api_reason(exc2)}") from None
                replanned = plan_node(
                    node,
                    mapping.get(current.node),
                    _node_annotations(annotations, current.node),
                    fabric=fabric,
                    maintenance=maintenance,
                    names=names,
                )
                if replanned is None:
                    break
                current = replanned
    return done
