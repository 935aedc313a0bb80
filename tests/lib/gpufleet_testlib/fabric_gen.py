"""Synthetic, deterministic InfiniBand fabrics for tests, benchmarks and the sample fleet.

A rail-optimized fat tree: scalable units (SUs) of ``su_size`` hosts; each SU has one leaf per rail;
leaves of rail ``r`` go up to the spine group of rail ``r`` (2 tiers), or to per-pod spines that go
up to a core group (3 tiers). Options add SHARP aggregation nodes, HCAs left with their firmware
description, cut cables (seeded) and storage hosts on their own leaf. Output: ``ibnetdiscover``
default format, the ``-p`` ports report, and the matching Kubernetes Node list.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field

SWITCH_MODEL = "MQM9700/U1"
SHARP_DESC = "Mellanox Technologies Aggregation Node"
FIRMWARE_DESC = "MT4123 ConnectX6 Mellanox Technologies"
_SW_BASE = 0x2C5EAB0300000000
_CA_BASE = 0xE09D730300000000
_AN_BASE = 0x2C5EAB0400000000


@dataclass
class GenSpec:
    hosts: int = 64
    rails: int = 8
    su_size: int = 8
    tiers: int = 2
    radix: int = 64
    sharp: int = 0  # number of switches exposing a SHARP aggregation node (-1: all)
    unnamed: int = 0  # HCAs left with the firmware default description
    cut_cables: int = 0  # host-to-leaf cables removed (the HCA then is not discovered)
    storage: int = 0  # storage hosts on their own leaf (rail 0 spine group)
    seed: int = 0
    name_format: str = "gpu{:03d}"
    storage_format: str = "stor{:02d}"
    su_per_pod: int = 0  # 3 tiers: SUs per pod (0: radix // 2 // rails-independent default)
    nvl_domain: int = 0  # hosts per NVLink domain (0: su_size)
    gpu_product: str = "NVIDIA-H100-80GB-HBM3"
    gpus: int = 8
    cpu: str = "224"
    memory: str = "2113363548Ki"
    pods: str = "110"


@dataclass
class GenNode:
    guid: int
    kind: str  # "S" or "H"
    desc: str
    lid: int
    ports: dict[int, tuple[int, int]] = field(default_factory=dict)  # port -> (node index, port)


@dataclass
class GenFabric:
    spec: GenSpec
    nodes: list[GenNode]
    host_names: list[str]
    cut: list[tuple[str, int]]
    unnamed: list[tuple[str, int]]
    domains: dict[str, str]


def _hca_dev(rail: int, rails: int) -> str:
    return f"mlx5_{rail}"


def generate(spec: GenSpec) -> GenFabric:
    if spec.hosts < 1 or spec.rails < 1 or spec.su_size < 1 or spec.tiers not in (2, 3) or spec.radix < 4:
        raise ValueError("hosts, rails, su_size >= 1, tiers 2 or 3, radix >= 4")
    rng = random.Random(spec.seed)
    nodes: list[GenNode] = []
    next_lid = [1]

    def add(kind: str, guid: int, desc: str) -> int:
        nodes.append(GenNode(guid, kind, desc, next_lid[0]))
        next_lid[0] += 1
        return len(nodes) - 1

    free_port: dict[int, int] = {}

    def connect(a: int, b: int) -> None:
        pa = free_port.get(a, 1)
        pb = free_port.get(b, 1)
        free_port[a] = pa + 1
        free_port[b] = pb + 1
        nodes[a].ports[pa] = (b, pb)
        nodes[b].ports[pb] = (a, pa)

    sw_count = [0]

    def switch(name: str) -> int:
        i = add("S", _SW_BASE + sw_count[0], f"MF0;{name}:{SWITCH_MODEL}")
        sw_count[0] += 1
        return i

    n_su = (spec.hosts + spec.su_size - 1) // spec.su_size
    half = spec.radix // 2
    uplinks = min(spec.su_size, max(1, spec.radix - spec.su_size))
    leaves: list[list[int]] = []  # [su][rail]
    for s in range(n_su):
        leaves.append([switch(f"su{s + 1:02d}-leaf-r{r + 1}") for r in range(spec.rails)])
    storage_leaf = switch("storage-leaf-01") if spec.storage else None

    # upper tiers, per rail plane
    if spec.tiers == 2:
        per_rail = max(1, -(-n_su * uplinks // spec.radix))
        for r in range(spec.rails):
            spines = [switch(f"spine-r{r + 1}-{j + 1:02d}") for j in range(per_rail)]
            for s in range(n_su):
                for u in range(uplinks):
                    connect(leaves[s][r], spines[u % per_rail])
            if storage_leaf is not None and r == 0:
                for j in range(per_rail):
                    connect(storage_leaf, spines[j])
    else:
        su_per_pod = spec.su_per_pod or half
        su_per_pod = max(1, min(su_per_pod, n_su))
        n_pod = (n_su + su_per_pod - 1) // su_per_pod
        per_pod = max(1, -(-su_per_pod * uplinks // half))
        core_n = max(1, -(-n_pod * per_pod * half // spec.radix))
        for r in range(spec.rails):
            cores = [switch(f"core-r{r + 1}-{j + 1:02d}") for j in range(core_n)]
            for p in range(n_pod):
                spines = [switch(f"pod{p + 1:02d}-spine-r{r + 1}-{j + 1:02d}") for j in range(per_pod)]
                for s in range(p * su_per_pod, min(n_su, (p + 1) * su_per_pod)):
                    for u in range(uplinks):
                        connect(leaves[s][r], spines[u % per_pod])
                for j, sp in enumerate(spines):
                    for u in range(half):
                        connect(sp, cores[(j * half + u) % core_n])
                if storage_leaf is not None and r == 0 and p == 0:
                    for sp in spines:
                        connect(storage_leaf, sp)

    # hosts
    names = [spec.name_format.format(i + 1) for i in range(spec.hosts)]
    hcas = [(h, r) for h in range(spec.hosts) for r in range(spec.rails)]
    cut = set(rng.sample(hcas, min(spec.cut_cables, len(hcas)))) if spec.cut_cables else set()
    rest = [x for x in hcas if x not in cut]
    unnamed = set(rng.sample(rest, min(spec.unnamed, len(rest)))) if spec.unnamed else set()
    ca_count = 0
    for h in range(spec.hosts):
        s = h // spec.su_size
        for r in range(spec.rails):
            guid = _CA_BASE + ca_count
            ca_count += 1
            if (h, r) in cut:
                continue
            desc = FIRMWARE_DESC if (h, r) in unnamed else f"{names[h]} {_hca_dev(r, spec.rails)}"
            ca = add("H", guid, desc)
            connect(leaves[s][r], ca)
    for i in range(spec.storage):
        ca = add("H", _CA_BASE + 0x100000 + i, f"{spec.storage_format.format(i + 1)} mlx5_0")
        connect(storage_leaf, ca)  # type: ignore[arg-type]
    # SHARP aggregation nodes on the last port of the first N switches
    n_sharp = sw_count[0] if spec.sharp < 0 else min(spec.sharp, sw_count[0])
    sw_idx = [i for i, n in enumerate(nodes) if n.kind == "S"][:n_sharp]
    for k, i in enumerate(sw_idx):
        an = add("H", _AN_BASE + k, SHARP_DESC)
        port = max(spec.radix + 1, free_port.get(i, 1))
        free_port[i] = port
        connect(i, an)

    dom_size = spec.nvl_domain or spec.su_size
    cluster = uuid.uuid5(uuid.NAMESPACE_DNS, f"gpufleet-fabric-gen-{spec.seed}")
    domains = {names[h]: f"{cluster}.{h // dom_size + 1}" for h in range(spec.hosts)}
    return GenFabric(
        spec,
        nodes,
        names,
        sorted((names[h], r) for h, r in cut),
        sorted((names[h], r) for h, r in unnamed),
        domains,
    )


_HEAD = "#\n# Topology file: generated on Mon Jan  5 00:00:00 2026\n#\n# Initiated from node {g:016x} port {g:016x}\n\n"


def planes(g: GenFabric) -> list[list[int]]:
    """Node indexes of each subnet (connected component): one per rail plane in a rail-optimized fabric.

    A real ``ibnetdiscover`` run sees only the subnet of the HCA port it runs from.
    """
    seen = [False] * len(g.nodes)
    out: list[list[int]] = []
    for start in range(len(g.nodes)):
        if seen[start] or g.nodes[start].kind != "S":
            continue
        comp, stack = [], [start]
        seen[start] = True
        while stack:
            i = stack.pop()
            comp.append(i)
            for j, _rport in g.nodes[i].ports.values():
                if not seen[j]:
                    seen[j] = True
                    stack.append(j)
        out.append(sorted(comp))
    return out


def render_ibnetdiscover(g: GenFabric, subset: list[int] | None = None) -> str:
    """The default ``ibnetdiscover`` format (switches first, then CAs, like the real tool)."""
    nodes = g.nodes
    idx = range(len(nodes)) if subset is None else subset
    out: list[str] = []
    first = next((nodes[i] for i in idx if nodes[i].kind == "H"), nodes[idx[0]])
    out.append(_HEAD.format(g=first.guid))
    for i in idx:
        n = nodes[i]
        if n.kind != "S":
            continue
        nports = max(g.spec.radix, *n.ports) if n.ports else g.spec.radix
        out.append(f"vendid=0x2c9\ndevid=0xd2f2\nsysimgguid=0x{n.guid:x}\nswitchguid=0x{n.guid:x}(0x{n.guid:x})\n")
        out.append(f'Switch\t{nports + 1} "S-{n.guid:016x}"\t\t# "{n.desc}" enhanced port 0 lid {n.lid} lmc 0\n')
        for p in sorted(n.ports):
            ri, rp = n.ports[p]
            r = nodes[ri]
            if r.kind == "S":
                out.append(f'[{p}]\t"S-{r.guid:016x}"[{rp}]\t\t# "{r.desc}" lid {r.lid} 4xNDR\n')
            else:
                out.append(f'[{p}]\t"H-{r.guid:016x}"[{rp}]({r.guid:016x}) \t\t# "{r.desc}" lid {r.lid} 4xNDR\n')
        out.append("\n")
    for i in idx:
        n = nodes[i]
        if n.kind != "H":
            continue
        out.append(f"vendid=0x2c9\ndevid=0x1021\nsysimgguid=0x{n.guid:x}\ncaguid=0x{n.guid:x}\n")
        out.append(f'Ca\t{max(1, len(n.ports))} "H-{n.guid:016x}"\t\t# "{n.desc}"\n')
        for p in sorted(n.ports):
            ri, rp = n.ports[p]
            r = nodes[ri]
            out.append(
                f'[{p}]({n.guid:016x}) \t"S-{r.guid:016x}"[{rp}]\t\t# lid {n.lid} lmc 0 "{r.desc}" lid {r.lid} 4xNDR\n'
            )
        out.append("\n")
    return "".join(out)


def render_ports(g: GenFabric, subset: list[int] | None = None) -> str:
    """The ``ibnetdiscover -p`` ports report (ports walked high to low, as the tool does)."""
    nodes = g.nodes
    out: list[str] = []
    for i in range(len(nodes)) if subset is None else subset:
        n = nodes[i]
        t = "SW" if n.kind == "S" else "CA"
        for p in sorted(n.ports, reverse=True):
            ri, rp = n.ports[p]
            r = nodes[ri]
            rt = "SW" if r.kind == "S" else "CA"
            out.append(
                f"{t:>2} {n.lid:5d} {p:2d} 0x{n.guid:016x} 4x NDR - {rt:>2} {r.lid:5d} {rp:2d} 0x{r.guid:016x}"
                f" ( '{n.desc}' - '{r.desc}' )\n"
            )
    return "".join(out)


def nodes_snapshot(g: GenFabric) -> dict:
    """Kubernetes ``kind: List`` of ``v1 Node`` objects for the generated hosts, sorted by name."""
    s = g.spec
    items = []
    for name in sorted(g.host_names):
        res = {"cpu": s.cpu, "memory": s.memory, "nvidia.com/gpu": str(s.gpus), "pods": s.pods}
        items.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": {
                        "kubernetes.io/hostname": name,
                        "kubernetes.io/os": "linux",
                        "nvidia.com/gpu.clique": g.domains[name],
                        "nvidia.com/gpu.count": str(s.gpus),
                        "nvidia.com/gpu.present": "true",
                        "nvidia.com/gpu.product": s.gpu_product,
                    },
                },
                "status": {"allocatable": dict(res), "capacity": dict(res)},
            }
        )
    return {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}
