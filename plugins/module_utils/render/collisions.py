"""No two owners may render the same object: the generated-name collision check of one cluster.

A tenant's name is glued into the names of many objects (its AppProject, ``vc-<tenant>``, its
Applications, cluster Secret, PV, network policy). A tenant named ``default`` would render
AppProject ``default`` (the root app's project); one named ``<cluster>-platform`` would replace the
platform project. Instead of a hand-kept list of reserved names, this module reads what the
renderer produced for the cluster and refuses when:

* two owners (the platform, a tenant) render an object with the same kind, namespace and name, on
  the same cluster (the host, or one tenant's vCluster), or the same file;
* a tenant renders an object that Argo CD creates itself (its built-in ``default`` project);
* a platform Application references an AppProject a tenant owns;
* two owners deploy into the same host namespace, or a tenant into a system namespace;
* a tenant lists a namespace that a renderer-made Application deploys into inside its vCluster
  (``slurm``, the operator namespaces) or a system namespace (``default``, ``kube-*``);
* a tenant's vCluster API URL equals a cluster's API server.

Errors point at the tenant (or pool) whose name caused the collision, with file and line.
"""

from __future__ import annotations

import re
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.argocd.cluster_secret import default_secret_name
from ansible_collections.gpufleet.core.plugins.module_utils.errors import Issue, ModelError
from ansible_collections.gpufleet.core.plugins.module_utils.model import components
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Cluster, Fleet
from ansible_collections.gpufleet.core.plugins.module_utils.model.grammar import is_system_namespace
from ansible_collections.gpufleet.core.plugins.module_utils.render import argocd as argo
from ansible_collections.gpufleet.core.plugins.module_utils.render.shared_names import namespace_of
from ansible_collections.gpufleet.core.plugins.module_utils.render.values import vcluster_namespace, vcluster_server

PLATFORM = "platform"
HOST_COMPONENTS = components.HOST  # on the host cluster
ARGOCD = "argocd"
# Objects Argo CD itself creates and the renderer relies on (the root app's project).
ARGOCD_BUILTIN = (("AppProject", argo.ARGOCD_NS, "default"),)
_TENANT_PATH = re.compile(r"/tenants/([^/]+)/")
# directories under tenants/<t>/ whose manifests an Application applies inside the tenant's vCluster
VCLUSTER_DIRS = ("objects", "accounting", "accounting-db")


def chart_host_names(tenant: str) -> list[tuple[str, str]]:
    """(kind, name) of the cluster-scoped objects the vcluster chart (0.36) creates on the host for a
    tenant's release, after the chart's own truncation (``vcluster.clusterRoleName``: ``vc-<release>-v-
    <namespace>``, ``trunc 63``, ``trimSuffix "-"``). Distinct tenants can share one after truncation."""
    name = f"vc-{tenant}-v-{vcluster_namespace(tenant)}"[:63]
    name = name[:-1] if name.endswith("-") else name
    return [("ClusterRole", name), ("ClusterRoleBinding", name)]


def _owner_of(obj: dict[str, Any], path: str) -> str:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    if labels.get(argo.LABEL_TENANT):
        return str(labels[argo.LABEL_TENANT])
    m = _TENANT_PATH.search(path)
    return m.group(1) if m else PLATFORM


def _scope(path: str) -> str:
    m = _TENANT_PATH.search(path)
    return f"vcluster {m.group(1)}" if m and any(f"/{d}/" in path for d in VCLUSTER_DIRS) else "host"


def _describe(owner: str) -> str:
    return {PLATFORM: "the platform", ARGOCD: "Argo CD itself"}.get(owner, f"tenant {owner!r}")


def _issue(fleet: Fleet, owner: str, message: str) -> Issue:
    raw = getattr(fleet, "source", None)
    tenants = raw.data.get("gpufleet_tenants", []) if raw is not None else []
    for i, t in enumerate(tenants if isinstance(tenants, list) else []):
        if isinstance(t, dict) and t.get("name") == owner:
            return raw.issue(("gpufleet_tenants", i, "name"), message)
    if raw is not None:
        return raw.issue(("gpufleet_clusters",), message)
    return Issue(file=str(fleet.inventory_dir), line=None, path="", message=message)


