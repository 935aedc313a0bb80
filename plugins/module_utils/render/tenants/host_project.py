"""A tenant's host folder syncs in a project of its own that allows exactly what the folder holds.

The tenant's host objects (its namespace ``vc-<t>``, the isolation policies, the PodMonitor) are the
fence, so they are the platform's; they used to sync in ``<cluster>-platform``, whose cluster
whitelist is ``*/*``. A tenant-owned folder synced with that much power turns any object that lands
there past CI into anything on the host. Each tenant directory Application with a host destination
gets the project ``<cluster>-host-<tenant>`` instead: this repository only, the host server and only
the namespaces its objects are in, and only the kinds (group, kind) the rendered folder holds,
cluster-scoped and namespaced apart (``namespaceResourceWhitelist``: nothing else in the namespace),
plus the kinds of what the tenant's own switches may add (its monitoring), so that a switch the
tenant owns changes only the tenant's folder, never this platform file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Cluster, Fleet
from ansible_collections.gpufleet.core.plugins.module_utils.render import argocd as argo
from ansible_collections.gpufleet.core.plugins.module_utils.render import collisions
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants.host import monitoring_files


def project_name(cluster: str, tenant: str) -> str:
    return f"{cluster}-host-{tenant}"


def _kind(obj: Mapping[str, Any]) -> dict[str, str]:
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    return {"group": group, "kind": str(obj.get("kind", ""))}


def _sorted(kinds: Iterable[dict[str, str]]) -> list[dict[str, str]]:
    return [{"group": g, "kind": k} for g, k in sorted({(k["group"], k["kind"]) for k in kinds})]


def switched_objects(fleet: Fleet, cluster: Cluster, tenant: str) -> list[dict[str, Any]]:
    """The host objects the tenant's own switches may add (its monitoring): the project allows their
    kinds whether they are on or off, so a switch the tenant owns never changes this platform file."""
    slurm = bool(fleet.tenant_pools(tenant, "slurm"))
    return [o for objs in monitoring_files(cluster, fleet.tenants[tenant], slurm).values() for o in objs]


def host_project(
    fleet: Fleet, cluster: Cluster, tenant: str, app: dict[str, Any], objects: list[Mapping[str, Any]]
) -> dict[str, Any]:
    """The project of ``app`` (a tenant's host directory app) over the rendered ``objects`` of its folder."""
    dest = app["spec"]["destination"]
    scoped = [o for o in objects if (o.get("metadata") or {}).get("namespace")]
    cluster_wide = [o for o in objects if not (o.get("metadata") or {}).get("namespace")]
    namespaces = sorted({str(o["metadata"]["namespace"]) for o in scoped} | {str(dest["namespace"])})
    proj = argo.project(
        project_name(cluster.name, tenant),
        description=f"the host objects of tenant {tenant} (its namespace and fence): exactly these kinds",
        source_repos=[fleet.gitops.repo_url],
        destinations=[{"server": str(dest["server"]), "namespace": ns} for ns in namespaces],
        cluster_whitelist=_sorted(_kind(o) for o in cluster_wide),
        project_labels=argo.labels(cluster.name, "project", tenant),
    )
    proj["spec"]["namespaceResourceWhitelist"] = _sorted(_kind(o) for o in scoped)
    return proj


def scope_host_apps(
    fleet: Fleet,
    cluster: Cluster,
    tenant_apps: Mapping[str, dict[str, Any]],
    manifests: Mapping[str, list[dict[str, Any]]],
) -> dict[str, dict[str, Any]]:
    """Give each tenant directory app with a host destination its own project (set in place); return
    the projects by file name in the cluster's ``apps/`` folder. ``tenant_apps``: rel path -> app."""
    collisions.check_servers(fleet, cluster)  # the cause first: a vCluster's apps would read as host apps
    out: dict[str, dict[str, Any]] = {}
    prefix = argo.repo_path(fleet, "")
    for app in tenant_apps.values():
        spec = app["spec"]
        src = spec.get("source") or {}
        tenant = (app["metadata"].get("labels") or {}).get(argo.LABEL_TENANT)
        if not tenant or "path" not in src or spec["destination"].get("server") != cluster.server:
            continue
        folder = str(src["path"]).removeprefix(prefix).strip("/")
        objects = [o for rel, objs in sorted(manifests.items()) if rel.rpartition("/")[0] == folder for o in objs]
        objects += switched_objects(fleet, cluster, tenant)
        fname = f"tenant-{tenant}-0-host-project.yaml"
        if fname in out:
            raise GpufleetError(f"tenant {tenant}: two host directory apps; one host project each is all there is")
        proj = host_project(fleet, cluster, tenant, app, objects)
        spec["project"] = proj["metadata"]["name"]
        out[fname] = proj
    return out
