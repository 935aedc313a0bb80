"""Orchestration: fleet (+ snapshots) -> the whole GitOps tree as ``{relative path: bytes}``.

Pure: reads the inventory and its snapshots, writes nothing. ``write_render`` then hands the
tree to :mod:`tree_writer` (atomic, minimal) and updates the pool locks next to the snapshots.

Tree layout (relative to the GitOps root, ``gpufleet_fleet.gitops.path`` in the repository)::

    README.md                                    index of the clusters
    IMAGES.md                                    every image the fleet pulls and where from
    clusters/<cluster>/
      root-app.yaml                              app-of-apps (applied once by the bootstrap)
      REPORT.md                                  what runs where: pools, fabric, tenants, platform
      POOLS.md                                   the pool summary; the nodes of no tenant, one per line
      maintenance.yaml, MAINTENANCE.md           nodes in maintenance (apply step cordons) and the plan
      vclusters.yaml                             vClusters the apply step registers in Argo CD
      node-labels.yaml                           fabric labels the apply step puts on the Nodes
      apps/*.yaml                                platform Applications, AppProjects and one root
                                                 Application per tenant (the cluster root syncs these)
      platform/<component>/values.yaml           Helm values ($values source of each platform app)
      platform/argocd/values.yaml                argo-cd chart values (Argo CD manages itself)
      platform/storage-class/<class>.yaml        the default StorageClass of tenant volumes
      platform/slurm-home/pv-<tenant>.yaml       static RWX PVs for Slurm home
      tenants/<tenant>/apps/*.yaml               the tenant's child Applications (its root syncs these)
      tenants/<tenant>/host/                     host namespace + CiliumClusterwideNetworkPolicy
      tenants/<tenant>/vcluster/values.yaml
      tenants/<tenant>/objects/objects.yaml      inside the vCluster: namespaces, home PVC, Kueue queues
      tenants/<tenant>/{slurm-operator-crds,slurm-operator,slurm,kueue}/values.yaml
      tenants/<tenant>/slurm/topology.conf       the tenant's topology (also inside slurm values)
      tenants/<tenant>/slurm/node-topology.yaml  Node annotations for Slinky dynamic topology
      tenants/<tenant>/{REPORT,POOLS}.md         the tenant's report and its nodes (owned by the tenant)
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.files import replace_file
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Fleet
from ansible_collections.gpufleet.core.plugins.module_utils.model.paths import default_out
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.pools.lock import LOCK_NAME
from ansible_collections.gpufleet.core.plugins.module_utils.render import argocd as argo
from ansible_collections.gpufleet.core.plugins.module_utils.render import cache as render_cache
from ansible_collections.gpufleet.core.plugins.module_utils.render import collisions, images, parallel
from ansible_collections.gpufleet.core.plugins.module_utils.render import writer as tree_writer
from ansible_collections.gpufleet.core.plugins.module_utils.render.apps import Rendered
from ansible_collections.gpufleet.core.plugins.module_utils.render.include import scope_root, scope_sources
from ansible_collections.gpufleet.core.plugins.module_utils.render.inputs import ClusterInputs, cluster_inputs
from ansible_collections.gpufleet.core.plugins.module_utils.render.platform import fabric_labels
from ansible_collections.gpufleet.core.plugins.module_utils.render.platform.cluster import (
    platform_project,
    render_platform,
)
from ansible_collections.gpufleet.core.plugins.module_utils.render.platform.maintenance import render_maintenance
from ansible_collections.gpufleet.core.plugins.module_utils.render.platform.monitoring import (
    dcgm_fragment,
    render_monitoring,
)
from ansible_collections.gpufleet.core.plugins.module_utils.render.report import render_report, render_tenant_report
from ansible_collections.gpufleet.core.plugins.module_utils.render.shared_names import cluster_dir
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants.host_project import scope_host_apps
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants.tenant import render_tenant
from ansible_collections.gpufleet.core.plugins.module_utils.render.values import (
    deep_merge,
    header,
    vcluster_namespace,
    vcluster_server,
)
from ansible_collections.gpufleet.core.plugins.module_utils.yaml_dump import dump_docs, dump_file


@dataclass
class RenderResult:
    """The rendered GitOps tree plus the pool locks (absolute path -> bytes) to keep beside it."""

    fleet: Fleet
    files: dict[str, bytes]
    locks: dict[Path, bytes] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, ClusterInputs] = field(default_factory=dict)  # cluster -> what it was rendered from


@dataclass
class WriteReport:
    plan: tree_writer.Plan
    locks_changed: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.plan.changes or bool(self.locks_changed)

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = self.plan.as_dict()
        d["locks_changed"] = list(self.locks_changed)
        return d


def _cluster_files(fleet: Fleet, name: str, inputs: ClusterInputs) -> dict[str, bytes]:
    cluster = fleet.clusters[name]
    base = cluster_dir(name)
    head = header(fleet.name)
    out = Rendered()
    out.update(render_platform(fleet, cluster))
    tenants = sorted(fleet.cluster_tenants(name), key=lambda t: t.name)
    for t in tenants:
        out.update(render_tenant(fleet, cluster, t, inputs))
    out.update(render_monitoring(fleet, cluster, inputs))
    gpu_vf = f"{base}/platform/gpu-operator/values.yaml"
    if gpu_vf in out.values:
        out.values[gpu_vf] = deep_merge(dcgm_fragment(cluster), out.values[gpu_vf])
    out.apps["00-project-platform.yaml"] = platform_project(fleet, cluster, [vcluster_server(t.name) for t in tenants])
    root = argo.root_app(fleet, name, f"{base}/apps")

    # the tenants' child Applications (tenants/<t>/apps/, synced by each tenant's root) are checked as
    # Applications too, not as plain objects
    def is_tenant_app(rel: str) -> bool:
        return rel.startswith(f"{base}/tenants/") and "/apps/" in rel

    tenant_apps = {f"../{rel[len(base) + 1 :]}": objs[0] for rel, objs in out.manifests.items() if is_tenant_app(rel)}
    plain = {rel: objs for rel, objs in out.manifests.items() if not is_tenant_app(rel)}
    out.apps.update(scope_host_apps(fleet, cluster, tenant_apps, plain))
    collisions.check_cluster(fleet, cluster, {**out.apps, **tenant_apps, "../root-app.yaml": root}, plain)
    rendered = [*out.values, *out.data, *out.manifests, *out.raw, *(f"{base}/apps/{f}" for f in out.apps)]
    scope_sources(fleet, [*out.apps.values(), *tenant_apps.values()], rendered)
    scope_root(root, out.apps)
    files: dict[str, bytes] = {}
    for rel, values in out.values.items():
        files[rel] = dump_file(values, head)
    for rel, data in out.data.items():
        files[rel] = dump_file(data, head)
    for rel, objs in out.manifests.items():
        files[rel] = dump_docs(objs, head)
    for rel, text in out.raw.items():
        files[rel] = text.encode("utf-8")
    for fname, obj in out.apps.items():
        files[f"{base}/apps/{fname}"] = dump_docs([obj], head)
    files[f"{base}/root-app.yaml"] = dump_docs(
        [root],
        head + "\nApply once (bootstrap): kubectl apply --server-side -f this file. It syncs apps/.",
    )
    files[f"{base}/vclusters.yaml"] = dump_file(
        {
            "cluster": name,
            "vclusters": [
                {
                    "name": t.name,
                    "namespace": vcluster_namespace(t.name),
                    "server": vcluster_server(t.name),
                    "project": t.name,
                    "kubeconfig_secret": f"vc-{t.name}",
                }
                for t in tenants
            ],
        },
        head + "\nvClusters the apply step registers in Argo CD (cluster Secrets are never in Git).",
    )
    labels_doc = fabric_labels.node_labels_doc(cluster, inputs)
    if labels_doc is not None:
        files[f"{base}/{fabric_labels.LABELS_FILE}"] = dump_file(
            labels_doc, head + "\nNode labels from the fabric; the apply step (node_pools) sets them."
        )
    files[f"{base}/REPORT.md"] = render_report(fleet, cluster, inputs).encode("utf-8")
    files[f"{base}/POOLS.md"] = inputs.pool_tables[None].encode("utf-8")
    for t in tenants:  # each tenant's reports in its own tree (its CODEOWNERS entry approves them)
        files[f"{base}/tenants/{t.name}/REPORT.md"] = render_tenant_report(fleet, cluster, inputs, t).encode("utf-8")
        if t.name in inputs.pool_tables:
            files[f"{base}/tenants/{t.name}/POOLS.md"] = inputs.pool_tables[t.name].encode("utf-8")
    files.update(render_maintenance(fleet, cluster, inputs))
    return files


def _index(fleet: Fleet, summary: dict[str, Any]) -> bytes:
    lines = [
        f"# GitOps tree of fleet `{fleet.name}`",
        "",
        "Rendered by gpufleet (`scripts/gpufleet.py render` or the `gpufleet.core.gitops_render` module);",
        "do not edit: change the inventory and re-render. Files listed in `.gpufleet-manifest` are owned",
        "by the renderer; other files here are left alone.",
        "",
        "| cluster | nodes | tenants | root app |",
        "| --- | ---: | ---: | --- |",
    ]
    for name in sorted(summary):
        s = summary[name]
        root = f"clusters/{name}/root-app.yaml"
        lines.append(f"| {name} | {s['nodes']} | {s['tenants']} | [{root}]({root}) |")
    lines.append("")
    return "\n".join(lines).encode("utf-8")


@dataclass
class _ClusterPart:
    """One cluster's share of a render: its files, pool lock and summary (and inputs, when kept)."""

    files: dict[str, bytes]
    lock: tuple[Path, bytes]
    summary: dict[str, Any]
    inputs: ClusterInputs | None = None


