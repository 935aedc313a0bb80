"""A new fleet repository: the layout a platform team runs its own fleet from (``gpufleet.py init DEST``).

What it writes (nothing is overwritten: a destination that already holds any of these files is refused)::

    ansible.cfg  requirements.txt  requirements.yml  README.md  CODEOWNERS  .gitignore
    .github/workflows/gpufleet.yml  .gitlab-ci.yml  .pre-commit-config.yaml
    inventories/<site>/hosts.yml
    inventories/<site>/group_vars/all/{fleet,clusters,pools}.yml      (the platform's)
    inventories/<site>/group_vars/all/tenants/<tenant>.yml             (one per tenant, its own)
    inventories/<site>/snapshots/<cluster>/{nodes.yaml,fabric.yaml}    (an example cluster)

The static files are templates in the collection's ``scaffold/fleet-repo/`` (``dot-x`` is written as
``.x``; ``__NAME__`` tokens are filled in); the inventory, CODEOWNERS and the example snapshots are
generated here. The example cluster is made up (leaf switches of 8 H100 nodes under one spine) so that
the repository validates and renders at once; discovery replaces it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ansible_collections.gpufleet.core.plugins.module_utils.deps import missing
from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.files import replace_file
from ansible_collections.gpufleet.core.plugins.module_utils.model import components
from ansible_collections.gpufleet.core.plugins.module_utils.model import grammar as g
from ansible_collections.gpufleet.core.plugins.module_utils.model.tenant_files import TENANTS_DIR, variable_name

try:
    import yaml
except ImportError:  # pragma: no cover - reported on first use by deps.missing
    yaml = missing("yaml", "PyYAML")

COLLECTION_ROOT = Path(__file__).resolve().parents[3]
TEMPLATES = COLLECTION_ROOT / "scaffold" / "fleet-repo"
_TOKEN = re.compile(r"__([A-Z][A-Z0-9_]*)__")
_DNS = re.compile(r"^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$")
RESERVED = ("platform", "system", "spare")
KINDS = ("slurm", "kubernetes")
GPUS_PER_NODE = 8
PRODUCT = "NVIDIA-H100-80GB-HBM3"


class ScaffoldError(GpufleetError):
    """The scaffold cannot be written (bad option, destination not empty)."""


@dataclass(frozen=True)
class TenantSpec:
    name: str
    kind: str = "slurm"
    owner: str = ""


@dataclass
class Options:
    fleet: str
    site: str = "prod"
    cluster: str = "gpu-1"
    branch: str = "main"
    org: str = ""
    platform_owner: str = ""
    repo_url: str = ""
    tenants: list[TenantSpec] = field(
        default_factory=lambda: [TenantSpec("team-a", "slurm"), TenantSpec("team-b", "kubernetes")]
    )

    def owner_of(self, tenant: TenantSpec) -> str:
        return tenant.owner or f"@{self.org}/{tenant.name}"

    @property
    def platform(self) -> str:
        return self.platform_owner or f"@{self.org}/platform"

    @property
    def gitops_url(self) -> str:
        return self.repo_url or f"https://github.com/{self.org}/{self.fleet}.git"


def parse_tenant(text: str) -> TenantSpec:
    """``NAME[:KIND[:OWNER]]`` (KIND slurm or kubernetes; OWNER a CODEOWNERS owner, default @<org>/NAME)."""
    name, kind, owner = [*text.split(":", 2), "", ""][:3]
    return TenantSpec(name, kind or "slurm", owner)


def _check(opts: Options) -> None:
    """Every option as a whole string (``$`` never before a final newline) in the model's grammars."""
    problems = []
    for what, value in (("fleet", opts.fleet), ("site", opts.site), ("cluster", opts.cluster)):
        if not (g.fullmatch(g.NAME, value) and g.fullmatch(_DNS.pattern, value)):
            problems.append(f"--{what} {value!r}: a lower-case DNS label of at most 32 characters")
    if not opts.org:
        unowned = ["--platform-owner"] * (not opts.platform_owner) + [
            f"--tenant {t.name}:{t.kind}:OWNER" for t in opts.tenants if not t.owner
        ]
        if unowned or not opts.repo_url:
            problems.append(
                "--org ORG is required: the GitHub/GitLab organisation or group whose teams own the repository"
                " (@ORG/platform, @ORG/<tenant>) and that holds it (https://github.com/ORG/<fleet>.git); without"
                " it give " + ", ".join([*unowned, "--repo-url"] if not opts.repo_url else unowned)
            )
    elif not g.fullmatch(g.ORG, opts.org):
        problems.append(f"--org {opts.org!r}: a GitHub/GitLab organisation or group name")
    if opts.repo_url and not re.fullmatch(r"(https://|ssh://|git@)[A-Za-z0-9._~:/@%+-]+", opts.repo_url):
        problems.append(f"--repo-url {opts.repo_url!r}: the Git URL Argo CD clones (https://, ssh:// or git@)")
    if not g.fullmatch(g.GIT_REF, opts.branch) or ".." in opts.branch:
        problems.append(f"--branch {opts.branch!r}: a branch name")
    if not opts.tenants:
        problems.append("at least one --tenant")
    seen: set[str] = set()
    for t in opts.tenants:
        if not (g.fullmatch(g.NAME, t.name) and g.fullmatch(_DNS.pattern, t.name)) or t.name in RESERVED:
            problems.append(f"--tenant {t.name!r}: a lower-case DNS label (not platform, system or spare)")
        if t.kind not in KINDS:
            problems.append(f"--tenant {t.name!r}: kind {t.kind!r} is not one of {', '.join(KINDS)}")
        if t.owner and not g.fullmatch(g.CODE_OWNER, t.owner):
            problems.append(f"--tenant {t.name!r}: owner {t.owner!r} is not @user, @org/team or an e-mail")
        if t.name in seen:
            problems.append(f"--tenant {t.name!r}: given twice")
        seen.add(t.name)
    if opts.platform_owner and not g.fullmatch(g.CODE_OWNER, opts.platform_owner):
        problems.append(f"--platform-owner {opts.platform_owner!r} is not @user, @org/team or an e-mail")
    if problems:
        raise ScaffoldError("cannot scaffold the fleet repository:\n" + "\n".join(f"  - {p}" for p in problems))


