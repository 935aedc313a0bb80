"""Argo CD objects: Applications (multi-source ``$values``), AppProjects, the root app-of-apps and
the ``argoproj.io/Application`` health check that makes sync waves across child apps hold.

Facts used, from the Argo CD documentation: ``$values`` is the repository root and only valid at the
start of a path, and a ``ref`` source has no ``chart`` (user guide, "Multiple Sources for an
Application"); child-app waves need the ``argoproj.io/Application`` health check in ``argocd-cm``,
built in until 1.7 and removed in 1.8 (operator manual, "Upgrading 1.7 -> 1.8" and "Resource Health",
"Argo CD App"); an AppProject denies every cluster-scoped kind not in ``clusterResourceWhitelist``
(user guide, "Projects").
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.model.contracts import SYNC_OPTIONS
from ansible_collections.gpufleet.core.plugins.module_utils.model.contracts import SYNC_WAVE as WAVE
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Fleet

API = "argoproj.io/v1alpha1"
ARGOCD_NS = "argocd"
IN_CLUSTER = "https://kubernetes.default.svc"
FINALIZER = "resources-finalizer.argocd.argoproj.io"
LABEL_PART_OF = "app.kubernetes.io/part-of"
LABEL_CLUSTER = "gpufleet.io/cluster"
LABEL_TENANT = "gpufleet.io/tenant"
LABEL_COMPONENT = "gpufleet.io/component"
TENANT_ROOT = "tenant-root"  # gpufleet.io/component of a tenant's root Application

# Sync waves of the child Applications in the root app: projects and the health check first, then
# CRDs -> operators -> clusters, host side before what runs inside the tenant vClusters.
WAVES = {
    "projects": -20,
    "argocd-crds": -15,  # the CRDs of the Argo CD release that runs (before Argo CD itself)
    "argocd-config": -10,
    "network": -5,  # Cilium (bootstrapped by apply, adopted here)
    "crds": 0,  # cert-manager (with its CRDs)
    "operators": 10,  # GPU Operator, csi-driver-nfs
    "storage": 20,  # static PVs for Slurm home
    "tenants": 25,  # one root Application per tenant (its own waves below run inside it)
    "tenant-host": 30,  # tenant namespaces, network policy
    "vcluster": 40,
    "tenant-certs": 45,  # inside the vCluster: cert-manager (its cainjector fills the Slinky webhook caBundle)
    "tenant-crds": 50,  # inside the vCluster: Slinky CRDs
    "tenant-operators": 60,  # inside the vCluster: slurm-operator, Kueue
    "tenant-objects": 70,  # inside the vCluster: namespaces, PVC, Kueue queues
    "tenant-clusters": 80,  # inside the vCluster: the Slurm cluster
    "tenant-accounting": 90,  # inside the vCluster: Slurm accounts/QOS (sacctmgr Job)
}

HEALTH_KEY = "resource.customizations.health.argoproj.io_Application"
PERSIST_HEALTH = "controller.resource.health.persist"  # argocd-cmd-params-cm key
# argocd-cmd-params-cm keys the repo-server and the ApplicationSet controller read as
# ARGOCD_GIT_MODULES_ENABLED (argo-cd chart 10.1.1 templates): off, so no checkout runs
# `git submodule update` (a .gitmodules in the repository would fail every Application's checkout; the
# review and the closed tree refuse one too, render/git_entries.py)
GIT_SUBMODULE_KEYS = ("reposerver.enable.git.submodule", "applicationsetcontroller.enable.git.submodule")
# An Application annotated so reports Healthy to its parent whatever its own health (which it still
# shows itself): the cluster root's sync never waits on a tenant root, so one stuck tenant does not
# hold back the next commit (a new tenant, a platform upgrade).
PARENT_HEALTH = "gpufleet.io/parent-health"
PARENT_HEALTH_IGNORE = "ignore"
HEALTH_LUA = """hs = {}
hs.status = "Progressing"
hs.message = ""
if obj.status ~= nil and obj.status.health ~= nil then
  hs.status = obj.status.health.status
  if obj.status.health.message ~= nil then
    hs.message = obj.status.health.message
  end
