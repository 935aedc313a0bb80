"""Render slurm.conf and gres.conf content for one Slurm cluster from plain data.

Used by the GitOps renderer (Slinky ``configFiles`` / ``extraConf``) and by the real-Slurm tests.
Output is deterministic: fixed order of global keys, nodes grouped by identical attributes and
written as compressed hostlists in Slurm's own order, partitions sorted by name, no timestamps.
``GresTypes=gpu`` is always written explicitly (the Slinky operator does not set it).

Bad input raises :class:`SlurmConfError` naming the key path (``nodes[3].gpus``) and, when the
caller passes it, the source file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.hostlist import HostlistError, compress, expand

__all__ = [
    "TOPOLOGY_PARAMS",
    "TOPOLOGY_PLUGINS",
    "SlurmCluster",
    "SlurmConfError",
    "SlurmNode",
    "SlurmPartition",
    "render_gres_conf",
    "render_node_lines",
    "render_partition_lines",
    "render_slurm_conf",
]

#: topology plugins known to Slurm (topology/block needs 23.11+, topology/ring 26.05+)
TOPOLOGY_PLUGINS = ("topology/tree", "topology/block", "topology/flat", "topology/ring", "topology/none")
#: TopologyParam values (slurm.conf(5), TopologyParam); TopoMaxSizeUnroll takes "=<n>"
TOPOLOGY_PARAMS = (
    "Dragonfly",
    "RouteTree",
    "RoutePart",
    "SwitchAsNodeRank",
    "BlockAsNodeRank",
    "TopoOptional",
    "TopoMaxSizeUnroll",
)

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")
_VALUE_BAD = re.compile(r"[\s#]")
_NODE_KEYS_OWNED = {
    "nodename",
    "cpus",
    "realmemory",
    "gres",
    "port",
    "features",
    "feature",
    "sockets",
    "corespersocket",
    "threadspercore",
    "weight",
    "nodeaddr",
    "nodehostname",
}
_PART_KEYS_OWNED = {"partitionname", "nodes", "default"}
_GLOBAL_KEYS_OWNED = {
    "clustername",
    "slurmctldhost",
    "slurmctldport",
    "topologyplugin",
    "topologyparam",
    "grestypes",
}


class SlurmConfError(GpufleetError, ValueError):
    """The cluster data cannot become a valid slurm.conf; names the key path (and file if known)."""

    def __init__(self, path: str, message: str, source: str | None = None):
        self.path = path
        self.source = source
        where = f"{source}: " if source else ""
        super().__init__(f"{where}{path}: {message}")


@dataclass(frozen=True)
class SlurmNode:
    """One node, or several identical ones when ``name`` is a hostlist expression."""

    name: str
    cpus: int | None = None
    memory_mb: int | None = None  # RealMemory
    gpus: int = 0
    gpu_type: str | None = None
    port: int | None = None  # only for emulated nodes (several slurmd on one host)
    features: Sequence[str] = ()
    sockets: int | None = None
    cores_per_socket: int | None = None
    threads_per_core: int | None = None
    weight: int | None = None
    node_addr: str | None = None
    node_hostname: str | None = None
    options: Mapping[str, str | int] = field(default_factory=dict)


@dataclass(frozen=True)
class SlurmPartition:
    name: str
    nodes: str | Sequence[str]  # hostlist expression or names; "ALL" allowed
    default: bool = False
    options: Mapping[str, str | int | bool] = field(default_factory=dict)  # MaxTime=, State=, ...


@dataclass(frozen=True)
class SlurmCluster:
    name: str
    control_host: str
    nodes: Sequence[SlurmNode]
    partitions: Sequence[SlurmPartition]
    control_addr: str | None = None
    control_port: int | None = None
    topology_plugin: str | None = "topology/tree"
    topology_param: Sequence[str] = ()
    gres_types: Sequence[str] = ("gpu",)
    options: Mapping[str, str | int | bool] = field(default_factory=dict)  # further global keys


# ----------------------------------------------------------------------------------------------
# helpers


def _fmt(value: str | int | bool) -> str:
    if isinstance(value, bool):
        return "YES" if value else "NO"
    return str(value)


def _check_value(path: str, value: object, source: str | None) -> str:
    if isinstance(value, list) and value and all(isinstance(v, (str, int)) for v in value):
        # the Slinky chart's partition configMap takes map[string][]string: a list is comma-joined
        value = ",".join(_fmt(v) for v in value)
    if not isinstance(value, (str, int)):
        raise SlurmConfError(path, f"expected a string, number or boolean, got {type(value).__name__}", source)
    text = _fmt(value)
    if text == "" or _VALUE_BAD.search(text):
        raise SlurmConfError(path, f"value {text!r} is empty or contains whitespace or '#'", source)
    return text


def _check_options(
    path: str, options: Mapping[str, object], owned: set[str], source: str | None
) -> list[tuple[str, str]]:
    if not isinstance(options, Mapping):
        raise SlurmConfError(path, "expected a mapping of Slurm keys to values", source)
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for key in sorted(options, key=str.lower):
        if not isinstance(key, str) or not _KEY.match(key):
            raise SlurmConfError(f"{path}.{key}", "not a Slurm configuration key", source)
        low = key.lower()
        if low in owned:
            raise SlurmConfError(f"{path}.{key}", "set by a dedicated field, not through options", source)
        if low in seen:
            raise SlurmConfError(f"{path}.{key}", "given twice (keys are case-insensitive)", source)
        seen.add(low)
        out.append((key, _check_value(f"{path}.{key}", options[key], source)))
    return out


def _positive(path: str, value: object, source: str | None, zero: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < (0 if zero else 1):
        raise SlurmConfError(path, f"expected an integer {'>= 0' if zero else '>= 1'}, got {value!r}", source)
    return value


def _names(path: str, spec: str | Sequence[str], source: str | None) -> list[str]:
    items = [spec] if isinstance(spec, str) else list(spec)
    out: list[str] = []
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise SlurmConfError(f"{path}[{i}]" if not isinstance(spec, str) else path, "expected a string", source)
        try:
            out.extend(expand(item))
        except HostlistError as e:
            raise SlurmConfError(path, str(e), source) from None
    for name in out:
        if not _NAME.match(name):
            raise SlurmConfError(path, f"node name {name!r} must be letters, digits, '.', '_' or '-'", source)
    return out


# ----------------------------------------------------------------------------------------------
# nodes


def _node_attrs(i: int, node: SlurmNode, source: str | None) -> tuple[tuple[str, str], ...]:
    """Everything of a NodeName line except the name, in a fixed order."""
    p = f"nodes[{i}]"
    attrs: list[tuple[str, str]] = []
    if node.node_hostname is not None:
        attrs.append(("NodeHostname", _check_value(f"{p}.node_hostname", node.node_hostname, source)))
    if node.node_addr is not None:
        attrs.append(("NodeAddr", _check_value(f"{p}.node_addr", node.node_addr, source)))
    if node.port is not None:
        port = _positive(f"{p}.port", node.port, source)
        if port > 65535:
            raise SlurmConfError(f"{p}.port", f"{port} is not a TCP port", source)
        attrs.append(("Port", str(port)))
    if node.cpus is not None:
        attrs.append(("CPUs", str(_positive(f"{p}.cpus", node.cpus, source))))
    for key, attr in (
        ("Sockets", "sockets"),
        ("CoresPerSocket", "cores_per_socket"),
        ("ThreadsPerCore", "threads_per_core"),
    ):
        value = getattr(node, attr)
        if value is not None:
            attrs.append((key, str(_positive(f"{p}.{attr}", value, source))))
    if node.memory_mb is not None:
        attrs.append(("RealMemory", str(_positive(f"{p}.memory_mb", node.memory_mb, source))))
    gpus = _positive(f"{p}.gpus", node.gpus, source, zero=True)
    if node.gpu_type is not None and not gpus:
        raise SlurmConfError(f"{p}.gpu_type", "given for a node without GPUs", source)
    if gpus:
        gtype = f"{_check_value(f'{p}.gpu_type', node.gpu_type, source)}:" if node.gpu_type is not None else ""
        if ":" in gtype[:-1] or "," in gtype:
            raise SlurmConfError(f"{p}.gpu_type", "must not contain ':' or ','", source)
        attrs.append(("Gres", f"gpu:{gtype}{gpus}"))
    if node.features:
        if isinstance(node.features, str):
            raise SlurmConfError(f"{p}.features", "expected a list of feature names", source)
        feats = []
        for j, f in enumerate(node.features):
            text = _check_value(f"{p}.features[{j}]", f, source)
            if "," in text or not re.match(r"^[A-Za-z0-9._-]+$", text):
                raise SlurmConfError(
                    f"{p}.features[{j}]", f"feature {text!r} must be letters, digits, '.', '_', '-'", source
                )
            feats.append(text)
        attrs.append(("Features", ",".join(sorted(set(feats)))))
    if node.weight is not None:
        attrs.append(("Weight", str(_positive(f"{p}.weight", node.weight, source))))
    attrs.extend(_check_options(f"{p}.options", node.options, _NODE_KEYS_OWNED, source))
    return tuple(attrs)


def _node_groups(nodes: Sequence[SlurmNode], source: str | None) -> list[tuple[list[str], tuple[tuple[str, str], ...]]]:
    """[(names, attrs)]: nodes with identical attributes share one NodeName line (Port differs per node)."""
    if isinstance(nodes, (str, Mapping)):
        raise SlurmConfError("nodes", "expected a list of nodes", source)
    by_attrs: dict[tuple[tuple[str, str], ...], list[str]] = {}
    owner: dict[str, int] = {}
    for i, node in enumerate(nodes):
        if not isinstance(node, SlurmNode):
            raise SlurmConfError(f"nodes[{i}]", f"expected SlurmNode, got {type(node).__name__}", source)
        names = _names(f"nodes[{i}].name", node.name, source)
        if not names:
            raise SlurmConfError(f"nodes[{i}].name", "names no node", source)
        if node.port is not None and len(names) > 1:
            raise SlurmConfError(f"nodes[{i}].port", "a Port belongs to one node; give one entry per node", source)
        for n in names:
            if n in owner:
                raise SlurmConfError(f"nodes[{i}].name", f"node {n!r} already defined by nodes[{owner[n]}]", source)
            owner[n] = i
        by_attrs.setdefault(_node_attrs(i, node, source), []).extend(names)
    groups: list[tuple[list[str], tuple[tuple[str, str], ...]]] = []
    for attrs, names in by_attrs.items():
        if any(k == "Port" for k, _value in attrs):
            groups.extend(([n], attrs) for n in names)
        else:
            groups.append((names, attrs))
    # order by the first node of each group in Slurm's hostlist order
    order = {n: k for k, n in enumerate(expand(compress(owner)))}
    groups.sort(key=lambda g: min(order[n] for n in g[0]))
    return groups


def render_node_lines(nodes: Sequence[SlurmNode], source: str | None = None) -> str:
    """``NodeName=...`` lines, one per group of identical nodes (one per node when Port is set)."""
    lines = []
    for names, attrs in _node_groups(nodes, source):
        lines.append(" ".join([f"NodeName={compress(names)}", *(f"{k}={v}" for k, v in attrs)]))
    return "".join(line + "\n" for line in lines)


# ----------------------------------------------------------------------------------------------
# partitions


def render_partition_lines(
    partitions: Sequence[SlurmPartition], known_nodes: Iterable[str] | None = None, source: str | None = None
) -> str:
    """``PartitionName=...`` lines sorted by name; node lists compressed; at most one default."""
    if isinstance(partitions, (str, Mapping)):
        raise SlurmConfError("partitions", "expected a list of partitions", source)
    known = set(known_nodes) if known_nodes is not None else None
    seen: dict[str, int] = {}
    defaults: list[str] = []
    rows: list[tuple[str, str]] = []
    for i, part in enumerate(partitions):
        p = f"partitions[{i}]"
        if not isinstance(part, SlurmPartition):
            raise SlurmConfError(p, f"expected SlurmPartition, got {type(part).__name__}", source)
        if not isinstance(part.name, str) or not _NAME.match(part.name) or part.name.upper() == "DEFAULT":
            raise SlurmConfError(f"{p}.name", f"invalid partition name {part.name!r}", source)
        if part.name in seen:
            raise SlurmConfError(
                f"{p}.name", f"partition {part.name!r} already defined by partitions[{seen[part.name]}]", source
            )
        seen[part.name] = i
        if part.nodes == "ALL":
            nodes_text = "ALL"
        else:
            names = _names(f"{p}.nodes", part.nodes, source)
            if not names:
                raise SlurmConfError(f"{p}.nodes", "partition without nodes", source)
            if known is not None:
                unknown = sorted(set(names) - known)
                if unknown:
                    raise SlurmConfError(f"{p}.nodes", f"nodes not defined in slurm.conf: {compress(unknown)}", source)
            nodes_text = compress(names)
        if not isinstance(part.default, bool):
            raise SlurmConfError(f"{p}.default", "expected true or false", source)
        if part.default:
            defaults.append(part.name)
        fields = [f"PartitionName={part.name}", f"Nodes={nodes_text}"]
        if part.default:
            fields.append("Default=YES")
        fields += [f"{k}={v}" for k, v in _check_options(f"{p}.options", part.options, _PART_KEYS_OWNED, source)]
        rows.append((part.name, " ".join(fields)))
    if len(defaults) > 1:
        raise SlurmConfError("partitions", f"more than one default partition: {', '.join(sorted(defaults))}", source)
    return "".join(line + "\n" for _name, line in sorted(rows))


# ----------------------------------------------------------------------------------------------
# whole files


def _topology_lines(cluster: SlurmCluster, source: str | None) -> list[str]:
    lines = []
    if cluster.topology_plugin is not None:
        if cluster.topology_plugin not in TOPOLOGY_PLUGINS:
            raise SlurmConfError(
                "topology_plugin", f"{cluster.topology_plugin!r} is not one of {', '.join(TOPOLOGY_PLUGINS)}", source
            )
        lines.append(f"TopologyPlugin={cluster.topology_plugin}")
    if cluster.topology_param:
        if isinstance(cluster.topology_param, str):
            raise SlurmConfError("topology_param", "expected a list", source)
        params = []
        for i, param in enumerate(cluster.topology_param):
            name = str(param).split("=", 1)[0]
            if name not in TOPOLOGY_PARAMS:
                raise SlurmConfError(f"topology_param[{i}]", f"unknown TopologyParam {param!r}", source)
            if name == "TopoMaxSizeUnroll" and not re.match(r"^TopoMaxSizeUnroll=\d+$", str(param)):
                raise SlurmConfError(f"topology_param[{i}]", "TopoMaxSizeUnroll needs '=<number>'", source)
            if name in ("Dragonfly", "RouteTree") and cluster.topology_plugin != "topology/tree":
                raise SlurmConfError(f"topology_param[{i}]", f"{name} works only with topology/tree", source)
            params.append(str(param))
        lines.append(f"TopologyParam={','.join(sorted(set(params)))}")
    return lines


def render_slurm_conf(cluster: SlurmCluster, source: str | None = None) -> str:
    """A complete slurm.conf body for ``cluster`` (global keys, nodes, partitions)."""
    if not isinstance(cluster.name, str) or not re.match(r"^[a-z0-9][a-z0-9_-]{0,39}$", cluster.name):
        raise SlurmConfError("name", f"cluster name {cluster.name!r}: lower-case letters, digits, '_', '-'", source)
    host = _check_value("control_host", cluster.control_host, source)
    if cluster.control_addr is not None:
        host += f"({_check_value('control_addr', cluster.control_addr, source)})"
    out = [
        "# slurm.conf rendered by gpufleet; edit the inventory, not this file",
        f"ClusterName={cluster.name}",
        f"SlurmctldHost={host}",
    ]
    if cluster.control_port is not None:
        port = _positive("control_port", cluster.control_port, source)
        if port > 65535:
            raise SlurmConfError("control_port", f"{port} is not a TCP port", source)
        out.append(f"SlurmctldPort={port}")
    out += _topology_lines(cluster, source)
    gres = list(cluster.gres_types)
    if isinstance(cluster.gres_types, str) or any(not isinstance(g, str) or not _NAME.match(g) for g in gres):
        raise SlurmConfError("gres_types", "expected a list of GRES names", source)
    if gres:
        out.append(f"GresTypes={','.join(sorted(set(gres)))}")
    out += [f"{k}={v}" for k, v in _check_options("options", cluster.options, _GLOBAL_KEYS_OWNED, source)]
    nodes = render_node_lines(cluster.nodes, source)
    if any(n.gpus for n in cluster.nodes) and "gpu" not in gres:
        raise SlurmConfError("gres_types", "nodes have GPUs but 'gpu' is not in GresTypes", source)
    names = [n for line in nodes.splitlines() for n in expand(line.split()[0].split("=", 1)[1])]
    parts = render_partition_lines(cluster.partitions, known_nodes=names, source=source)
    return "\n".join(out) + "\n" + nodes + parts


def render_gres_conf(
    nodes: Sequence[SlurmNode],
    *,
    autodetect: str | None = None,
    device_path: str = "/dev/nvidia",
    source: str | None = None,
) -> str:
    """gres.conf for the GPU nodes.

    With ``autodetect`` (``"nvidia"``, ``"nvml"``, ...) a single ``AutoDetect=`` line; otherwise one
    line per group of identical GPU nodes naming the device files
    ``<device_path>[0-<gpus-1>]``. Slurm 22.05 drops a GPU GRES without ``File=`` ("Removing
    file-less GPU"), so a bare ``Count=`` is never written for GPUs.
    """
    lines = ["# gres.conf rendered by gpufleet"]
    if autodetect is not None:
        if autodetect not in ("nvidia", "nvml", "rsmi", "oneapi", "off"):
            raise SlurmConfError("autodetect", f"unknown AutoDetect value {autodetect!r}", source)
        lines.append(f"AutoDetect={autodetect}")
        if autodetect != "off":
            return "\n".join(lines) + "\n"
    if not re.match(r"^/[A-Za-z0-9._/-]*[A-Za-z_.-]$", device_path):
        raise SlurmConfError("device_path", f"{device_path!r} must be an absolute path not ending in a digit", source)
    by_gres: dict[str, list[str]] = {}
    for names, attrs in _node_groups(nodes, source):
        gres = dict(attrs).get("Gres")
        if gres is not None:
            by_gres.setdefault(gres, []).extend(names)
    rows = []
    for gres, names in by_gres.items():
        parts = gres.split(":")
        count = int(parts[-1])
        gtype = f" Type={parts[1]}" if len(parts) == 3 else ""
        files = f"{device_path}[0-{count - 1}]" if count > 1 else f"{device_path}0"
        hl = compress(names)
        rows.append((expand(hl)[0], f"NodeName={hl} Name=gpu{gtype} File={files}"))
    order = {n: k for k, n in enumerate(expand(compress([r[0] for r in rows])))}
    lines += [line for _first, line in sorted(rows, key=lambda r: order[r[0]])]
    return "\n".join(lines) + "\n"
