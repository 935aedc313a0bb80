"""Every chart and image version the fleet deploys, pinned in this one place.

An inventory may override a component's entry with ``gpufleet_versions`` (same keys); the
renderer never uses a version that is not written here or in the inventory.
"""

from __future__ import annotations

from typing import Any


def _chart(repo_url: str, chart: str, version: str) -> dict[str, str]:
    return {"repo_url": repo_url, "chart": chart, "version": version}


# chart coordinates: repo_url is a Helm repository URL or an OCI registry path (no scheme prefix
# for OCI, as Argo CD expects: ``ghcr.io/slinkyproject/charts``), chart is the chart name.
CHARTS: dict[str, dict[str, str]] = {
    "cilium": _chart("https://helm.cilium.io/", "cilium", "1.20.0"),
    "cert_manager": _chart("https://charts.jetstack.io", "cert-manager", "v1.19.1"),
    "gpu_operator": _chart("https://helm.ngc.nvidia.com/nvidia", "gpu-operator", "v26.7.0"),
    "csi_driver_nfs": _chart(
        "https://raw.githubusercontent.com/kubernetes-csi/csi-driver-nfs/master/charts", "csi-driver-nfs", "4.13.4"
    ),
    "kueue": _chart("registry.k8s.io/kueue/charts", "kueue", "0.19.2"),
    "slurm_operator_crds": _chart("ghcr.io/slinkyproject/charts", "slurm-operator-crds", "1.2.1"),
    "slurm_operator": _chart("ghcr.io/slinkyproject/charts", "slurm-operator", "1.2.1"),
    "slurm": _chart("ghcr.io/slinkyproject/charts", "slurm", "1.2.1"),
    # slurm-bridge: Kubernetes workloads scheduled by a tenant's own Slurm (docs/slurm-bridge.md)
    "slurm_bridge": _chart("ghcr.io/slinkyproject/charts", "slurm-bridge", "1.2.1"),
    # mariadb-operator: the MariaDB behind each tenant's slurmdbd (docs/adr/slurm-accounting.md)
    "mariadb_operator_crds": _chart("ghcr.io/mariadb-operator/charts", "mariadb-operator-crds", "26.6.0"),
    "mariadb_operator": _chart("ghcr.io/mariadb-operator/charts", "mariadb-operator", "26.6.0"),
    "vcluster": _chart("https://charts.loft.sh", "vcluster", "0.36.1"),
    "argocd": _chart("https://argoproj.github.io/argo-helm", "argo-cd", "10.1.1"),
}

# Slinky ``slurm`` chart line (major.minor) -> the tag of the Slurm images its values default to (the
# chart's ``*.image.tag``: 25.11-ubuntu24.04 in v1.0.0 and v1.1.2, 26.05-ubuntu26.04 in v1.2.1,
# helm/slurm/values.yaml). The fleet does not pin Slurm images itself, so the chart decides which Slurm
# runs; what gpufleet runs next to it (the upgrade gates, the accounts Job) takes the same tag.
SLINKY_SLURM_TAG: dict[str, str] = {"1.0": "25.11-ubuntu24.04", "1.1": "25.11-ubuntu24.04", "1.2": "26.05-ubuntu26.04"}


def slinky_slurm_tag(chart_version: str) -> str | None:
    """The Slurm image tag of the Slinky ``slurm`` chart ``chart_version`` (None: not in the table)."""
    parts = chart_version.strip().lstrip("v").split(".")
    return SLINKY_SLURM_TAG.get(".".join(parts[:2])) if len(parts) >= 2 else None


IMAGES: dict[str, str] = {
    "slurm": SLINKY_SLURM_TAG["1.2"],  # the pinned slurm chart's (CHARTS["slurm"])
    "argocd": "v3.5.1",
}

# Sources that are not charts, pinned like them (repo_url is mirrored through gpufleet_chart_mirrors):
# the Argo CD CRDs of the release that runs, from the argo-cd repository at its tag. The argo-cd chart
# carries its appVersion's CRDs (10.1.1: v3.4.4), older than the pinned image, so the render turns them
# off and ships these (docs/adr/argocd-crds.md).
GIT_SOURCES: dict[str, dict[str, str]] = {
    "argocd_crds": {
        "repo_url": "https://github.com/argoproj/argo-cd.git",
        "path": "manifests/crds",
        "revision": IMAGES["argocd"],
    },
}


def chart(component: str, overrides: dict[str, dict[str, str]] | None = None) -> dict[str, str]:
    """The pinned chart coordinates for ``component``, with inventory overrides applied."""
    base = dict(CHARTS[component])
    if overrides and component in overrides:
        base.update(overrides[component])
    return base


def helm_chart(component: str, overrides: dict[str, dict[str, str]] | None = None) -> dict[str, Any]:
    """``chart()`` plus what kubernetes.core.helm takes: an OCI chart as one reference
    (``chart_ref``), a repository chart as URL (``chart_repo_url``) and name."""
    out: dict[str, Any] = chart(component, overrides)
    url = out["repo_url"]
    out["oci"] = "://" not in url
    out["chart_ref"] = f"oci://{url}/{out['chart']}" if out["oci"] else out["chart"]
    out["chart_repo_url"] = None if out["oci"] else url
    return out
