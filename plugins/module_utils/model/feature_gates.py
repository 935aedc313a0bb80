"""The Kubernetes feature gates the rendered components ask for, judged at the pinned Kubernetes version.

A component that runs with an alpha gate needs an API or behaviour that Kubernetes may change or drop
in any release, and that managed clusters often refuse; a gate locked to its default stops the binary
at start; a name Kubernetes does not know stops it too. So every ``--feature-gates`` a rendered
component passes is read here and judged with :data:`feature_gate_table.GATES` (generated from the
Kubernetes source at the pinned version, tools/feature_gates.py):

- an unknown gate, a malformed ``--feature-gates`` value, or a locked gate set against its default is
  an error;
- an alpha gate turned on is an error unless the platform lists it in
  ``gpufleet_clusters[].allow_alpha_feature_gates`` (platform-owned, with a reason); the review names
  every alpha gate a cluster then runs with.

Where the gates come from: the tenant vCluster's control plane arguments
(``controlPlane.distro.k8s.<apiServer|controllerManager|scheduler>.extraArgs`` and ``.command``, which
only the platform's ``tenant_overrides`` can set; tenants' own values have no such key), and the
slurm-bridge scheduler of every tenant the platform turns the bridge on for (its chart fixes its gates:
``bridge_model.SCHEDULER_FEATURE_GATES``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import Issue
from ansible_collections.gpufleet.core.plugins.module_utils.model.bridge_model import SCHEDULER_FEATURE_GATES
from ansible_collections.gpufleet.core.plugins.module_utils.model.feature_gate_table import GATES, KUBERNETES

FLAG = "--feature-gates="
VCLUSTER_PARTS = ("apiServer", "controllerManager", "scheduler")
# the meta gates of component-base's feature gate: they turn on every alpha (beta) gate
_META = {"AllAlpha": "ALPHA", "AllBeta": "BETA"}


@dataclass(frozen=True)
class Request:
    """One gate a rendered component asks for: where (the inventory key path that sets it), which
    component, the gate and its value."""

    path: tuple[str | int, ...]
    component: str
    gate: str
    value: bool


def maturity(gate: str) -> str | None:
    """ALPHA, BETA, GA or DEPRECATED at the pinned version; None for a gate Kubernetes does not know."""
    if gate in _META:
        return _META[gate]
    return GATES[gate][0] if gate in GATES else None


def parse_flag(arg: str) -> dict[str, bool] | str:
    """The gates of one ``--feature-gates=A=true,B=false`` argument, or why it does not parse (the way
    component-base reads it: comma separated ``Name=bool``, Go's ParseBool spellings)."""
    out: dict[str, bool] = {}
    for part in arg[len(FLAG) :].split(","):
        name, eq, val = part.strip().partition("=")
        low = val.strip()
        if not eq or not name.strip():
            return f"{part!r} is not Name=true|false"
        if low in ("1", "t", "T", "true", "TRUE", "True"):
            out[name.strip()] = True
        elif low in ("0", "f", "F", "false", "FALSE", "False"):
            out[name.strip()] = False
        else:
            return f"{part!r}: {val!r} is not a boolean"
    return out


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _vcluster_args(ci: int, tenant: str, values: Any) -> list[tuple[tuple[str | int, ...], str, str]]:
    """(path, component, argument) of every control-plane argument in one tenant's vCluster override."""
    k8s = _dict(_dict(_dict(_dict(values).get("controlPlane")).get("distro")).get("k8s"))
    base = ("gpufleet_clusters", ci, "tenant_overrides", tenant, "vcluster", "values", "controlPlane", "distro", "k8s")
    out = []
    for part in VCLUSTER_PARTS:
        for key in ("extraArgs", "command"):
            args = _dict(k8s.get(part)).get(key)
            for ai, arg in enumerate(args if isinstance(args, list) else []):
                if isinstance(arg, str) and arg.startswith(FLAG):
                    out.append(((*base, part, key, ai), f"vCluster {part} of tenant {tenant!r}", arg))
    return out


def cluster_args(ci: int, cluster: dict[str, Any]) -> list[tuple[tuple[str | int, ...], str, str]]:
    """(path, component, ``--feature-gates=`` argument) of every component the render gives the cluster."""
    out = []
    for tenant, ov in sorted(_dict(cluster.get("tenant_overrides")).items(), key=lambda kv: str(kv[0])):
        out += _vcluster_args(ci, tenant, _dict(_dict(ov).get("vcluster")).get("values"))
    for tenant in sorted(str(t) for t in _dict(cluster.get("slurm_bridge"))):
        path = ("gpufleet_clusters", ci, "slurm_bridge", tenant)
        out.append((path, f"slurm-bridge scheduler of tenant {tenant!r}", SCHEDULER_FEATURE_GATES))
    return out


def _allowed(cluster: dict[str, Any]) -> set[str]:
    """The alpha gates the platform allows the cluster's components (``allow_alpha_feature_gates``)."""
    entries = cluster.get("allow_alpha_feature_gates")
    return {
        e["gate"]
        for e in (entries if isinstance(entries, list) else [])
        if isinstance(e, dict) and isinstance(e.get("gate"), str)
    }


def _judge(raw: Any, req: Request, allowed: set[str]) -> Issue | None:
    stage = maturity(req.gate)
    where = f"{req.component}: feature gate {req.gate}"
    if stage is None:
        return raw.issue(req.path, f"{where} is not a feature gate of Kubernetes {KUBERNETES}: the component stops")
    if req.gate in GATES and GATES[req.gate][2] and req.value != GATES[req.gate][1]:
        return raw.issue(
            req.path,
            f"{where} is {stage} and locked to {str(GATES[req.gate][1]).lower()} at Kubernetes {KUBERNETES}:"
            " setting it otherwise stops the component",
        )
    if stage == "ALPHA" and req.value and req.gate not in allowed:
        return raw.issue(
            req.path,
            f"{where} is ALPHA at Kubernetes {KUBERNETES} (off by default, may change or go in any release,"
            " often refused by managed clusters); the platform allows it only by listing it in"
            " gpufleet_clusters[].allow_alpha_feature_gates with a reason",
        )
    return None


def requests(raw: Any) -> tuple[list[Issue], list[tuple[int, Request]]]:
    """Malformed ``--feature-gates`` arguments, and every gate each cluster's components ask for."""
    issues: list[Issue] = []
    out: list[tuple[int, Request]] = []
    clusters = raw.data.get("gpufleet_clusters")
    for ci, c in enumerate(clusters if isinstance(clusters, list) else []):
        for path, component, arg in cluster_args(ci, _dict(c)):
            gates = parse_flag(arg)
            if isinstance(gates, str):
                issues.append(raw.issue(path, f"{component}: {gates} in {FLAG}..."))
                continue
            out += [(ci, Request(path, component, g, v)) for g, v in gates.items()]
    return issues, out


def issues(raw: Any) -> list[Issue]:
    """Every feature gate problem of the model (see the module docstring)."""
    found, reqs = requests(raw)
    clusters = raw.data.get("gpufleet_clusters")
    for ci, req in reqs:
        issue = _judge(raw, req, _allowed(_dict(clusters[ci])))
        if issue is not None:
            found.append(issue)
    return found


def alpha_in_use(fleet: Any) -> list[str]:
    """One line per alpha gate a cluster of a (valid) fleet runs with, for the review: each is allowed
    by the platform, and the reviewer should see that it is."""
    lines = []
    for name, c in sorted(fleet.clusters.items()):
        for _path, component, arg in cluster_args(0, {"tenant_overrides": c.tenant_overrides}):
            gates = parse_flag(arg)
            for gate, on in sorted(gates.items()) if isinstance(gates, dict) else ():
                if on and maturity(gate) == "ALPHA":
                    lines.append(
                        f"cluster `{name}`: {component} runs with ALPHA feature gate `{gate}` (Kubernetes"
                        f" {KUBERNETES}), allowed by the platform: {c.allow_alpha_feature_gates.get(gate, '?')}"
                    )
    return lines