class _Objects:
    """The objects of one cluster by (scope, kind, namespace, name) with their first owner and file;
    a second owner of the same object is an issue, blamed on the tenant of the two."""

    def __init__(self, fleet: Fleet, cluster: Cluster) -> None:
        self.fleet, self.cluster = fleet, cluster
        self.seen: dict[tuple[str, str, str, str], tuple[str, str]] = {}
        self.issues: list[Issue] = []

    def add(self, scope: str, kind: str, ns: str, name: str, owner: str, where: str) -> None:
        key = (scope, kind, ns, name)
        if key not in self.seen:
            self.seen[key] = (owner, where)
            return
        other, other_where = self.seen[key]
        if other_where == where and other == owner:
            return
        blame = owner if owner not in (PLATFORM, ARGOCD) else other
        self.issues.append(
            _issue(
                self.fleet,
                blame,
                f"renders {kind} {name!r}{f' in namespace {ns!r}' if ns else ''} ({scope} of cluster"
                f" {self.cluster.name!r}, {where}), which {_describe(other if blame == owner else owner)} already"
                f" renders ({other_where if blame == owner else where}); choose another name",
            )
        )


def _object_clashes(
    fleet: Fleet,
    cluster: Cluster,
    tenants: list[Any],
    apps: dict[str, dict[str, Any]],
    manifests: dict[str, list[dict[str, Any]]],
) -> list[Issue]:
    """Two owners of one object: Argo CD's own, the vcluster chart's host names, the Applications and
    AppProjects, the rendered manifests and the cluster Secrets of the apply step."""
    objs = _Objects(fleet, cluster)
    for kind, ns, name in ARGOCD_BUILTIN:
        objs.add("host", kind, ns, name, ARGOCD, "built into Argo CD")
    for t in tenants:  # names the charts generate
        for kind, name in chart_host_names(t.name):
            objs.add("host", kind, "", name, t.name, f"the vcluster chart of tenant {t.name!r}, name truncated to 63")
    for fname, obj in sorted(apps.items()):
        meta = obj.get("metadata") or {}
        owner = _owner_of(obj, fname)
        objs.add(
            "host", str(obj.get("kind")), str(meta.get("namespace", "")), str(meta.get("name")), owner, f"apps/{fname}"
        )
    for path, items in sorted(manifests.items()):
        for obj in items:
            meta = obj.get("metadata") or {}
            kind, ns, name = str(obj.get("kind")), str(meta.get("namespace") or ""), str(meta.get("name"))
            objs.add(_scope(path), kind, ns, name, _owner_of(obj, path), path)
    for t in tenants:
        objs.add("host", "Secret", argo.ARGOCD_NS, default_secret_name(t.name), t.name, "cluster Secret (apply step)")
    return objs.issues


def _server_clashes(fleet: Fleet, tenants: list[Any]) -> list[Issue]:
    servers = {c.server for c in fleet.clusters.values()}
    return [
        _issue(fleet, t.name, f"vCluster URL {vcluster_server(t.name)} is a cluster's API server")
        for t in tenants
        if vcluster_server(t.name) in servers
    ]


def check_servers(fleet: Fleet, cluster: Cluster) -> None:
    """Raise ModelError when a tenant's vCluster URL is a cluster's API server: checked before the host
    projects are made, which would otherwise read the tenant's vCluster apps as host apps."""
    issues = _server_clashes(fleet, sorted(fleet.cluster_tenants(cluster.name), key=lambda t: t.name))
    if issues:
        raise ModelError(issues)


class _Destinations:
    """Where the Applications deploy: host namespace -> (owner, file); tenant -> namespaces its
    Applications use inside its vCluster; plus the issues found on the way, in Application order."""

    def __init__(self, apps: dict[str, dict[str, Any]]) -> None:
        self.host_ns: dict[str, tuple[str, str]] = {}
        self.vc_ns: dict[str, set[str]] = {}
        self.issues: list[Issue] = []
        self.project_owner = {
            str((obj.get("metadata") or {}).get("name")): _owner_of(obj, fname)
            for fname, obj in sorted(apps.items())
            if obj.get("kind") == "AppProject"
        }
        self.flagged: set[str] = set()


def _project_issue(fleet: Fleet, dests: _Destinations, fname: str, app: dict[str, Any], owner: str) -> Issue | None:
    """A platform Application in an AppProject a tenant renders (reported once per project)."""
    proj = str((app.get("spec") or {}).get("project"))
    if owner != PLATFORM or dests.project_owner.get(proj, PLATFORM) == PLATFORM or proj in dests.flagged:
        return None
    dests.flagged.add(proj)
    return _issue(
        fleet,
        dests.project_owner[proj],
        f"AppProject {proj!r} is the project of the platform Application"
        f" {(app.get('metadata') or {}).get('name')!r} (apps/{fname}): a tenant may not own it;"
        " choose another name",
    )