end
if obj.metadata.annotations ~= nil and obj.metadata.annotations["gpufleet.io/parent-health"] == "ignore" then
  hs.message = "not gating its parent (gpufleet.io/parent-health: ignore); own health: " .. (hs.status or "")
  hs.status = "Healthy"
end
return hs
"""

# Slinky Controller/Accounting: the pinned slurm-operator (v1.2.1) keeps status.conditions but sets
# none (later versions set SlurmReachable/Available): no conditions at all is Healthy with a message
# saying readiness is not observed (the readiness gates of render/tenants/slurm_ready.py wait for it), not Progressing
# forever; a False condition holds the wave, a True one releases it (docs/adr/fleet-whole.md).
_CONDITIONS_LUA = """hs = {}
hs.status = "Healthy"
hs.message = "the operator sets no status conditions (slurm-operator 1.2): readiness not observed"
if obj.status ~= nil and obj.status.conditions ~= nil and #obj.status.conditions > 0 then
  hs.status = "Progressing"
  hs.message = "no condition True yet"
  local ok = 0
  for _, c in ipairs(obj.status.conditions) do
    if c.status == "False" then
      hs.message = (c.type or "") .. ": " .. (c.reason or "") .. " " .. (c.message or "")
      return hs
    end
    if c.status == "True" then
      ok = ok + 1
      hs.message = (c.type or "") .. ": " .. (c.message or "")
    end
  end
  if ok > 0 then
    hs.status = "Healthy"
  end
end
return hs
"""
_READY_CONDITION_LUA = """hs = {}
-- Argo CD's Lua sandbox has no string library: the failing reasons are listed
local failing = {Failed = true, InitError = true, ScaleOutError = true, ReplicaRecoverError = true,
  ConnectionFailed = true}
hs.status = "Progressing"
hs.message = "waiting for the Ready condition"
if obj.status ~= nil and obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    if c.type == "Ready" then
      hs.message = (c.reason or "") .. ": " .. (c.message or "")
      local why = c.reason or ""
      if c.status == "True" then
        hs.status = "Healthy"
      elseif failing[why] then
        hs.status = "Degraded"
      end
    end
  end
end
return hs
"""
# Slinky NodeSet (v1.2.1 internal/controller/nodeset/nodeset_sync_status.go): the operator writes
# observedGeneration with every status and omits zero counts (omitempty). Healthy once it has seen the
# current spec and every desired pod is Ready; under RollingUpdate also once every pod runs the current
# template (updatedReplicas), so a NodeSet mid-rollout holds the next sync wave (render/tenants/rollout_waves.py:
# NodeSets that share a block roll one after the other). ScheduledUpdate and OnDelete replace pods in the
# window or on deletion: pods still on the old template are named in the message, not waited for.
_NODESET_LUA = """hs = {}
hs.status = "Progressing"
hs.message = "waiting for the operator to report the NodeSet's slurmd pods"
if obj.status == nil or obj.status.observedGeneration == nil then
  return hs
end
local gen = obj.metadata.generation
if gen ~= nil and obj.status.observedGeneration < gen then
  hs.message = "waiting for the operator to observe generation " .. gen
  return hs
end
local want = obj.status.desired or 0
local ready = obj.status.readyReplicas or 0
local updated = obj.status.updatedReplicas or 0
local strategy = "RollingUpdate"
if obj.spec ~= nil and obj.spec.updateStrategy ~= nil and obj.spec.updateStrategy.type ~= nil then
  strategy = obj.spec.updateStrategy.type
end
hs.message = ready .. "/" .. want .. " slurmd pods ready, " .. updated .. "/" .. want .. " on the current template"
if ready < want then
  return hs