def _cluster_part(
    fleet: Fleet, name: str, cache: Path | None, base: str | None, digests: render_cache.InputDigests, keep: bool
) -> _ClusterPart:
    inputs = cluster_inputs(fleet, fleet.clusters[name], cache, base, digests)
    files = _cluster_files(fleet, name, inputs)
    if inputs.extra.get("refused_moves") is not None:
        raise inputs.extra["refused_moves"]
    summary: dict[str, Any] = {
        "nodes": len(inputs.nodes),
        "tenants": len(fleet.cluster_tenants(name)),
        "pools": {p: len(m) for p, m in sorted(inputs.members.items())},
    }
    if inputs.extra.get("warnings"):
        summary["warnings"] = list(inputs.extra["warnings"])
    if inputs.extra.get("moves"):
        summary["moves"] = list(inputs.extra["moves"])
    return _ClusterPart(files, (inputs.lock_path, inputs.lock_bytes), summary, inputs if keep else None)


def render_fleet(
    fleet: Fleet,
    cache: Path | None = None,
    base: str | None = None,
    digests: render_cache.InputDigests | None = None,
    keep_inputs: bool = True,
    workers: int | None = None,
    clusters: Collection[str] | None = None,
) -> RenderResult:
    """Render every cluster of the fleet. Raises a GpufleetError subclass on bad input.

    ``cache``: directory for parsed snapshots (speed only; the output is the same without it).
    ``digests``: the snapshots' digests when the caller has hashed them already (render_and_write).
    ``keep_inputs``: keep each cluster's parsed inputs in ``RenderResult.inputs`` (the review reads
    them); without, a cluster's inputs are released once its files are rendered, so a fleet's render
    holds the parse of one cluster at a time, and the clusters may render in ``workers`` processes
    (render/parallel.py; default: one per core, at most one per cluster). The bytes are the same
    whatever the number of workers and the order the clusters finish in.

    ``clusters``: render only these (a review of a change that leaves the others alone,
    review/incremental.py); the fleet-wide files, which read every cluster's summary, are left out.
    """
    digests = digests or render_cache.InputDigests()
    names = sorted(fleet.clusters if clusters is None else clusters)
    n = 1 if keep_inputs else parallel.worker_count(len(names), workers)
    if n > 1:
        parts = parallel.render_parts(names, n, lambda c: _cluster_part(fleet, c, cache, base, digests, False))
    else:
        parts = {c: _cluster_part(fleet, c, cache, base, digests, keep_inputs) for c in names}
    files: dict[str, bytes] = {}
    locks: dict[Path, bytes] = {}
    summary: dict[str, Any] = {}
    used: dict[str, ClusterInputs] = {}
    for name in names:  # in name order, whatever order they were rendered in
        part = parts.pop(name)
        files.update(part.files)
        locks[part.lock[0]] = part.lock[1]
        summary[name] = part.summary
        if part.inputs is not None:
            used[name] = part.inputs
    if clusters is None:
        files["README.md"] = _index(fleet, summary)
        files["IMAGES.md"] = images.table(fleet.image_mirror).encode()
    return RenderResult(fleet=fleet, files=dict(sorted(files.items())), locks=locks, summary=summary, inputs=used)


