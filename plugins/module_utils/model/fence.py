"""The pool fence: the one place that says how a node pool is marked and how workloads reach it.

Every node of a pool carries

- the label ``node-restriction.kubernetes.io/gpufleet-pool=<pool>`` (``POOL_KEY``): kubelets cannot set
  or change labels under ``node-restriction.kubernetes.io/`` (NodeRestriction admission), so a node
  cannot move itself into a pool;
- for a tenant's pool also ``node-restriction.kubernetes.io/gpufleet-tenant=<tenant>`` (``TENANT_KEY``):
  vCluster's ``sync.fromHost.nodes.selector.labels`` is equality-only, so a tenant with several
  pools is selected by this label;
- the taint ``node-restriction.kubernetes.io/gpufleet-pool=<pool>:NoSchedule`` (same key and value
  as the label). Pools of kind ``system`` are labelled but **not tainted**: they are where cluster
  workloads without pool tolerations (CoreDNS, Argo CD, operators, vCluster control planes) land.
  Nodes outside every pool carry neither.

Functions (all pure, deterministic, sorted output; a pool argument is a ``model.Pool`` or a pool
name, a name being treated as a tainted pool with no tenant):

- ``node_labels(pool) -> dict``, ``node_taints(pool) -> list[dict]``: what a Node of the pool carries
  (``node_pools`` module applies them and removes stale ones under ``OWNED_LABEL_KEYS``/``POOL_KEY``).
- ``node_selector(pool) -> dict``: a pod ``nodeSelector`` that reaches exactly the pool.
- ``tolerations(pools) -> list[dict]``: pod tolerations for the taints of the given pools.
- ``vcluster_sync_fragment(pools) -> dict``: vCluster values ``sync.fromHost.nodes.selector.labels``
  and ``sync.toHost.pods.enforceTolerations`` (strings ``key=value:NoSchedule``) for one tenant's pools.
- ``slinky_nodeset_fragment(pool) -> dict``: ``{"podSpec": {"nodeSelector", "tolerations"}}`` for a
  Slinky ``slurm`` chart ``nodesets.<name>`` entry.
- ``kueue_resource_flavor(pool, topology=None) -> dict`` and ``kueue_cluster_queue(pool, tenant, gpus=...) -> dict``:
  Kueue objects, only for ``kubernetes`` pools (Slurm pools are in no flavor and no cohort).
- ``daemonset_tolerations(pools=None) -> list[dict]``: tolerations for DaemonSets that must run on
  every pool (GPU Operator ``daemonsets.tolerations``, NFD worker, Cilium, CSI node plugins).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.model.contracts import (
    NODE_TOPOLOGY_SPEC as TOPOLOGY_ANNOTATION,
)

POOL_KEY = "node-restriction.kubernetes.io/gpufleet-pool"
TENANT_KEY = "node-restriction.kubernetes.io/gpufleet-tenant"
OWNED_LABEL_KEYS = (POOL_KEY, TENANT_KEY)
OWNED_TAINT_KEYS = (POOL_KEY,)
OWNED_ANNOTATION_KEYS = (TOPOLOGY_ANNOTATION,)
# slurm-bridge maps a Kubernetes Node to the Slurm node named by this label (internal/wellknown/labels.go);
# the apply step sets it on the Nodes of bridged pools (render/tenants/bridge.py)
BRIDGE_NODENAME_LABEL = "slinky.slurm.net/slurm-nodename"
BRIDGE_NAMES_FILE = "node-names.yaml"  # its values, in the rendered tenants/<tenant>/slurm-bridge/
LABEL_VALUE = r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$"  # a Kubernetes label value
EFFECT = "NoSchedule"
UNTAINTED_KINDS = ("system",)
NAMESPACE_TENANT_LABEL = "gpufleet.io/tenant"  # label on tenant namespaces selected by the ClusterQueue
KUEUE_API = "kueue.x-k8s.io/v1beta2"
KUEUE_COHORT = "gpufleet-kubernetes"
GPU_RESOURCE = "nvidia.com/gpu"
GPU_OPERATOR_DEFAULT_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
# GPU quarantine (health/quarantine.py sets it, render/tenants/health.py keeps every rendered toleration off it):
# no pool fence tolerates this taint; the Slinky operator drains a Node with this condition.
QUARANTINE_TAINT_KEY = "gpufleet.io/gpu-unhealthy"
QUARANTINE_TAINT_EFFECT = "NoSchedule"
QUARANTINE_CONDITION = "GpuUnhealthy"


class FenceError(GpufleetError):
    """A fence fragment was asked for something it cannot express (wrong pool kind, mixed tenants)."""


class PoolLike(Protocol):
    name: str
    kind: str
    tenant: str | None


def _ref(pool: PoolLike | str) -> tuple[str, str | None, str | None]:
    """(name, kind, tenant) of a Pool or a bare pool name."""
    if isinstance(pool, str):
        return pool, None, None
    return pool.name, getattr(pool, "kind", None), getattr(pool, "tenant", None)


def is_tainted(pool: PoolLike | str) -> bool:
    return _ref(pool)[1] not in UNTAINTED_KINDS


def node_labels(pool: PoolLike | str) -> dict[str, str]:
    """Labels every node of ``pool`` carries (pool label, plus tenant label for a tenant's pool)."""
    name, _kind, tenant = _ref(pool)
    labels = {POOL_KEY: name}
    if tenant:
        labels[TENANT_KEY] = tenant
    return dict(sorted(labels.items()))


def node_taints(pool: PoolLike | str) -> list[dict[str, str]]:
    """Taints every node of ``pool`` carries: one NoSchedule taint, none for system pools."""
    name = _ref(pool)[0]
    if not is_tainted(pool):
        return []
    return [{"key": POOL_KEY, "value": name, "effect": EFFECT}]


def node_selector(pool: PoolLike | str) -> dict[str, str]:
    """Pod ``nodeSelector`` that reaches the nodes of ``pool`` and no other node."""
    return {POOL_KEY: _ref(pool)[0]}


def toleration(pool: PoolLike | str) -> dict[str, str]:
    return {"key": POOL_KEY, "operator": "Equal", "value": _ref(pool)[0], "effect": EFFECT}


def tolerations(pools: Iterable[PoolLike | str]) -> list[dict[str, str]]:
    """Pod tolerations for the taints of ``pools`` (untainted system pools need none), sorted by pool."""
    names = sorted({_ref(p)[0] for p in pools if is_tainted(p)})
    return [toleration(n) for n in names]


def toleration_string(pool: PoolLike | str) -> str:
    """vCluster ``enforceTolerations`` form: ``key=value:NoSchedule``."""
    return f"{POOL_KEY}={_ref(pool)[0]}:{EFFECT}"


def vcluster_sync_fragment(pools: Iterable[PoolLike | str]) -> dict[str, Any]:
    """vCluster values fencing a tenant's host pods onto its pools.

    One pool: selector ``{POOL_KEY: pool}``. Several pools (all of one tenant): selector
    ``{TENANT_KEY: tenant}``, since the selector is equality-only. ``enforceTolerations`` lists one
    ``key=value:NoSchedule`` string per tainted pool.
    """
    plist = list(pools)
    refs = sorted({_ref(p) for p in plist}, key=lambda r: r[0])
    if not refs:
        raise FenceError("vcluster_sync_fragment: no pools given")
    if len(refs) == 1:
        selector = {POOL_KEY: refs[0][0]}
    else:
        tenants = {r[2] for r in refs}
        if len(tenants) != 1 or None in tenants:
            raise FenceError(
                "vcluster_sync_fragment: several pools must belong to one tenant "
                f"(pools {', '.join(r[0] for r in refs)}; tenants {sorted(map(str, tenants))})"
            )
        selector = {TENANT_KEY: next(iter(tenants))}
    tainted = sorted({_ref(p)[0] for p in plist if is_tainted(p)})
    return {
        "sync": {
            "fromHost": {"nodes": {"selector": {"labels": selector}}},
            "toHost": {"pods": {"enforceTolerations": [toleration_string(n) for n in tainted]}},
        }
    }


def slinky_nodeset_fragment(pool: PoolLike | str) -> dict[str, Any]:
    """The fence of a Slinky ``slurm`` chart ``nodesets.<name>`` entry (its ``podSpec``)."""
    return {"podSpec": {"nodeSelector": node_selector(pool), "tolerations": tolerations([pool])}}


def _require_kubernetes(pool: PoolLike | str, what: str) -> tuple[str, str | None, str | None]:
    ref = _ref(pool)
    if ref[1] != "kubernetes":
        raise FenceError(
            f"{what}: pool {ref[0]!r} is of kind {ref[1]!r}; only kubernetes pools get Kueue objects "
            "(Slurm pools stay out of every flavor and cohort)"
        )
    return ref


def kueue_resource_flavor(pool: PoolLike, topology: str | None = None) -> dict[str, Any]:
    """Kueue ResourceFlavor named after a kubernetes pool: nodeLabels + tolerations of the fence;
    ``topology``: the Kueue Topology its nodes are placed by (``spec.topologyName``)."""
    name = _require_kubernetes(pool, "kueue_resource_flavor")[0]
    labels = dict(node_selector(pool))
    product = getattr(pool, "gpu_product", None)
    if product:
        labels["nvidia.com/gpu.product"] = product
    spec: dict[str, Any] = {"nodeLabels": dict(sorted(labels.items())), "tolerations": tolerations([pool])}
    if topology:
        spec["topologyName"] = topology
    return {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def kueue_cluster_queue(
    pool: PoolLike,
    tenant: Any,
    gpus: int,
    cpu: str | int | None = None,
    memory: str | None = None,
    cohort: str = KUEUE_COHORT,
) -> dict[str, Any]:
    """Kueue ClusterQueue ``<pool>`` for ``tenant`` (a Tenant or its name) over the pool's flavor.

    ``gpus`` is the nominal GPU quota (the pool's GPUs; ``Assignment.gpus(pool)``); cpu/memory quotas
    are covered only when given. Borrowing of GPUs is off (the partition is static).
    """
    name, _kind, owner = _require_kubernetes(pool, "kueue_cluster_queue")
    tname = tenant if isinstance(tenant, str) else tenant.name
    if owner and owner != tname:
        raise FenceError(f"kueue_cluster_queue: pool {name!r} belongs to tenant {owner!r}, not {tname!r}")
    resources: list[dict[str, Any]] = []
    covered: list[str] = []
    if cpu is not None:
        covered.append("cpu")
        resources.append({"name": "cpu", "nominalQuota": cpu})
    if memory is not None:
        covered.append("memory")
        resources.append({"name": "memory", "nominalQuota": memory})
    covered.append(GPU_RESOURCE)
    resources.append({"name": GPU_RESOURCE, "nominalQuota": int(gpus), "borrowingLimit": 0})
    return {
        "apiVersion": KUEUE_API,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "cohortName": cohort,
            "namespaceSelector": {"matchLabels": {NAMESPACE_TENANT_LABEL: tname}},
            "resourceGroups": [{"coveredResources": covered, "flavors": [{"name": name, "resources": resources}]}],
        },
    }


def daemonset_tolerations(pools: Iterable[PoolLike | str] | None = None, gpu_default: bool = True) -> list[dict]:
    """Tolerations for DaemonSets that run on every pool (GPU Operator, NFD, Cilium, CSI).

    One ``Exists`` toleration on ``POOL_KEY`` covers every pool, present and future, so adding a
    pool does not roll every DaemonSet. ``pools`` is accepted for symmetry and checked to be
    fenced by this key. ``gpu_default`` keeps the GPU Operator's own default toleration
    (``nvidia.com/gpu`` Exists), since its ``daemonsets.tolerations`` list replaces the default.
    """
    for p in pools or ():
        _ref(p)  # names or Pool objects only
    out = [{"key": POOL_KEY, "operator": "Exists", "effect": EFFECT}]
    if gpu_default:
        out.insert(0, dict(GPU_OPERATOR_DEFAULT_TOLERATION))
    return out
