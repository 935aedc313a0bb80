"""Every Argo CD Application the renderer emits, as a row of one table, and the one loop that writes them.

A row (``App``) says what one Application deploys and how: the file it is written to, its part (the
name suffix, the ``gpufleet.io/component`` label and the folder of its values or manifests), its sync
wave, its destination, a Helm chart (with its values) or a directory of plain manifests, and what Argo
CD may delete. A ``Scope`` says where a set of rows goes: the platform of a cluster (``apps/``, parts
under ``platform/``) or one tenant (``tenants/<t>/apps/``, synced by the tenant's root Application).
``emit`` writes each row's values or manifests and builds its Application; render/platform/cluster.py,
render/platform/monitoring.py, render/tenants/tenant.py and render/tenants/accounting.py only say which rows there are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Fleet
from ansible_collections.gpufleet.core.plugins.module_utils.render import argocd as argo
from ansible_collections.gpufleet.core.plugins.module_utils.render import images
from ansible_collections.gpufleet.core.plugins.module_utils.versions import GIT_SOURCES, chart

# Sync option of a directory app whose objects are of kinds another app of an earlier wave installs
# (Cilium, Kueue, mariadb-operator CRDs): no dry run against a kind the API server does not know yet.
SKIP_DRY_RUN = "SkipDryRunOnMissingResource=true"


@dataclass
class Rendered:
    """Objects to write: values files (single document) and manifest files (YAML streams)."""

    values: dict[str, dict[str, Any]] = field(default_factory=dict)  # Helm values files
    manifests: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # Kubernetes objects
    data: dict[str, dict[str, Any]] = field(default_factory=dict)  # other YAML (for the apply step)
    raw: dict[str, str] = field(default_factory=dict)  # text files (topology.conf, for review)
    apps: dict[str, dict[str, Any]] = field(default_factory=dict)  # apps/<file> -> Application/AppProject
    notes: list[str] = field(default_factory=list)

    def update(self, other: Rendered) -> None:
        for mine, theirs in (
            (self.values, other.values),
            (self.manifests, other.manifests),
            (self.data, other.data),
            (self.raw, other.raw),
            (self.apps, other.apps),
        ):
            clash = set(mine) & set(theirs)
            if clash:
                raise GpufleetError(
                    f"two parts of the fleet render the same file(s) {sorted(clash)}; rename the tenant or pool"
                )
            mine.update(theirs)
        self.notes += other.notes


@dataclass(frozen=True)
class Scope:
    """Where a set of rows goes: ``<base>/<part>/`` holds each part's files, ``<prefix>-<part>`` names
    its Application, ``server`` is the default destination, ``tenant`` the tenant label (if any)."""

    cluster: str
    base: str
    prefix: str
    server: str
    tenant: str | None = None


@dataclass(frozen=True)
class App:
    """One Application: a chart app (``chart`` set, ``values`` written to ``<part>/values.yaml``), an
    upstream Git directory at a pinned tag (``git`` set) or a directory app over ``<part>/``
    (``manifests``: file name -> objects)."""

    file: str  # its file in the scope's apps folder
    part: str  # name suffix, component label and folder of what it deploys
    wave: str  # argocd.WAVES key
    namespace: str  # destination namespace
    chart: str | None = None  # versions.CHARTS key; None: a directory app
    git: str | None = None  # versions.GIT_SOURCES key: an upstream repository's directory
    values: dict[str, Any] | None = None  # the chart's values
    manifests: Mapping[str, list[dict[str, Any]]] = field(default_factory=dict)
    release: str | None = None  # Helm release name (default: the part)
    component: str | None = None  # gpufleet.io/component label (default: the part)
    server: str | None = None  # destination server (default: the scope's)
    project: str | None = None  # AppProject (default: the cluster's platform project)
    create_namespace: bool = True
    sync_options: tuple[str, ...] = ()
    namespace_labels: Mapping[str, str] | None = None
    ignore_differences: tuple[dict[str, Any], ...] = ()
    info: tuple[dict[str, str], ...] = ()
    keep: bool = False  # see argocd.application
    keep_app: bool = True
    synced: bool = True  # False: only its values are written (the apply step installs it with Helm)


def application(fleet: Fleet, scope: Scope, row: App) -> dict[str, Any]:
    """The Application of one row."""
    folder = f"{scope.base}/{row.part}"
    if row.chart:
        source = argo.chart_source(
            chart(row.chart, fleet.versions), row.release or row.part, f"{folder}/values.yaml", fleet
        )
        where: dict[str, Any] = {"sources": [source, argo.values_ref(fleet)]}
    elif row.git:
        where = {"source": argo.git_source(GIT_SOURCES[row.git], fleet)}
    else:
        where = {"source": argo.directory_source(fleet, folder)}
    return argo.application(
        f"{scope.prefix}-{row.part}",
        project=row.project or argo.platform_project(scope.cluster),
        wave=row.wave,
        app_labels=argo.labels(scope.cluster, row.component or row.part, scope.tenant),
        dest_server=row.server or scope.server,
        dest_namespace=row.namespace,
        policy=argo.sync_policy(
            create_namespace=row.create_namespace,
            namespace_labels=dict(row.namespace_labels) if row.namespace_labels else None,
            extra=list(row.sync_options),
        ),
        ignore_differences=list(row.ignore_differences),
        info=list(row.info),
        keep=row.keep,
        keep_app=row.keep_app,
        **where,
    )


def emit(fleet: Fleet, scope: Scope, rows: Iterable[App], out: Rendered) -> dict[str, dict[str, Any]]:
    """Write every row's values or manifests into ``out``; return its Applications by file name."""
    apps: dict[str, dict[str, Any]] = {}
    for row in rows:
        folder = f"{scope.base}/{row.part}"
        if row.values is not None:  # every image through the site's registry (render/images.py)
            out.values[f"{folder}/values.yaml"] = images.redirect(row.chart, row.values, fleet.image_mirror)
        for name, objs in row.manifests.items():
            out.manifests[f"{folder}/{name}"] = images.redirect_manifests(objs, fleet.image_mirror)
        if row.synced:
            apps[row.file] = application(fleet, scope, row)
    return apps