end
if updated < want then
  if strategy == "RollingUpdate" then
    hs.message = "rolling update in progress: " .. hs.message
    return hs
  end
  if strategy == "ScheduledUpdate" then
    local start = "?"
    if obj.spec.updateStrategy.scheduledUpdate ~= nil and obj.spec.updateStrategy.scheduledUpdate.startTime ~= nil then
      start = obj.spec.updateStrategy.scheduledUpdate.startTime
    end
    hs.message = hs.message .. "; the others are replaced in the update window from " .. start
  else
    hs.message = hs.message .. "; the others are replaced when their pod is deleted (" .. strategy .. ")"
  end
end
hs.status = "Healthy"
return hs
"""
_LOGINSET_LUA = """hs = {}
hs.status = "Progressing"
local want = 1
if obj.spec ~= nil and obj.spec.replicas ~= nil then
  want = obj.spec.replicas
end
local have = 0
if obj.status ~= nil and obj.status.replicas ~= nil then
  have = obj.status.replicas
end
hs.message = have .. "/" .. want .. " login pods exist (readiness: PodDisruptionBudget slurm-login)"
if have >= want then
  hs.status = "Healthy"
end
return hs
"""
# policy/PodDisruptionBudget: the budgets labelled gpufleet.io/health=all-pods-ready (the Slurm
# tenants' slurmctld, slurmdbd and login budgets, render/tenants/rollout.py) are Healthy once every pod they
# guard is Ready (status.currentHealthy >= status.expectedPods > 0, as the disruption controller counts
# them at the budget's generation): the only objects of a tenant's slurm app that see pod readiness
# (v1.2.1 writes no readiness into a Controller, Accounting or LoginSet). Other budgets (the host's
# slurmd-busy one guards pods that may not exist, render/platform/driver_upgrade.py) keep Argo CD's
# built-in rule (resource_customizations/policy/PodDisruptionBudget/health.lua), stated here.
_PDB_LUA = """hs = {}
hs.status = "Progressing"
local labels = obj.metadata.labels or {}
if labels["gpufleet.io/health"] ~= "all-pods-ready" then
  hs.message = "Waiting for status"
  if obj.status ~= nil and obj.status.conditions ~= nil then
    for _, c in ipairs(obj.status.conditions) do
      if c.status == "False" and c.reason ~= "InsufficientPods" then
        hs.status = "Degraded"
        hs.message = "PodDisruptionBudget has " .. c.reason
        return hs
      end
      hs.status = "Healthy"
      hs.message = "PodDisruptionBudget has " .. c.reason
    end
  end
  return hs
end
local what = "pods"
if obj.spec ~= nil and obj.spec.selector ~= nil and obj.spec.selector.matchLabels ~= nil
    and obj.spec.selector.matchLabels["app.kubernetes.io/name"] ~= nil then
  what = obj.spec.selector.matchLabels["app.kubernetes.io/name"] .. " pods"
end
hs.message = "waiting for the disruption controller to count the " .. what
if obj.status == nil or obj.status.observedGeneration == nil then
  return hs
end
if obj.metadata.generation ~= nil and obj.status.observedGeneration < obj.metadata.generation then
  return hs
end
local want = obj.status.expectedPods or 0
local ready = obj.status.currentHealthy or 0
hs.message = ready .. "/" .. want .. " " .. what .. " Ready (PodDisruptionBudget " .. obj.metadata.name .. ")"
if want > 0 and ready >= want then
  hs.status = "Healthy"
end
return hs
"""
# batch/Job: Argo CD's built-in Job health (gitops-engine pkg/health/health_job.go: a Failed condition
# is Degraded with its message, Complete Healthy, Suspended True Suspended, anything else Progressing
# with no message), plus a message while a readiness gate (a Job annotated gpufleet.io/waits-for,
# render/tenants/slurm_ready.py) runs: what it waits for and how many attempts failed, so argocd_status says
# why a Slurm tenant is still Progressing.
_JOB_LUA = """hs = {}
hs.status = "Progressing"
hs.message = ""
local failed = false
local complete = false
local suspended = false
if obj.status ~= nil and obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    if c.type == "Failed" then
      failed = true
      complete = true
      hs.message = c.message or ""
    elseif c.type == "Complete" then
      complete = true
      hs.message = c.message or ""
    elseif c.type == "Suspended" then
      complete = true
      hs.message = c.message or ""
      if c.status == "True" then
        suspended = true
      end
    end
  end
