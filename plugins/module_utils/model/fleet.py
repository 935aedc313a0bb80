"""Typed fleet model: what ``validation.load_fleet`` returns once the inventory is known to be valid."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.model import components, fabric_sources
from ansible_collections.gpufleet.core.plugins.module_utils.model.accounting_model import Accounting
from ansible_collections.gpufleet.core.plugins.module_utils.model.bridge_model import Bridge
from ansible_collections.gpufleet.core.plugins.module_utils.model.exposure import Exposure
from ansible_collections.gpufleet.core.plugins.module_utils.model.identity import Identity
from ansible_collections.gpufleet.core.plugins.module_utils.model.maintenance_model import Maintenance
from ansible_collections.gpufleet.core.plugins.module_utils.model.rollout_model import Rollout

POOL_KINDS = ("slurm", "kubernetes", "system", "spare")
COMPONENTS = components.NAMES


@dataclass(frozen=True)
class Forge:
    type: str | None = None
    api_url: str | None = None
    project: str | None = None
    token_env: str = "GPUFLEET_FORGE_TOKEN"


@dataclass(frozen=True)
class GitOps:
    repo_url: str
    revision: str = "main"
    path: str = "gitops"
    remote: str = "origin"
    forge: Forge = field(default_factory=Forge)


@dataclass(frozen=True)
class Component:
    name: str
    enabled: bool = True
    install_method: str = "gitops"
    namespace: str | None = None
    values: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)  # component-specific keys (nfs_server, exclusive, ...)


@dataclass(frozen=True)
class FabricSource:
    source: str = "none"  # a row of model/fabric_sources.py, or none
    path: Path | None = None
    node_name_map: dict[str, str] | None = None
    exclude_hosts: tuple[str, ...] = ()
    exclude_switches: tuple[str, ...] = ()
    allow_unmatched_hosts: bool = False  # opt-in: fabric hosts matching no node only warn
    allow_topology_problems: bool = False  # opt-in: dangling switches, several roots only warn


@dataclass(frozen=True)
class TopologyConfig:
    plugin: str = "tree"  # tree | block | yaml | flat
    block_sizes: tuple[int, ...] = ()
    node_labels: str = "gpufleet"  # fabric label scheme on Nodes (topology.labels.SCHEMES)


@dataclass(frozen=True)
class ClusterMonitoring:
    """Where the fleet's Prometheus/Grafana live (they are not installed by gpufleet)."""

    prometheus_operator: bool = False  # monitoring.coreos.com CRDs present: render PodMonitors
    namespace: str = "monitoring"  # Grafana dashboard ConfigMaps go here
    dashboard_label: str = "grafana_dashboard"  # the Grafana sidecar's label
    labels: dict[str, str] = field(default_factory=dict)  # labels Prometheus selects monitors by


@dataclass(frozen=True)
class Cluster:
    name: str
    server: str
    nodes_snapshot: Path
    fabric: FabricSource
    topology: TopologyConfig
    components: dict[str, Component]
    kubeconfig: str | None = None
    context: str | None = None
    monitoring: ClusterMonitoring = field(default_factory=ClusterMonitoring)
    # platform-owned chart values per tenant (outside the tenants' allow-list): tenant -> chart -> values
    tenant_overrides: dict[str, Any] = field(default_factory=dict)
    # platform-owned: hostlists of nodes a pin may take from another tenant (pools/owner_moves.py)
    allow_node_moves: tuple[str, ...] = ()
    # platform-owned: alpha feature gates the cluster's components may run with -> why (model/feature_gates.py)
    allow_alpha_feature_gates: dict[str, str] = field(default_factory=dict)

    def tenant_override(self, tenant: str, chart: str) -> dict[str, Any]:
        """The platform's ``tenant_overrides.<tenant>.<chart>.values`` ({} when none)."""
        return dict(((self.tenant_overrides.get(tenant) or {}).get(chart) or {}).get("values") or {})

    @property
    def snapshot_dir(self) -> Path:
        return self.nodes_snapshot.parent

    @property
    def fabric_input(self) -> Path | None:
        """The file the cluster's fabric is read from: its fabric snapshot, or with ``source: labels``
        the nodes snapshot (their fabric labels); None without a fabric source."""
        source = fabric_sources.BY_NAME.get(self.fabric.source)
        if source is None:
            return None
        return self.nodes_snapshot if source.reads_nodes else self.fabric.path