def _destination_issue(fleet: Fleet, dests: _Destinations, fname: str, ns: str, owner: str) -> Issue | None:
    """A tenant Application into a system namespace, or into a host namespace another owner uses."""
    if owner not in (PLATFORM, ARGOCD) and is_system_namespace(ns):
        dests.issues.append(_issue(fleet, owner, f"would deploy into the system namespace {ns!r} (apps/{fname})"))
    prev = dests.host_ns.get(ns)
    if not prev or prev[0] == owner:
        dests.host_ns.setdefault(ns, (owner, f"apps/{fname}"))
        return None
    return _issue(
        fleet,
        owner if owner != PLATFORM else prev[0],
        f"host namespace {ns!r} is used by both {_describe(prev[0])} ({prev[1]}) and"
        f" {_describe(owner)} (apps/{fname}); choose another name",
    )


def _destinations(fleet: Fleet, cluster: Cluster, tenants: list[Any], apps: dict[str, dict[str, Any]]) -> _Destinations:
    dests = _Destinations(apps)
    tenant_servers = {vcluster_server(t.name): t.name for t in tenants}
    for fname, app in sorted(apps.items()):
        if app.get("kind") == "AppProject":
            continue
        owner = _owner_of(app, fname)
        issue = _project_issue(fleet, dests, fname, app, owner)
        if issue:
            dests.issues.append(issue)
        if ((app.get("metadata") or {}).get("labels") or {}).get(argo.LABEL_COMPONENT) == argo.TENANT_ROOT:
            continue  # a tenant's root app-of-apps: it deploys that tenant's Applications into Argo CD's namespace
        dest = (app.get("spec") or {}).get("destination") or {}
        ns, server = str(dest.get("namespace", "")), str(dest.get("server", ""))
        if server in tenant_servers:
            dests.vc_ns.setdefault(tenant_servers[server], set()).add(ns)
        elif server == cluster.server and ns:
            issue = _destination_issue(fleet, dests, fname, ns, owner)
            if issue:
                dests.issues.append(issue)
    return dests


def _component_namespace_issues(fleet: Fleet, cluster: Cluster, host_ns: dict[str, tuple[str, str]]) -> list[Issue]:
    """A tenant's host namespace that a platform component (with or without an app) uses."""
    issues = []
    for comp in cluster.components.values():
        if comp.enabled and comp.name in HOST_COMPONENTS:
            ns = namespace_of(comp)
            prev = host_ns.get(ns)
            if prev and prev[0] != PLATFORM:
                issues.append(
                    _issue(
                        fleet,
                        prev[0],
                        f"host namespace {ns!r} is also the namespace of the platform component {comp.name!r};"
                        " choose another name",
                    )
                )
    return issues


def _tenant_namespace_issues(fleet: Fleet, tenants: list[Any], vc_ns: dict[str, set[str]]) -> list[Issue]:
    """A tenant namespace that is a system one, or one the renderer creates inside its vCluster."""
    raw = getattr(fleet, "source", None)
    issues = []
    for t in tenants:
        reserved = vc_ns.get(t.name, set())
        for ns in t.namespaces:
            why = (
                "a system namespace"
                if is_system_namespace(ns)
                else "created by the renderer inside the vCluster"
                if ns in reserved
                else None
            )
            if not why:
                continue
            msg = f"namespace {ns!r} is {why}; choose another name"
            issue = _issue(fleet, t.name, msg)
            if raw is not None:
                for i, item in enumerate(raw.data.get("gpufleet_tenants") or []):
                    if isinstance(item, dict) and item.get("name") == t.name:
                        j = list(item.get("namespaces") or []).index(ns)
                        issue = raw.issue(("gpufleet_tenants", i, "namespaces", j), msg)
            issues.append(issue)
    return issues


def check_cluster(
    fleet: Fleet, cluster: Cluster, apps: dict[str, dict[str, Any]], manifests: dict[str, list[dict[str, Any]]]
) -> None:
    """Raise ModelError when two owners render the same object (see the module docstring).

    ``apps``: file -> Application/AppProject (all in the Argo CD namespace of the host);
    ``manifests``: file -> objects (host side, or inside a vCluster under ``tenants/<t>/<VCLUSTER_DIRS>/``).
    """
    tenants = sorted(fleet.cluster_tenants(cluster.name), key=lambda t: t.name)
    issues = _object_clashes(fleet, cluster, tenants, apps, manifests)
    issues += _server_clashes(fleet, tenants)
    dests = _destinations(fleet, cluster, tenants, apps)
    issues += dests.issues
    issues += _component_namespace_issues(fleet, cluster, dests.host_ns)
    issues += _tenant_namespace_issues(fleet, tenants, dests.vc_ns)
    if issues:
        raise ModelError(issues)
