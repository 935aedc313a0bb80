"""The bad-input corpus: hostile or broken edits of the sample inventory, its snapshots and the tree.

Each case is ``Case(id, cls, mutate, expect)``: ``mutate(repo)`` edits a copy of the repository
(``repo/inventories/sample``, ``repo/gitops``, ``repo/outside`` = a directory outside the tree that
nothing may touch); ``expect`` is a regular expression the error message must match (it names the
file, and the key or line). ``cls`` is the defect class (1 names ... 9 loader). The
runner is test_hostile_corpus.py.

``VALID`` lists edits that must render (Ansible accepts them and so do we), e.g. inline ``!vault``
on an unrelated variable, ``tenants.json``; their rendered slurm configs are loaded in slurmctld.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

INV = Path("inventories/sample")
GV = INV / "group_vars/all"
FABRIC = INV / "snapshots/gpu-east/fabric.ibnetdiscover"
NODES = INV / "snapshots/gpu-east/nodes.yaml"


@dataclass(frozen=True)
class Case:
    id: str
    cls: int
    mutate: Callable[[Path], None]
    expect: str


def edit(file: str, fn: Callable[[dict], Any]) -> Callable[[Path], None]:
    def run(repo: Path) -> None:
        p = repo / GV / file
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
        fn(data)
        p.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")

    return run


def put(rel: str, content: str | bytes) -> Callable[[Path], None]:
    def run(repo: Path) -> None:
        p = repo / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")

    return run


def sub(rel: str | Path, old: str, new: str, count: int = -1) -> Callable[[Path], None]:
    def run(repo: Path) -> None:
        p = repo / rel
        text = p.read_text(encoding="utf-8")
        assert old in text, (rel, old)
        p.write_text(text.replace(old, new, count), encoding="utf-8")

    return run


def link(rel: str, target: str, replace: bool = True) -> Callable[[Path], None]:
    """Make ``repo/rel`` a symlink to ``target`` (relative to the repo when not absolute)."""

    def run(repo: Path) -> None:
        p = repo / rel
        if replace and (p.exists() or p.is_symlink()):
            if p.is_dir() and not p.is_symlink():
                import shutil

                shutil.copytree(p, repo / "outside" / p.name, dirs_exist_ok=True)
                shutil.rmtree(p)
            else:
                p.unlink()
        p.parent.mkdir(parents=True, exist_ok=True)
        t = target if target.startswith("/") else str(repo / target)
        os.symlink(t, p)

    return run


def both(*fns: Callable[[Path], None]) -> Callable[[Path], None]:
    def run(repo: Path) -> None:
        for fn in fns:
            fn(repo)

    return run


def tenant(i: int, **kw: Any) -> Callable[[Path], None]:
    return edit("tenants.yml", lambda d: d["gpufleet_tenants"][i].update(kw))


def pool(name: str, fn: Callable[[dict], Any]) -> Callable[[Path], None]:
    def go(d: dict) -> None:
        fn(next(p for p in d["gpufleet_pools"] if p["name"] == name))

    return edit("pools.yml", go)


def slurm_opt(pool_name: str, key: str, value: Any) -> Callable[[Path], None]:
    return pool(pool_name, lambda p: p.setdefault("slurm", {}).update({key: value}))


def cluster(fn: Callable[[dict], Any]) -> Callable[[Path], None]:
    return edit("clusters.yml", lambda d: fn(d["gpufleet_clusters"][0]))


def fleet(fn: Callable[[dict], Any]) -> Callable[[Path], None]:
    return edit("fleet.yml", lambda d: fn(d["gpufleet_fleet"]))


def component_ns(comp: str, ns: str) -> Callable[[Path], None]:
    return cluster(lambda c: c["components"].__setitem__(comp, {**(c["components"].get(comp) or {}), "namespace": ns}))


def rename_tenant_everywhere(old: str, new: str) -> Callable[[Path], None]:
    def go(d: dict) -> None:
        for t in d["gpufleet_tenants"]:
            if t["name"] == old:
                t["name"] = new

    return edit("tenants.yml", go)


BOMB = "".join(
    f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" if p else f'{c}: &{c} ["lol", "lol", "lol", "lol", "lol", "lol"]\n'
    for p, c in zip(["", "a", "b", "c", "d", "e", "f", "g", "h"], "abcdefghi", strict=True)
)
VAULT = "!vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  " + "6231336539666234306139346433616338" * 2 + "\n"

CASES: list[Case] = []


def case(id: str, cls: int, mutate: Callable[[Path], None], expect: str) -> None:
    CASES.append(Case(id, cls, mutate, expect))


# ------------------------------------------------------------------ 1 names (whole-string patterns)
NAME_FIELDS: dict[str, tuple[Callable[[Any], Callable[[Path], None]], str]] = {
    "fleet.name": (lambda v: fleet(lambda f: f.__setitem__("name", v)), r"fleet\.yml:\d+: gpufleet_fleet\.name"),
    "cluster.name": (
        lambda v: cluster(lambda c: c.__setitem__("name", v)),
        r"clusters\.yml:\d+: gpufleet_clusters\[0\]\.name",
    ),
    "tenant.name": (lambda v: tenant(1, name=v), r"tenants\.yml:\d+: gpufleet_tenants\[1\]\.name"),
    "tenant.cluster": (lambda v: tenant(1, cluster=v), r"tenants\.yml:\d+: gpufleet_tenants\[1\]\.cluster"),
    "tenant.pools": (lambda v: tenant(0, pools=[v]), r"tenants\.yml:\d+: gpufleet_tenants\[0\]\.pools\[0\]"),
    "tenant.namespaces": (
        lambda v: tenant(2, namespaces=[v, "eval"]),
        r"tenants\.yml:\d+: gpufleet_tenants\[2\]\.namespaces\[0\]",
    ),
    "pool.name": (
        lambda v: pool("spare", lambda p: p.__setitem__("name", v)),
        r"pools\.yml:\d+: gpufleet_pools\[5\]\.name",
    ),
    "pool.cluster": (
        lambda v: pool("spare", lambda p: p.__setitem__("cluster", v)),
        r"pools\.yml:\d+: gpufleet_pools\[5\]\.cluster",
    ),
    "pool.partition": (
        lambda v: slurm_opt("research-debug", "partition", v),
        r"pools\.yml:\d+: gpufleet_pools\[3\]\.slurm\.partition",
    ),
    "component.namespace": (
        lambda v: component_ns("cert_manager", v),
        r"clusters\.yml:\d+: gpufleet_clusters\[0\]\.components\.cert_manager\.namespace",
    ),
}
for field, (mk, where) in NAME_FIELDS.items():
    case(f"name-trailing-newline-{field}", 1, mk("research\n" if field != "pool.partition" else "debug\n"), where)
    case(f"name-embedded-newline-{field}", 1, mk("a\nb"), where)
    case(f"name-slash-{field}", 1, mk("../x"), where)
for field in ("fleet.name", "cluster.name", "tenant.name", "pool.name", "tenant.namespaces"):
    mk, where = NAME_FIELDS[field]
    case(f"name-upper-{field}", 1, mk("Research"), where)
    case(f"name-too-long-{field}", 1, mk("a" * 64), where)
    case(f"name-homoglyph-{field}", 1, mk("r\u0435search"), where)  # Cyrillic e
    case(f"name-empty-{field}", 1, mk(""), where)

# ------------------------------------------------------------------ 2 reserved and colliding names
T1 = r"tenants\.yml:\d+: gpufleet_tenants\[1\]\.name"
case("reserved-tenant-default", 2, tenant(1, name="default"), T1 + r".*AppProject 'default'")
case("reserved-tenant-platform", 2, tenant(1, name="gpu-east-platform"), T1 + r".*AppProject 'gpu-east-platform'")
case(
    "reserved-tenant-platform-kube-only",
    2,
    rename_tenant_everywhere("inference", "gpu-east-platform"),
    r"gpufleet_tenants\[2\]\.name.*gpu-east-platform",
)
for ns in ("default", "kube-system", "kube-public", "kube-node-lease", "kube-anything", "argocd"):
    case(
        f"reserved-namespace-{ns}",
        2,
        tenant(2, namespaces=[ns]),
        r"tenants\.yml:\d+: gpufleet_tenants\[2\]\.namespaces\[0\]: namespace .*system",
    )
case(
    "reserved-namespace-kueue-system",
    2,
    tenant(2, namespaces=["serving", "kueue-system"]),
    r"gpufleet_tenants\[2\]\.namespaces\[1\]: namespace 'kueue-system' is created by the renderer",
)
case(
    "reserved-namespace-slurm",
    2,
    tenant(1, namespaces=["slurm"]),
    r"gpufleet_tenants\[1\]\.namespaces\[0\]: namespace 'slurm' is created by the renderer",
)
case(
    "reserved-namespace-slinky",
    2,
    tenant(0, namespaces=["slinky"]),
    r"gpufleet_tenants\[0\]\.namespaces\[0\]: namespace 'slinky' is created by the renderer",
)
for comp in ("cert_manager", "gpu_operator", "argocd", "cilium", "shared_storage"):
    case(
        f"collision-component-ns-{comp}-vc-research",
        2,
        component_ns(comp, "vc-research"),
        r"tenants\.yml:\d+: gpufleet_tenants\[1\]\.name: .*(namespace 'vc-research'|vc-research)",
    )
case(
    "collision-tenant-equals-pool-partition-dup",
    2,
    slurm_opt("research-debug", "partition", "batch"),
    r"pools\.yml:\d+: gpufleet_pools\[3\]\.slurm\.partition: partition 'batch' already used",
)
case(
    "collision-duplicate-tenant",
    2,
    tenant(1, name="inference"),
    r"tenants\.yml:\d+: gpufleet_tenants\[(1|2)\]\.name: duplicate tenant name 'inference'",
)

# ------------------------------------------------------------------ 3 Slurm option injection
MT = r"pools\.yml:\d+: gpufleet_pools\[3\]\.slurm\.max_time"
for i, bad in enumerate(
    [
        "02:00:00 AllowAccounts=ALL\nPartitionName=evil Nodes=ALL",
        "02:00:00 AllowAccounts=ALL",
        "two hours",
        "1:00:00 ",
        " 1:00:00",
        "1:00:00\n",
        "1-",
        "-1",
        "1:2:3:4",
        "1:00#x",
        "",
        "UNLIMITED\n",
        "unlimited Hidden=YES",
        "1.5",
        "1-2-3",
    ]
):
    case(f"slurm-max-time-{i:02d}", 3, slurm_opt("research-debug", "max_time", bad), MT)
case("slurm-max-time-int", 3, slurm_opt("research-debug", "max_time", 120), MT + r": 120 is not of type 'string'")
PART = r"pools\.yml:\d+: gpufleet_pools\[3\]\.slurm\.partition"
for i, bad in enumerate(["debug Default=YES", "de=bug", "a,b", "a#b", "d" * 80, "debug\tx", "1debug"]):
    case(f"slurm-partition-{i}", 3, slurm_opt("research-debug", "partition", bad), PART)
GP = r"pools\.yml:\d+: gpufleet_pools\[1\]\.gpu_product"
for i, bad in enumerate(["H100 Features=evil", "a,b", "x\n", "H100\nNodeName=evil", "-H100"]):
    case(f"slurm-gpu-product-{i}", 3, pool("pretrain", lambda p, v=bad: p.__setitem__("gpu_product", v)), GP)
NS_SEL = r"pools\.yml:\d+: gpufleet_pools\[4\]\.node_selector"
for i, sel in enumerate([{"a b": "x"}, {"zone": "x=y"}, {"zone": "x\n"}, {"-bad": "x"}]):
    case(f"label-node-selector-{i}", 3, pool("inference", lambda p, v=sel: p.__setitem__("node_selector", v)), NS_SEL)
case(
    "slurm-pin-injection",
    3,
    pool("pretrain", lambda p: p.__setitem__("pin", ["gpu001 Weight=1"])),
    r"pools\.yml:\d+: gpufleet_pools\[1\]\.pin\[0\]",
)
case(
    "text-description-newline",
    3,
    tenant(0, description="x\nkind: Secret"),
    r"tenants\.yml:\d+: gpufleet_tenants\[0\]\.description",
)

# ------------------------------------------------------------------ 4 paths and symbolic links
GP_PATH = r"fleet\.yml:\d+: gpufleet_fleet\.gitops\.path"
for i, bad in enumerate(["../../x", "/abs", "gitops/../../x", "./gitops", "gitops\n", "..", "git ops"]):
    case(f"path-gitops-{i}", 4, fleet(lambda f, v=bad: f["gitops"].__setitem__("path", v)), GP_PATH)
for i, bad in enumerate(["../../../outside/nodes.yaml", "/etc/passwd", "snapshots/../../x/nodes.yaml"]):
    case(
        f"path-nodes-snapshot-{i}",
        4,
        cluster(lambda c, v=bad: c.__setitem__("nodes_snapshot", v)),
        r"clusters\.yml:\d+: gpufleet_clusters\[0\]\.nodes_snapshot",
    )
    case(
        f"path-fabric-{i}",
        4,
        cluster(lambda c, v=bad: c["fabric"].__setitem__("path", v)),
        r"clusters\.yml:\d+: gpufleet_clusters\[0\]\.fabric\.path",
    )
case(
    "path-nfs-share-dotdot",
    4,
    cluster(lambda c: c["components"]["shared_storage"].__setitem__("nfs_share", "/export/../etc")),
    r"clusters\.yml:\d+: gpufleet_clusters\[0\]\.components\.shared_storage\.nfs_share",
)
case("symlink-tree-subdir", 4, link("gitops/clusters", "outside/clusters"), r"gitops/clusters is a symbolic link")
case("symlink-tree-root", 4, link("gitops", "outside/gitops"), r"gitops.* is a symbolic link")
case("symlink-tree-file", 4, link("gitops/README.md", "outside/README.md"), r"gitops/README\.md is a symbolic link")
case(
    "symlink-tree-dangling",
    4,
    link("gitops/clusters/gpu-east/apps/zz-extra.yaml", "outside/nowhere.yaml", replace=False),
    r"zz-extra\.yaml is a symbolic link",
)
case(
    "symlink-tree-deep-dir",
    4,
    link("gitops/clusters/gpu-east/tenants/research", "outside/research"),
    r"tenants/research is a symbolic link",
)
case(
    "symlink-tree-manifest",
    4,
    link("gitops/.gpufleet-manifest", "outside/manifest"),
    r"\.gpufleet-manifest is a symbolic link",
)
case(
    "symlink-snapshot-dir",
    4,
    link(str(INV / "snapshots/gpu-east"), "outside/gpu-east"),
    r"clusters\.yml:\d+: gpufleet_clusters\[0\]\.nodes_snapshot: .*symbolic link",
)
case(
    "symlink-pool-lock",
    4,
    link(str(INV / "snapshots/gpu-east/pools.lock.yaml"), "outside/pools.lock.yaml"),
    r"pools\.lock\.yaml.* symbolic link",
)
case("symlink-vars-file", 4, link(str(GV / "extra.yml"), "/etc/passwd", replace=False), r"extra\.yml: .*symbolic link")
case(
    "symlink-side-dir",
    4,
    both(
        link(".gitops.gpufleet-new", "outside/new", replace=False),
        sub(GV / "fleet.yml", "revision: main", "revision: next"),
    ),
    r"\.gitops\.gpufleet-new is a symbolic link",
)

# ------------------------------------------------------------------ 5 resource exhaustion
case("bomb-unrelated-key-own-file", 5, put(str(GV / "bomb.yml"), BOMB), r"bomb\.yml: refused: .*alias")
case(
    "bomb-in-fleet-file",
    5,
    lambda repo: (repo / GV / "fleet.yml").write_text((repo / GV / "fleet.yml").read_text() + BOMB),
    r"fleet\.yml: refused: .*alias",
)
case(
    "bomb-in-gpufleet-key",
    5,
    put(str(GV / "zz.yml"), BOMB + "gpufleet_versions: {x: {chart: *i}}\n"),
    r"zz\.yml: refused",
)
case("bomb-recursive-alias", 5, put(str(GV / "rec.yml"), "a: &a [*a]\n"), r"rec\.yml(:\d+)?: (refused|not valid YAML)")
case("bomb-single-file-all", 5, put(str(INV / "group_vars/all.yml"), BOMB), r"all\.yml: refused")

# the per-file bounds add up: files each under them, together past the load's budget
SMALL_BOMB = "".join(  # about 66,000 nodes once its aliases are expanded, a third of the per-file bound
    f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" if p else f"{c}: &{c} [x, x, x, x, x, x, x, x, x]\n"
    for p, c in zip(["", "a", "b", "c", "d"], "abcde", strict=True)
)


def many(name: str, count: int, content: str) -> Callable[[Path], None]:
    def run(repo: Path) -> None:
        for i in range(count):
            (repo / GV / f"{name}{i:02d}.yml").write_text(content, encoding="utf-8")

    return run


case("bomb-across-files", 5, many("zz", 12, SMALL_BOMB), r"zz\d\d\.yml: refused: the inventory's files together expand")
case(
    "bytes-across-files",  # each file under the 256 KiB bound, comments only
    5,
    many("big", 20, ("# " + "x" * 98 + "\n") * 2500),
    r"big\d\d\.yml: refused: the inventory's files together are larger than",
)

# ------------------------------------------------------------------ 6 topology loss
FAB = r"clusters\.yml:\d+: gpufleet_clusters\[0\]\.fabric: .*fabric\.ibnetdiscover"
case("topo-renamed-hosts", 6, sub(FABRIC, '"gpu0', '"gpx0'), FAB + r".*match no node")
case("topo-renamed-one-host", 6, sub(FABRIC, '"gpu017 mlx5', '"gpu917 mlx5'), FAB + r".*'gpu917'.*'gpu017'")
case("topo-extra-fabric-host", 6, sub(FABRIC, '"gpu017 mlx5_0"', '"gpu917 mlx5_0"'), FAB + r".*1 fabric host.*'gpu917'")
case(
    "topo-lost-node-despite-opt-in",
    6,
    both(
        sub(FABRIC, '"gpu017 mlx5', '"gpu917 mlx5'),
        cluster(lambda c: c["fabric"].__setitem__("allow_unmatched_hosts", True)),
    ),
    FAB + r".*Slurm pools are not in the fabric.*'gpu017'",
)
case(
    "topo-bad-node-map-all",
    6,
    cluster(lambda c: c["fabric"].__setitem__("node_name_map", {"pattern": "gpu(.*)", "replace": "node\\1"})),
    FAB + r".*match no node",
)
case(
    "topo-bad-node-map-invalid-name",
    6,
    cluster(lambda c: c["fabric"].__setitem__("node_name_map", {"pattern": "gpu(.*)", "replace": "gpu \\1"})),
    FAB + r".*not valid Slurm host names",
)
case(
    "topo-bad-node-map-regex",
    6,
    cluster(lambda c: c["fabric"].__setitem__("node_name_map", {"pattern": "gpu(", "replace": "x"})),
    r"clusters\.yml:\d+: gpufleet_clusters\[0\]\.fabric\.node_name_map\.pattern: not a valid regular expression",
)
for i, bad in enumerate(["gpu 001", "gpu=001", "gpu,001", "gpu[001]", "gpu#1"]):
    case(f"topo-invalid-hostname-{i}", 6, sub(FABRIC, '"gpu001 mlx5', f'"{bad} mlx5'), FAB + r".*not valid Slurm host")
case(
    "topo-duplicate-switch-guid",
    6,
    sub(FABRIC, 'Switch\t65 "S-2c5eab0300000001"', 'Switch\t65 "S-2c5eab0300000002"', 1),
    r"fabric\.ibnetdiscover:\d+: duplicate switch GUID",
)
case(
    "topo-duplicate-ca-guid",
    6,
    sub(FABRIC, 'Ca\t1 "H-e09d730300000001"', 'Ca\t1 "H-e09d730300000000"', 1),
    r"fabric\.ibnetdiscover:\d+: duplicate device GUID",
)
case(
    "topo-fabric-missing",
    6,
    lambda repo: (repo / FABRIC).unlink(),
    r"fabric\.ibnetdiscover: fabric snapshot .*not found",
)
case(
    "topo-excluded-all-hosts",
    6,
    cluster(lambda c: c["fabric"].__setitem__("exclude_hosts", ["stor*", "gpu0[0-2]*"])),
    FAB + r".*Slurm pools are not in the fabric",
)

# ------------------------------------------------------------------ 8 crashes and unclear errors
case("crash-vars-latin1", 8, put(str(GV / "latin.yml"), b"comment: caf\xe9\n"), r"latin\.yml:1: not UTF-8")
case("crash-vars-binary", 8, put(str(GV / "bin.yml"), b"\x00\xff\xfe\x01"), r"bin\.yml:1: not UTF-8")
case(
    "crash-vars-latin1-in-model",
    8,
    lambda repo: (repo / GV / "tenants.yml").write_bytes(
        (repo / GV / "tenants.yml").read_bytes().replace(b"Large-model", b"Large-mod\xe9l")
    ),
    r"tenants\.yml:\d+: not UTF-8",
)
case("crash-fabric-empty", 8, put(str(FABRIC), ""), r"fabric\.ibnetdiscover: the fabric snapshot is empty")
case(
    "crash-fabric-garbage", 8, put(str(FABRIC), "hello world\n"), r"fabric\.ibnetdiscover: cannot tell .*fabric\.source"
)
case("crash-fabric-binary", 8, put(str(FABRIC), b"\x7fELF\x00\x00\x01"), r"fabric\.ibnetdiscover: .*binary")
case(
    "crash-fabric-latin1-host",
    8,
    lambda repo: (repo / FABRIC).write_bytes((repo / FABRIC).read_bytes().replace(b'"gpu001 mlx5', b'"gpu\xe91 mlx5')),
    r"fabric\.ibnetdiscover:\d+: not UTF-8 text",
)
case("crash-nodes-latin1", 8, put(str(NODES), b"kind: List\nitems: []\n# caf\xe9\n"), r"nodes\.yaml: not UTF-8")
case("crash-nodes-garbage", 8, put(str(NODES), "- a\n- b\n"), r"nodes\.yaml: expected a 'kind: List'")
case("crash-nodes-bad-yaml", 8, put(str(NODES), "kind: List\nitems: [\n"), r"nodes\.yaml:\d+: not valid YAML")
case(
    "crash-nodes-bad-name",
    8,
    sub(NODES, "    name: gpu001\n", "    name: gpu 001\n", 1),
    r"nodes\.yaml: items\[\d+\]: metadata\.name 'gpu 001' is not a valid",
)
case(
    "crash-vars-not-mapping", 8, put(str(GV / "list.yml"), "- a\n- b\n"), r"list\.yml:1: a vars file must be a mapping"
)
case("crash-vars-bad-yaml", 8, put(str(GV / "bad.yml"), "a: [\n"), r"bad\.yml:\d+: not valid YAML")
case("crash-lock-garbage", 8, put(str(INV / "snapshots/gpu-east/pools.lock.yaml"), "[[["), r"pools\.lock\.yaml")
case("crash-manifest-corrupt", 8, put("gitops/.gpufleet-manifest", "zz\n"), r"\.gpufleet-manifest:1: corrupt manifest")

# ------------------------------------------------------------------ 9 loader differences from Ansible
case(
    "loader-duplicate-gpufleet-key",
    9,
    lambda repo: (repo / GV / "pools.yml").write_text(
        (repo / GV / "pools.yml").read_text().replace("      nodes: 32\n", "      nodes: 32\n      nodes: 4\n")
    ),
    r"pools\.yml:\d+: key 'nodes' is defined twice",
)
case(
    "loader-duplicate-top-key",
    9,
    lambda repo: (repo / GV / "fleet.yml").write_text(
        (repo / GV / "fleet.yml").read_text() + "gpufleet_schema_version: 1\n"
    ),
    r"fleet\.yml:\d+: key 'gpufleet_schema_version' is defined twice",
)
case(
    "loader-duplicate-unrelated-key",
    9,
    put(str(GV / "x.yml"), "ntp: a\nntp: b\n"),
    r"x\.yml:2: key 'ntp' is defined twice",
)
case(
    "loader-vault-in-model",
    9,
    put(str(GV / "v.yml"), "gpufleet_versions:\n  slurm:\n    version: " + VAULT.replace("\n  ", "\n      ")),
    r"v\.yml:\d+: gpufleet_versions: holds a !vault value",
)
case(
    "loader-json-bad",
    9,
    put(str(GV / "extra.json"), '{"gpufleet_tenants": 3}'),
    r"tenants\.yml:\d+: gpufleet_tenants: defined again \(first defined in .*extra\.json:1\)",
)
case(
    "loader-json-broken",
    9,
    put(str(GV / "extra.json"), '{"a": [1, 2'),
    r"extra\.json:\d+: not valid YAML",
)
case(
    "loader-noext-file",
    9,
    put(str(GV / "more"), "gpufleet_fleet: {}\n"),
    r"all/more:\d+: gpufleet_fleet: defined again",
)
case(
    "loader-unknown-key",
    9,
    put(str(GV / "typo.yml"), "gpufleet_tenant: []\n"),
    r"typo\.yml:1: gpufleet_tenant: unknown key",
)


# ------------------------------------------------------------------ identity: LDAP/SSSD
def identity(fn: Callable[[dict], Any]) -> Callable[[Path], None]:
    return edit("identity.yml", lambda d: fn(d["gpufleet_identity"]))


def tenant_identity(i: int, **kw: Any) -> Callable[[Path], None]:
    return edit("tenants.yml", lambda d: d["gpufleet_tenants"][i].setdefault("identity", {}).update(kw))


IDT = r"tenants\.yml:\d+: gpufleet_tenants\[1\]\.identity"
IDF = r"identity\.yml:\d+: gpufleet_identity"
# a group name that closes the memberOf clause and ORs in every user
case(
    "identity-filter-injection-group",
    3,
    tenant_identity(1, login_groups=["research)(uid=*"]),
    IDT + r"\.login_groups\[0\]",
)
case(
    "identity-filter-injection-or",
    3,
    tenant_identity(1, login_groups=["research", "*)(|(objectClass=*"]),
    IDT + r"\.login_groups\[1\]",
)
# SSSD reads "base?scope?filter": a '?' in a DN adds a filter of the PR author's choosing
case(
    "identity-search-base-filter",
    3,
    identity(lambda i: i.update(user_search_base="ou=people,dc=example,dc=org?subtree?(uid=*)")),
    IDF + r"\.user_search_base",
)
case(
    "identity-dn-newline",
    3,
    identity(lambda i: i["bind"].update(dn="cn=sssd,dc=example,dc=org\nldap_access_filter = (uid=*)")),
    IDF + r"\.bind\.dn",
)
case(
    "identity-unknown-filter-key",
    3,
    tenant_identity(1, access_filter="(|(uid=*))"),
    IDT + r"\.access_filter: unknown key",
)
case(
    "identity-plain-ldap-remote",
    3,
    identity(lambda i: i.update(uris=["ldap://ldap1.example.org"])),
    IDF + r"\.uris\[0\]: 'ldap://ldap1\.example\.org': plain ldap:// to a remote host",
)
case(
    "identity-plain-ldap-remote-tenant",
    3,
    tenant_identity(1, uris=["ldaps://ldap1.example.org", "ldap://10.0.0.5:389"]),
    IDT + r"\.uris\[1\]: .*plain ldap://",
)
case(
    "identity-bind-password",
    7,
    identity(lambda i: i["bind"].update(password="hunter2hunter2")),
    IDF + r"\.bind\.password: a bind password must never be in the inventory",
)
case(
    "identity-bind-password-tenant",
    7,
    tenant_identity(1, bind_password="hunter2hunter2"),
    IDT + r"\.bind_password: a bind password must never be in the inventory",
)
case(
    "identity-ca-not-pem",
    3,
    identity(
        lambda i: i.update(tls_ca="-----BEGIN CERTIFICATE-----\nAAAAAAAAAAAAAAAAAAAAAAAA\n-----END CERTIFICATE-----\n")
    ),
    IDF + r"\.tls_ca: not valid certificates",
)
case(
    "identity-allow-groups-injection",
    3,
    slurm_opt("research-debug", "allow_groups", ["research AllowAccounts=ALL"]),
    r"pools\.yml:\d+: gpufleet_pools\[3\]\.slurm\.allow_groups\[0\]",
)
case(
    "identity-allow-accounts-unknown",
    3,
    slurm_opt("research-debug", "allow_accounts", ["pretrain"]),
    r"pools\.yml:\d+: gpufleet_pools\[3\]\.slurm\.allow_accounts\[0\]: account 'pretrain' is not defined",
)


# ------------------------------------------------------------------ 10 tenant chart values
# Deny by default: a tenant's vcluster/slurm values pass an allow-list (model/tenant_values.py).
TV = r"tenants\.yml:\d+: gpufleet_tenants\[1\]\.(vcluster|slurm)\.values"
HOSTILE_VALUES: dict[str, tuple[str, dict]] = {
    "host-manifests": ("vcluster", {"experimental": {"deploy": {"host": {"manifests": "kind: ClusterRoleBinding"}}}}),
    "host-manifests-template": ("vcluster", {"experimental": {"deploy": {"host": {"manifestsTemplate": "x"}}}}),
    "to-host-namespaces": ("vcluster", {"sync": {"toHost": {"namespaces": {"enabled": True}}}}),
    "rbac-overwrite": ("vcluster", {"rbac": {"role": {"overwriteRules": [{"verbs": ["*"]}]}}}),
    "rbac-cluster-role": ("vcluster", {"rbac": {"clusterRole": {"enabled": True}}}),
    "plugins": ("vcluster", {"plugins": {"evil": {"image": "evil/plugin"}}}),
    "proxy-kubelet": ("vcluster", {"networking": {"advanced": {"proxyKubelets": {"byIP": True}}}}),
    "sync-nodes-back": ("vcluster", {"sync": {"fromHost": {"nodes": {"syncBackChanges": True}}}}),
    "sync-pvs": ("vcluster", {"sync": {"toHost": {"persistentVolumes": {"enabled": True}}}}),
    "sync-priority-classes": ("vcluster", {"sync": {"toHost": {"priorityClasses": {"enabled": True}}}}),
    "sync-storage-classes": ("vcluster", {"sync": {"toHost": {"storageClasses": {"enabled": True}}}}),
    "from-host-custom-secrets": ("vcluster", {"sync": {"fromHost": {"customResources": {"secrets": {}}}}}),
    "cluster-secret-stores": ("vcluster", {"integrations": {"externalSecrets": {"enabled": True}}}),
    "privileged-control-plane": (
        "vcluster",
        {"controlPlane": {"statefulSet": {"security": {"podSecurityContext": {}}}}},
    ),
    "control-plane-host-path": ("vcluster", {"controlPlane": {"statefulSet": {"persistence": {"addVolumes": [{}]}}}}),
    "control-plane-image": ("vcluster", {"controlPlane": {"statefulSet": {"image": {"repository": "evil/x"}}}}),
    "control-plane-placement": ("vcluster", {"controlPlane": {"statefulSet": {"scheduling": {"nodeSelector": {}}}}}),
    "quota-off": ("vcluster", {"policies": {"resourceQuota": {"enabled": False}}}),
    "quota-raised": ("vcluster", {"policies": {"resourceQuota": {"quota": {"requests.nvidia.com/gpu": 9999}}}}),
    "node-selector-other-tenant": (
        "vcluster",
        {"sync": {"fromHost": {"nodes": {"selector": {"labels": {"gpufleet.dev/pool": "pretrain"}}}}}},
    ),
    "enforce-tolerations-rewritten": ("vcluster", {"sync": {"toHost": {"pods": {"enforceTolerations": []}}}}),
    "cpu-above-bound": ("vcluster", {"controlPlane": {"statefulSet": {"resources": {"limits": {"cpu": "64"}}}}}),
    "memory-exponent": ("vcluster", {"controlPlane": {"statefulSet": {"resources": {"limits": {"memory": "1e9"}}}}}),
    "replicas-float": ("vcluster", {"controlPlane": {"coredns": {"deployment": {"replicas": 2.0}}}}),
    "replicas-bool": ("vcluster", {"controlPlane": {"coredns": {"deployment": {"replicas": True}}}}),
    "slurm-config-files-scalar": ("slurm", {"configFiles": "x"}),
    "slurm-node-selector": ("slurm", {"nodesets": {"pretrain": {"podSpec": {"nodeSelector": {}}}}}),
    "slurm-key-ref": ("slurm", {"slurmKey": {"secretRef": {"name": "other"}}}),
    "slurm-gres-types": ("slurm", {"controller": {"extraConfMap": {"GresTypes": "none"}}}),
    "slurm-conf-injection": (
        "slurm",
        {"controller": {"extraConfMap": {"SchedulerParameters": "x\nPartitionName=evil"}}},
    ),
    "slurm-conf-space": ("slurm", {"controller": {"extraConfMap": {"SchedulerParameters": "a AllowAccounts=ALL"}}}),
    "slurm-image": ("slurm", {"controller": {"slurmctld": {"image": {"repository": "evil"}}}}),
    "slurm-extra-objects": ("slurm", {"extraObjects": [{"kind": "Pod"}]}),
    "slurm-login-service": ("slurm", {"loginsets": {"main": {"service": {"spec": {"type": "LoadBalancer"}}}}}),
}
for _id, (_chart, _values) in HOSTILE_VALUES.items():
    if _chart == "vcluster":
        case(f"values-{_id}", 10, tenant(1, vcluster={"values": _values}), TV)
    else:
        case(
            f"values-{_id}",
            10,
            edit("tenants.yml", lambda d, v=_values: d["gpufleet_tenants"][1]["slurm"].__setitem__("values", v)),
            TV,
        )
for i, bad in enumerate([1.0, 2.5, 10**12, True, "1", -1]):
    case(
        f"values-login-replicas-{i}",
        10,
        edit("tenants.yml", lambda d, v=bad: d["gpufleet_tenants"][1]["slurm"].__setitem__("login_replicas", v)),
        r"tenants\.yml:\d+: gpufleet_tenants\[1\]\.slurm\.login_replicas",
    )
case(
    "values-override-unknown-tenant",
    10,
    cluster(lambda c: c.__setitem__("tenant_overrides", {"ghost": {"reason": "x"}})),
    r"clusters\.yml:\d+: gpufleet_clusters\[0\]\.tenant_overrides\.ghost: no tenant 'ghost'",
)
case(
    "values-chart-version-not-reviewed",
    10,
    both(
        put(str(GV / "versions.yml"), "gpufleet_versions:\n  vcluster:\n    version: 0.99.0\n"),
        tenant(1, vcluster={"values": {"telemetry": {"enabled": False}}}),
    ),
    r"tenants\.yml:\d+: gpufleet_tenants\[1\]\.vcluster\.values: .*0\.36\.1",
)


# ------------------------------------------------------------------ 11 pools: the lock is not a licence
# (the lock gives gpu009/gpu010 to pretrain of llm-pretrain, gpu003 to research-batch of research)
PIN = r"pools\.yml:\d+: pool 'research-batch' .*gpufleet_pools\[2\]\.pin\): pinned node 'gpu0(09|10)' belongs to pool"
case("pool-pin-takes-other-tenant-node", 11, pool("research-batch", lambda p: p.__setitem__("pin", ["gpu009"])), PIN)
case(
    "pool-pin-hostlist-takes-other-tenant-node",
    11,
    pool("research-batch", lambda p: p.__setitem__("pin", ["gpu0[09-10]"])),
    PIN,
)
case(
    "pool-pin-allowed-node-drags-another",  # allowing gpu009 does not allow the node pretrain takes back
    11,
    both(
        pool("research-batch", lambda p: p.__setitem__("pin", ["gpu009"])),
        cluster(lambda c: c.__setitem__("allow_node_moves", [{"nodes": ["gpu009"], "reason": "ticket 42"}])),
    ),
    r"pools\.lock\.yaml: nodes: .*would change tenant: node gpu\d+: pool research-batch \(tenant research\)"
    r" -> pool pretrain .*allow_node_moves",
)


def _steal_pool(d: dict) -> None:
    research, pretrain = d["gpufleet_tenants"][1], d["gpufleet_tenants"][0]
    research["pools"].remove("research-debug")
    pretrain["pools"].append("research-debug")


case(
    "pool-taken-into-other-tenant-list",
    11,
    edit("tenants.yml", _steal_pool),
    r"pools\.lock\.yaml: nodes: .*2 node\(s\) would change tenant: node gpu\d+: pool research-debug"
    r" \(tenant research\) -> pool research-debug \(tenant llm-pretrain\)",
)
case(
    "pool-allow-moves-bad-hostlist",
    11,
    cluster(lambda c: c.__setitem__("allow_node_moves", [{"nodes": ["gpu 1"], "reason": "x"}])),
    r"clusters\.yml:\d+: gpufleet_clusters\[0\]\.allow_node_moves\[0\]\.nodes\[0\]",
)
case(
    "pool-allow-moves-no-reason",
    11,
    cluster(lambda c: c.__setitem__("allow_node_moves", [{"nodes": ["gpu009"]}])),
    r"clusters\.yml:\d+: gpufleet_clusters\[0\]\.allow_node_moves\[0\]: 'reason' is required",
)


# ------------------------------------------------------------------ 12 what the apply step reads
case(
    "apply-host-vars-gpufleet",
    12,
    put(str(INV / "host_vars/localhost.yml"), "gpufleet_slurm_exec: {research: [sh, -c, id]}\n"),
    r"host_vars/localhost\.yml:1: gpufleet_slurm_exec: gpufleet_\* variables belong in group_vars/all",
)
case(
    "apply-group-vars-other-group-gpufleet",
    12,
    put(str(INV / "group_vars/fabric_hosts.yml"), "gpufleet_kubeconfig: /tmp/evil\n"),
    r"group_vars/fabric_hosts\.yml:1: gpufleet_kubeconfig: gpufleet_\* variables belong",
)
case(
    "apply-group-vars-dir-role-var",
    12,
    put(str(INV / "group_vars/fabric_hosts/x.yml"), "fabric_discovery_ibnetdiscover_command: [sh, -c, id]\n"),
    r"fabric_hosts/x\.yml:1: fabric_discovery_ibnetdiscover_command: a variable of role 'fabric_discovery'",
)
case(
    "apply-role-var-in-all",
    12,
    put(str(GV / "roles.yml"), "argocd_values_file: /etc/shadow\n"),
    r"all/roles\.yml:1: argocd_values_file: a variable of role 'argocd'",
)
case(
    "apply-ssh-proxy-command",
    12,
    put(str(INV / "host_vars/localhost/conn.yml"), "ansible_ssh_common_args: -o ProxyCommand=id\n"),
    r"localhost/conn\.yml:1: ansible_ssh_common_args: not an allowed connection variable",
)
case(
    "apply-inline-shell-executable",
    12,
    sub(
        INV / "hosts.yml",
        "ansible_connection: local\n",
        "ansible_connection: local\n      ansible_shell_executable: /x\n",
    ),
    r"hosts\.yml:\d+: all\.hosts\.localhost\.ansible_shell_executable: not an allowed",
)
case(
    "apply-inline-interpreter",
    12,
    sub(INV / "hosts.yml", '"{{ ansible_playbook_python }}"', "/tmp/evil/python"),
    r"hosts\.yml:\d+: all\.hosts\.localhost\.ansible_python_interpreter: '/tmp/evil/python' is not allowed",
)
case(
    "apply-jinja-in-model",
    12,
    tenant(0, description="{{ lookup('pipe', 'id') }}"),
    r"tenants\.yml:\d+: gpufleet_tenants\[0\]\.description: holds a Jinja template",
)
case(
    "apply-group-vars-dir-symlink",
    12,
    link(str(GV / "etc"), "/etc", replace=False),
    r"group_vars/all/etc: a vars file may not be a symbolic link",
)


def executable(rel: str, content: str) -> Callable[[Path], None]:
    def run(repo: Path) -> None:
        put(rel, content)(repo)
        os.chmod(repo / rel, 0o755)

    return run


case(
    "apply-inventory-script",
    12,
    executable(str(INV / "dynamic.py"), "#!/bin/sh\nid > /tmp/pwned\n"),
    r"sample/dynamic\.py: an executable file in the inventory",
)
case(
    "apply-executable-snapshot",
    12,
    executable(str(INV / "snapshots/gpu-east/run"), "#!/bin/sh\nid\n"),
    r"gpu-east/run: an executable file in the inventory",
)
case(
    "apply-ini-inventory",
    12,
    put(str(INV / "extra"), "localhost ansible_shell_executable=/tmp/x\n"),
    r"sample/extra: Ansible would read this file as an inventory source",
)
case(
    "apply-toml-inventory",
    12,
    put(str(INV / "more.toml"), "[all.vars]\ngpufleet_kubeconfig = '/tmp/x'\n"),
    r"sample/more\.toml: Ansible would read this file as an inventory source",
)
case(
    "apply-second-yaml-inventory",
    12,
    put(str(INV / "more.yml"), "all:\n  vars:\n    gpufleet_kubeconfig: /tmp/x\n"),
    r"more\.yml:3: all\.vars\.gpufleet_kubeconfig: gpufleet_\* variables belong in group_vars/all",
)
case(
    "apply-yaml-inventory-in-subdir",
    12,
    put(str(INV / "extra/inv.yaml"), "all:\n  children:\n    g:\n      hosts:\n        h: {ansible_become_exe: /x}\n"),
    r"inv\.yaml:\d+: all\.children\.g\.hosts\.h\.ansible_become_exe: not an allowed connection variable",
)


case(
    "apply-host-vars-dir-symlink",
    12,
    link(str(INV / "host_vars"), "outside", replace=False),
    r"sample/host_vars: a symbolic link",
)


# ------------------------------------------------------------------ 14 sizes, depth, big numbers
case(
    "bound-vars-file-bytes",
    14,
    put(str(GV / "big.yml"), "x: [" + "1," * 200_000 + "1]\n"),
    r"big\.yml: refused: larger than",
)
case(
    "bound-vars-depth",
    14,
    put(str(GV / "deep.yml"), "x: " + "[" * 500 + "]" * 500 + "\n"),
    r"deep\.yml:1: refused: nested deeper",
)
case(
    "bound-vars-huge-int",
    14,
    put(str(GV / "int.yml"), "x: " + "9" * 5000 + "\n"),
    r"int\.yml: refused: a value cannot be read",
)
case(
    "bound-health-interval-float",
    14,
    tenant(0, health={"interval": 300.0}),
    r"tenants\.yml:\d+: gpufleet_tenants\[0\]\.health\.interval: 300\.0 is not of type 'integer'",
)
case(
    "bound-xid-float",
    14,
    tenant(0, health={"xids": [48.0, 79]}),
    r"tenants\.yml:\d+: gpufleet_tenants\[0\]\.health\.xids\[0\]",
)
case(
    "bound-pool-size-bool",
    14,
    pool("pretrain", lambda p: p.__setitem__("size", {"nodes": True})),
    r"pools\.yml:\d+: gpufleet_pools\[1\]\.size\.nodes: True is not of type 'integer'",
)
case(
    "bound-pool-size-float",
    14,
    pool("pretrain", lambda p: p.__setitem__("size", {"nodes": 32.0})),
    r"pools\.yml:\d+: gpufleet_pools\[1\]\.size\.nodes: 32\.0 is not of type 'integer'",
)
case(
    "bound-inference-port-float",
    14,
    tenant(2, expose={"inference": [8000.0], "from_cidrs": ["10.20.0.0/16"]}),
    r"tenants\.yml:\d+: gpufleet_tenants\[2\]\.expose\.inference\[0\]",
)


# every size and number a tenant sets is bounded against the platform's
case(
    "bound-db-storage-past-platform-max",  # would lift the tenant's host requests.storage quota
    14,
    edit(
        "tenants.yml", lambda d: d["gpufleet_tenants"][0]["slurm"]["accounting"]["database"].update(storage="999999Ti")
    ),
    r"tenants\.yml:\d+: gpufleet_tenants\[0\]\.slurm\.accounting\.database\.storage: 999999Ti is more than the"
    r" platform allows .*tenant_database_storage_max: 1Ti",
)
case(
    "bound-db-storage-past-raised-platform-max",
    14,
    both(
        cluster(lambda c: c.__setitem__("tenant_database_storage_max", "2Ti")),
        edit(
            "tenants.yml", lambda d: d["gpufleet_tenants"][0]["slurm"]["accounting"]["database"].update(storage="3Ti")
        ),
    ),
    r"gpufleet_tenants\[0\]\.slurm\.accounting\.database\.storage: 3Ti .*tenant_database_storage_max: 2Ti",
)
for i, every in enumerate(["1s", "14s", "61m"]):
    case(
        f"bound-scrape-interval-{i}",
        14,
        edit("tenants.yml", lambda d, e=every: d["gpufleet_tenants"][0]["monitoring"].update(scrape_interval=e)),
        r"tenants\.yml:\d+: gpufleet_tenants\[0\]\.monitoring\.scrape_interval: " + every + " is outside 15s",
    )
case(
    "bound-scrape-interval-platform-floor",
    14,
    cluster(lambda c: c.setdefault("monitoring", {}).__setitem__("min_scrape_interval", "1m")),
    r"gpufleet_tenants\[0\]\.monitoring\.scrape_interval: 30s is outside 1m",
)


# ------------------------------------------------------------------ 13 exposure, sources, writes into the inputs
EXP = r"tenants\.yml:\d+: gpufleet_tenants\[2\]\.expose\.from_cidrs\[0\]"
for i, bad in enumerate([["0.0.0.0/0"], ["::/0"], ["0.0.0.0/1", "128.0.0.0/1"], ["8.8.8.0/24"], ["fe80::%eth0/64"]]):
    case(f"expose-cidr-{i}", 13, tenant(2, expose={"inference": [8000], "from_cidrs": bad}), EXP)
case(
    "expose-cidr-outside-platform-list",
    13,
    both(
        cluster(lambda c: c.__setitem__("expose_allowed_cidrs", ["10.20.0.0/16"])),
        tenant(2, expose={"inference": [8000], "from_cidrs": ["10.0.0.0/8"]}),
    ),
    EXP + r": '10\.0\.0\.0/8' is not inside the cluster's expose_allowed_cidrs",
)
VER = r"(versions|v)\.yml:\d+: gpufleet_versions"
for i, (comp, spec) in enumerate(
    [
        ("slurm", {"version": "*"}),
        ("slurm", {"version": ">=1.2"}),
        ("vcluster", {"repo_url": "http://charts.example.org"}),
        ("vcluster", {"repo_url": "https://github.com/*"}),
        ("vcluster", {"repo_url": "*"}),
        ("no_such_component", {"version": "1.0.0"}),
    ]
):
    case(f"source-versions-{i}", 13, put(str(GV / "v.yml"), yaml.safe_dump({"gpufleet_versions": {comp: spec}})), VER)
case(
    "source-mirror-plain-http",
    13,
    put(str(GV / "v.yml"), "gpufleet_chart_mirrors:\n  https://charts.loft.sh: http://mirror.example.org/loft\n"),
    r"v\.yml:\d+: gpufleet_chart_mirrors",
)
case(
    "source-gitops-repo-wildcard",
    13,
    fleet(lambda f: f["gitops"].__setitem__("repo_url", "https://github.com/*")),
    r"fleet\.yml:\d+: gpufleet_fleet\.gitops\.repo_url",
)
case(
    "write-gitops-into-group-vars",
    13,
    fleet(lambda f: f["gitops"].__setitem__("path", "inventories/sample/group_vars/all/tree")),
    r"fleet\.yml:\d+: gpufleet_fleet\.gitops\.path: .* inside the inventory's vars folders",
)
case(
    "write-gitops-over-inventory",
    13,
    fleet(lambda f: f["gitops"].__setitem__("path", "inventories")),
    r"fleet\.yml:\d+: gpufleet_fleet\.gitops\.path: .* holds the inventory",
)
case(
    "write-lock-into-group-vars",
    13,
    cluster(lambda c: c.__setitem__("nodes_snapshot", "group_vars/all/nodes.yaml")),
    r"clusters\.yml:\d+: gpufleet_clusters\[0\]\.nodes_snapshot: inside group_vars/",
)


NMAP = r"clusters\.yml:\d+: gpufleet_clusters\[0\]\.fabric\.node_name_map\.pattern: refused"
for i, bad in enumerate(["(a+)+$", "(gpu|gpu)*x", r"(gpu)\1", "(?=gpu)g(.*)", "a*b*c*(.*)", "((g)+p)+u"]):
    case(
        f"bound-node-map-regex-{i}",
        14,
        cluster(lambda c, v=bad: c["fabric"].__setitem__("node_name_map", {"pattern": v, "replace": "x"})),
        NMAP,
    )
case(
    "bound-hostlist-total",
    14,
    pool("spare", lambda p: p.__setitem__("exclude", [f"x{i}[0-99999]" for i in range(3)])),
    r"pools\.yml:\d+: gpufleet_pools\[5\]\.exclude\[1\]: refused: the model's hostlists expand to more than",
)
for i, (old, new) in enumerate(
    [
        ("nvidia.com/gpu: '8'", "nvidia.com/gpu: '\u00b2'"),
        ("nvidia.com/gpu: '8'", "nvidia.com/gpu: .nan"),
        ("nvidia.com/gpu: '8'", "nvidia.com/gpu: " + "9" * 5000),
        ("nvidia.com/gpu: '8'", "nvidia.com/gpu: '99999999'"),
        ("cpu: '224'", "cpu: '1e999999999'"),
        ("cpu: '224'", "cpu: .inf"),
        ("cpu: '224'", "cpu: [a, b]"),
    ]
):
    case(
        f"bound-nodes-number-{i}",
        14,
        sub(NODES, old, new),
        r"nodes\.yaml(:\d+)?: .*(nvidia\.com/gpu|allocatable\.cpu|refused)",
    )


case(
    "bound-fabric-huge-number",
    14,
    sub(FABRIC, '[1]\t"S-2c5eab0300000041"[1]', "[" + "9" * 5000 + ']\t"S-2c5eab0300000041"[1]', 1),
    r"fabric\.ibnetdiscover:\d+: refused: a number longer than 64 digits",
)
case(
    "bound-fabric-unicode-digits",
    14,
    sub(FABRIC, '[1]\t"S-2c5eab0300000041"[1]', "[" + "\u0663" * 70 + ']\t"S-2c5eab0300000041"[1]', 1),
    r"fabric\.ibnetdiscover:\d+: refused: a number longer than 64 digits",
)


# ------------------------------------------------------------------ 13 addresses as the datapath reads them
# IPv6 forms that embed IPv4: Go's net.ParseCIDR (Cilium, kube-proxy) reads ::ffff:0:0/96 as 0.0.0.0/0
for i, bad in enumerate(
    [
        ["::ffff:0:0/96"],  # all of IPv4, "private" to Python
        ["::ffff:0:0/97", "::ffff:8000:0/97"],  # the two halves
        ["::ffff:808:800/120"],  # 8.8.8.0/24
        ["::ffff:a00:0/104"],  # 10.0.0.0/8, still refused: write the IPv4 network
        ["::/96"],  # IPv4-compatible
        ["::ffff:0:0:0/96"],  # IPv4-translated
        ["64:ff9b::/96"],  # NAT64
        ["64:ff9b:1::/48"],  # NAT64 local use
        ["2001::/32"],  # Teredo
        ["2001::/23"],  # contains Teredo
        ["2002::/16"],  # 6to4
        ["2002:a00::/24"],  # 6to4 of 10.0.0.0/8
        ["::/64"],  # contains the mapped range
    ]
):
    case(
        f"expose-cidr-transition-{i}",
        13,
        tenant(2, expose={"inference": [8000], "from_cidrs": ["10.20.0.0/16", *bad]}),
        r"tenants\.yml:\d+: gpufleet_tenants\[2\]\.expose\.from_cidrs\[1\]: .* overlaps .*write the IPv4 network",
    )
case(
    "expose-cidr-transition-inside-platform-list",  # the platform allows 2000::/3: Teredo and 6to4 stay out
    13,
    both(
        cluster(lambda c: c.__setitem__("expose_allowed_cidrs", ["2000::/3"])),
        tenant(2, expose={"inference": [8000], "from_cidrs": ["2002::/17"]}),
    ),
    EXP + r": '2002::/17' overlaps 2002::/16, 6to4",
)


# ------------------------------------------------------------------ 16 the closed tree: only rendered files
ADMIN = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: zz-admin}\n"
for i, rel in enumerate(
    [
        "clusters/gpu-east/tenants/research/host/zz-admin.yaml",  # synced whole by the tenant's 1-host app
        "clusters/gpu-east/tenants/research/apps/9-extra.yaml",  # an extra Application of the tenant root
        "clusters/gpu-east/tenants/inference/host/zz-admin.yaml",  # another tenant's folder
        "clusters/gpu-east/apps/zz-extra.yaml",  # the platform's Applications
        "clusters/gpu-east/platform/cilium/zz.yaml",
        "clusters/gpu-east/tenants/research/.gpufleet-manifest.orig",
        "clusters/gpu-west/apps/x.yaml",  # a cluster folder the fleet does not render
    ]
):
    case(
        f"tree-unrendered-file-{i}",
        16,
        put(f"gitops/{rel}", ADMIN),
        r"not written by the render .*gitops/" + re.escape(rel),
    )
case(
    "tree-tenant-manifest-escapes-its-folder",
    16,
    sub(
        "gitops/clusters/gpu-east/tenants/research/.gpufleet-manifest",
        "  apps/1-host.yaml",
        "  ../../apps/1-host.yaml",
    ),
    r"tenants/research/\.gpufleet-manifest:\d+: corrupt manifest line \(bad path '\.\./\.\./apps/1-host\.yaml'\)",
)
case(
    "tree-tenant-manifest-missing",
    16,
    lambda repo: (repo / "gitops/clusters/gpu-east/tenants/inference/.gpufleet-manifest").unlink(),
    r"tenants/inference/\.gpufleet-manifest: the tenant folder's manifest is missing",
)
case(
    "tree-root-manifest-names-a-platform-folder",
    16,
    sub(
        "gitops/.gpufleet-manifest", "manifest  clusters/gpu-east/tenants/research/", "manifest  clusters/gpu-east/x/y/"
    ),
    r"gitops/\.gpufleet-manifest:\d+: 'clusters/gpu-east/x/y/\.gpufleet-manifest' is not a tenant folder's",
)


# ------------------------------------------------------------------ 15 names after each chart's truncation
_PERIODIC = "a-v-vc-" * 6  # vc-<t>-v-vc-<t> cut at 63 is the same string for both names below
case(
    "collision-truncated-vcluster-cluster-role",
    15,
    both(rename_tenant_everywhere("research", _PERIODIC[:29]), rename_tenant_everywhere("inference", _PERIODIC[:36])),
    r"tenants\.yml:\d+: gpufleet_tenants\[(1|2)\]\.name: renders ClusterRole 'vc-a-v-vc-.*already renders",
)


# ------------------------------------------------------------------ valid variants (must render)
def _tenants_json(repo: Path) -> None:
    p = repo / GV / "tenants.yml"
    (repo / GV / "tenants.json").write_text(json.dumps(yaml.safe_load(p.read_text())), encoding="utf-8")
    p.unlink()


VALID: dict[str, Callable[[Path], None]] = {
    "vault-inline-unrelated": put(str(GV / "secrets.yml"), "db_password: " + VAULT + "other: 1\n"),
    "vault-whole-file": put(str(GV / "vault.yml"), "$ANSIBLE_VAULT;1.1;AES256\n6162636465\n"),
    "tenants-json": _tenants_json,
    "hidden-and-backup-files-ignored": both(
        put(str(GV / ".hidden.yml"), "gpufleet_fleet: {}\n"), put(str(GV / "tenants.yml~"), "gpufleet_fleet: {}\n")
    ),
    "merge-key": put(str(GV / "merge.yml"), "base: &b {x: 1}\nderived:\n  <<: *b\n  x: 2\n"),
    "unsafe-tag": put(str(GV / "unsafe.yml"), "templ: !unsafe '{{ not_templated }}'\n"),
}
for i, t in enumerate(["30", "30:00", "1:00:00", "2-0", "2-12", "2-12:30", "7-00:00:00", "UNLIMITED", "INFINITE"]):
    VALID[f"max-time-{i}"] = slurm_opt("research-debug", "max_time", t)
VALID["tenant-values-allowed"] = both(
    tenant(1, vcluster={"values": {"telemetry": {"enabled": False}, "logging": {"encoding": "json"}}}),
    edit(
        "tenants.yml",
        lambda d: d["gpufleet_tenants"][1]["slurm"].__setitem__(
            "values", {"controller": {"extraConfMap": {"SchedulerParameters": "bf_max_job_test=500", "MinJobAge": 300}}}
        ),
    ),
)
VALID["tenant-override-by-platform"] = cluster(
    lambda c: c.__setitem__(
        "tenant_overrides",
        {"research": {"reason": "bigger etcd", "vcluster": {"values": {"controlPlane": {"distro": {}}}}}},
    )
)
VALID["pool-pin-move-allowed-by-platform"] = both(
    pool("research-batch", lambda p: p.__setitem__("pin", ["gpu009"])),
    cluster(lambda c: c.__setitem__("allow_node_moves", [{"nodes": ["gpu009", "gpu003"], "reason": "ticket 42"}])),
)
VALID["expose-cidr-platform-allowed-public"] = both(
    cluster(lambda c: c.__setitem__("expose_allowed_cidrs", ["10.0.0.0/8", "192.0.2.0/24", "198.51.100.0/24"])),
    tenant(2, expose={"inference": [8000], "from_cidrs": ["10.20.0.0/16", "198.51.100.0/25"]}),
)
VALID["apply-connection-vars-and-site-vars"] = both(
    put(str(INV / "host_vars/ib01.yml"), "ansible_host: 10.0.0.5\nansible_user: ops\nansible_port: 2222\nrack: r1\n"),
    put(
        str(INV / "group_vars/fabric_hosts.yml"), "ntp_servers: [a, b]\nansible_python_interpreter: /usr/bin/python3\n"
    ),
)
VALID["bound-db-storage-platform-raised"] = both(
    cluster(lambda c: c.__setitem__("tenant_database_storage_max", "2Ti")),
    edit("tenants.yml", lambda d: d["gpufleet_tenants"][0]["slurm"]["accounting"]["database"].update(storage="2Ti")),
)
VALID["partition-underscore"] = slurm_opt("research-debug", "partition", "Debug_Q-1")
VALID["allow-unmatched-hosts"] = both(
    sub(FABRIC, '"gpu017 mlx5_0"', '"gpu917 mlx5_0"'),  # gpu017 keeps its other 7 rails
    cluster(lambda c: c["fabric"].__setitem__("allow_unmatched_hosts", True)),
)


def snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under ``root`` (lstat: links are not followed): type, mode, content or target."""
    out: dict[str, tuple] = {}
    for dirpath, dirs, names in os.walk(root, followlinks=False):
        for n in dirs + names:
            p = Path(dirpath) / n
            st = os.lstat(p)
            rel = p.relative_to(root).as_posix()
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p))
            elif stat.S_ISREG(st.st_mode):
                out[rel] = ("file", stat.S_IMODE(st.st_mode), hashlib.sha256(p.read_bytes()).hexdigest())
            else:
                out[rel] = ("dir", stat.S_IMODE(st.st_mode))
    return out
