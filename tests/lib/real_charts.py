"""The real charts of the pinned releases, unpacked from ``../shared/upstream/src`` (SOURCES.md) for
``helm``: each chart's directory by ``versions.CHARTS`` key, its dependencies placed under
``charts/`` as its Chart.lock asks (argo-cd: redis-ha; mariadb-operator: mariadb-operator-crds; the
gpu-operator archive carries NFD), and ``template`` to run the Go-built helm on one with rendered values.
vcluster, cert-manager and kueue come from the Go module proxy (tools/build.sh vcluster/charts)."""

from __future__ import annotations

import re
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import yaml
from lead_conftest import lead_conftest

from ansible_collections.gpufleet.core.plugins.module_utils.versions import CHARTS

REPO = Path(__file__).resolve().parents[2]
SRC = REPO.parent / "shared" / "upstream" / "src"
BUILT = REPO / ".build" / "share"
# versions.CHARTS key -> (archive in SRC, chart directory inside it, dependencies: (archive, dir))
ARCHIVES: dict[str, tuple[str, str, tuple[tuple[str, str], ...]]] = {
    "argocd": (
        "argo-helm-argo-cd-10.1.1-chart.tar.gz",
        "argo-cd-10.1.1/charts/argo-cd",
        (("redis-ha-4.38.0-chart.tar.gz", "redis-ha-4.38.0/charts/redis-ha"),),
    ),
    "mariadb_operator_crds": (
        "mariadb-operator-26.6.0-charts.tar.gz",
        "mariadb-operator-charts-26.6.0/deploy/charts/mariadb-operator-crds",
        (),
    ),
    "mariadb_operator": (
        "mariadb-operator-26.6.0-charts.tar.gz",
        "mariadb-operator-charts-26.6.0/deploy/charts/mariadb-operator",
        (("mariadb-operator-26.6.0-charts.tar.gz", "mariadb-operator-charts-26.6.0/deploy/charts/mariadb-operator-crds"),),  # noqa: E501
    ),
    "slurm_operator_crds": ("slinky-charts-1.2.1.tar.gz", "slinky-charts-1.2.1/helm/slurm-operator-crds", ()),
    "slurm_operator": (
        "slinky-charts-1.2.1.tar.gz",
        "slinky-charts-1.2.1/helm/slurm-operator",
        (("slinky-charts-1.2.1.tar.gz", "slinky-charts-1.2.1/helm/slurm-operator-crds"),),
    ),
    "slurm": ("slinky-charts-1.2.1.tar.gz", "slinky-charts-1.2.1/helm/slurm", ()),
    "slurm_bridge": ("slurm-bridge-1.2.1-src.tar.gz", "slurm-bridge-1.2.1/helm/slurm-bridge", ()),
    "gpu_operator": ("gpu-operator-v26.7.0-chart.tar.gz", "gpu-operator-v26.7.0/deployments/gpu-operator", ()),
    "cilium": ("cilium-1.20.0.tgz", "cilium", ()),
    "csi_driver_nfs": ("csi-driver-nfs-4.13.4.tgz", "csi-driver-nfs", ()),
}
# built by tools/build.sh from the Go module proxy: versions.CHARTS key -> directory
BUILT_CHARTS = {
    "cert_manager": BUILT / "charts" / "cert-manager",
    "kueue": BUILT / "charts" / "kueue",
    "vcluster": BUILT / "vcluster-chart",
}
# what the release's packaging stamps that the source tree does not carry (SOURCES.md: gpu-operator is
# packaged with ``helm package --version v26.7.0 --app-version v26.7.0``)
STAMPED = {"gpu_operator": CHARTS["gpu_operator"]["version"]}


helpers = lead_conftest  # the chart tests' name for it


def _unpack(archive: str, inner: str, dest: Path) -> None:
    with tarfile.open(SRC / archive) as tar:
        members = [m for m in tar.getmembers() if m.name == inner or m.name.startswith(inner + "/")]
        if not members:
            raise FileNotFoundError(f"{SRC / archive}: no {inner}")
        tar.extractall(dest / "x", members=members, filter="data")
    shutil.move(str(dest / "x" / inner), str(dest / Path(inner).name))
    shutil.rmtree(dest / "x")


