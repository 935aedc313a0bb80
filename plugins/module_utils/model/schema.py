"""JSON Schema (draft 2020-12) of the fleet model a user writes in ``group_vars/all``.

Versioned by ``gpufleet_schema_version``. ``docs/fleet.schema.json`` is this dict dumped by
``scripts/gpufleet.py schema`` (a test keeps the two equal), so editors can validate inventories.
Cross-references (a tenant naming a missing cluster, duplicate names, ...) are checked in
``validation.py``: JSON Schema cannot express them.
"""

from __future__ import annotations

from typing import Any

SCHEMA_VERSION = 1

_NAME = {"type": "string", "pattern": "^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$", "description": "DNS label, max 40 chars"}
_LABELS = {"type": "object", "additionalProperties": {"type": "string"}}
_HOSTLISTS = {"type": "array", "items": {"type": "string", "minLength": 1}, "uniqueItems": True}
# Kubernetes label key (optional DNS prefix) and value: strings that end up in object metadata.
_LABEL_KEY = "^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
_LABEL_VALUE = "^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$"
_STRICT_LABELS = {
    "type": "object",
    "propertyNames": {"pattern": _LABEL_KEY},
    "additionalProperties": {"type": "string", "pattern": _LABEL_VALUE},
}
# Observability and GPU health (issue 13): per cluster where Prometheus lives, per tenant what runs.
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
    },
}
_TENANT_MONITORING = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "enabled": {"type": "boolean", "default": True},
        "scrape_interval": {"type": "string", "pattern": "^[1-9][0-9]{0,3}[sm]$", "default": "30s"},
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
    "description": "Helm values merged over gpufleet's; every key must exist in the chart's values",
}


def _component(extra: dict[str, Any] | None = None, enabled: bool = True) -> dict[str, Any]:
    props: dict[str, Any] = {
        "enabled": {"type": "boolean", "default": enabled},
        "install_method": {"enum": ["gitops", "helm"], "default": "gitops"},
        "namespace": {"type": "string"},
        "values": _VALUES,
    }
    props.update(extra or {})
    return {"type": "object", "additionalProperties": False, "properties": props}


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
                        "repo_url": {"type": "string", "minLength": 1},
                        "revision": {"type": "string", "minLength": 1, "default": "main"},
                        "path": {"type": "string", "minLength": 1, "default": "gitops"},
                        "remote": {"type": "string", "minLength": 1, "default": "origin"},
                        "forge": {
                            "type": "object",
                            "additionalProperties": False,
                            "properties": {
                                "type": {"enum": ["github", "gitlab"]},
                                "api_url": {"type": "string"},
                                "project": {"type": "string", "description": "owner/repo or GitLab project path"},
                                "token_env": {
                                    "type": "string",
                                    "default": "GPUFLEET_FORGE_TOKEN",
                                    "description": "environment variable holding the API token (never the token)",
                                },
                            },
                        },
                    },
                },
            },
        },
        "gpufleet_versions": {
            "type": "object",
            "description": "per-component overrides of the pinned chart coordinates",
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "repo_url": {"type": "string"},
                    "chart": {"type": "string"},
                    "version": {"type": "string"},
                },
            },
        },
        "gpufleet_clusters": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["name"],
                "properties": {
                    "name": _NAME,
                    "server": {
                        "type": "string",
                        "default": "https://kubernetes.default.svc",
                        "description": "API server URL as Argo CD reaches it",
                    },
                    "kubeconfig": {"type": "string", "description": "for apply; never committed credentials"},
                    "context": {"type": "string"},
                    "nodes_snapshot": {"type": "string", "description": "path relative to the inventory"},
                    "fabric": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "source": {"enum": ["ibnetdiscover", "labels", "file", "none"], "default": "none"},
                            "path": {"type": "string"},
                            "node_name_map": {
                                "type": "object",
                                "additionalProperties": False,
                                "required": ["pattern", "replace"],
                                "properties": {"pattern": {"type": "string"}, "replace": {"type": "string"}},
                            },
                            "exclude_hosts": _HOSTLISTS,
                            "exclude_switches": _HOSTLISTS,
                        },
                    },
                    "topology": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "plugin": {"enum": ["tree", "block", "yaml", "flat"], "default": "tree"},
                            "block_sizes": {"type": "array", "items": {"type": "integer", "minimum": 1}},
                        },
                    },
                    "monitoring": _CLUSTER_MONITORING,
                    "components": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "cilium": _component({"exclusive": {"type": "boolean", "default": True}}),
                            "cert_manager": _component(),
                            "gpu_operator": _component(),
                            "shared_storage": _component(
                                {
                                    "nfs_server": {"type": "string"},
                                    "nfs_share": {"type": "string"},
                                    "capacity": {"type": "string", "default": "10Ti"},
                                }
                            ),
                            "argocd": _component(),
                            "slurm_operator": _component(),
                            "kueue": _component(),
                        },
                    },
                },
            },
        },
        "gpufleet_tenants": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["name", "cluster", "pools"],
                "properties": {
                    "name": _NAME,
                    "cluster": _NAME,
                    "description": {"type": "string"},
                    "pools": {"type": "array", "items": _NAME, "uniqueItems": True, "minItems": 1},
                    "vcluster": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {"values": _VALUES},
                    },
                    "slurm": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "accounting": {"type": "boolean", "default": False},
                            "login_replicas": {"type": "integer", "minimum": 0, "default": 1},
                            "values": _VALUES,
                        },
                    },
                    "monitoring": _TENANT_MONITORING,
                    "health": _TENANT_HEALTH,
                    "namespaces": {
                        "type": "array",
                        "items": _NAME,
                        "uniqueItems": True,
                        "description": "namespaces (inside the vCluster) for Kubernetes-native workloads",
                    },
                },
            },
        },
        "gpufleet_pools": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["name", "cluster", "kind"],
                "properties": {
                    "name": _NAME,
                    "cluster": _NAME,
                    "kind": {"enum": ["slurm", "kubernetes", "system", "spare"]},
                    "size": {
                        "type": "object",
                        "additionalProperties": False,
                        "minProperties": 1,
                        "maxProperties": 1,
                        "properties": {
                            "nodes": {"type": "integer", "minimum": 0},
                            "gpus": {"type": "integer", "minimum": 0},
                        },
                    },
                    "gpu_product": {"type": "string"},
                    "node_selector": _LABELS,
                    "pin": _HOSTLISTS,
                    "exclude": _HOSTLISTS,
                    "split_nvlink_domains": {"type": "boolean", "default": False},
                    "slurm": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "partition": {"type": "string", "pattern": "^[A-Za-z][-_A-Za-z0-9]*$"},
                            "default": {"type": "boolean", "default": False},
                            "max_time": {"type": "string"},
                            "autoscale": {"type": "boolean", "default": False},
                        },
                    },
                },
            },
        },
    },
}
