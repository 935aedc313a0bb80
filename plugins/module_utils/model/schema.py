"""JSON Schema (draft 2020-12) of the fleet model a user writes in ``group_vars/all``.

Versioned by ``gpufleet_schema_version``. ``docs/fleet.schema.json`` is this dict dumped by
``scripts/gpufleet.py schema`` (a test keeps the two equal), so editors can validate inventories.
Cross-references (a tenant naming a missing cluster, duplicate names, ...) are checked in
``validation.py``: JSON Schema cannot express them.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.model import (
    accounting_model,
    bounds,
    bridge_model,
    components,
    fabric_sources,
    identity,
    maintenance_model,
    rollout_model,
    tenant_values,
)
from ansible_collections.gpufleet.core.plugins.module_utils.model import grammar as g
from ansible_collections.gpufleet.core.plugins.module_utils.model.exposure import SCHEMA as EXPOSE_SCHEMA
from ansible_collections.gpufleet.core.plugins.module_utils.versions import CHARTS

SCHEMA_VERSION = 1

_NAME = g.pattern(g.NAME, "DNS label, max 40 chars")
_NAMESPACE = g.pattern(g.NAMESPACE, "Kubernetes namespace (DNS label, max 63 chars)")
_LABELS = {
    "type": "object",
    "propertyNames": g.pattern(g.LABEL_KEY, "Kubernetes label key", maxLength=316),
    "additionalProperties": g.pattern(g.LABEL_VALUE, "Kubernetes label value"),
}
_HOSTLISTS = {
    "type": "array",
    "maxItems": 256,
    "items": g.pattern(g.HOSTLIST, "host list expression or glob (no whitespace, '=' or quotes)"),
    "uniqueItems": True,
}
_REL_PATH = g.pattern(g.REL_PATH, "path relative to the inventory, inside it (no '..', no leading '/')")
_TOKEN = g.pattern(g.TOKEN, "one word: no whitespace or control characters")
# Kubernetes label key (optional DNS prefix) and value: strings that end up in object metadata.
_LABEL_KEY = "^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
_LABEL_VALUE = "^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$"
_STRICT_LABELS = {
    "type": "object",
    "propertyNames": {"pattern": _LABEL_KEY},
    "additionalProperties": {"type": "string", "pattern": _LABEL_VALUE},
}
# Observability and GPU health: per cluster where Prometheus lives, per tenant what runs.
HEALTH_CHECKS = ("dcgm", "ecc", "nvlink", "xid")
HEALTH_NODE_STATES = ("ANY", "IDLE", "ALLOC", "MIXED", "NONDRAINED_IDLE")
# XIDs that mean the GPU needs an operator (NVIDIA XID catalog): double-bit ECC (48), row remap /
# page retirement failures (63, 64), NVLink (74), fallen off the bus (79), contained/uncontained
# ECC (94, 95), GSP timeouts (119, 120).
DEFAULT_XIDS = (48, 63, 64, 74, 79, 94, 95, 119, 120)
_CLUSTER_MONITORING = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "prometheus_operator": {
            "type": "boolean",
            "default": False,
            "description": "the prometheus-operator CRDs are installed on the host: render PodMonitors",
        },
        "namespace": {**_NAME, "default": "monitoring", "description": "where the Grafana sidecar looks"},
        "dashboard_label": {"type": "string", "pattern": _LABEL_KEY, "default": "grafana_dashboard"},
        "labels": {**_STRICT_LABELS, "description": "labels Prometheus selects monitors by (e.g. release)"},
        "min_scrape_interval": {
            "type": "string",
            "pattern": bounds.INTERVAL,
            "default": bounds.MIN_SCRAPE_INTERVAL,
            "description": "platform-owned: the shortest scrape interval a tenant may set",
        },
    },
}
_TENANT_MONITORING = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "enabled": {"type": "boolean", "default": True},
        "scrape_interval": {
            "type": "string",
            "pattern": "^[1-9][0-9]{0,3}[sm]$",
            "default": "30s",
            "description": "at least the cluster's monitoring.min_scrape_interval, at most"
            f" {bounds.MAX_SCRAPE_INTERVAL}",
        },
    },
}
_TENANT_HEALTH = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "enabled": {"type": "boolean", "default": True},
        "interval": {"type": "integer", "minimum": 10, "maximum": 86400, "default": 300, "description": "seconds"},
        "node_state": {"enum": list(HEALTH_NODE_STATES), "default": "ANY"},
        "dcgm_diag_level": {
            "type": "integer",
            "minimum": 1,
            "maximum": 4,
            "default": 1,
            "description": "dcgmi diag -r level (run on idle nodes only)",
        },
        "checks": {
            "type": "array",
            "items": {"enum": list(HEALTH_CHECKS)},
            "uniqueItems": True,
            "default": list(HEALTH_CHECKS),
        },
        "xids": {
            "type": "array",
            "items": {"type": "integer", "minimum": 1, "maximum": 999},
            "uniqueItems": True,
            "default": list(DEFAULT_XIDS),
        },
    },
}
_VALUES = {
    "type": "object",
    "description": "platform-owned Helm values merged over gpufleet's; every key must exist in the chart's values",
}
MAX_LOGIN_REPLICAS = 10


def _component(extra: dict[str, Any] | None = None, enabled: bool = True) -> dict[str, Any]:
    props: dict[str, Any] = {
        "enabled": {"type": "boolean", "default": enabled},
        "install_method": {"enum": ["gitops", "helm"], "default": "gitops"},
        "namespace": _NAMESPACE,
        "values": _VALUES,
    }
    props.update(extra or {})
    return {"type": "object", "additionalProperties": False, "properties": props}


# a Helm repository URL (https; http only to a loopback mirror) or an OCI registry path without
# scheme: no spaces, quotes or wildcards (it lands in AppProject sourceRepos, where '*' matches all)
_REPO_HOST = r"[A-Za-z0-9][-A-Za-z0-9.]*(:[0-9]{1,5})?"
_CHART_REPO = (
    rf"^(https://{_REPO_HOST}|http://(127\.0\.0\.1|localhost|\[::1\])(:[0-9]{{1,5}})?|(?!https?:){_REPO_HOST})"
    r"(/[-A-Za-z0-9._~%/]*)?$"
)

SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://gpufleet.dev/schema/fleet-v1.json",
    "title": "gpufleet fleet model",
    "type": "object",
    "required": ["gpufleet_schema_version", "gpufleet_fleet", "gpufleet_clusters", "gpufleet_pools"],
    "additionalProperties": False,
    "patternProperties": {"^(?!gpufleet_)": {}},
    "properties": {
        "gpufleet_schema_version": {"const": SCHEMA_VERSION},
        "gpufleet_fleet": {
            "type": "object",
            "additionalProperties": False,
            "required": ["name", "gitops"],
            "properties": {
                "name": _NAME,
                "gitops": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["repo_url"],
                    "properties": {
                        "repo_url": g.pattern(
                            r"^((https|ssh)://([A-Za-z0-9_.-]+@)?[A-Za-z0-9][-A-Za-z0-9.]*(:[0-9]{1,5})?(/[-A-Za-z0-9._~%/]*)?"
                            r"|[A-Za-z0-9_.-]+@[A-Za-z0-9][-A-Za-z0-9.]*:[-A-Za-z0-9._~/]+"
                            r"|(file://)?/[-A-Za-z0-9._~/]+)$",
                            "Git repository URL (https://, ssh://, user@host:path or a local path; no wildcards,"
                            " no plain http)",
                        ),
                        "revision": g.pattern(g.GIT_REF, "Git branch or tag", default="main"),
                        "path": g.pattern(
                            g.REL_PATH,
                            "GitOps tree, relative to the repository root, inside it (no '..', no leading '/')",
                            default="gitops",
                        ),
                        "remote": g.pattern(g.REMOTE, "Git remote name", default="origin"),
                        "forge": {
                            "type": "object",
                            "additionalProperties": False,
                            "properties": {
                                "type": {"enum": ["github", "gitlab"]},
                                "api_url": g.pattern(g.API_URL, "forge API root (https://; http only for loopback)"),
                                "project": g.pattern(g.PROJECT, "owner/repo or GitLab project path"),
                                "token_env": g.pattern(
                                    g.ENV_VAR,
                                    "environment variable holding the API token (never the token)",
                                    default="GPUFLEET_FORGE_TOKEN",
                                ),
                            },
                        },
                    },
                },
            },
        },
        "gpufleet_identity": identity.FLEET_SCHEMA,
        maintenance_model.KEY: maintenance_model.SCHEMA,
        rollout_model.KEY: rollout_model.SCHEMA,
        "gpufleet_versions": {
            "type": "object",
            "description": "per-component overrides of the pinned chart coordinates",
            "propertyNames": {"enum": sorted(CHARTS)},
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "repo_url": g.pattern(_CHART_REPO, "chart repository: https:// URL or OCI registry path"),
                    "chart": g.pattern(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", "chart name"),
                    "version": g.pattern(
                        r"^v?[0-9]{1,6}\.[0-9]{1,6}\.[0-9]{1,6}(-[0-9A-Za-z.]{1,64})?$",
                        "exact chart version (no ranges or wildcards)",
                    ),
                },
            },
        },
        "gpufleet_chart_mirrors": {
            "type": "object",
            "description": "chart repository mirrors for air-gapped sites: production repo_url (Helm "
            "repository URL or OCI registry path, as in gpufleet_versions) -> mirror URL; rendered into "
            "the Applications' chart sources and the AppProjects' sourceRepos",
            "propertyNames": {"pattern": _CHART_REPO},
            "additionalProperties": {"type": "string", "pattern": _CHART_REPO},
        },
        "gpufleet_image_mirror": {
            "type": "string",
            "description": "air-gapped sites: registry path every image is pulled through, as"
            " <mirror>/<upstream registry>/<path> (e.g. registry.site.internal/mirror); see IMAGES.md",
            "pattern": r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?(:[0-9]{1,5})?"
            r"(/[a-z0-9]([-a-z0-9._]{0,61}[a-z0-9])?){0,8}$",
        },
        "gpufleet_clusters": {
            "type": "array",
            "minItems": 1,
            "maxItems": 100,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["name"],
                "properties": {
                    "name": _NAME,
                    "server": g.pattern(
                        g.HTTPS_URL, "API server URL as Argo CD reaches it", default="https://kubernetes.default.svc"
                    ),
                    "kubeconfig": g.pattern(g.TOKEN, "for apply; never committed credentials"),
                    "context": _TOKEN,
                    "nodes_snapshot": _REL_PATH,
                    "fabric": {
                        "description": (
                            "where the cluster's fabric comes from (ibnetdiscover dump, fabric file, Node "
                            "labels or none), name mapping and exclusions; docs/fabric-file.md"
                        ),
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "source": {"enum": list(fabric_sources.CHOICES), "default": fabric_sources.NONE},
                            "path": _REL_PATH,
                            "node_name_map": {
                                "type": "object",
                                "additionalProperties": False,
                                "description": "fabric host name -> Kubernetes Node name (docs/fabric-file.md)",
                                "required": ["pattern"],
                                "properties": {
                                    "pattern": g.pattern(g.TEXT, "Python regular expression (full match)"),
                                    "replacement": g.pattern(g.TEXT, "its expansion (\\1 for groups)"),
                                    "replace": g.pattern(g.TEXT, "deprecated: the former name of replacement"),
                                },
                            },
                            "allow_unmatched_hosts": {
                                "type": "boolean",
                                "default": False,
                                "description": "render even when fabric hosts match no node (warns, naming them)",
                            },
                            "allow_topology_problems": {
                                "type": "boolean",
                                "default": False,
                                "description": "render even when the switch tree has dangling switches, switches"
                                " linked to nothing or several roots (warns, naming them); else an error",
                            },
                            "exclude_hosts": _HOSTLISTS,
                            "exclude_switches": _HOSTLISTS,
                        },
                    },
                    "topology": {
                        "description": (
                            "the Slurm topology rendered from the fabric: plugin tree (switches), block "
                            "(NVLink domains or leaf groups), yaml (topology.yaml with both) or flat (none)"
                        ),
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "plugin": {"enum": ["tree", "block", "yaml", "flat"], "default": "tree"},
                            "block_sizes": {"type": "array", "items": {"type": "integer", "minimum": 1}},
                            "node_labels": {
                                "enum": ["gpufleet", "topograph"],
                                "default": "gpufleet",
                                "description": "keys of the fabric labels on Nodes and of the Kueue Topology levels:"
                                " gpufleet (topology.gpufleet.io/tier-N, /accelerator) or topograph"
                                " (fabric.topograph.run/tier-N, accelerator.topograph.run/domain)",
                            },
                        },
                    },
                    "monitoring": _CLUSTER_MONITORING,
                    "tenant_overrides": tenant_values.OVERRIDES_SCHEMA,
                    "tenant_database_storage_max": {
                        "type": "string",
                        "pattern": bounds.STORAGE,
                        "default": bounds.DATABASE_STORAGE_MAX,
                        "description": "platform-owned: the largest accounting database a tenant may ask for (its"
                        " claim counts against the tenant's host storage quota)",
                    },
                    "expose_allowed_cidrs": {
                        "type": "array",
                        "description": "platform-owned: networks tenants may open to (expose.from_cidrs must lie"
                        " inside one); without it only private networks (RFC 1918, ULA, documentation) are allowed",
                        "items": {"type": "string", "minLength": 1, "maxLength": 43},
                        "maxItems": 64,
                        "uniqueItems": True,
                    },
                    "allow_node_moves": {
                        "type": "array",
                        "description": "platform-owned: nodes a pool's pin may take from another tenant (the"
                        " pool lock gives them to it); without an entry such a pin is refused",
                        "maxItems": 100,
                        "items": {
                            "type": "object",
                            "additionalProperties": False,
                            "required": ["nodes", "reason"],
                            "properties": {
                                "nodes": _HOSTLISTS,
                                "reason": g.pattern(r"^[^\x00-\x1f\x7f]{1,500}$", "why (one line)"),
                            },
                        },
                    },
                    "slurm_bridge": bridge_model.PLATFORM_SCHEMA,
                    "allow_alpha_feature_gates": {
                        "type": "array",
                        "description": "platform-owned: Kubernetes feature gates that are alpha at the pinned"
                        " version which the cluster's components may turn on (model/feature_gates.py); without an"
                        " entry such a gate is refused",
                        "maxItems": 32,
                        "items": {
                            "type": "object",
                            "additionalProperties": False,
                            "required": ["gate", "reason"],
                            "properties": {
                                "gate": g.pattern(r"^[A-Z][A-Za-z0-9]{1,99}$", "feature gate name"),
                                "reason": g.pattern(r"^[^\x00-\x1f\x7f]{1,500}$", "why (one line)"),
                            },
                        },
                    },
                    "components": {
                        "description": (
                            "platform components of the cluster; each one: enabled, install_method (gitops: "
                            "an Argo CD Application; helm: the apply step), namespace, Helm values"
                        ),
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {r.name: _component(r.options) for r in components.COMPONENTS},
                    },
                },
            },
        },
        "gpufleet_tenants": {
            "type": "array",
            "maxItems": 2000,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["name", "cluster", "pools"],
                "properties": {
                    "name": _NAME,
                    "cluster": _NAME,
                    "description": g.pattern(g.TEXT, "one line of text"),
                    "pools": {"type": "array", "items": _NAME, "uniqueItems": True, "minItems": 1, "maxItems": 64},
                    "vcluster": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {"values": tenant_values.VCLUSTER},
                    },
                    "slurm": {
                        "description": (
                            "the tenant's Slurm cluster (Slinky) in its vCluster: login nodes, accounting, "
                            "extra chart values"
                        ),
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "accounting": accounting_model.SCHEMA,
                            "login_replicas": {
                                "type": "integer",
                                "minimum": 0,
                                "maximum": MAX_LOGIN_REPLICAS,
                                "default": 1,
                            },
                            "values": tenant_values.SLURM,
                            "bridge": bridge_model.TENANT_SCHEMA,
                        },
                    },
                    "monitoring": _TENANT_MONITORING,
                    "health": _TENANT_HEALTH,
                    "namespaces": {
                        "type": "array",
                        "items": _NAME,
                        "uniqueItems": True,
                        "maxItems": 64,
                        "description": "namespaces (inside the vCluster) for Kubernetes-native workloads",
                    },
                    "expose": EXPOSE_SCHEMA,
                    "identity": identity.TENANT_SCHEMA,
                },
            },
        },
        "gpufleet_pools": {
            "type": "array",
            "minItems": 1,
            "maxItems": 5000,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["name", "cluster", "kind"],
                "properties": {
                    "name": _NAME,
                    "cluster": _NAME,
                    "kind": {"enum": ["slurm", "kubernetes", "system", "spare"]},
                    "size": {
                        "description": (
                            "how big the pool is: exactly one of nodes or gpus (whole nodes, rounded up); "
                            "absent: every node left over (spare)"
                        ),
                        "type": "object",
                        "additionalProperties": False,
                        "minProperties": 1,
                        "maxProperties": 1,
                        "properties": {
                            "nodes": {"type": "integer", "minimum": 0},
                            "gpus": {"type": "integer", "minimum": 0},
                        },
                    },
                    "gpu_product": g.pattern(g.LABEL_VALUE, "nvidia.com/gpu.product label value", minLength=1),
                    "node_selector": _LABELS,
                    "pin": _HOSTLISTS,
                    "exclude": _HOSTLISTS,
                    "split_nvlink_domains": {"type": "boolean", "default": False},
                    "slurm": {
                        "description": "the pool as a Slurm partition and NodeSet of its tenant's Slurm cluster",
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "partition": g.pattern(g.PARTITION, "Slurm partition name (letters, digits, - and _)"),
                            "default": {"type": "boolean", "default": False},
                            "max_time": g.pattern(
                                g.SLURM_TIME,
                                "Slurm time: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED",
                            ),
                            "autoscale": {"type": "boolean", "default": False},
                            "allow_groups": identity.POOL_GROUPS,
                            "allow_accounts": {
                                "type": "array",
                                "items": accounting_model.SLURM_NAME,
                                "uniqueItems": True,
                                "minItems": 1,
                                "description": "AllowAccounts: only jobs of these (tenant) accounts",
                            },
                        },
                    },
                },
            },
        },
    },
}
