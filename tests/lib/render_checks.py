"""Checkers for rendered output, against the upstream data in ../shared/upstream (tests only).

* ``crd_validator(crd_file, version)``: a jsonschema validator from a CRD's ``openAPIV3Schema``,
  made *strict* like ``kubectl --validate=strict``: an object with ``properties`` and neither
  ``additionalProperties`` nor ``x-kubernetes-preserve-unknown-fields`` rejects unknown fields.
* ``unknown_values_keys(values, chart)``: every key path of a Helm values file must exist in the
  chart's upstream ``values.yaml``. Below a map the upstream leaves empty (``{}``) or null
  (free-form: ``nodeSelector``, ``extraConfMap``, ``quota`` entries ...) anything goes; map entries of
  the Slinky ``slurm`` chart (``nodesets.<name>``, ``loginsets.<name>``, ``partitions.<name>``) are
  checked against their defaults template; keys documented only as commented-out examples in the
  upstream file are accepted when listed in ``COMMENTED`` and found in the file's text.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from real_charts import values_over

# chart -> {map path: template path}: entries of free-named maps follow a defaults template
TEMPLATES: dict[str, dict[tuple[str, ...], tuple[str, ...]]] = {
    "slurm": {
        ("nodesets",): ("nodesetDefaults",),
        ("loginsets",): ("loginsetDefaults",),
        ("partitions",): ("partitions", "all"),
    },
}
# maps of user-chosen keys (label maps, Slurm option maps, quotas): free-form even when upstream
# ships a non-empty default (e.g. nodeSelector: {kubernetes.io/os: linux})
FREE_FORM_KEYS = {
    "nodeSelector",
    "labels",
    "annotations",
    "extraConfMap",
    "configMap",
    "configFiles",
    "quota",
    "limits",
    "requests",
}
# key paths ending so are typed Kubernetes objects the chart merges in (slurm: service.spec is a
# corev1.ServiceSpec "to extend the service template")
# (argo-cd: configs.cm and configs.params are argocd-cm / argocd-cmd-params-cm data, free-form upstream)
FREE_FORM_TAILS = {("service", "spec"), ("configs", "cm"), ("configs", "params")}
# chart -> key paths present upstream only as commented-out documentation, with the text to find
COMMENTED: dict[str, dict[tuple[str, ...], str]] = {
    "gpu-operator": {
        ("dcgmExporter", "hpcJobMapping"): "# hpcJobMapping:",
        ("dcgmExporter", "hpcJobMapping", "enabled"): "#   enabled: true",
        ("dcgmExporter", "hpcJobMapping", "directory"): "#   directory: /var/lib/dcgm-exporter/job-mapping",
    },
}
# which chart a rendered values file belongs to, by its directory name
CHART_OF_DIR = {
    "cilium": "cilium",
    "gpu-operator": "gpu-operator",
    "csi-driver-nfs": "csi-driver-nfs",
    "vcluster": "vcluster",
    "slurm": "slurm",
    "slurm-operator": "slurm-operator",
    "slurm-operator-crds": "slurm-operator-crds",
    "slurm-bridge": "slurm-bridge",
    "cert-manager": "cert-manager",
    "kueue": "kueue",
    "argocd": "argo-cd",
    "mariadb-operator": "mariadb-operator",
    "mariadb-operator-crds": "mariadb-operator-crds",
}
# charts with no upstream values in ../shared/upstream: only these keys (documented by the chart's
# README / artifacthub page) are allowed, and the gap is reported by the tests
NO_UPSTREAM_ALLOWED: dict[str, dict[str, Any]] = {
    # and the image keys the mirror sets (the charts' values.yaml, templated in test_images_templated)
    "cert-manager": {
        "crds": {"enabled": True, "keep": True},
        "nodeSelector": {},
        **{k: {"image": {"repository": ""}} for k in ("webhook", "cainjector", "acmesolver", "startupapicheck")},
        "image": {"repository": ""},
    },
    "kueue": {
        "controllerManager": {"manager": {"image": {"repository": ""}}},
        "kueueViz": {"backend": {"image": {"repository": ""}}, "frontend": {"image": {"repository": ""}}},
    },
    "slurm-operator-crds": {},
    "mariadb-operator-crds": {},
}
# chart -> {values key: dependency chart whose values.yaml (../shared/upstream/charts) that key sets}
SUBCHARTS: dict[str, dict[str, str]] = {"argo-cd": {"redis-ha": "redis-ha"}}


@functools.cache
def upstream_values(shared: Path, chart: str) -> Any:
    return yaml.safe_load((shared / "upstream" / "charts" / chart / "values.yaml").read_text(encoding="utf-8"))


@functools.cache
def upstream_text(shared: Path, chart: str) -> str:
    return (shared / "upstream" / "charts" / chart / "values.yaml").read_text(encoding="utf-8")


def _get(tree: Any, path: tuple[str, ...]) -> Any:
    cur = tree
    for p in path:
        cur = cur[p]
    return cur


def unknown_values_keys(values: Any, chart: str, shared: Path) -> list[str]:
    """Key paths of ``values`` that the chart's upstream values.yaml does not have."""
    if chart in NO_UPSTREAM_ALLOWED:
        up: Any = NO_UPSTREAM_ALLOWED[chart]
        text = ""
    else:
        up = upstream_values(shared, chart)
        text = upstream_text(shared, chart)
        for key, sub in SUBCHARTS.get(chart, {}).items():
            up = {**up, key: values_over(upstream_values(shared, sub), up.get(key))}
    templates = TEMPLATES.get(chart, {})
    commented = COMMENTED.get(chart, {})
    out = []

    def walk(node: Any, ref: Any, path: tuple[str, ...]) -> None:
        if not isinstance(node, dict):
            return
        if path in templates:
            tmpl = _get(up, templates[path])
            for k, v in node.items():
                walk(v, tmpl, (*path, str(k)))
            return
        free = path and (path[-1] in FREE_FORM_KEYS or path[-2:] in FREE_FORM_TAILS)
        if path and (ref is None or (isinstance(ref, dict) and not ref) or free):
            return  # free-form upstream: anything below is allowed
        if not isinstance(ref, dict):
            out.append(".".join(path) + f" (upstream is {type(ref).__name__}, not a map)")
            return
        for k, v in node.items():
            p = (*path, str(k))
            if k in ref:
                walk(v, ref[k], p)
            elif p in commented and commented[p] in text:
                _walk_commented(v, p)
            elif not _schema_has(shared, chart, p):  # a key the chart's values.schema.json declares
                out.append(".".join(p))

    def _walk_commented(v: Any, p: tuple[str, ...]) -> None:
        if not isinstance(v, dict):
            return
        for k, vv in v.items():
            q = (*p, str(k))
            if q in commented and commented[q] in text:
                _walk_commented(vv, q)
            else:
                out.append(".".join(q))

    walk(values, up, ())
    return out