def render_inventory(
    inventory: str | os.PathLike[str], cache: Path | None = None, digests: render_cache.InputDigests | None = None
) -> RenderResult:
    return render_fleet(load_fleet(inventory), cache, digests=digests)


def _write_lock(path: Path, data: bytes) -> bool:
    if path.is_symlink():
        raise GpufleetError(f"{path}: the pool lock is a symbolic link; the renderer never writes through links")
    try:
        return replace_file(path, data)[0]
    except OSError as exc:
        raise GpufleetError(f"{path}: cannot write the pool lock: {exc.strerror or exc}") from None


def plan_render(
    result: RenderResult, out: str | os.PathLike[str], within: tuple[str, ...] | None = None
) -> WriteReport:
    """What ``write_render`` would change; writes nothing (check mode). ``within``: the folders of a
    render of some clusters only (``render_fleet(clusters=...)``); the rest of the tree is not compared."""
    plan = tree_writer.plan(out, result.files) if within is None else tree_writer.plan_within(out, result.files, within)
    locks = [str(p) for p, data in sorted(result.locks.items()) if not p.is_file() or p.read_bytes() != data]
    return WriteReport(plan=plan, locks_changed=locks)


def write_render(result: RenderResult, out: str | os.PathLike[str]) -> WriteReport:
    """Write the tree atomically (only changed files), then the pool locks."""
    plan = tree_writer.write(out, result.files)
    locks = [str(p) for p, data in sorted(result.locks.items()) if _write_lock(p, data)]
    return WriteReport(plan=plan, locks_changed=locks)


