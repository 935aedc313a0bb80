"""Argo CD applies only what the render wrote: each directory source names its files.

A directory Application (the cluster root, each tenant root, the tenants' host folders, the object
and accounting folders) would otherwise apply every ``*.yaml``/``*.yml``/``*.json`` file in its
folder, so a file committed after the render (past CI, or straight to the branch) would be applied,
in the platform project. With ``directory.include`` set to the rendered file names (a glob Argo CD's
repo server matches against each file's path relative to the source path), such a file is ignored:
the defence in depth behind the closed tree (:mod:`.writer`) and the CI check.

The cluster root is the exception: the bootstrap applies it once (and the apply step again), it does
not follow Git, so a list of names would go stale when a component or a tenant is added. It takes
:data:`ROOT_PATTERN`, the names the render gives the platform's Applications and projects
(``NN-<component>.yaml``, ``tenant-<t>*.yaml``), and every rendered file there must match it.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Fleet
from ansible_collections.gpufleet.core.plugins.module_utils.render import argocd as argo

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")  # what Argo CD reads as manifests in a directory source
ROOT_NAMES = ("[0-9][0-9]-*.yaml", "tenant-*.yaml")
ROOT_PATTERN = "{" + ",".join(ROOT_NAMES) + "}"


def pattern(names: Iterable[str]) -> str:
    """The glob of exactly ``names`` (a brace list; one name alone when there is one)."""
    names = sorted(set(names))
    for n in names:
        if any(ch in n for ch in "{},*?[]\\!"):
            raise GpufleetError(f"{n!r}: a rendered file name with a glob character")
    return names[0] if len(names) == 1 else "{" + ",".join(names) + "}"


def scope_root(root: dict[str, Any], names: Iterable[str]) -> None:
    """Set the cluster root's ``directory.include`` (in place); ``names``: the files of its folder."""
    stray = sorted(n for n in names if not any(fnmatch.fnmatchcase(n, p) for p in ROOT_NAMES))
    if stray:
        raise GpufleetError(f"rendered apps {stray} do not match the cluster root's include {ROOT_PATTERN}")
    root["spec"]["source"]["directory"] = {"include": ROOT_PATTERN}


def scope_sources(fleet: Fleet, apps: Iterable[dict[str, Any]], paths: Iterable[str]) -> None:
    """Set ``directory.include`` on every directory source of ``apps`` (in place): the rendered files
    directly in its folder (``paths``: every rendered file, relative to the GitOps root)."""
    by_dir: dict[str, list[str]] = {}
    for p in paths:
        folder, _sep, name = p.rpartition("/")
        if name.endswith(MANIFEST_SUFFIXES):
            by_dir.setdefault(argo.repo_path(fleet, folder), []).append(name)
    for app in apps:
        if app.get("kind") != "Application":
            continue
        spec = app["spec"]
        for src in [*(spec.get("sources") or []), *([spec["source"]] if spec.get("source") else [])]:
            if src.get("chart") or src.get("ref") or "path" not in src or src.get("repoURL") != fleet.gitops.repo_url:
                continue
            names = by_dir.get(str(src["path"]).rstrip("/"))
            if not names:
                raise GpufleetError(f"{app['metadata']['name']}: its folder {src['path']} holds no rendered manifest")
            src["directory"] = {"include": pattern(names)}
