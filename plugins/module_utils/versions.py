"""Every chart and image version the fleet deploys, pinned in this one place.

An inventory may override a component's entry with ``gpufleet_versions`` (same keys); the
renderer never uses a version that is not written here or in the inventory.
"""

from __future__ import annotations

# chart coordinates: repo_url is a Helm repository URL or an OCI registry path (no scheme prefix
# for OCI, as Argo CD expects: ``ghcr.io/slinkyproject/charts``), chart is the chart name.
CHARTS: dict[str, dict[str, str]] = {
    "cilium": {"repo_url": "https://helm.cilium.io/", "chart": "cilium", "version": "1.20.0"},
    "cert_manager": {"repo_url": "https://charts.jetstack.io", "chart": "cert-manager", "version": "v1.19.1"},
    "gpu_operator": {"repo_url": "https://helm.ngc.nvidia.com/nvidia", "chart": "gpu-operator", "version": "v26.7.0"},
    "csi_driver_nfs": {
        "repo_url": "https://raw.githubusercontent.com/kubernetes-csi/csi-driver-nfs/master/charts",
        "chart": "csi-driver-nfs",
        "version": "4.13.4",
    },
    "kueue": {"repo_url": "registry.k8s.io/kueue/charts", "chart": "kueue", "version": "0.19.2"},
    "slurm_operator_crds": {
        "repo_url": "ghcr.io/slinkyproject/charts",
        "chart": "slurm-operator-crds",
        "version": "1.2.1",
    },
    "slurm_operator": {"repo_url": "ghcr.io/slinkyproject/charts", "chart": "slurm-operator", "version": "1.2.1"},
    "slurm": {"repo_url": "ghcr.io/slinkyproject/charts", "chart": "slurm", "version": "1.2.1"},
    # mariadb-operator: the MariaDB behind each tenant's slurmdbd (docs/adr/slurm-accounting.md)
    "mariadb_operator_crds": {
        "repo_url": "ghcr.io/mariadb-operator/charts",
        "chart": "mariadb-operator-crds",
        "version": "26.6.0",
    },
    "mariadb_operator": {
        "repo_url": "ghcr.io/mariadb-operator/charts",
        "chart": "mariadb-operator",
        "version": "26.6.0",
    },
    "vcluster": {"repo_url": "https://charts.loft.sh", "chart": "vcluster", "version": "0.36.1"},
    "argocd": {"repo_url": "https://argoproj.github.io/argo-helm", "chart": "argo-cd", "version": "10.1.1"},
}

IMAGES: dict[str, str] = {
    "slurm": "26.05-ubuntu26.04",
    "argocd": "v3.5.1",
}


def chart(component: str, overrides: dict[str, dict[str, str]] | None = None) -> dict[str, str]:
    """The pinned chart coordinates for ``component``, with inventory overrides applied."""
    base = dict(CHARTS[component])
    if overrides and component in overrides:
        base.update(overrides[component])
    return base
