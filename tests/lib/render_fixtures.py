"""Test inventories: the sample fleet's group_vars plus generated snapshots; helpers to edit them.

``make_inventory(dir, hosts=64, ...)`` copies ``inventories/sample/group_vars`` and writes
``snapshots/gpu-east/{nodes.yaml,fabric.ibnetdiscover}`` from ``fabric_gen`` (deterministic), with
two CPU-only system nodes that are not on the fabric.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml
from gpufleet_testlib import fabric_gen

REPO = Path(__file__).resolve().parents[2]
# render caches of the tests (and of the CLI subprocesses they start) stay out of ~/.cache
os.environ.setdefault("GPUFLEET_CACHE_DIR", tempfile.mkdtemp(prefix="gpufleet-test-cache-"))
SAMPLE = REPO / "inventories" / "sample"


def cpu_node(name: str) -> dict:
    res = {"cpu": "64", "memory": "263835340Ki", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}},
        "status": {"allocatable": dict(res), "capacity": dict(res)},
    }


def write_snapshots(snap: Path, hosts: int = 64, su_size: int = 8, system_nodes: int = 2) -> None:
    snap.mkdir(parents=True, exist_ok=True)
    fab = fabric_gen.generate(fabric_gen.GenSpec(hosts=hosts, rails=8, su_size=su_size))
    (snap / "fabric.ibnetdiscover").write_text(fabric_gen.render_ibnetdiscover(fab), encoding="utf-8")
    nodes = fabric_gen.nodes_snapshot(fab)
    for item in nodes["items"]:  # H100 HGX: the NVLink domain is the node, GFD sets no clique label
        item["metadata"]["labels"].pop("nvidia.com/gpu.clique", None)
    nodes["items"] += [cpu_node(f"sys{i:02d}") for i in range(1, system_nodes + 1)]
    (snap / "nodes.yaml").write_text(yaml.safe_dump(nodes, sort_keys=True), encoding="utf-8")


def copy_sample(root: Path, name: str = "inv", snapshots: bool = False) -> Path:
    """The sample inventory's ``group_vars`` and ``hosts.yml`` (and ``snapshots`` if asked) copied to
    ``root/name``, to edit; the ``inv`` fixture of tests/unit/plugins/module_utils/conftest.py."""
    inv = root / name
    shutil.copytree(SAMPLE / "group_vars", inv / "group_vars")
    shutil.copy(SAMPLE / "hosts.yml", inv / "hosts.yml")
    if snapshots:
        shutil.copytree(SAMPLE / "snapshots", inv / "snapshots")
    return inv


def collection_copy(root: Path) -> Path:
    """A copy of plugins/ as the collection ``gpufleet.core`` under ``root/collections`` (its ``core``
    folder), for the recipe tests that edit the code and run it (``insert_before``, ``run_on_copy``)."""
    core = root / "collections" / "ansible_collections" / "gpufleet" / "core"
    shutil.copytree(REPO / "plugins", core / "plugins", ignore=shutil.ignore_patterns("__pycache__"))
    return core


def insert_before(path: Path, before: str, text: str) -> None:
    """Put ``text`` in front of the first ``before`` in ``path`` (which must hold it)."""
    src = path.read_text(encoding="utf-8")
    assert before in src, (path, before)
    path.write_text(src.replace(before, text + before, 1), encoding="utf-8")


def run_on_copy(core: Path, script: str, *args: str) -> subprocess.CompletedProcess:
    """Run ``script`` in a fresh interpreter that imports the collection from the copy ``core``;
    ``sys.argv[1]`` is the copy's collections path, the rest are ``args``."""
    return subprocess.run(
        [sys.executable, "-c", script, str(core.parents[2]), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def make_inventory(root: Path, hosts: int = 64) -> Path:
    inv = copy_sample(root)
    write_snapshots(inv / "snapshots" / "gpu-east", hosts=hosts)
    return inv


def render_to(inv: Path, out: Path):
    """Render ``inv`` into ``out``; returns (RenderResult, WriteReport)."""
    from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_inventory, write_render

    result = render_inventory(inv)
    return result, write_render(result, out)


def load(files: Mapping[str, bytes], rel: str) -> Any:
    """One rendered YAML file of ``files`` (the ``files`` fixture of tests/conftest.py), parsed."""
    return yaml.safe_load(files[rel])


def tree_state(out: Path) -> dict[str, bytes]:
    """Every file under ``out`` (relative path -> bytes)."""
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def yaml_objects(files: dict[str, bytes]):
    """(path, object) for every YAML document of the rendered tree."""
    for rel, data in sorted(files.items()):
        if rel.endswith(".yaml"):
            for doc in yaml.safe_load_all(data):
                if doc is not None:
                    yield rel, doc


def edit_vars(inv: Path, name: str, fn) -> Path:
    """Load group_vars/all/<name>, apply ``fn`` to the data, write it back; returns the file."""
    f = inv / "group_vars" / "all" / name
    data = yaml.safe_load(f.read_text(encoding="utf-8"))
    fn(data)
    f.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return f


def model_errors(inv: Path) -> list[str]:
    """The problems loading ``inv`` reports, one string each (``file:line: key: message``); it must fail."""
    import pytest

    from ansible_collections.gpufleet.core.plugins.module_utils.errors import ModelError
    from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet

    with pytest.raises(ModelError) as exc:
        load_fleet(inv)
    return [str(i) for i in exc.value.issues]


def make_big_inventory(
    root: Path, nodes: int = 10_000, tenants: int = 100, fabric: bool = True, clusters: int = 1
) -> Path:
    """A generated fleet: ``clusters`` clusters of ``nodes`` GPU nodes (+16 CPU system nodes) and
    ``tenants`` tenants each.

    Two tenants in three run Slurm (two pools: 2/3 and 1/3 of their share), the others
    Kubernetes-native (one pool sized in GPUs). Shares are whole 8-node units; the rest is spare.
    One cluster is ``gpu-east`` with tenants ``team000``...; with more, cluster ``gpu-NN`` has its own
    fabric (seed and node names of its own, so no two snapshots have the same bytes), its own server,
    load-balancer addresses and pools, and tenants ``cNN-team000``....
    """
    inv = root / "inv"
    gv = inv / "group_vars" / "all"
    gv.mkdir(parents=True)
    shutil.copy(SAMPLE / "group_vars" / "all" / "fleet.yml", gv / "fleet.yml")
    sample = yaml.safe_load((SAMPLE / "group_vars" / "all" / "clusters.yml").read_text(encoding="utf-8"))
    names = ["gpu-east"] if clusters == 1 else [f"gpu-{i:02d}" for i in range(clusters)]
    cdefs, pools, tlist = [], [], []
    for i, name in enumerate(names):
        cdefs.append(_big_cluster(sample["gpufleet_clusters"][0], name, i, clusters, fabric))
        prefix = "" if clusters == 1 else f"c{i:02d}-"
        _big_pools(name, prefix, nodes, tenants, pools, tlist)
        _big_snapshots(inv / "snapshots" / name, nodes, fabric, i if clusters > 1 else None)
    (gv / "clusters.yml").write_text(yaml.safe_dump({"gpufleet_clusters": cdefs}, sort_keys=False), encoding="utf-8")
    (gv / "pools.yml").write_text(yaml.safe_dump({"gpufleet_pools": pools}, sort_keys=False), encoding="utf-8")
    (gv / "tenants.yml").write_text(yaml.safe_dump({"gpufleet_tenants": tlist}, sort_keys=False), encoding="utf-8")
    return inv


def only_cluster(fleet: Any, name: str) -> Any:
    """The fleet reduced to one of its clusters, its pools and its tenants (and its maintenance)."""
    return replace(
        fleet,
        clusters={name: fleet.clusters[name]},
        tenants={k: t for k, t in fleet.tenants.items() if t.cluster == name},
        pools={k: p for k, p in fleet.pools.items() if p.cluster == name},
        maintenance=tuple(m for m in fleet.maintenance if getattr(m, "cluster", name) == name),
    )


def _big_cluster(sample: dict, name: str, index: int, clusters: int, fabric: bool) -> dict:
    c = json.loads(json.dumps(sample))
    c["name"] = name
    if not fabric:
        c["fabric"] = {"source": "none"}
    else:
        c["fabric"]["path"] = f"snapshots/{name}/fabric.ibnetdiscover"
    # A large fleet's nodes snapshot is JSON (what `kubectl get nodes -o json` writes; JSON is YAML):
    # it loads 40x faster than YAML.
    c["nodes_snapshot"] = f"snapshots/{name}/nodes.json"
    if clusters > 1:
        c["server"] = f"https://{name}.example.internal:6443"
        c["components"]["cilium"]["load_balancer"]["pools"] = [f"10.30.{index}.0/26"]
        c["components"]["shared_storage"]["nfs_server"] = f"nfs.{name}.example.internal"
    return c


def _big_pools(cluster: str, prefix: str, nodes: int, tenants: int, pools: list, tlist: list) -> None:
    share = (nodes // tenants) // 8 * 8 - 8 if nodes // tenants >= 16 else 8
    system = "system" if not prefix else f"{prefix}system"
    pools.append({"name": system, "cluster": cluster, "kind": "system", "size": {"nodes": 16}})
    for i in range(tenants):
        t = f"{prefix}team{i:03d}"
        if i % 3 != 2:
            a = share * 2 // 3 // 8 * 8 or 8
            b = share - a or 8
            pools += [
                {
                    "name": f"{t}-a",
                    "cluster": cluster,
                    "kind": "slurm",
                    "size": {"nodes": a},
                    "slurm": {"partition": "main", "default": True},
                },
                {
                    "name": f"{t}-b",
                    "cluster": cluster,
                    "kind": "slurm",
                    "size": {"nodes": b},
                    "slurm": {"partition": "debug", "max_time": "02:00:00"},
                },
            ]
            tlist.append({"name": t, "cluster": cluster, "pools": [f"{t}-a", f"{t}-b"]})
        else:
            pools.append({"name": f"{t}-k8s", "cluster": cluster, "kind": "kubernetes", "size": {"gpus": share * 8}})
            tlist.append({"name": t, "cluster": cluster, "pools": [f"{t}-k8s"], "namespaces": ["jobs"]})
    pools.append({"name": "spare" if not prefix else f"{prefix}spare", "cluster": cluster, "kind": "spare"})


def _big_snapshots(snap: Path, nodes: int, fabric: bool, index: int | None) -> None:
    snap.mkdir(parents=True)
    spec = fabric_gen.GenSpec(hosts=nodes, rails=8, su_size=8, tiers=2 if nodes <= 2048 else 3)
    if index is not None:  # a cluster of a fleet: a fabric of its own
        spec = replace(spec, seed=index, name_format=f"g{index:02d}n{{:05d}}")
    fab = fabric_gen.generate(spec)
    if fabric:
        (snap / "fabric.ibnetdiscover").write_text(fabric_gen.render_ibnetdiscover(fab), encoding="utf-8")
    snapshot = fabric_gen.nodes_snapshot(fab)
    for item in snapshot["items"]:
        item["metadata"]["labels"].pop("nvidia.com/gpu.clique", None)
    sys_fmt = "sys{:02d}" if index is None else f"g{index:02d}sys{{:02d}}"
    snapshot["items"] += [cpu_node(sys_fmt.format(i)) for i in range(1, 17)]
    (snap / "nodes.json").write_text(json.dumps(snapshot, indent=1, sort_keys=True) + "\n", encoding="utf-8")


GIT_ENV = {
    "GIT_AUTHOR_NAME": "gpufleet",
    "GIT_AUTHOR_EMAIL": "gpufleet@example.org",
    "GIT_COMMITTER_NAME": "gpufleet",
    "GIT_COMMITTER_EMAIL": "gpufleet@example.org",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    # no automatic gc: it packs loose objects in the background while a repository is being copied
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "gc.auto",
    "GIT_CONFIG_VALUE_0": "0",
}


def split_tenants(inv: Path) -> None:
    """The shared ``gpufleet_tenants`` list as one file per tenant (``group_vars/all/tenants/<t>.yml``),
    as a fleet repository keeps them (each its owner's)."""
    gv = inv / "group_vars" / "all"
    tenants = yaml.safe_load((gv / "tenants.yml").read_text(encoding="utf-8"))["gpufleet_tenants"]
    (gv / "tenants.yml").unlink()
    (gv / "tenants").mkdir()
    for t in tenants:
        var = "gpufleet_tenant_" + t["name"].replace("-", "_")
        (gv / "tenants" / f"{t['name']}.yml").write_text(yaml.safe_dump({var: t}, sort_keys=False), encoding="utf-8")


def cut_last_cable(dump: Path) -> None:
    """Cut the cable of the dump's last HCA: its port line and the switch's line for it go."""
    lines = dump.read_text(encoding="utf-8").splitlines(keepends=True)
    ca = max(i for i, line in enumerate(lines) if line.startswith("Ca"))
    hca = lines[ca].split('"')[1]
    port = next(i for i in range(ca + 1, len(lines)) if lines[i].startswith("["))
    gone = {port} | {i for i, line in enumerate(lines) if f'"{hca}"[' in line}
    dump.write_text("".join(line for i, line in enumerate(lines) if i not in gone), encoding="utf-8")


def make_review_repos(root: Path, inv: Path, changes: tuple[str, ...] = ("tenant", "fabric")) -> dict[str, Path]:
    """Git repositories for ``gpufleet.py review --base main``, one per change: inventory ``inv`` copied
    to ``<repo>/inv`` (one file per tenant), rendered into ``<repo>/gitops`` and committed on ``main``;
    then on branch ``pr`` one change, re-rendered and committed: ``tenant`` (the first tenant with
    namespaces gains one: a one-tenant pull request) or ``fabric`` (one cable of the first cluster's fabric
    snapshot cut). In a fleet of several clusters both touch the first cluster (``gpu-00``)."""
    import subprocess

    from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_and_write

    def git(repo: Path, *args: str) -> None:
        subprocess.run(["git", *args], cwd=repo, check=True, env={**os.environ, **GIT_ENV})

    main = root / "main"
    shutil.copytree(inv, main / "inv", symlinks=True)
    split_tenants(main / "inv")
    git(main, "init", "-q", "-b", "main")
    render_and_write(main / "inv", main / "gitops")
    git(main, "add", "-A")
    git(main, "commit", "-qm", "fleet")
    repos = {}
    for change in changes:
        repo = repos[change] = root / f"review-{change}"
        shutil.copytree(main, repo, symlinks=True)
        git(repo, "checkout", "-qb", "pr")
        if change == "tenant":
            tenants = sorted((repo / "inv" / "group_vars" / "all" / "tenants").glob("*.yml"))
            f = next(p for p in tenants if "namespaces:" in p.read_text(encoding="utf-8"))
            data = yaml.safe_load(f.read_text(encoding="utf-8"))
            t = next(iter(data.values()))
            t["namespaces"] = [*t.get("namespaces", []), "review"]
            f.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        else:
            first = sorted(d for d in (repo / "inv" / "snapshots").iterdir() if d.is_dir())[0]
            cut_last_cable(first / "fabric.ibnetdiscover")
        render_and_write(repo / "inv", repo / "gitops")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", change)
    shutil.rmtree(main)
    return repos


def turn_bridge_on(inv: Path) -> Path:
    """``inv`` (a copy of the sample) with slurm-bridge on: the platform's part for llm-pretrain's pool
    ``pretrain`` (partition ``k8s``), the tenant's managing ``ml-jobs``."""
    entry = {"pools": ["pretrain"], "partition": "k8s", "reason": "inference next to training"}
    edit_vars(inv, "clusters.yml", lambda d: d["gpufleet_clusters"][0].update(slurm_bridge={"llm-pretrain": entry}))
    spec = {"namespaces": ["ml-jobs"], "accounts": ["pretrain"], "default_account": "pretrain", "qos": ["normal"]}
    edit_vars(inv, "tenants.yml", lambda d: d["gpufleet_tenants"][0]["slurm"].update(bridge=spec))
    return inv


def bridged_sample(root: Path, mirror: str | None = None) -> Path:
    """A copy of the sample (with its snapshots) with slurm-bridge on (``turn_bridge_on``); ``mirror``:
    an image mirror."""
    inv = turn_bridge_on(copy_sample(root, snapshots=True))
    if mirror:
        edit_vars(inv, "fleet.yml", lambda d: d.update(gpufleet_image_mirror=mirror))
    return inv
