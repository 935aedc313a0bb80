"""slurm-bridge inside a tenant's vCluster: Kubernetes workloads of its managed namespaces become jobs
of the tenant's own Slurm (model/bridge_model.py, docs/slurm-bridge.md).

What the render adds for a tenant with the option (upstream: slurm-bridge 1.2.1, ``helm/slurm-bridge``
and ``docs/quickstart.md``, ``docs/config.md``; Slinky 1.2.1's ``Token`` CRD):

* the ``slurm-bridge`` chart (platform project) in the Slurm namespace, where the Slinky ``Token``
  writes its JWT Secret: scheduler, controllers and admission webhook (its certificate from the
  cert-manager already inside the vCluster). Values: the managed namespaces, the bridged partition,
  slurmrestd of the tenant's ``slurm`` release, the Token's Secret. The chart's scheduler name and
  its ``--feature-gates`` are fixed in its templates (model/feature_gates.py judges them).
* a ``Token`` for SlurmUser (``slurm``, the user the bridge must submit as), signed with the
  cluster's JWT key (``slurm`` chart ``jwtKey.secretRef``) and written to ``auth-token`` of
  ``slurm-bridge-token``;
* in the ``slurm`` values, the partition of the bridged pools' NodeSets and the MCS settings of
  upstream's configuration guide (external jobs carry the MCS label ``kubernetes``); every slurmd, and
  the bridge's own pods, tolerate the NoExecute taint the bridge puts on every node that is a Slurm node
  (the tenant's other pods do not yet: docs/slurm-bridge.md);
* ``slurm-bridge/node-names.yaml``: the label ``slinky.slurm.net/slurm-nodename`` each host Node of a
  bridged pool carries (its short name, the name Slinky's DaemonSet-mode slurmd registers), applied by
  the apply step (``node_pools``) like the fabric labels;
* the vCluster's own scheduler (render/tenants/vcluster.py ``own_scheduler``), with the host fence
  that goes with it (render/tenants/host_fence.py).
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.model import fence
from ansible_collections.gpufleet.core.plugins.module_utils.model.bridge_model import Bridge
from ansible_collections.gpufleet.core.plugins.module_utils.render.apps import SKIP_DRY_RUN, App
from ansible_collections.gpufleet.core.plugins.module_utils.render.inputs import ClusterInputs
from ansible_collections.gpufleet.core.plugins.module_utils.render.shared_names import SLURM_NAMESPACE
from ansible_collections.gpufleet.core.plugins.module_utils.render.values import deep_merge

SCHEDULER_NAME = "slurm-bridge-scheduler"  # fixed by the chart (templates/scheduler/_scheduler.tpl)
TOKEN_SECRET = {"name": "slurm-bridge-token", "key": "auth-token"}  # the chart reads key auth-token
JWT_USER = "slurm"  # SlurmUser of the Slinky images: external jobs are submitted as it
TOKEN_LIFETIME = "8760h"  # the bridge does not reload a refreshed token (upstream quickstart)
MCS_LABEL = "kubernetes"
MCS_CONF = {"MCSPlugin": "mcs/label", "MCSParameters": "ondemand,ondemandselect"}
# the taint the bridge's node controller puts on every Kubernetes node that is a Slurm node (internal/utils/taints.go)
MANAGED_TOLERATION = {
    "key": "slinky.slurm.net/managed-node",
    "operator": "Equal",
    "value": SCHEDULER_NAME,
    "effect": "NoExecute",
}
RESTAPI_PORT = 6820  # slurmrestd's Service port in the slurm chart (templates/restapi/_helpers.tpl)


def restapi_url(release: str = "slurm") -> str:
    """slurmrestd of the tenant's ``slurm`` release: the RestApi ``<release>-restapi`` in its namespace."""
    return f"http://{release}-restapi.{SLURM_NAMESPACE}:{RESTAPI_PORT}"


def chart_values(bridge: Bridge) -> dict[str, Any]:
    """The chart's values; its own pods tolerate the taint it puts on the Slurm nodes they may run on."""
    return {
        "scheduler": {"tolerations": [dict(MANAGED_TOLERATION)]},
        "schedulerConfig": {"schedulerName": SCHEDULER_NAME, "mcsLabel": MCS_LABEL, "partition": bridge.partition},
        "admission": {
            "certManager": {"enabled": True},
            "managedNamespaces": list(bridge.namespaces),
            "managedNamespaceSelector": {},
            "tolerations": [dict(MANAGED_TOLERATION)],
        },
        "controllers": {"tolerations": [dict(MANAGED_TOLERATION)]},
        "sharedConfig": {"slurmRestApi": restapi_url(), "slurmJwtSecret": TOKEN_SECRET["name"]},
    }


def token(jwt_key: dict[str, str]) -> dict[str, Any]:
    """The Slinky ``Token`` (slinky.slurm.net/v1beta1) behind the bridge's JWT Secret."""
    return {
        "apiVersion": "slinky.slurm.net/v1beta1",
        "kind": "Token",
        "metadata": {"name": TOKEN_SECRET["name"], "namespace": SLURM_NAMESPACE},
        "spec": {
            "username": JWT_USER,
            "jwtKeyRef": dict(jwt_key),
            "secretRef": dict(TOKEN_SECRET),
            "refresh": True,
            "lifetime": TOKEN_LIFETIME,
        },
    }


def slurm_fragment(bridge: Bridge) -> dict[str, Any]:
    """``slurm`` chart values: the bridged partition over the bridged pools' NodeSets, MCS on."""
    return {
        "controller": {"extraConfMap": dict(MCS_CONF)},
        "partitions": {
            bridge.partition: {
                "enabled": True,
                "nodesets": list(bridge.pools),
                "configMap": {"State": "UP", "MaxTime": "UNLIMITED"},
            }
        },
    }


def with_slurm(values: dict[str, Any], bridge: Bridge | None) -> dict[str, Any]:
    """``values`` with the bridge's partition and MCS settings; the slurmd pods of every NodeSet tolerate
    the taint the bridge's node controller puts on every Kubernetes node that is also a Slurm node, of
    any partition (internal/controller/node/node_sync.go ``syncTaint``), else they are evicted."""
    if bridge is None:
        return values
    out = deep_merge(values, slurm_fragment(bridge))
    for nodeset in out["nodesets"].values():
        pod = nodeset.setdefault("podSpec", {})
        pod["tolerations"] = [*pod.get("tolerations", []), dict(MANAGED_TOLERATION)]
    return out


def node_names(bridge: Bridge, inputs: ClusterInputs) -> dict[str, Any]:
    """The Node label of every node of the bridged pools: its short name."""
    nodes = sorted({n for p in bridge.pools for n in inputs.members.get(p, [])})
    return {"label": fence.BRIDGE_NODENAME_LABEL, "nodes": {n: n.split(".", 1)[0] for n in nodes}}


def app_rows(bridge: Bridge, jwt_key: dict[str, str]) -> list[App]:
    """The bridge's apps inside the vCluster, after the Slurm cluster: its Token, then the chart."""
    return [
        App(
            "7-slurm-bridge-token.yaml",
            "slurm-bridge-token",
            "tenant-clusters",
            SLURM_NAMESPACE,
            manifests={"token.yaml": [token(jwt_key)]},
            create_namespace=False,
            sync_options=(SKIP_DRY_RUN,),
        ),
        App(
            "8-slurm-bridge.yaml",
            "slurm-bridge",
            "tenant-accounting",  # with the accounts: pods are charged to them
            SLURM_NAMESPACE,
            chart="slurm_bridge",
            values=chart_values(bridge),
            create_namespace=False,
        ),
    ]