def _text(data: bytes | None) -> str:
    if data is None:
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return "<binary>\n"


def render_and_write(
    inventory: str | os.PathLike[str],
    dest: str | os.PathLike[str] | None = None,
    check: bool = False,
    fleet: Fleet | None = None,
    base: str | None = None,
) -> tuple[Fleet, Path, RenderResult | None, WriteReport]:
    """Load, render (unless the tree is known current) and write or plan. One call for the fleet.

    ``base``: the Git revision whose pool locks are trusted (CI: the pull request's base)."""
    fleet = fleet or load_fleet(inventory)
    out = Path(dest) if dest else default_out(fleet)
    digests = render_cache.InputDigests()  # each snapshot is hashed once, for the digest and the parse caches
    digest = render_cache.input_digest(fleet, digests) if base is None else None  # no base locks in the digest
    current = render_cache.cached_current(out, digest)
    if current is not None:
        return fleet, out, None, WriteReport(plan=tree_writer.Plan(out=out, unchanged=current))
    cache = render_cache.cache_dir(out) if digest is not None else None
    result = render_fleet(fleet, cache, base, digests, keep_inputs=False)
    report = plan_render(result, out) if check else write_render(result, out)
    if not report.changed or (not check and not report.locks_changed):
        render_cache.record_cache(out, digest)
    return fleet, out, result, report


def run(
    inventory: str | os.PathLike[str],
    dest: str | os.PathLike[str] | None = None,
    check: bool = False,
    diff: bool = False,
) -> dict[str, Any]:
    """Render in one call (what the Ansible module returns): plan in check mode, write otherwise.

    ``changed`` is true only when bytes on disk change (or would, in check mode). With ``diff``,
    ``diff`` is a list of ``{before, after, before_header, after_header}`` per file.
    """
    fleet = load_fleet(inventory)
    lock_before = (
        {
            lp: (lp.read_bytes() if lp.is_file() else None)
            for lp in (c.snapshot_dir / LOCK_NAME for c in fleet.clusters.values())
        }
        if diff
        else {}
    )
    fleet, out, result, report = render_and_write(inventory, dest, check, fleet)
    p = report.plan
    ret: dict[str, Any] = {
        "changed": report.changed,
        "dest": str(out),
        "files_added": list(p.added),
        "files_changed": list(p.changed),
        "files_removed": list(p.removed),
        "files_unchanged": p.unchanged,
        "locks_changed": list(report.locks_changed),
        "summary": result.summary if result is not None else {},
    }
    if diff:
        diffs = []
        after = result.files if result is not None else {}
        for rel in sorted(set(p.added) | set(p.changed) | set(p.removed)):
            diffs.append(
                {
                    "before_header": f"{out}/{rel}",
                    "after_header": f"{out}/{rel}",
                    "before": _text(p.before.get(rel)),
                    "after": _text(after.get(rel)),
                }
            )
        for lock in report.locks_changed:
            lp = Path(lock)
            diffs.append(
                {
                    "before_header": lock,
                    "after_header": lock,
                    "before": _text(lock_before.get(lp)),
                    "after": _text(result.locks[lp]) if result is not None else "",
                }
            )
        ret["diff"] = diffs
    return ret