def _schema_has(shared: Path, chart: str, path: tuple[str, ...]) -> bool:
    """Whether the chart's values.schema.json declares the key path (following ``$ref``)."""
    schema = values_schema(shared, chart) if chart not in NO_UPSTREAM_ALLOWED else None
    node: Any = schema
    for k in path:
        while isinstance(node, dict) and "$ref" in node:
            node = _get(schema, tuple(node["$ref"].removeprefix("#/").split("/")))
        props = node.get("properties") if isinstance(node, dict) else None
        if not isinstance(props, dict) or k not in props:
            return False
        node = props[k]
    return schema is not None


@functools.cache
def values_schema(shared: Path, chart: str) -> dict | None:
    f = shared / "upstream" / "charts" / chart / "values.schema.json"
    return json.loads(f.read_text(encoding="utf-8")) if f.is_file() else None


# ------------------------------------------------------------------ CRDs


def _strict(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    s = {k: _strict(v) for k, v in schema.items()}
    if s.pop("x-kubernetes-int-or-string", False):
        s.pop("type", None)
        s = {"anyOf": [{"type": "integer"}, {"type": "string"}], **{k: v for k, v in s.items() if k != "anyOf"}}
    if s.pop("nullable", False) and "type" in s:
        s["type"] = [s["type"], "null"] if isinstance(s["type"], str) else [*s["type"], "null"]
    preserve = s.pop("x-kubernetes-preserve-unknown-fields", False)
    for k in [k for k in s if k.startswith("x-kubernetes-")]:
        s.pop(k)
    if "properties" in s and "additionalProperties" not in s and not preserve:
        s["additionalProperties"] = False
    return s


@functools.cache
def _crd_docs(path: Path) -> tuple:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return tuple(d for d in yaml.load_all(path.read_text(encoding="utf-8"), Loader=loader) if d)


@functools.cache
def crd_validator(crd_file: Path, version: str) -> jsonschema.protocols.Validator:
    for doc in _crd_docs(crd_file):
        for v in doc["spec"]["versions"]:
            if v["name"] == version:
                schema = _strict(copy.deepcopy(v["schema"]["openAPIV3Schema"]))
                # metadata is validated by the apiserver, not by the CRD schema
                schema.setdefault("properties", {})["metadata"] = {"type": "object"}
                return jsonschema.Draft7Validator(schema)
    raise KeyError(f"{crd_file}: no version {version}")


# monitoring.coreos.com CRDs of the pinned prometheus-operator release (tools/build.sh promcrds)
PROMETHEUS_CRDS = Path(__file__).resolve().parents[2] / ".build" / "share" / "prometheus-operator-crds"
# kueue.x-k8s.io CRDs from the Kueue Go module at the pinned chart's version (tools/build.sh kueue)
KUEUE_CRDS = Path(__file__).resolve().parents[2] / ".build" / "share" / "kueue" / "crds"


def crd_index(shared: Path) -> dict[tuple[str, str], tuple[Path, str]]:
    """(apiVersion, kind) -> (CRD file, version) for every upstream CRD (and the fetched
    prometheus-operator and Kueue CRDs when tools/build.sh has fetched them)."""
    out = {}
    files = sorted((shared / "upstream" / "crds").glob("*/*.yaml")) + sorted(PROMETHEUS_CRDS.glob("*.yaml"))
    # the Workload CRD (1.4 MB) is not rendered by gpufleet: skip parsing it
    files += sorted(f for f in KUEUE_CRDS.glob("*.yaml") if not f.name.endswith("_workloads.yaml"))
    for f in files:
        for doc in _crd_docs(f):
            if doc.get("kind") != "CustomResourceDefinition":
                continue
            group, kind = doc["spec"]["group"], doc["spec"]["names"]["kind"]
            for v in doc["spec"]["versions"]:
                out[(f"{group}/{v['name']}", kind)] = (f, v["name"])
    return out


# ------------------------------------------------------------------ secrets

SECRET_PATTERNS = [
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"),
    re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\."),  # JWT
    re.compile(r"(?i)\b(password|passwd|token|secret|bearerToken|keyData|certData)\s*:\s*['\"]?[A-Za-z0-9+/=_-]{8,}"),
]


def secret_findings(rel: str, data: bytes) -> list[str]:
    text = data.decode("utf-8", "replace")
    out = [f"{rel}: matches {p.pattern!r}" for p in SECRET_PATTERNS if p.search(text)]
    if rel.endswith((".yaml", ".yml")):
        for doc in yaml.safe_load_all(text):
            if isinstance(doc, dict) and doc.get("kind") == "Secret" and (doc.get("data") or doc.get("stringData")):
                out.append(f"{rel}: a Secret with data ({doc.get('metadata', {}).get('name')})")
    return out
