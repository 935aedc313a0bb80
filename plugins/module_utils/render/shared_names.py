"""Names the render modules share: the Slurm namespace inside a vCluster, the home volume, the
DCGM job-mapping folder, component namespaces and charts, the folder of a cluster."""

from __future__ import annotations

from ansible_collections.gpufleet.core.plugins.module_utils.model import components
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Component

DCGM_JOB_MAPPING_DIR = "/var/lib/dcgm-exporter/job-mapping"

SLURM_NAMESPACE = "slurm"  # inside each tenant vCluster

SLURM_HOME_PVC = "slurm-home"

DEFAULT_NAMESPACES = {r.name: r.namespace for r in components.COMPONENTS}

# The chart (versions.CHARTS key) of each component.
COMPONENT_CHART = {r.name: r.chart for r in components.COMPONENTS}


def namespace_of(comp: Component) -> str:
    return comp.namespace or DEFAULT_NAMESPACES[comp.name]


def cluster_dir(cluster: str) -> str:
    return f"clusters/{cluster}"
