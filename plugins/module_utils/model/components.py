"""The platform components: one row each, and everything that names a component derives from it.

A row says what the component is (its chart in ``versions.CHARTS``, its default namespace), where it
runs (the host cluster, or only inside each tenant's vCluster), how the renderer writes its host
Application (file, folder, sync wave, kept on delete), which options the inventory may set beside
``enabled``/``install_method``/``namespace``/``values``, and what the apply step installs with Helm
when its ``install_method`` is ``helm``. From the rows come the model's component names, the schema
of ``gpufleet_clusters[].components``, the renderer's namespaces and chart keys, the host components
the collision check knows, the component variables the inventory may not set, the new fleet
repository's ``clusters.yml`` and the apply step's Helm releases. Adding a component: a row here,
its values function in ``render/platform/cluster.py`` (``VALUES``), its tests (docs/adr/code-shape.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.model import grammar as g
from ansible_collections.gpufleet.core.plugins.module_utils.versions import helm_chart


@dataclass(frozen=True)
class Release:
    """One Helm release of the apply step: ``values`` is the rendered values file, relative to the
    cluster's folder of the GitOps tree; ``{tenant}`` stands for the first Slurm tenant (the values
    of a component inside the vClusters are the same for every tenant of a cluster)."""

    chart: str
    name: str
    values: str


@dataclass(frozen=True)
class Row:
    name: str  # key under gpufleet_clusters[].components
    chart: str  # key of versions.CHARTS
    namespace: str  # default namespace of its release
    host: bool  # runs on the host cluster (else only inside the tenants' vClusters)
    app: str = ""  # host Application file under platform apps ("10-cilium.yaml"); "" none
    part: str = ""  # its folder under platform/ (values.yaml)
    wave: str = ""  # sync wave of its host Application
    keep: bool = False  # kept when its Application is deleted (CRDs, the CNI, drivers)
    namespace_labels: tuple[tuple[str, str], ...] = ()
    options: dict[str, Any] = field(default_factory=dict)  # schema of its own inventory keys
    opt_in: bool = False  # enabled only when the inventory sets it
    scaffold: str = "{}"  # its entry in a new fleet repository's clusters.yml ({cluster}: the cluster)
    releases: tuple[Release, ...] = ()  # what the apply step installs with Helm (install_method helm)
    bootstrap: bool = False  # installed with Helm by the bootstrap of a fresh cluster too
    role: bool = False  # a role of its name installs it alone (gpufleet.core.<name>)


_CILIUM_OPTIONS: dict[str, Any] = {
    "exclusive": {"type": "boolean", "default": True},
    "kube_proxy_replacement": {
        "type": "boolean",
        "default": False,
        "description": "true only without kube-proxy; needs k8s_service_host",
    },
    "k8s_service_host": {
        "type": "string",
        "pattern": "^[A-Za-z0-9]([-A-Za-z0-9.:]{0,251}[A-Za-z0-9])?$",
    },
    "k8s_service_port": {"type": "integer", "minimum": 1, "maximum": 65535, "default": 6443},
    "load_balancer": {
        "type": "object",
        "additionalProperties": False,
        "required": ["announce"],
        "description": "LB IPAM pools for exposed tenants (render/platform/loadbalancer.py)",
        "properties": {
            "announce": {"enum": ["l2", "bgp", "external"]},
            "pools": {"type": "array", "maxItems": 32, "items": {"type": "string", "maxLength": 43}},
            "interfaces": {
                "type": "array",
                "maxItems": 32,
                "items": g.pattern(r"^[-A-Za-z0-9_.^*+?|()\[\]]{1,64}$", "interface regex"),
            },
        },
    },
}
_GPU_OPERATOR_OPTIONS: dict[str, Any] = {
    "driver": {
        "enum": ["operator", "preinstalled"],
        "default": "operator",
        "description": "preinstalled: the hosts' image carries the NVIDIA driver",
    }
}
_STORAGE_CLASS_NAME = "^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$"
_SHARED_STORAGE_OPTIONS: dict[str, Any] = {
    "nfs_server": g.pattern(g.HOSTNAME, "NFS server host name or IPv4 address"),
    "nfs_share": g.pattern(g.ABS_PATH, "exported path (absolute, no '..')"),
    "capacity": g.pattern(g.QUANTITY, "Kubernetes quantity", default="10Ti"),
    "storage_class": {
        "type": "string",
        "pattern": _STORAGE_CLASS_NAME,
        "default": "gpufleet-nfs",
        "description": "the NFS StorageClass gpufleet renders (not default)",
    },
    "state_storage_class": {
        "type": "string",
        "pattern": _STORAGE_CLASS_NAME,
        "description": "local/block class of the tenants' databases (vCluster store,"
        " slurmctld state, MariaDB); unset: the cluster default, never NFS",
    },
    "storage_class_create": {
        "type": "boolean",
        "default": True,
        "description": "render it (NFS, not default); false: the site provides it",
    },
}
_SLURM_OPERATOR_VALUES = "tenants/{tenant}/slurm-operator"

# In inventory order (the schema, the model and a new repository's clusters.yml list them so).
COMPONENTS: tuple[Row, ...] = (
    Row(
        "cilium",
        "cilium",
        "kube-system",
        host=True,
        app="10-cilium.yaml",
        part="cilium",
        wave="network",
        keep=True,
        options=_CILIUM_OPTIONS,
        releases=(Release("cilium", "cilium", "platform/cilium/values.yaml"),),
        bootstrap=True,
        role=True,
    ),
    Row(
        "cert_manager",
        "cert_manager",
        "cert-manager",
        host=True,
        app="20-cert-manager.yaml",
        part="cert-manager",
        wave="crds",
        keep=True,
    ),
    Row(
        "gpu_operator",
        "gpu_operator",
        "gpu-operator",
        host=True,
        app="30-gpu-operator.yaml",
        part="gpu-operator",
        wave="operators",
        keep=True,
        namespace_labels=(("pod-security.kubernetes.io/enforce", "privileged"),),
        options=_GPU_OPERATOR_OPTIONS,
        releases=(Release("gpu_operator", "gpu-operator", "platform/gpu-operator/values.yaml"),),
        role=True,
    ),
    Row(
        "shared_storage",
        "csi_driver_nfs",
        "kube-system",
        host=True,
        app="40-csi-driver-nfs.yaml",
        part="csi-driver-nfs",
        wave="operators",
        options=_SHARED_STORAGE_OPTIONS,
        opt_in=True,
        scaffold="\n        nfs_server: nfs.{cluster}.example.internal\n        nfs_share: /export/slurm-home",
        releases=(Release("csi_driver_nfs", "csi-driver-nfs", "platform/csi-driver-nfs/values.yaml"),),
        role=True,
    ),
    Row(
        "argocd",
        "argocd",
        "argocd",
        host=True,
        app="00-argocd.yaml",
        part="argocd",
        wave="argocd-config",
        keep=True,
        role=True,
    ),
    Row(
        "slurm_operator",
        "slurm_operator",
        "slinky",
        host=False,
        releases=(
            Release("slurm_operator_crds", "slurm-operator-crds", f"{_SLURM_OPERATOR_VALUES}-crds/values.yaml"),
            Release("slurm_operator", "slurm-operator", f"{_SLURM_OPERATOR_VALUES}/values.yaml"),
        ),
        role=True,
    ),
    Row("kueue", "kueue", "kueue-system", host=False),
)
ROWS: dict[str, Row] = {r.name: r for r in COMPONENTS}
NAMES: tuple[str, ...] = tuple(ROWS)
HOST: tuple[str, ...] = tuple(r.name for r in COMPONENTS if r.host)
ROLES: tuple[str, ...] = tuple(r.name for r in COMPONENTS if r.role)


def helm_releases(
    row: Row, namespace: str | None, slurm_tenants: list[str], versions: dict[str, dict[str, str]]
) -> list[dict[str, Any]]:
    """The apply step's Helm releases of a component, as ``gpufleet.core.component`` takes them: name,
    chart coordinates, release name, namespace and values file (relative to the cluster's folder of
    the tree; "" when the renderer wrote none, as for a vCluster component with no Slurm tenant)."""
    tenant = sorted(slurm_tenants)[0] if slurm_tenants else None
    return [
        {
            "name": r.chart,
            "chart": helm_chart(r.chart, versions),
            "release_name": r.name,
            "namespace": namespace or row.namespace,
            "values_file": "" if "{tenant}" in r.values and tenant is None else r.values.format(tenant=tenant),
        }
        for r in row.releases
    ]