def chart_dir(key: str, work: Path) -> Path:
    """The chart of ``key`` as its release ships it, unpacked under ``work`` (once)."""
    if key in BUILT_CHARTS:
        return BUILT_CHARTS[key]
    archive, inner, deps = ARCHIVES[key]
    out = work / key
    if (out / "Chart.yaml").is_file():
        return out
    work.mkdir(parents=True, exist_ok=True)
    tmp = work / f"{key}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    _unpack(archive, inner, tmp)
    chart = tmp / Path(inner).name
    for dep_archive, dep_inner in deps:
        (chart / "charts").mkdir(exist_ok=True)
        _unpack(dep_archive, dep_inner, chart / "charts")
    if key in STAMPED:
        meta = yaml.safe_load((chart / "Chart.yaml").read_text(encoding="utf-8"))
        meta["version"] = meta["appVersion"] = STAMPED[key]
        (chart / "Chart.yaml").write_text(yaml.safe_dump(meta, sort_keys=False), encoding="utf-8")
    chart.rename(out)
    shutil.rmtree(tmp)
    return out


def template(
    helm: str, chart: Path, values: list[Path], release: str = "r", namespace: str = "ns", kube: str = "1.36.0"
) -> list[dict[str, Any]]:
    """``helm template`` of ``chart`` with ``values`` (in order); the objects it renders, CRDs included."""
    cmd = [helm, "template", release, str(chart), "-n", namespace, "--include-crds", "--kube-version", kube]
    for v in values:
        cmd += ["-f", str(v)]
    p = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=300)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}:\n{p.stderr}")
    return [d for d in yaml.safe_load_all(p.stdout) if d]


IMAGE_FLAG = re.compile(r"^--[a-z0-9-]*-image=(\S+)$")
IMAGE_SETTING = re.compile(r"^(RELATED_IMAGE_[A-Z0-9_]+|[A-Z0-9_]*_IMAGE)$")


def image_references(objs: list[dict[str, Any]], bare: bool = False) -> set[str]:
    """Every image reference in templated objects, read the way the consumers read them: container and
    init container ``image`` fields (only those with a ``/`` unless ``bare``: the GPU Operator's
    ClusterPolicy names bare images that it joins to a ``repository``), ``--*-image=`` flags, the
    ``RELATED_IMAGE_*`` and ``*_IMAGE`` settings an operator starts other images from (env and ConfigMap
    data) and the ClusterPolicy's ``repository``/``image``/``version``."""
    out: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("repository"), str) and isinstance(node.get("image"), str) and node.get("version"):
                out.add(f"{node['repository']}/{node['image']}:{node['version']}")  # ClusterPolicy
            name, value = node.get("name"), node.get("value")
            if isinstance(name, str) and IMAGE_SETTING.match(name) and isinstance(value, str):
                out.add(value)  # an env setting
            for k, v in node.items():
                if k == "image" and isinstance(v, str) and (bare or "/" in v):
                    out.add(v)
                elif k == "args" and isinstance(v, list):
                    out.update(m.group(1) for a in v if isinstance(a, str) and (m := IMAGE_FLAG.match(a.strip())))
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for o in objs:
        walk(o)
        if o.get("kind") == "ConfigMap":
            out.update(v for k, v in (o.get("data") or {}).items() if IMAGE_SETTING.match(k))
    return out


def values_over(base: Any, over: Any) -> Any:
    """``over`` merged over ``base`` as Helm merges values (maps key by key; anything else replaces)."""
    if isinstance(base, dict) and isinstance(over, dict):
        return {**base, **{k: values_over(base.get(k), v) for k, v in over.items()}}
    return over if over is not None else base


def chart_defaults(chart: Path) -> dict[str, Any]:
    """The values a chart templates with when given none: its values.yaml, each dependency's own
    values.yaml under the dependency's name (or alias), the parent's settings winning, as Helm merges."""
    values = yaml.safe_load((chart / "values.yaml").read_text(encoding="utf-8")) or {}
    meta = yaml.safe_load((chart / "Chart.yaml").read_text(encoding="utf-8"))
    for dep in meta.get("dependencies") or []:
        sub = chart / "charts" / dep["name"]
        if (sub / "values.yaml").is_file():
            key = dep.get("alias") or dep["name"]
            values[key] = values_over(chart_defaults(sub), values.get(key))
    return values
