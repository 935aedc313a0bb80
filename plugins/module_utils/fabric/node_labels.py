"""Fabric from Kubernetes Node labels (a ``kind: List`` of Nodes, as ``kubectl get nodes -o yaml``).

Recognised label schemes (docs/adr/topology.md, Inputs), first match per node wins:

* topograph ``fabric.topograph.run/tier-N`` (0 = closest switch), ``accelerator.topograph.run/domain``
* Nebius ``topology.nebius.com/tier-1..N`` (tier-0 is the NVLink/block level)
* EKS ``topology.k8s.aws/network-node-layer-1`` (top) .. ``-4``
* GKE ``cloud.google.com/gce-topology-block`` > ``-subblock``
* OKE ``oci.oraclecloud.com/rdma.hpc_island_id`` > ``network_block_id`` > ``local_block_id``

Accelerator (NVLink) domains: ``nvidia.com/gpu.clique`` (GPU Feature Discovery), the topograph
domain label, ``topology.nebius.com/tier-0`` / ``nvl-instance-group-id``, EKS ``ultraserver-id``.
Each label value becomes a switch (named ``<value>``), linked to the value one level up.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.deps import missing
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.model import HOST, Fabric, FabricError
from ansible_collections.gpufleet.core.plugins.module_utils.yaml_dump import safe_load

try:
    import yaml
except ImportError:  # importing works without it; the first use raises a clear error
    yaml = missing("yaml", "PyYAML")

_TOPOGRAPH = re.compile(r"^fabric\.topograph\.run/tier-(\d+)$")
_NEBIUS = re.compile(r"^topology\.nebius\.com/tier-(\d+)$")
_EKS = re.compile(r"^topology\.k8s\.aws/network-node-layer-(\d+)$")
_GKE = ("cloud.google.com/gce-topology-block", "cloud.google.com/gce-topology-subblock")
_OKE = (
    "oci.oraclecloud.com/rdma.hpc_island_id",
    "oci.oraclecloud.com/rdma.network_block_id",
    "oci.oraclecloud.com/rdma.local_block_id",
)
DOMAIN_LABELS = (
    "nvidia.com/gpu.clique",
    "accelerator.topograph.run/domain",
    "topology.nebius.com/nvl-instance-group-id",
    "topology.nebius.com/tier-0",
    "topology.k8s.aws/ultraserver-id",
)


def fabric_path(labels: Mapping[str, str]) -> tuple[str, list[str]] | None:
    """(scheme, [top, ..., leaf]) switch path for one node, or None without fabric labels."""
    tiers: dict[int, str] = {}
    for k, v in labels.items():
        m = _TOPOGRAPH.match(k)
        if m and v:
            tiers[int(m.group(1))] = str(v)
    if tiers:
        return "topograph", [tiers[i] for i in sorted(tiers, reverse=True)]
    for k, v in labels.items():
        m = _NEBIUS.match(k)
        if m and v and int(m.group(1)) >= 1:
            tiers[int(m.group(1))] = str(v)
    if tiers:
        return "nebius", [tiers[i] for i in sorted(tiers, reverse=True)]
    for k, v in labels.items():
        m = _EKS.match(k)
        if m and v:
            tiers[int(m.group(1))] = str(v)
    if tiers:
        return "eks", [tiers[i] for i in sorted(tiers)]
    gke = [str(labels[k]) for k in _GKE if labels.get(k)]
    if gke:
        return "gke", gke
    oke = [str(labels[k]) for k in _OKE if labels.get(k)]
    if oke:
        return "oke", oke
    return None


def node_domain(labels: Mapping[str, str]) -> str | None:
    for k in DOMAIN_LABELS:
        v = labels.get(k)
        if v:
            return str(v)
    return None


def _items(doc: Any, source: str) -> list[dict]:
    if isinstance(doc, list):
        items = doc
    elif isinstance(doc, dict) and doc.get("kind") == "Node":
        items = [doc]
    elif isinstance(doc, dict) and isinstance(doc.get("items"), list):
        items = doc["items"]
    else:
        raise FabricError("expected a Kubernetes List of Nodes (kind: List, items: [...])", source, 1)
    for i, it in enumerate(items):
        if not isinstance(it, dict) or not isinstance(it.get("metadata"), dict) or not it["metadata"].get("name"):
            raise FabricError("Node without metadata.name", source, None, f"items[{i}]")
        labels = it["metadata"].get("labels") or {}
        if not isinstance(labels, dict):
            raise FabricError("metadata.labels must be a mapping", source, None, f"items[{i}].metadata.labels")
    return items


def parse_nodes_text(text: str, source: str = "<text>") -> Fabric:
    try:
        doc = json.loads(text) if text.lstrip().startswith("{") else yaml.safe_load(text)
    except json.JSONDecodeError as e:
        raise FabricError(f"JSON: {e.msg}", source, e.lineno) from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        raise FabricError(f"YAML: {e.problem or e}", source, mark.line + 1 if mark else None) from None
    except (yaml.YAMLError, RecursionError) as e:
        raise FabricError(f"YAML: {e}", source) from None
    return fabric_from_nodes(doc, source)


def fabric_from_nodes(doc: Any, source: str = "<nodes>") -> Fabric:
    """Build a :class:`Fabric` from Node objects (dicts); nodes without fabric labels only give domains."""
    fab = Fabric(source=source, kind="labels")
    for it in _items(doc, source):
        name = str(it["metadata"]["name"])
        labels = {str(k): str(v) for k, v in (it["metadata"].get("labels") or {}).items()}
        dom = node_domain(labels)
        if dom:
            fab.domains[name] = dom
        got = fabric_path(labels)
        if got is None:
            continue
        scheme, path = got
        ids = [f"{scheme}:{len(path) - 1 - i}:{v}" for i, v in enumerate(path)]
        for i, v in enumerate(path):
            sid = ids[i]
            s = fab.switch(sid, v)
            s.name = v
            if i:
                fab.link_switches(ids[i - 1], sid)
        ca = fab.ca("H-" + name, f"{name} labels")
        ca.kind, ca.host, ca.device = HOST, name, "labels"
        fab.link_ca(ca.id, ids[-1])
    return fab.finish()


def domains_from_nodes(doc: Any, source: str = "<nodes>") -> dict[str, str]:
    """node -> accelerator domain (NVLink clique) from a Node list."""
    out: dict[str, str] = {}
    for it in _items(doc, source):
        labels = it["metadata"].get("labels") or {}
        dom = node_domain({str(k): str(v) for k, v in labels.items()})
        if dom:
            out[str(it["metadata"]["name"])] = dom
    return out


def load_nodes(path_or_text: str) -> Any:
    """Read a Node list file (YAML or JSON) into Python objects."""
    p = Path(path_or_text)
    source = str(p) if "\n" not in path_or_text and p.is_file() else "<text>"
    text = p.read_text(encoding="utf-8") if source != "<text>" else path_or_text
    try:
        return safe_load(text)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        raise FabricError(f"YAML: {e.problem or e}", source, mark.line + 1 if mark else None) from None
    except yaml.YAMLError as e:
        raise FabricError(f"YAML: {e}", source) from None