def _fill(text: str, values: dict[str, str], source: str) -> str:
    def sub(m: re.Match[str]) -> str:
        if m.group(1) not in values:
            raise ScaffoldError(f"{source}: unknown template token {m.group(0)}")
        return values[m.group(1)]

    return _TOKEN.sub(sub, text)


def _pool_sizes(opts: Options) -> dict[str, int]:
    return {t.name: 6 if t.kind == "slurm" else 4 for t in opts.tenants}


def _nodes(opts: Options) -> list[str]:
    needed = 2 + sum(_pool_sizes(opts).values()) + 2  # system + tenants + spare
    count = -(-needed // 8) * 8
    return [f"gpu{i:03d}" for i in range(1, count + 1)]


def _fleet_yml(opts: Options) -> str:
    return f"""---
# Fleet identity and where the rendered GitOps tree lives (this repository). Owned by the platform.
gpufleet_schema_version: 1
gpufleet_fleet:
  name: {opts.fleet}
  gitops:
    repo_url: {opts.gitops_url}
    revision: {opts.branch}
    path: gitops
"""


def _clusters_yml(opts: Options) -> str:
    c = opts.cluster
    return f"""---
# Kubernetes clusters of the fleet and the platform components each runs. Owned by the platform.
# The fabric is described by a fabric file here (docs/fabric-file.md of gpufleet.core); with a host
# that has an InfiniBand HCA, `source: ibnetdiscover` and `path: snapshots/{c}/fabric.ibnetdiscover`.
gpufleet_clusters:
  - name: {c}
    server: https://kubernetes.default.svc
    nodes_snapshot: snapshots/{c}/nodes.yaml
    fabric:
      source: file
      path: snapshots/{c}/fabric.yaml
    topology:
      plugin: tree
    # Prometheus and Grafana are the site's (kube-prometheus-stack); gpufleet renders the monitors
    # (PodMonitors, the dcgm-exporter ServiceMonitor) and the fleet dashboard for them.
    monitoring:
      prometheus_operator: true
      namespace: monitoring
      labels:
        release: kube-prometheus-stack
    components:{_components_yml(c)}
"""


def _components_yml(cluster: str) -> str:
    """Every component of the table, as a new repository's ``clusters.yml`` lists them."""
    rows = (f"      {r.name}:{' ' if r.scaffold.startswith('{') else ''}{r.scaffold}" for r in components.COMPONENTS)
    return "".join(f"\n{line}" for line in rows).replace("{cluster}", cluster)


def _pools_yml(opts: Options) -> str:
    c = opts.cluster
    pools = [
        "---",
        "# Node pools: every node of a cluster is in exactly one. Owned by the platform: a tenant asks for",
        "# capacity, the platform changes a size here (ansible-playbook gpufleet.core.scale -e pool=NAME",
        "# -e size=N), reviewed as a pull request.",
        "gpufleet_pools:",
        "  - name: system",
        f"    cluster: {c}",
        "    kind: system",
        "    size:",
        "      nodes: 2",
    ]
    sizes = _pool_sizes(opts)
    for t in opts.tenants:
        pools += [f"  - name: {t.name}", f"    cluster: {c}", f"    kind: {t.kind}", f"    gpu_product: {PRODUCT}"]
        pools += ["    size:", f"      nodes: {sizes[t.name]}"]
        if t.kind == "slurm":
            pools += ["    slurm:", f"      partition: {t.name}", "      default: true"]
    pools += ["  - name: spare", f"    cluster: {c}", "    kind: spare", ""]
    return "\n".join(pools)


def _tenant_yml(opts: Options, t: TenantSpec) -> str:
    """A tenant's own file (CODEOWNERS: the tenant)."""
    c = opts.cluster
    body = [
        "---",
        f"# Tenant {t.name}: this file is the tenant's own (CODEOWNERS: {opts.owner_of(t)}). It defines",
        f"# only {variable_name(t.name)}; its pools and their sizes are the platform's (pools.yml).",
        f"{variable_name(t.name)}:",
        f"  name: {t.name}",
        f"  cluster: {c}",
        f"  description: {'Slurm batch jobs' if t.kind == 'slurm' else 'Kubernetes-native jobs and inference'}"
        f" of {t.name}",
        f"  pools: [{t.name}]",
    ]
    if t.kind == "slurm":
        body += [
            "  slurm:",
            "    login_replicas: 1",
            "    accounting:",
            "      qos:",
            '        - {name: normal, priority: 10, max_wall: "2-00:00:00"}',
            "      accounts:",
            f"        - {{name: {t.name}, fairshare: 1, qos: [normal], default_qos: normal, users: []}}",
        ]
    else:
        body += ["  namespaces: [jobs]"]
    return "\n".join(body) + "\n"


def _inventory_files(opts: Options) -> dict[str, str]:
    inv = f"inventories/{opts.site}"
    gv = f"{inv}/group_vars/all"
    files = {
        f"{gv}/fleet.yml": _fleet_yml(opts),
        f"{gv}/clusters.yml": _clusters_yml(opts),
        f"{gv}/pools.yml": _pools_yml(opts),
    }
    for t in opts.tenants:
        files[f"{gv}/{'/'.join(TENANTS_DIR[2:])}/{t.name}.yml"] = _tenant_yml(opts, t)
    files.update(_snapshots(opts, inv))
    return files


def _snapshots(opts: Options, inv: str) -> dict[str, str]:
    nodes = _nodes(opts)
    leaves = [nodes[i : i + 8] for i in range(0, len(nodes), 8)]
    c = opts.cluster
    fabric = [
        "# Example fabric of cluster " + c + " (made up by `gpufleet.py init`): one spine, leaf switches of",
        "# 8 nodes. Replace it with the real one (docs/fabric-file.md of gpufleet.core), or switch the",
        "# cluster to `fabric.source: ibnetdiscover`.",
        "switches:",
        f"  spine-1: {{switches: [{', '.join(f'leaf-{i + 1}' for i in range(len(leaves)))}]}}",
    ]
    for i, members in enumerate(leaves):
        fabric.append(f'  leaf-{i + 1}: {{nodes: ["{members[0][:3]}[{members[0][3:]}-{members[-1][3:]}]"]}}')
    items = []
    for n in nodes:
        items.append(
            f"""- apiVersion: v1
  kind: Node
  metadata:
    name: {n}
    labels:
      kubernetes.io/hostname: {n}
      kubernetes.io/os: linux
      nvidia.com/gpu.count: "{GPUS_PER_NODE}"
      nvidia.com/gpu.present: "true"
      nvidia.com/gpu.product: {PRODUCT}
  status:
    allocatable: {{cpu: "224", memory: 2113363548Ki, nvidia.com/gpu: "{GPUS_PER_NODE}", pods: "110"}}
    capacity: {{cpu: "224", memory: 2113363548Ki, nvidia.com/gpu: "{GPUS_PER_NODE}", pods: "110"}}"""
        )
    head = (
        f"# Example Nodes of cluster {c} (made up by `gpufleet.py init`); discovery replaces them with\n"
        "# `kubectl get nodes -o yaml` (docs/fabric-file.md of gpufleet.core: the labels gpufleet reads).\n"
    )
    return {
        f"{inv}/snapshots/{c}/fabric.yaml": "\n".join(fabric) + "\n",
        f"{inv}/snapshots/{c}/nodes.yaml": head + "apiVersion: v1\nkind: List\nitems:\n" + "\n".join(items) + "\n",
    }


def codeowners(opts: Options) -> str:
    """The platform owns everything; each tenant owns its file alone, and its rendered tree together with
    the platform. One section (none named): on GitHub and on GitLab the last matching line decides, and
    one approval from any owner on that line satisfies it; a GitLab section would add its own required
    approval instead. So a tenant's change needs that tenant (its file has no other owner), and a platform
    change (an upgrade, a scale, maintenance) that re-renders tenant trees needs the platform alone."""
    gv = f"/inventories/{opts.site}/{'/'.join(TENANTS_DIR)}"
    lines = [
        "# Who approves what (GitHub and GitLab CODEOWNERS; the last matching line wins, and one approval",
        "# from any owner on that line is enough). No GitLab [section]: a section would require an approval",
        "# of its own on top of these lines.",
        "# The platform team owns the repository: clusters, pools, snapshots, CI, the rendered platform.",
        f"*  {opts.platform}",
        "# Each tenant owns its own file alone: a change of it needs that tenant.",
        "# Its rendered tree (with the folder's render manifest) is the tenant's and the platform's: the",
        "# tenant approves what its own file renders, the platform alone what a platform change re-renders",
        "# there (an upgrade, a scale, maintenance). `gpufleet review` (CI) fails a tenant's pull request that",
        "# changes anything else, so a tenant's approval cannot reach past the tenant. Branch protection must",
        "# require the CI check and code-owner review (docs/threat-model.md).",
    ]
    for t in opts.tenants:
        owner = opts.owner_of(t)
        lines.append(f"{gv}/{t.name}.yml  {owner}")
        lines.append(f"/gitops/clusters/{opts.cluster}/tenants/{t.name}/  {owner} {opts.platform}")
    lines += [
        "# and nobody but the platform changes who owns what or what CI checks",
        f"/CODEOWNERS  {opts.platform}",
        f"/.github/  {opts.platform}",
        f"/.gitlab-ci.yml  {opts.platform}",
    ]
    return "\n".join(lines) + "\n"


def plan(opts: Options, templates: Path = TEMPLATES) -> dict[str, str]:
    """Every file of the new repository: relative path -> text."""
    _check(opts)
    values = {
        "FLEET": opts.fleet,
        "SITE": opts.site,
        "CLUSTER": opts.cluster,
        "BRANCH": opts.branch,
        "COLLECTION_VERSION": collection_version(),
        "KUBERNETES_CORE": _kubernetes_core_range(),
    }
    files: dict[str, str] = {}
    if not templates.is_dir():
        raise ScaffoldError(f"{templates}: the fleet repository templates are missing (a broken install?)")
    for src in sorted(p for p in templates.rglob("*") if p.is_file()):
        rel = src.relative_to(templates).as_posix()
        rel = "/".join("." + part[4:] if part.startswith("dot-") else part for part in rel.split("/"))
        if rel == "hosts.yml":
            rel = f"inventories/{opts.site}/hosts.yml"
        files[rel] = _fill(src.read_text(encoding="utf-8"), values, str(src))
    files["requirements.txt"] = (COLLECTION_ROOT / "requirements.txt").read_text(encoding="utf-8")
    files["CODEOWNERS"] = codeowners(opts)
    files.update(_inventory_files(opts))
    return dict(sorted(files.items()))


def _galaxy_meta() -> dict[str, str]:
    """version and kubernetes.core range of this collection (MANIFEST.json when installed, else galaxy.yml)."""
    manifest = COLLECTION_ROOT / "MANIFEST.json"
    if manifest.is_file():
        info = json.loads(manifest.read_text(encoding="utf-8"))["collection_info"]
    else:
        info = yaml.safe_load((COLLECTION_ROOT / "galaxy.yml").read_text(encoding="utf-8"))
    return {"version": str(info["version"]), "kubernetes.core": str(info["dependencies"]["kubernetes.core"])}


def collection_version() -> str:
    """This collection's version (what ``gpufleet.py --version`` prints and ``init`` pins)."""
    return _galaxy_meta()["version"]


def _kubernetes_core_range() -> str:
    return _galaxy_meta()["kubernetes.core"]


def scaffold(dest: str | Path, opts: Options, check: bool = False) -> list[str]:
    """Write the new repository into ``dest`` (created when missing); return the files written, sorted.

    Refuses (writing nothing) when any of the files already exists."""
    root = Path(dest)
    files = plan(opts)
    existing = [rel for rel in files if (root / rel).exists() or (root / rel).is_symlink()]
    if existing:
        raise ScaffoldError(
            f"{root}: already holds {', '.join(existing[:5])}{', ...' if len(existing) > 5 else ''}; "
            "init writes into a new or empty directory only"
        )
    for rel, text in files.items():
        replace_file(root / rel, text, check=check)
    return list(files)


def options(
    dest: str | Path,
    *,
    fleet: str | None = None,
    site: str = "prod",
    cluster: str = "gpu-1",
    branch: str = "main",
    org: str = "",
    platform_owner: str = "",
    repo_url: str = "",
    tenants: Sequence[str] = (),
) -> Options:
    """Options from command-line style values (the fleet name defaults to the destination's name)."""
    opts = Options(
        fleet=fleet or re.sub(r"[^a-z0-9-]+", "-", Path(dest).resolve().name.lower()).strip("-")[:32].strip("-"),
        site=site,
        cluster=cluster,
        branch=branch,
        org=org,
        platform_owner=platform_owner,
        repo_url=repo_url,
    )
    if tenants:
        opts.tenants = [parse_tenant(t) for t in tenants]
    return opts