@dataclass(frozen=True)
class PoolSlurm:
    partition: str
    default: bool = False
    max_time: str | None = None
    autoscale: bool = False
    allow_groups: tuple[str, ...] = ()  # AllowGroups (empty: every user of the tenant)
    allow_accounts: tuple[str, ...] = ()  # AllowAccounts (empty: every account)


@dataclass(frozen=True)
class Pool:
    name: str
    cluster: str
    kind: str
    tenant: str | None = None
    size_nodes: int | None = None
    size_gpus: int | None = None
    gpu_product: str | None = None
    node_selector: dict[str, str] = field(default_factory=dict)
    pin: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    split_nvlink_domains: bool = False
    slurm: PoolSlurm | None = None


@dataclass(frozen=True)
class TenantMonitoring:
    enabled: bool = True  # Slurm metrics, PodMonitors, DCGM job mapping prolog/epilog
    scrape_interval: str = "30s"


@dataclass(frozen=True)
class TenantHealth:
    """Slurm HealthCheckProgram settings of a tenant (drains failing GPU nodes with a reason)."""

    enabled: bool = True
    interval: int = 300  # HealthCheckInterval, seconds
    node_state: str = "ANY"  # HealthCheckNodeState (CYCLE is always added)
    dcgm_diag_level: int = 1  # dcgmi diag -r <level>, idle nodes only
    checks: tuple[str, ...] = ("dcgm", "ecc", "nvlink", "xid")
    xids: tuple[int, ...] = (48, 63, 64, 74, 79, 94, 95, 119, 120)


@dataclass(frozen=True)
class Tenant:
    name: str
    cluster: str
    pools: tuple[str, ...]
    description: str = ""
    namespaces: tuple[str, ...] = ()
    accounting: Accounting = field(default_factory=Accounting)
    login_replicas: int = 1
    slurm_values: dict[str, Any] = field(default_factory=dict)
    vcluster_values: dict[str, Any] = field(default_factory=dict)
    monitoring: TenantMonitoring = field(default_factory=TenantMonitoring)
    health: TenantHealth = field(default_factory=TenantHealth)
    expose: Exposure = field(default_factory=Exposure)
    identity: Identity | None = None  # the directory behind SSSD (None: local users only)
    bridge: Bridge | None = None  # Kubernetes workloads through its Slurm (model/bridge_model.py)


def mirrored_repo(repo_url: str, mirrors: dict[str, str]) -> str:
    """``repo_url`` through the ``gpufleet_chart_mirrors`` map (a trailing ``/`` does not matter)."""
    by_key = {k.rstrip("/"): v for k, v in mirrors.items()}
    return by_key.get(repo_url.rstrip("/"), repo_url)


@dataclass(frozen=True)
class Fleet:
    name: str
    inventory_dir: Path
    gitops: GitOps
    clusters: dict[str, Cluster]
    tenants: dict[str, Tenant]
    pools: dict[str, Pool]
    versions: dict[str, dict[str, str]] = field(default_factory=dict)
    chart_mirrors: dict[str, str] = field(default_factory=dict)
    maintenance: tuple[Maintenance, ...] = ()  # gpufleet_maintenance, in file order
    rollout: Rollout = field(default_factory=Rollout)  # gpufleet_rollout
    image_mirror: str | None = None  # gpufleet_image_mirror: registry path every image is pulled through
    # the RawModel it was built from (file and line of every key, for errors found while rendering)
    source: Any = field(default=None, compare=False, repr=False)

    def chart_repo(self, repo_url: str) -> str:
        """Where Argo CD pulls a chart from: the mirror of ``repo_url`` if the inventory has one."""
        return mirrored_repo(repo_url, self.chart_mirrors)

    def tenant_pools(self, tenant: str, kind: str | None = None) -> list[Pool]:
        return [self.pools[p] for p in self.tenants[tenant].pools if kind is None or self.pools[p].kind == kind]

    def cluster_pools(self, cluster: str) -> list[Pool]:
        return [p for p in self.pools.values() if p.cluster == cluster]

    def cluster_tenants(self, cluster: str) -> list[Tenant]:
        return [t for t in self.tenants.values() if t.cluster == cluster]
