"""Who owns a file of a fleet repository, and which owners a change of a rendered file touches.

Inputs (paths relative to the inventory):

- ``group_vars/all/tenants/<t>.yml`` is tenant ``t``'s (one file per tenant, ``model.tenant_files``);
- everything else (fleet, clusters, pools, a shared ``gpufleet_tenants`` list, snapshots, and every file
  of the repository outside the inventory and the GitOps tree: CI, CODEOWNERS, ...) is the platform's.

Rendered files (paths relative to the GitOps root):

- ``clusters/<c>/tenants/<t>/**`` and ``clusters/<c>/apps/tenant-<t>.yaml`` / ``tenant-<t>-0-project.yaml``
  are tenant ``t``'s rendered scope;
- shared files hold a part per tenant and a part of the platform; a change is attributed part by part:
  Markdown reports (``REPORT.md``, ``POOLS.md``): a table row with a ``tenant`` column belongs to that
  tenant (``-``: the platform), other lines to the ``### <tenant>`` section they are in (else the
  platform); ``vclusters.yaml``: each entry to the tenant it names;
- ``.gpufleet-manifest`` (hashes of the other files) follows them and is not attributed;
- everything else (``platform/``, the platform apps, the root app, the index) is the platform's; a
  platform file that carries tenant data (the DCGM relabelling, the NFS PVs, ...) is a *shared platform
  change*: it reaches every tenant and needs the platform's review.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

from ansible_collections.gpufleet.core.plugins.module_utils.deps import missing
from ansible_collections.gpufleet.core.plugins.module_utils.model.tenant_files import TENANTS_DIR
from ansible_collections.gpufleet.core.plugins.module_utils.pools.lock import LOCK_NAME

try:
    import yaml
except ImportError:  # importing works without it; the first use raises a clear error
    yaml = missing("yaml", "PyYAML")

MANIFEST = ".gpufleet-manifest"
PLATFORM = "platform"


@dataclass(frozen=True, order=True)
class Owner:
    """``kind`` is ``tenant`` (``name`` the tenant) or ``platform``."""

    kind: str
    name: str = ""

    def __str__(self) -> str:
        return f"tenant {self.name}" if self.kind == "tenant" else PLATFORM


PLATFORM_OWNER = Owner(PLATFORM)


def tenant(name: str) -> Owner:
    return Owner("tenant", name)


def input_owner(rel_to_inventory: str) -> Owner:
    """Owner of an inventory file (path relative to the inventory directory)."""
    parts = PurePosixPath(rel_to_inventory).parts
    if len(parts) == len(TENANTS_DIR) + 1 and parts[: len(TENANTS_DIR)] == TENANTS_DIR:
        stem = PurePosixPath(parts[-1])
        if stem.suffix in (".yml", ".yaml"):
            return tenant(stem.stem)
    return PLATFORM_OWNER


def is_lock(rel_to_inventory: str) -> bool:
    """A pool lock (written by the renderer: attributed through the node moves, not as an input)."""
    parts = PurePosixPath(rel_to_inventory).parts
    return len(parts) == 3 and parts[0] == "snapshots" and parts[2] == LOCK_NAME


def rendered_scope(rel: str, tenants: Iterable[str]) -> Owner | None:
    """The tenant whose rendered scope holds ``rel`` (path in the GitOps tree), else None."""
    parts = PurePosixPath(rel).parts
    names = set(tenants)
    if len(parts) >= 4 and parts[0] == "clusters" and parts[2] == "tenants" and parts[3] in names:
        return tenant(parts[3])
    if len(parts) == 4 and parts[0] == "clusters" and parts[2] == "apps" and parts[3].startswith("tenant-"):
        stem = parts[3][len("tenant-") :].removesuffix(".yaml")
        for name in sorted(names, key=len, reverse=True):  # longest first: a-0-project vs a's project
            if stem in (name, f"{name}-0-project"):
                return tenant(name)
    return None


def _md_owners(old: str, new: str, tenants: set[str]) -> set[Owner]:
    """Owners of the changed lines of a Markdown report (see the module docstring)."""
    out: set[Owner] = set()

    def context(lines: list[str]) -> list[Owner]:
        owners: list[Owner] = []
        section: Owner = PLATFORM_OWNER
        col: int | None = None
        for line in lines:
            if line.startswith("#"):
                title = line.lstrip("#").strip().strip("`")
                section = tenant(title) if line.startswith("### ") and title in tenants else PLATFORM_OWNER
                col = None
            cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
            if cells and "tenant" in cells and col is None:
                col = cells.index("tenant")
                owners.append(PLATFORM_OWNER if section == PLATFORM_OWNER else section)
                continue
            if not line.startswith("|"):
                col = None
            if cells and col is not None and col < len(cells) and not set(line) <= set("|-: "):
                who = cells[col]
                owners.append(tenant(who) if who in tenants else PLATFORM_OWNER)
            else:
                owners.append(section)
        return owners

    a, b = old.splitlines(), new.splitlines()
    ca, cb = context(a), context(b)
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            out.update(ca[i1:i2])
            out.update(cb[j1:j2])
    return out


def _vclusters_owners(old: bytes | None, new: bytes | None, tenants: set[str]) -> set[Owner]:
    def parts(data: bytes | None) -> dict[str, object]:
        doc = yaml.safe_load(data or b"") or {}
        out: dict[str, object] = {k: v for k, v in doc.items() if k != "vclusters"} if isinstance(doc, dict) else {}
        for item in (doc.get("vclusters") or []) if isinstance(doc, dict) else []:
            name = str(item.get("name")) if isinstance(item, dict) else ""
            out[f"vcluster:{name}"] = item
        return out

    a, b = parts(old), parts(new)
    owners: set[Owner] = set()
    for key in set(a) | set(b):
        if a.get(key) != b.get(key):
            name = key.split(":", 1)[1] if key.startswith("vcluster:") else ""
            owners.add(tenant(name) if name in tenants else PLATFORM_OWNER)
    return owners


def is_manifest(rel: str) -> bool:
    return PurePosixPath(rel).name == MANIFEST


def rendered_owners(rel: str, old: bytes | None, new: bytes | None, tenants: Iterable[str]) -> set[Owner]:
    """The owners a change of one rendered file touches (empty for the manifest)."""
    names = set(tenants)
    if is_manifest(rel):
        return set()
    scope = rendered_scope(rel, names)
    if scope is not None:
        return {scope}
    name = PurePosixPath(rel).name
    try:
        if name.endswith(".md") and old is not None and new is not None:
            return _md_owners(old.decode("utf-8"), new.decode("utf-8"), names) or {PLATFORM_OWNER}
        if name == "vclusters.yaml":
            return _vclusters_owners(old, new, names) or {PLATFORM_OWNER}
    except (UnicodeDecodeError, yaml.YAMLError):
        pass
    return {PLATFORM_OWNER}


def is_shared_platform_file(rel: str) -> bool:
    """A rendered platform file (Helm values, PVs, Applications of the platform) every tenant depends on."""
    parts = PurePosixPath(rel).parts
    return len(parts) >= 3 and parts[0] == "clusters" and parts[2] in ("platform", "apps", "root-app.yaml")
