"""The host-side fence of a tenant whose vCluster runs its own scheduler: admission on the tenant's host
namespace, so no setting of the syncer is what keeps its pods on its nodes.

Why: with a virtual scheduler (``model/contracts.VIRTUAL_SCHEDULER_VALUES``) vCluster 0.36.1 creates
every host pod already bound to the node its scheduler chose inside the vCluster; it merges the
tenant's node selector only into a pod with no ``nodeName`` and checks a ``nodeName`` only against the
*virtual* Nodes (which a tenant can create); the kubelet does not look at NoSchedule taints of a bound
pod. The fence therefore sits in the host's kube-apiserver (``MutatingAdmissionPolicy`` and
``ValidatingAdmissionPolicy``, ``admissionregistration.k8s.io/v1``; both GA and on by default in the
pinned Kubernetes 1.36), bound to the tenant's host namespace only:

* ``gpufleet-fence-<tenant>-selector`` (mutating, pod CREATE): sets the tenant's node selector
  (``pools/fence.TENANT_KEY=<tenant>``) on every pod, overriding whatever value the pod had, except the
  pods kube-controller-manager creates there (the vCluster's own control plane, which runs on the
  system pool). A pod the host scheduler binds can only go to the tenant's nodes; a pod that arrives
  bound is refused by the node's kubelet if the node lacks the label (NodeAffinity admission).
* ``gpufleet-fence-<tenant>-nodes`` (validating, pod CREATE and UPDATE): a pod may be created bound
  only to a node of the tenant's pools (``spec.nodeName``; the list rendered from the pool lock, so a
  pool move re-renders it; a name is what the kubelet registers, the Node's name), and may tolerate
  only the taints of the tenant's pools (tolerations can be added by an update): no toleration of
  another pool's value of ``POOL_KEY``, none that tolerates ``POOL_KEY`` (or every key) whatever its
  value. The scheduler's binding (``pods/binding``) is not a pod update and is not matched: a pod the
  host scheduler binds carries the selector above.

``objects(...)`` is empty for a tenant whose vCluster has no scheduler of its own: the syncer is the
fence there (tests/integration/vcluster/test_vcluster_fence.py).
"""

from __future__ import annotations

import json
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.model import contracts, fence

API = "admissionregistration.k8s.io/v1"


def runs_own_scheduler(vcluster_values: dict[str, Any]) -> bool:
    """vCluster's ``IsVirtualSchedulerEnabled`` on the final (merged) values of the tenant's vCluster."""
    for path in contracts.VIRTUAL_SCHEDULER_VALUES:
        node: Any = vcluster_values
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if node is True:
            return True
    return False


def _policy(kind: str, name: str, namespace: str, operations: list[str], **spec: Any) -> dict[str, Any]:
    """An admission policy of ``kind`` on the pods of ``namespace`` only (by the name label the API
    server sets on every Namespace), failing closed."""
    rules = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": operations, "resources": ["pods"]}]
    scope = {"matchLabels": {contracts.NAMESPACE_NAME_LABEL: namespace}}
    return {
        "apiVersion": API,
        "kind": kind,
        "metadata": {"name": name},
        "spec": {"failurePolicy": "Fail", "matchConstraints": {"namespaceSelector": scope, "resourceRules": rules},
                 **spec},
    }  # fmt: skip


def selector_policy(tenant: str, namespace: str) -> dict[str, Any]:
    users = json.dumps(list(contracts.CONTROLLER_MANAGER_USERS))
    # nodeSelector is an atomic map (an ApplyConfiguration may not mutate it): a JSON patch that adds the
    # tenant key, or the whole map when the pod has none
    key, value = fence.TENANT_KEY.replace("~", "~0").replace("/", "~1"), json.dumps(tenant)
    patch = (
        f'has(object.spec.nodeSelector) ? [JSONPatch{{op: "add", path: "/spec/nodeSelector/{key}", value: {value}}}]'
        f' : [JSONPatch{{op: "add", path: "/spec/nodeSelector", value: {json.dumps({fence.TENANT_KEY: tenant})}}}]'
    )
    return _policy(
        "MutatingAdmissionPolicy",
        f"gpufleet-fence-{tenant}-selector",
        namespace,
        ["CREATE"],
        reinvocationPolicy="IfNeeded",
        matchConditions=[
            {"name": "not-the-vcluster-control-plane", "expression": f"!(request.userInfo.username in {users})"}
        ],
        mutations=[{"patchType": "JSONPatch", "jsonPatch": {"expression": patch}}],
    )


def nodes_policy(tenant: str, namespace: str, pools: list[str], nodes: list[str]) -> dict[str, Any]:
    key = json.dumps(fence.POOL_KEY)
    tolerated = (
        "!has(object.spec.tolerations) || object.spec.tolerations.all(t, has(t.key) && t.key != '' &&"
        f" (t.key != {key} || (has(t.value) && t.value in {json.dumps(pools)} &&"
        " (!has(t.operator) || t.operator == 'Equal'))))"
    )
    bound = (  # nodeName is immutable once set: only a create can arrive bound
        "request.operation != 'CREATE' || !has(object.spec.nodeName) ||"
        f" object.spec.nodeName == '' || object.spec.nodeName in {json.dumps(nodes)}"
    )
    where = f"gpufleet fence: pods of tenant {tenant}"
    return _policy(
        "ValidatingAdmissionPolicy",
        f"gpufleet-fence-{tenant}-nodes",
        namespace,
        ["CREATE", "UPDATE"],
        validations=[
            {"expression": bound, "message": f"{where} run only on the nodes of its pools", "reason": "Forbidden"},
            {
                "expression": tolerated,
                "message": f"{where} tolerate only the taints of its pools ({', '.join(pools)})",
                "reason": "Forbidden",
            },
        ],
    )


def _binding(kind: str, policy: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"policyName": policy["metadata"]["name"]}
    if kind == "ValidatingAdmissionPolicyBinding":
        spec["validationActions"] = ["Deny"]
    return {"apiVersion": API, "kind": kind, "metadata": {"name": policy["metadata"]["name"]}, "spec": spec}


def objects(tenant: str, namespace: str, vcluster_values: dict[str, Any], members: dict[str, list[str]]) -> list:
    """The fence of ``tenant`` (``members``: its pools' nodes by pool) when its vCluster runs its own
    scheduler, else nothing."""
    if not runs_own_scheduler(vcluster_values):
        return []
    pools = sorted(members)
    nodes = sorted({n for ns in members.values() for n in ns})
    mutating, validating = selector_policy(tenant, namespace), nodes_policy(tenant, namespace, pools, nodes)
    return [
        mutating,
        _binding("MutatingAdmissionPolicyBinding", mutating),
        validating,
        _binding("ValidatingAdmissionPolicyBinding", validating),
    ]
