"""The host ResourceQuota of a tenant's vCluster namespace (``policies.resourceQuota.quota``).

The chart's defaults (vcluster values.yaml: ``requests.storage: 100Gi``, ``services.nodeports: 0``,
``services.loadbalancers: 1``, cpu/memory/pod counts, ...) refuse a GPU tenant's objects: the
Slurm-home claim is terabytes and a LoadBalancer Service counts its node ports too. Helm merges
maps, so each default is overridden or nulled. What is set is derived from the inventory and from
what the tenant's apps render:

* ``requests.nvidia.com/gpu``: the GPUs of the tenant's pools;
* ``requests.storage``: the sum of every claim that lands in the host namespace ``vc-<tenant>``,
  read from the rendered tree (``rendered_claims``): the chart-made claims of each chart app from
  its values file (vCluster data volume and its deployed etcd, slurmctld state; chart defaults
  below, checked against the pinned charts' values.yaml by the tests), every
  PersistentVolumeClaim and every mariadb-operator ``MariaDB`` of each plain-manifest app. Exact to
  the byte: a quota one byte smaller refuses the last claim;
* ``services.loadbalancers`` / ``services.nodeports``: what ``expose`` opens (login: 1 and port 22;
  inference: 1 and its ports), 0 otherwise.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Tenant

# Chart defaults that are removed (null): cpu/memory are the pools' business (Kueue, Slurm).
QUOTA_DROP = (
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "count/pods",
    "count/endpoints",
    "count/services",
    "count/secrets",
    "count/configmaps",
    "count/persistentvolumeclaims",
)
STORAGE_KEY = "requests.storage"
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_QTY = re.compile(r"^([0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$")


def quantity_bytes(text: Any, where: str) -> int:
    m = _QTY.match(str(text))
    if not m:
        raise GpufleetError(f"{where}: {text!r} is not a storage size like 20Ti or 500Gi")
    unit = m.group(2) or ""
    return int(m.group(1)) * (_BINARY.get(unit) or _DECIMAL[unit])


def exact_quantity(n_bytes: int) -> str:
    """``n_bytes`` as a Kubernetes quantity, exactly (the largest binary unit that divides it)."""
    for unit in ("Pi", "Ti", "Gi", "Mi", "Ki"):
        if n_bytes and n_bytes % _BINARY[unit] == 0:
            return f"{n_bytes // _BINARY[unit]}{unit}"
    return str(n_bytes)


@dataclass(frozen=True)
class Claim:
    """One PersistentVolumeClaim (or several: ``count``) that lands in the tenant's host namespace."""

    source: str  # where it comes from: rendered file and key
    size: int  # bytes of one claim
    count: int = 1

    @property
    def total(self) -> int:
        return self.size * self.count


@dataclass(frozen=True)
class ChartClaim:
    """A claim a chart makes from its values: enabled flag, size, replica count, chart defaults.

    Defaults are the pinned charts' values.yaml (tests/unit/.../test_quota.py reads them)."""

    what: str
    size: tuple[str, ...]
    default_size: str
    enabled: tuple[str, ...] | None = None  # absent/"auto" = the chart default (on)
    default_enabled: bool = True
    requires: tuple[str, ...] | None = None  # another flag that must be true (default false)
    replicas: tuple[str, ...] | None = None
    existing: tuple[str, ...] | None = None  # a named existing claim replaces the chart's


_VC_PV = ("controlPlane", "statefulSet", "persistence", "volumeClaim")
_VC_ETCD = ("controlPlane", "backingStore", "etcd", "deploy")
CHART_CLAIMS: dict[str, tuple[ChartClaim, ...]] = {
    # loft-sh/vcluster chart values.yaml: controlPlane.statefulSet.persistence.volumeClaim
    # (enabled: auto -> on for the k8s distro with its embedded store; size 5Gi), one per replica
    # (controlPlane.statefulSet.highAvailability.replicas, 1); a deployed etcd has its own.
    "vcluster": (
        ChartClaim(
            "vCluster data volume",
            size=(*_VC_PV, "size"),
            default_size="5Gi",
            enabled=(*_VC_PV, "enabled"),
            replicas=("controlPlane", "statefulSet", "highAvailability", "replicas"),
        ),
        ChartClaim(
            "vCluster deployed etcd volume",
            size=(*_VC_ETCD, "statefulSet", "persistence", "volumeClaim", "size"),
            default_size="5Gi",
            enabled=(*_VC_ETCD, "statefulSet", "persistence", "volumeClaim", "enabled"),
            requires=(*_VC_ETCD, "enabled"),
            replicas=(*_VC_ETCD, "statefulSet", "highAvailability", "replicas"),
        ),
    ),
    # SlinkyProject/slurm-operator helm/slurm/values.yaml: controller.persistence (enabled, 4Gi)
    "slurm": (
        ChartClaim(
            "slurmctld state volume",
            size=("controller", "persistence", "resources", "requests", "storage"),
            default_size="4Gi",
            enabled=("controller", "persistence", "enabled"),
            existing=("controller", "persistence", "existingClaim"),
        ),
    ),
}


