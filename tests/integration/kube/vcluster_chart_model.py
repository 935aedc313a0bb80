"""What the pinned vcluster chart (0.36 line) renders as host RBAC for given values: a small, honest
model of two template paths, because the chart itself cannot be downloaded here.

Facts modelled (loft-sh/vcluster, chart/templates/_rbac.tpl and clusterrole.yaml):

* ``vcluster.createClusterRole`` is true when, among others, ``sync.fromHost.nodes.enabled`` or
  ``sync.fromHost.secrets.enabled`` / ``configMaps.enabled`` is set; the ClusterRole is bound to the
  vCluster's ServiceAccount ``vc-<release>`` in the release namespace.
* ``vcluster.rbac.rulesForFromHostSyncerForGivenCoreResource`` emits, for an enabled fromHost
  ``secrets``/``configMaps`` syncer with mappings, ``namespaces`` get/list/watch limited by
  ``resourceNames``, then ``<kind>`` **list, watch without resourceNames** (cluster-wide), then
  ``<kind>`` get limited to the mapped names (unless a mapping uses ``*``).
* ``rbac.clusterRole.extraRules`` are appended as given.

Node rules are reduced to what the node syncer needs to read; everything else the chart adds is left
out (it does not touch Secrets). Only the Secret-relevant paths are modelled exactly.
"""

from __future__ import annotations

from typing import Any

FROM_HOST_KINDS = {"secrets": "secrets", "configMaps": "configmaps"}


def cluster_role_rules(values: dict[str, Any], release_namespace: str) -> list[dict[str, Any]]:
    sync = values.get("sync") or {}
    from_host = sync.get("fromHost") or {}
    rules: list[dict[str, Any]] = []
    if (from_host.get("nodes") or {}).get("enabled"):
        rules.append({"apiGroups": [""], "resources": ["nodes", "nodes/status"], "verbs": ["get", "list", "watch"]})
    for key, kind in FROM_HOST_KINDS.items():
        spec = from_host.get(key) or {}
        mappings = (spec.get("mappings") or {}).get("byName") or {}
        if not (spec.get("enabled") and mappings):
            continue
        namespaces = sorted({(k.split("/")[0] or release_namespace) for k in mappings})
        names = sorted({k.split("/")[-1] for k in mappings})
        rules.append(
            {
                "apiGroups": [""],
                "resources": ["namespaces"],
                "resourceNames": namespaces,
                "verbs": ["get", "list", "watch"],
            }
        )
        rules.append({"apiGroups": [""], "resources": [kind], "verbs": ["list", "watch"]})
        get_rule: dict[str, Any] = {"apiGroups": [""], "resources": [kind], "verbs": ["get"]}
        if "*" not in names:
            get_rule["resourceNames"] = names
        rules.append(get_rule)
    rules += list(((values.get("rbac") or {}).get("clusterRole") or {}).get("extraRules") or [])
    return rules


def cluster_rbac(values: dict[str, Any], release: str, namespace: str) -> list[dict[str, Any]]:
    """The ClusterRole + ClusterRoleBinding the chart creates (empty when it creates none)."""
    rules = cluster_role_rules(values, namespace)
    if not rules:
        return []
    name = f"vc-{release}-v-{namespace}"[:63].rstrip("-")
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": f"vc-{release}", "namespace": namespace}],
        },
    ]
