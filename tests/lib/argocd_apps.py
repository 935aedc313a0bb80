"""Argo CD Application objects in the shape the application controller writes them.

Field names and values follow the Application CRD (argoproj.io/v1alpha1): ``status.sync``,
``status.health``, ``status.operationState`` (with ``syncResult.resources``), ``status.conditions``
and ``status.resources[]``. Used by the unit tests, the kube integration test (which writes these
statuses through the status subresource, standing in for the controller) and the bench.
"""

from __future__ import annotations

from typing import Any

REVISION = "3f2a9c1d0b7e55aa41c2b0d6e8f90a1b2c3d4e5f"
T0 = "2026-11-25T10:00:00Z"


def resource(
    kind: str,
    name: str,
    namespace: str = "",
    *,
    group: str = "",
    version: str = "v1",
    status: str = "Synced",
    health: str | None = "Healthy",
    message: str = "",
) -> dict[str, Any]:
    res: dict[str, Any] = {"group": group, "version": version, "kind": kind, "name": name, "status": status}
    if namespace:
        res["namespace"] = namespace
    if health is not None:
        res["health"] = {"status": health, **({"message": message} if message else {})}
    return res


def child(name: str, namespace: str = "argocd", status: str = "Synced", health: str = "Healthy") -> dict[str, Any]:
    """The entry a parent app-of-apps lists for a child Application."""
    return resource(
        "Application", name, namespace, group="argoproj.io", version="v1alpha1", status=status, health=health
    )


def spec(path: str = "apps", project: str = "default") -> dict[str, Any]:
    return {
        "project": project,
        "source": {"repoURL": "https://git.example.invalid/fleet.git", "path": path, "targetRevision": "main"},
        "destination": {"server": "https://kubernetes.default.svc", "namespace": "default"},
    }


def status(
    sync: str = "Synced",
    health: str = "Healthy",
    *,
    phase: str | None = "Succeeded",
    op_message: str = "successfully synced (all tasks run)",
    resources: list[dict[str, Any]] | None = None,
    conditions: list[dict[str, Any]] | None = None,
    sync_failures: list[dict[str, Any]] | None = None,
    health_message: str = "",
) -> dict[str, Any]:
    st: dict[str, Any] = {
        "sync": {
            "status": sync,
            "revision": REVISION,
            "comparedTo": {"source": spec()["source"], "destination": spec()["destination"]},
        },
        "health": {"status": health, **({"message": health_message} if health_message else {})},
        "resources": resources or [],
        "reconciledAt": T0,
        "sourceType": "Directory",
        "summary": {},
    }
    if phase:
        st["operationState"] = {
            "phase": phase,
            "message": op_message,
            "startedAt": T0,
            "operation": {"sync": {"revision": REVISION}, "initiatedBy": {"automated": True}},
            "syncResult": {"revision": REVISION, "resources": sync_failures or []},
        }
        if phase not in ("Running", "Terminating"):
            st["operationState"]["finishedAt"] = T0
    if conditions:
        st["conditions"] = [{"lastTransitionTime": T0, **c} for c in conditions]
    return st


def application(
    name: str,
    *,
    namespace: str = "argocd",
    wave: int | None = None,
    labels: dict[str, str] | None = None,
    st: dict[str, Any] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels or {}}
    if wave is not None:
        meta["annotations"] = {"argocd.argoproj.io/sync-wave": str(wave)}
    app: dict[str, Any] = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": meta,
        "spec": spec(),
    }
    if st is not None:
        app["status"] = st
    return app


PLATFORM = (
    ("argocd-config", -10),
    ("project-platform", -10),
    ("cilium", 10),
    ("cert-manager", 20),
    ("gpu-operator", 30),
    ("csi-driver-nfs", 40),
    ("slurm-home", 41),
)
TENANT = (
    ("project", 0),
    ("host", 1),
    ("vcluster", 2),
    ("slurm-operator-crds", 3),
    ("slurm-operator", 4),
    ("objects", 5),
    ("slurm", 6),
)


def fleet_apps(tenants: int, cluster: str = "gpu-east") -> list[dict[str, Any]]:
    """A root app-of-apps with the platform apps and ``len(TENANT)`` apps per tenant, all Synced/Healthy."""
    apps: list[dict[str, Any]] = []
    names: list[str] = []
    for comp, wave in PLATFORM:
        names.append(f"{cluster}-{comp}")
        apps.append(_leaf(names[-1], wave, cluster, comp))
    for t in range(tenants):
        for comp, wave in TENANT:
            names.append(f"{cluster}-t{t:03d}-{comp}")
            apps.append(_leaf(names[-1], wave, cluster, comp, tenant=f"t{t:03d}"))
    root = application(
        f"{cluster}-root",
        labels={"gpufleet.io/cluster": cluster, "gpufleet.io/component": "root"},
        st=status(resources=[child(n) for n in names]),
    )
    return [root, *apps]


def _leaf(name: str, wave: int, cluster: str, comp: str, tenant: str = "") -> dict[str, Any]:
    labels = {"gpufleet.io/cluster": cluster, "gpufleet.io/component": comp}
    if tenant:
        labels["gpufleet.io/tenant"] = tenant
    ns = f"tenant-{tenant}" if tenant else "kube-system"
    res = [
        resource("ConfigMap", f"{comp}-config", ns),
        resource("Deployment", comp, ns, group="apps"),
        resource("Service", comp, ns, health=None),
    ]
    return application(name, wave=wave, labels=labels, st=status(resources=res))