def _get(values: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        values = values.get(key) if isinstance(values, Mapping) else None
    return values


def chart_claims(chart_name: str, values: Mapping[str, Any], where: str) -> list[Claim]:
    out = []
    for cc in CHART_CLAIMS.get(chart_name, ()):
        if cc.requires is not None and _get(values, cc.requires) is not True:
            continue
        flag = _get(values, cc.enabled) if cc.enabled else None
        if flag is False or (flag is None and not cc.default_enabled):
            continue
        if cc.existing is not None and _get(values, cc.existing):
            continue
        key = ".".join(cc.size)
        size = _get(values, cc.size) or cc.default_size
        replicas = _get(values, cc.replicas) if cc.replicas else None
        count = int(replicas) if isinstance(replicas, int) and replicas > 0 else 1
        out.append(Claim(f"{where}: {key} ({cc.what})", quantity_bytes(size, f"{where}: {key}"), count))
    return out


def manifest_claims(objs: Iterable[Mapping[str, Any]], where: str) -> list[Claim]:
    """PersistentVolumeClaims and mariadb-operator MariaDBs (one claim per replica) of a manifest file."""
    out = []
    for obj in objs:
        kind, name = obj.get("kind"), (obj.get("metadata") or {}).get("name")
        spec = obj.get("spec") or {}
        if kind == "PersistentVolumeClaim":
            size = _get(spec, ("resources", "requests", "storage"))
            key = "spec.resources.requests.storage"
            out.append(Claim(f"{where}: {kind} {name} {key}", quantity_bytes(size, f"{where}: {name} {key}")))
        elif kind == "MariaDB" and str(obj.get("apiVersion", "")).startswith("k8s.mariadb.com/"):
            storage = spec.get("storage") or {}
            if storage.get("ephemeral"):
                continue
            tmpl = _get(storage, ("volumeClaimTemplate", "resources", "requests", "storage"))
            key = "spec.storage.volumeClaimTemplate" if tmpl else "spec.storage.size"
            size = tmpl or storage.get("size")
            if not size:
                raise GpufleetError(f"{where}: MariaDB {name}: {key} is required (the quota counts it)")
            count = int(spec.get("replicas") or 1)
            out.append(Claim(f"{where}: {kind} {name} {key}", quantity_bytes(size, f"{where}: {name} {key}"), count))
    return out


def rendered_claims(
    apps: Iterable[Mapping[str, Any]],
    values_files: Mapping[str, Mapping[str, Any]],
    manifest_files: Mapping[str, list[dict[str, Any]]],
    host_namespace: str,
    tenant_server: str,
) -> list[Claim]:
    """Every claim the tenant's Applications make in the host namespace ``host_namespace``.

    ``values_files`` / ``manifest_files`` are keyed by their path in the Git repository (what the
    Applications name); an app counts when it deploys into the vCluster (``tenant_server``: vCluster
    syncs its claims to the host namespace) or into ``host_namespace`` itself."""
    out: list[Claim] = []
    for app in apps:
        spec = app.get("spec") or {}
        dest = spec.get("destination") or {}
        if dest.get("server") != tenant_server and dest.get("namespace") != host_namespace:
            continue
        for src in [*(spec.get("sources") or []), *([spec["source"]] if spec.get("source") else [])]:
            if src.get("chart"):
                for vf in (src.get("helm") or {}).get("valueFiles") or []:
                    path = str(vf).removeprefix("$values/")
                    out += chart_claims(src["chart"], values_files.get(path) or {}, path)
            elif src.get("path") is not None:
                for path in sorted(manifest_files):
                    if posixpath.dirname(path) == str(src["path"]).rstrip("/"):
                        out += manifest_claims(manifest_files[path], path)
    return out


def storage_quota(tenant: Tenant, claims: list[Claim], explicit: Any) -> str:
    """``requests.storage``: the claims' sum, or the platform's value for the tenant (its
    ``tenant_overrides``; a tenant's own values cannot set quota) if it holds them all."""
    need = sum(c.total for c in claims)
    if explicit is None:
        return exact_quantity(need)
    key = (
        f"gpufleet_clusters[{tenant.cluster}].tenant_overrides.{tenant.name}.vcluster.values.policies"
        f".resourceQuota.quota.{STORAGE_KEY}"
    )
    have = quantity_bytes(explicit, key)
    if have < need:
        listing = "; ".join(f"{c.source} = {exact_quantity(c.total)}" for c in claims)
        raise GpufleetError(
            f"{key}: {explicit} is smaller than the claims the tenant's apps make in its host namespace"
            f" ({exact_quantity(need)}: {listing}); the last claim would be refused"
        )
    return str(explicit)


def tenant_quota(tenant: Tenant, gpus: int) -> dict[str, Any]:
    """The quota without ``requests.storage`` (set by ``storage_quota`` once the tenant is rendered)."""
    quota: dict[str, Any] = {k: None for k in QUOTA_DROP}
    e = tenant.expose
    lbs = int(e.login_lb) + int(bool(e.inference))
    ports = (1 if e.login_lb else 0) + len(e.inference)
    quota.update({"requests.nvidia.com/gpu": gpus, "services.loadbalancers": lbs, "services.nodeports": ports})
    return quota
