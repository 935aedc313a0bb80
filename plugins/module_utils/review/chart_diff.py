"""What a chart version or values change does to the manifests, the way ``helm diff`` shows it: for every
Argo CD Application of the rendered tree whose Helm source (chart version) or values files differ between
the base and the head, the real chart is templated with ``helm template`` before and after and the
rendered manifests are compared. The chart is templated the way Argo CD's repo-server does
(argo-cd ``util/helm/cmd.go``): the release name and namespace of the Application, its value files in
order, CRDs included unless ``skipCrds`` (the rendered Applications set no inline ``values``).

The chart must be on this machine: ``charts_dir`` (``gpufleet.py review --charts DIR``) holds
``<chart>-<version>.tgz`` (what ``helm pull`` writes) or an unpacked ``<chart>-<version>/`` or
``<chart>/`` whose Chart.yaml has that version; ``helm`` must be on PATH. Otherwise the review says
which chart and version it would need: nothing is fetched (the review runs offline).
"""

from __future__ import annotations

import difflib
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.deps import missing
from ansible_collections.gpufleet.core.plugins.module_utils.yaml_dump import safe_load_all

try:
    import yaml
except ImportError:  # importing works without it; the first use raises a clear error
    yaml = missing("yaml", "PyYAML")

MAX_DIFF_LINES = 400


@dataclass(frozen=True)
class Source:
    chart: str
    version: str
    release: str
    namespace: str
    values: tuple[str, ...]  # paths of the value files in the rendered tree, in order
    skip_crds: bool = False


@dataclass(frozen=True, order=True)
class ChartChange:
    app: str
    chart: str
    old: str  # version at the base ("" for a new Application)
    new: str
    values_changed: bool
    diff: tuple[str, ...] = ()  # unified diff of the templated manifests
    note: str = ""  # why there is no diff, or that the manifests are the same


def _app_sources(data: bytes, gitops_rel: str) -> list[tuple[str, Source]]:
    """(Application name, its Helm chart source) of each Application of one rendered file."""
    out = []
    for doc in safe_load_all(data):
        spec = doc.get("spec") if isinstance(doc, dict) and doc.get("kind") == "Application" else None
        for src in (spec or {}).get("sources") or ([spec["source"]] if (spec or {}).get("source") else []):
            if not isinstance(src, dict) or not src.get("chart"):
                continue
            helm = src.get("helm") or {}
            values = tuple(
                str(v).removeprefix("$values/").removeprefix(gitops_rel + "/") for v in helm.get("valueFiles") or []
            )
            dest = spec.get("destination") or {}
            source = Source(
                str(src["chart"]),
                str(src.get("targetRevision", "")),
                str(helm.get("releaseName") or doc["metadata"]["name"]),  # Argo CD's default: the app's name
                str(dest.get("namespace") or "default"),
                values,
                bool(helm.get("skipCrds")),
            )
            out.append((str(doc["metadata"]["name"]), source))
    return out


def _sources(
    files: dict[str, bytes], gitops_rel: str, parsed: dict[bytes, list[tuple[str, Source]]]
) -> dict[str, Source]:
    """Application name -> its Helm chart source, over the rendered Applications. ``parsed``: the
    sources of the file bytes seen before (the base's and the head's files are mostly the same bytes)."""
    out: dict[str, Source] = {}
    for path, data in files.items():
        if "/apps/" not in f"/{path}" or not path.endswith(".yaml"):
            continue
        if data not in parsed:
            parsed[data] = _app_sources(data, gitops_rel)
        out.update(parsed[data])
    return out


def find_chart(charts_dir: Path | None, chart: str, version: str) -> Path | None:
    """The chart ``chart`` at ``version`` in ``charts_dir`` (a ``helm pull`` tarball or an unpacked folder)."""
    if charts_dir is None:
        return None
    for cand in (charts_dir / f"{chart}-{version}.tgz", charts_dir / f"{chart}-{version}", charts_dir / chart):
        if cand.is_file():
            return cand
        meta = cand / "Chart.yaml"
        meta_version = str((yaml.safe_load(meta.read_text()) or {}).get("version")) if meta.is_file() else None
        if meta_version is not None and meta_version.lstrip("v") == version.lstrip("v"):
            return cand
    return None


def _values(src: Source, files: dict[str, bytes]) -> list[bytes | None]:
    return [files.get(v) for v in src.values]


def _template(helm: str, chart: Path, src: Source, values: list[bytes | None]) -> list[str]:
    with tempfile.TemporaryDirectory(prefix="gpufleet-chart-") as tmp:
        cmd = [helm, "template", src.release, str(chart), "--namespace", src.namespace]
        for i, data in enumerate(values):
            vf = Path(tmp) / f"values-{i}.yaml"
            vf.write_bytes(data or b"{}\n")
            cmd += ["--values", str(vf)]
        cmd += [] if src.skip_crds else ["--include-crds"]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}")
    return p.stdout.splitlines()


def _diff(
    name: str, a: Source | None, b: Source, base: dict[str, bytes], head: dict[str, bytes], charts: Path | None
) -> ChartChange:
    old = a.version if a else ""
    values_changed = (_values(a, base) if a else None) != _values(b, head)
    change = ChartChange(name, b.chart, old, b.version, values_changed)
    helm = shutil.which("helm")
    old_chart, new_chart = (find_chart(charts, b.chart, old) if a else None), find_chart(charts, b.chart, b.version)
    wanted = ((old, old_chart), (b.version, new_chart))
    need = list(dict.fromkeys(f"{b.chart} {v}" for v, c in wanted if v and c is None))  # once if the same
    if helm is None or need:
        why = "helm is not on PATH" if helm is None else f"not in --charts: {', '.join(need)} (helm pull them there)"
        return ChartChange(**{**change.__dict__, "note": f"rendered manifests not compared: {why}"})
    try:
        before = _template(helm, old_chart, a, _values(a, base)) if a and old_chart else []
        after = _template(helm, new_chart, b, _values(b, head))  # type: ignore[arg-type]
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        return ChartChange(**{**change.__dict__, "note": f"helm template failed: {exc}"})
    lines = list(
        difflib.unified_diff(before, after, f"{b.chart} {old or '-'}", f"{b.chart} {b.version}", lineterm="", n=2)
    )
    note = "" if lines else "the rendered manifests are the same"
    if len(lines) > MAX_DIFF_LINES:
        note = f"first {MAX_DIFF_LINES} of {len(lines)} diff lines"
    return ChartChange(**{**change.__dict__, "diff": tuple(lines[:MAX_DIFF_LINES]), "note": note})


def chart_changes(base: Any, head: Any, gitops_rel: str, charts_dir: str | Path | None) -> list[ChartChange]:
    """Every Helm Application whose chart version or values file changes, with the manifest diff."""
    if base is None:
        return []
    parsed: dict[bytes, list[tuple[str, Source]]] = {}
    a, b = _sources(base.files, gitops_rel, parsed), _sources(head.files, gitops_rel, parsed)
    charts = Path(charts_dir) if charts_dir else None
    out = []
    for name in sorted(b):
        old, new = a.get(name), b[name]
        same_values = old is not None and _values(old, base.files) == _values(new, head.files)
        if old is not None and old.version == new.version and old.skip_crds == new.skip_crds and same_values:
            continue
        out.append(_diff(name, old, new, base.files, head.files, charts))
    return out
