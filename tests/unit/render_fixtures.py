"""Test inventories for the render tests: the sample fleet's group_vars plus generated snapshots.

``make_inventory(dir, hosts=64, ...)`` copies ``inventories/sample/group_vars`` and writes
``snapshots/gpu-east/{nodes.yaml,fabric.ibnetdiscover}`` from ``fabric_gen`` (deterministic), with
two CPU-only system nodes that are not on the fabric.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from ansible_collections.gpufleet.core.plugins.module_utils import fabric_gen

REPO = Path(__file__).resolve().parents[2]
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


def make_inventory(root: Path, hosts: int = 64) -> Path:
    inv = root / "inv"
    shutil.copytree(SAMPLE / "group_vars", inv / "group_vars")
    shutil.copy(SAMPLE / "hosts.yml", inv / "hosts.yml")
    write_snapshots(inv / "snapshots" / "gpu-east", hosts=hosts)
    return inv


def render_to(inv: Path, out: Path):
    """Render ``inv`` into ``out``; returns (RenderResult, WriteReport)."""
    from ansible_collections.gpufleet.core.plugins.module_utils.render_tree import render_inventory, write_render

    result = render_inventory(inv)
    return result, write_render(result, out)


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


def edit_vars(inv: Path, name: str, fn) -> None:
    """Load group_vars/all/<name>, apply ``fn`` to the data, write it back."""
    f = inv / "group_vars" / "all" / name
    data = yaml.safe_load(f.read_text(encoding="utf-8"))
    fn(data)
    f.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