end
if failed then
  hs.status = "Degraded"
elseif suspended then
  hs.status = "Suspended"
elseif complete then
  hs.status = "Healthy"
elseif obj.metadata.annotations ~= nil and obj.metadata.annotations["gpufleet.io/waits-for"] ~= nil then
  local n = 0
  if obj.status ~= nil and obj.status.failed ~= nil then
    n = obj.status.failed
  end
  local limit = 6
  if obj.spec ~= nil and obj.spec.backoffLimit ~= nil then
    limit = obj.spec.backoffLimit
  end
  hs.message = "waiting for " .. obj.metadata.annotations["gpufleet.io/waits-for"] .. ": " .. n
    .. " failed attempt(s) of " .. (limit + 1)
end
return hs
"""
# Health of the operator-made kinds a tenant's apps wait on: without them a
# custom resource is Healthy as soon as it is applied, so 6-slurm was Healthy before slurmctld
# ran and the accounts Job raced slurmdbd. Status fields: Slinky v1.2.1 CRDs (NodeSet
# status.desired/readyReplicas/observedGeneration, LoginSet status.replicas, Controller and
# Accounting status.conditions); v1.2.1 writes no conditions on Controller/Accounting and its
# LoginSet status.replicas counts the login Deployment's pods, crash-looping ones included: real
# readiness is gated by the PodDisruptionBudgets in the same waves (policy/PodDisruptionBudget above)
# and by Jobs (render/tenants/slurm_ready.py, batch/Job below); mariadb-operator MariaDB
# status.conditions[type=Ready] (the same
# rule as Argo CD's built-in resource_customizations/k8s.mariadb.com/MariaDB/health.lua, stated here
# so it does not depend on the Argo CD release). Ready False is Degraded for every failing reason the
# operator sets (api/v1alpha1/condition_types.go: Failed, InitError, ScaleOutError, ReplicaRecoverError,
# ConnectionFailed), with the operator's reason and message;
# the other False reasons (StatefulSetNotReady, Initializing, Updating, ...) are steps and stay
# Progressing: StatefulSetNotReady is also every first start, so its failures show on the pods.
CR_HEALTH = {
    "resource.customizations.health.slinky.slurm.net_Controller": _CONDITIONS_LUA,
    "resource.customizations.health.slinky.slurm.net_Accounting": _CONDITIONS_LUA,
    "resource.customizations.health.slinky.slurm.net_NodeSet": _NODESET_LUA,
    "resource.customizations.health.slinky.slurm.net_LoginSet": _LOGINSET_LUA,
    "resource.customizations.health.k8s.mariadb.com_MariaDB": _READY_CONDITION_LUA,
    "resource.customizations.health.batch_Job": _JOB_LUA,
    "resource.customizations.health.policy_PodDisruptionBudget": _PDB_LUA,
}


def health_checks() -> dict[str, str]:
    """Every ``argocd-cm`` health customization gpufleet owns (Applications and operator CRs)."""
    return {HEALTH_KEY: HEALTH_LUA, **CR_HEALTH}


# Sync option that keeps a resource when its Application is deleted (CNI, CRDs, Argo CD itself).
# Set on the Application object (so deleting a parent root leaves the child in place) and in its
# syncOptions; such Applications carry no resources-finalizer, so deleting one never cascades.
KEEP = "Delete=false"

RETRY = {"limit": 10, "backoff": {"duration": "10s", "factor": 2, "maxDuration": "5m"}}


def platform_project(cluster: str) -> str:
    return f"{cluster}-platform"


def labels(cluster: str, component: str, tenant: str | None = None) -> dict[str, str]:
    out = {LABEL_PART_OF: "gpufleet", LABEL_CLUSTER: cluster, LABEL_COMPONENT: component}
    if tenant:
        out[LABEL_TENANT] = tenant
    return out


def values_ref(fleet: Fleet) -> dict[str, Any]:
    """The second source of a multi-source app: this repository, named ``values``."""
    return {"repoURL": fleet.gitops.repo_url, "targetRevision": fleet.gitops.revision, "ref": "values"}


def repo_path(fleet: Fleet, rel: str) -> str:
    """Path of a rendered file inside the Git repository (the tree lives under ``gitops.path``)."""
    base = fleet.gitops.path.strip("/")
    return f"{base}/{rel}" if base else rel


def sync_policy(
    create_namespace: bool = True,
    server_side: bool = True,
    namespace_labels: dict[str, str] | None = None,
    extra: list[str] | None = None,
) -> dict[str, Any]:
    opts = []
    if create_namespace:
        opts.append("CreateNamespace=true")
    if server_side:
        opts.append("ServerSideApply=true")
    opts += extra or []
    policy: dict[str, Any] = {
        "automated": {"prune": True, "selfHeal": True},
        "syncOptions": sorted(opts),
        "retry": RETRY,
    }
    if namespace_labels:
        policy["managedNamespaceMetadata"] = {"labels": dict(namespace_labels)}
    return policy


def application(
    name: str,
    *,
    project: str,
    wave: str,
    app_labels: dict[str, str],
    dest_namespace: str,
    dest_server: str = IN_CLUSTER,
    sources: list[dict[str, Any]] | None = None,
    source: dict[str, Any] | None = None,
    policy: dict[str, Any] | None = None,
    ignore_differences: list[dict[str, Any]] | None = None,
    info: list[dict[str, str]] | None = None,
    keep: bool = False,
    keep_app: bool = True,
) -> dict[str, Any]:
    """One child Application. ``keep``: never delete what it deployed (CNI, CRDs, Argo CD): no
    resources-finalizer, ``Delete=false`` in its sync options and, with ``keep_app``, on the
    Application object (its parent's deletion leaves it). Apps inside a tenant's vCluster keep
    their resources but not themselves (``keep_app=False``): removing the tenant deletes them with
    the tenant root instead of leaving Applications pointing at a deleted vCluster."""
    spec: dict[str, Any] = {
        "project": project,
        "destination": {"server": dest_server, "namespace": dest_namespace},
        "syncPolicy": policy if policy is not None else sync_policy(),
        "revisionHistoryLimit": 5,
    }
    if sources is not None:
        spec["sources"] = sources
    if source is not None:
        spec["source"] = source
    if ignore_differences:
        spec["ignoreDifferences"] = ignore_differences
    if info:
        spec["info"] = info
    meta: dict[str, Any] = {
        "name": name,
        "namespace": ARGOCD_NS,
        "labels": app_labels,
        "annotations": {WAVE: str(WAVES[wave])},
        "finalizers": [FINALIZER],
    }
    if keep:
        del meta["finalizers"]
        if keep_app:
            meta["annotations"][SYNC_OPTIONS] = KEEP
        opts = spec["syncPolicy"].setdefault("syncOptions", [])
        if KEEP not in opts:
            spec["syncPolicy"]["syncOptions"] = sorted([*opts, KEEP])
    return {"apiVersion": API, "kind": "Application", "metadata": meta, "spec": spec}


def chart_source(chart: dict[str, str], release: str, values_file: str, fleet: Fleet) -> dict[str, Any]:
    """A Helm chart source pinned by version, values from ``$values/<path in this repo>``."""
    return {
        "repoURL": fleet.chart_repo(chart["repo_url"]),
        "chart": chart["chart"],
        "targetRevision": chart["version"],
        "helm": {"releaseName": release, "valueFiles": [f"$values/{repo_path(fleet, values_file)}"]},
    }


def git_source(src: dict[str, str], fleet: Fleet) -> dict[str, Any]:
    """A directory of an upstream Git repository at a pinned tag (versions.GIT_SOURCES), through the
    site's mirror of that repository if the inventory has one."""
    return {"repoURL": fleet.chart_repo(src["repo_url"]), "path": src["path"], "targetRevision": src["revision"]}


def directory_source(fleet: Fleet, path: str) -> dict[str, Any]:
    """A directory of plain manifests in this repository (not recursive: Argo CD's default;
    ``directory: {recurse: false}`` would be dropped by the controller's normalisation and leave the
    parent app OutOfSync for ever)."""
    return {"repoURL": fleet.gitops.repo_url, "targetRevision": fleet.gitops.revision, "path": repo_path(fleet, path)}


def directory_app(name: str, *, fleet: Fleet, path: str, **kw: Any) -> dict[str, Any]:
    """An app over a directory of plain manifests in this repository (the roots; every other app is a
    row of render/apps.py)."""
    return application(name, source=directory_source(fleet, path), **kw)


def root_app(fleet: Fleet, cluster: str, apps_dir: str) -> dict[str, Any]:
    """The app-of-apps of one cluster: every child Application and AppProject under ``apps_dir``.

    Applied once by the bootstrap (apply step); it is not in its own directory, so it does not
    manage itself. Children may pick any project: only admins may push to this repository.
    """
    app = directory_app(
        f"{cluster}-root",
        fleet=fleet,
        path=apps_dir,
        project="default",
        wave="projects",
        app_labels=labels(cluster, "root"),
        dest_namespace=ARGOCD_NS,
        policy=sync_policy(create_namespace=False),
    )
    del app["metadata"]["annotations"]
    return app


def tenant_root_app(fleet: Fleet, cluster: str, tenant: str, apps_dir: str) -> dict[str, Any]:
    """The root Application of one tenant: syncs ``tenants/<t>/apps`` (the tenant's child apps, in
    their own waves). Each tenant has its own, so one unhealthy tenant never holds back another;
    the cluster root syncs every tenant root in one wave, after the platform, and does not wait for
    their health (``PARENT_HEALTH``: the Application health check reports them Healthy to it), so a
    stuck tenant never holds the cluster root's sync operation and the next commit is applied."""
    app = directory_app(
        f"{tenant}-root",
        fleet=fleet,
        path=apps_dir,
        project=platform_project(cluster),
        wave="tenants",
        app_labels=labels(cluster, TENANT_ROOT, tenant),
        dest_namespace=ARGOCD_NS,
        policy=sync_policy(create_namespace=False),
    )
    app["metadata"]["annotations"][PARENT_HEALTH] = PARENT_HEALTH_IGNORE
    return app


def argocd_cm_health() -> dict[str, Any]:
    """The ``argocd-cm`` fields gpufleet owns: the Application health check.

    Applied with server-side apply (field ownership), so the other keys of ``argocd-cm`` written by
    the Argo CD install stay untouched.
    """
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "argocd-cm",
            "namespace": ARGOCD_NS,
            "labels": {"app.kubernetes.io/name": "argocd-cm", "app.kubernetes.io/part-of": "argocd"},
            "annotations": {"argocd.argoproj.io/sync-options": "ServerSideApply=true,Prune=false,Delete=false"},
        },
        "data": health_checks(),
    }


def project(
    name: str,
    *,
    description: str,
    source_repos: list[str],
    destinations: list[dict[str, str]],
    cluster_whitelist: list[dict[str, str]] | None = None,
    namespace_blacklist: list[dict[str, str]] | None = None,
    roles: list[dict[str, Any]] | None = None,
    project_scoped_only: bool = False,
    project_labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "description": description,
        "sourceRepos": sorted(set(source_repos)),
        "destinations": destinations,
        "clusterResourceWhitelist": cluster_whitelist or [],
    }
    if namespace_blacklist:
        spec["namespaceResourceBlacklist"] = namespace_blacklist
    if roles:
        spec["roles"] = roles
    if project_scoped_only:
        spec["permitOnlyProjectScopedClusters"] = True
    return {
        "apiVersion": API,
        "kind": "AppProject",
        "metadata": {
            "name": name,
            "namespace": ARGOCD_NS,
            "labels": project_labels or {},
            "annotations": {WAVE: str(WAVES["projects"])},
        },
        "spec": spec,
    }
