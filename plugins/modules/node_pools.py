#!/usr/bin/python
# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: node_pools
short_description: Label and taint the Nodes of a cluster for their node pools
version_added: 0.1.0
description:
  - Gives every Node of a cluster the fence of its pool through the Kubernetes API, the label
    C(node-restriction.kubernetes.io/gpufleet-pool=<pool>) (plus
    C(node-restriction.kubernetes.io/gpufleet-tenant=<tenant>) for a tenant's pool) and the taint
    C(node-restriction.kubernetes.io/gpufleet-pool=<pool>:NoSchedule). Pools of kind C(system)
    are labelled but not tainted.
  - The node to pool mapping comes from the cluster's pool lock
    (C(<inventory>/snapshots/<cluster>/pools.lock.yaml), written by the renderer) or from
    O(assignment).
  - Labels and taints under these keys that no longer match are removed, also from Nodes that left
    every pool. Other labels and taints are never touched.
  - It also owns the Node annotation C(topology.slinky.slurm.net/spec) (Slinky dynamic topology).
    Its values are read from the rendered tree, the files
    C(<gitops_dir>/clusters/<cluster>/tenants/<tenant>/slurm/node-topology.yaml); a Node without a
    value there loses the annotation. Other annotations are never touched. When O(gitops_dir) or
    those files are missing, no annotation is managed (see RV(annotations)).
  - It also owns the fabric labels, the switch tiers and NVLink domain of each Node
    (C(topology.gpufleet.io/tier-N) and C(topology.gpufleet.io/accelerator), or topograph's
    C(fabric.topograph.run/tier-N) and C(accelerator.topograph.run/domain), as the cluster's
    C(topology.node_labels) says). They are read from the rendered
    C(<gitops_dir>/clusters/<cluster>/node-labels.yaml), built from the same fabric as the Slurm
    topology; a Node without an entry there loses them, labels under other keys are never touched.
    Without that file (no fabric), no fabric label is managed (see RV(fabric_labels)).
  - Each Node is patched with the C(resourceVersion) it was read with; a concurrent change makes
    the patch conflict, and the Node is read and planned again.
author:
  - gpufleet maintainers (@gpufleet)
requirements:
  - PyYAML
  - jsonschema
extends_documentation_fragment:
  - gpufleet.core.common.kube
options:
  inventory_dir:
    aliases: [inventory]
    description:
      - Inventory directory holding the fleet model; the mapping is read from the lock of O(cluster).
      - Mutually exclusive with O(assignment).
    type: path
  cluster:
    description: Name of the cluster in the inventory. Required with O(inventory_dir).
    type: str
  assignment:
    description:
      - Explicit node to pool mapping. A value is a pool name (treated as a tainted pool without
        tenant) or a mapping with C(pool), C(kind) and C(tenant).
      - Nodes of the cluster that are not listed lose their pool labels and taints.
    type: dict
  gitops_dir:
    description:
      - Root of the rendered GitOps tree (the directory holding C(clusters/)), where the
        C(node-topology.yaml) files of O(cluster) are read.
      - Defaults, with O(inventory_dir), to C(gpufleet_fleet.gitops.path) in the Git work tree holding
        the inventory (where the renderer writes by default). With O(assignment), annotations are
        managed only when this and O(cluster) are given.
    type: path
attributes:
  check_mode:
    support: full
    description: Plans the changes and reports them without patching any Node.
  diff_mode:
    support: full
    description: One diff per changed Node with its pool and fabric labels, taints and owned annotations, before and
      after.
  platform:
    support: full
    platforms: posix
    description: Runs where the inventory and the kubeconfig are, normally the controller (C(localhost)).
notes:
  - C(changed) is true only when at least one Node's pool or fabric labels, taints or owned annotations differ.
"""

EXAMPLES = r"""
- name: Fence the nodes of gpu-east from the inventory and its pool lock
  gpufleet.core.node_pools:
    inventory_dir: "{{ inventory_dir }}"
    cluster: gpu-east
    kubeconfig: ~/.kube/gpu-east
  diff: true

- name: Same, with the rendered tree somewhere else (for the topology annotations)
  gpufleet.core.node_pools:
    inventory_dir: "{{ inventory_dir }}"
    cluster: gpu-east
    gitops_dir: /srv/fleet-gitops/gitops

- name: Fence two nodes explicitly
  gpufleet.core.node_pools:
    assignment:
      gpu001: {pool: pretrain, kind: slurm, tenant: llm-pretrain}
      gpu002: spare
    context: gpu-east-admin
"""

RETURN = r"""
changes:
  description:
    - Nodes whose pool labels, taints or owned annotations were (or, in check mode, would be) changed.
    - C(before) and C(after) hold C(annotations) only when annotations are managed.
  returned: always
  type: list
  elements: dict
  sample:
    - node: gpu001
      pool: pretrain
      before: {labels: {}, taints: [], annotations: {}}
      after:
        labels: {node-restriction.kubernetes.io/gpufleet-pool: pretrain}
        taints: [{key: node-restriction.kubernetes.io/gpufleet-pool, value: pretrain, effect: NoSchedule}]
        annotations: {topology.slinky.slurm.net/spec: "topo-default:block-leaf-0"}
fabric_labels:
  description: Whether the fabric labels were managed, from which file, in which scheme, and why (not).
  returned: always
  type: dict
  contains:
    managed:
      description: True when the fabric labels were planned from the rendered file.
      type: bool
    file:
      description: The C(node-labels.yaml) file read (null when not managed).
      type: str
    scheme:
      description: The label scheme, C(gpufleet) or C(topograph) (null when not managed).
      type: str
    msg:
      description: What was read, or why the fabric labels were not managed.
      type: str
  sample:
    managed: true
    file: /repo/gitops/clusters/gpu-east/node-labels.yaml
    scheme: gpufleet
    msg: "fabric labels (gpufleet) of 64 node(s) from /repo/gitops/clusters/gpu-east/node-labels.yaml"
missing:
  description: Nodes in the mapping that are not in the cluster (not fenced).
  returned: always
  type: list
  elements: str
nodes:
  description: Number of Nodes in the cluster.
  returned: always
  type: int
lock:
  description: The pool lock file read (with O(inventory_dir)).
  returned: when O(inventory_dir) is given
  type: str
annotations:
  description: Whether the owned Node annotations were managed, from which files, and why (not).
  returned: always
  type: dict
  contains:
    managed:
      description: True when the annotations were planned from the rendered files.
      type: bool
    files:
      description: The C(node-topology.yaml) files read.
      type: list
      elements: str
    msg:
      description: Why annotations were or were not managed (missing directory or files).
      type: str
  sample:
    managed: false
    files: []
    msg: "node annotations not managed: gitops_dir /repo/gitops does not exist (render first)"
"""

from ansible_collections.gpufleet.core.plugins.module_utils.module import (
    GpufleetModule,
    gitops_spec,
    inventory_spec,
    kube_spec,
)
from ansible_collections.gpufleet.core.plugins.module_utils.pools import apply as pool_apply

ARGUMENT_SPEC = {
    **inventory_spec(required=False, aliases=["inventory"]),
    "cluster": {"type": "str"},
    "assignment": {"type": "dict"},
    **gitops_spec(),
    **kube_spec(),
}


def fence(module: GpufleetModule) -> dict:
    params = module.params
    result = {"changed": False, "changes": [], "missing": [], "nodes": 0}
    gitops_dir = params["gitops_dir"]
    if params["assignment"] is not None:
        mapping = pool_apply.mapping_from_explicit(params["assignment"])
    else:
        fleet = pool_apply.load_fleet(params["inventory_dir"])
        mapping, lock = pool_apply.mapping_from_fleet(fleet, params["cluster"])
        result["lock"] = str(lock)
        gitops_dir = gitops_dir or str(pool_apply.default_gitops_dir(fleet))
    if params["cluster"]:
        annotations, files, msg = pool_apply.annotations_from_gitops(gitops_dir, params["cluster"])
        fabric, labels_file, labels_msg = pool_apply.fabric_labels_from_gitops(gitops_dir, params["cluster"])
    else:
        annotations, files, msg = None, [], "node annotations not managed: no cluster given"
        fabric, labels_file, labels_msg = None, None, "fabric labels not managed: no cluster given"
    result["annotations"] = {"managed": annotations is not None, "files": [str(f) for f in files], "msg": msg}
    result["fabric_labels"] = {
        "managed": fabric is not None,
        "file": str(labels_file) if labels_file else None,
        "scheme": fabric[0].name if fabric else None,
        "msg": labels_msg,
    }
    api = pool_apply.core_api(params["kubeconfig"], params["context"])
    nodes = pool_apply.list_nodes(api)
    changes, result["missing"] = pool_apply.plan(nodes, mapping, annotations, fabric)
    if changes and not module.check_mode:
        changes = pool_apply.apply_changes(api, changes, mapping, annotations=annotations, fabric=fabric)
    result["nodes"] = len(nodes)
    result["changed"] = bool(changes)
    result["changes"] = [{"node": c.node, "pool": c.pool, "before": c.before, "after": c.after} for c in changes]
    if module.diff_mode:
        result["diff"] = [
            {"before_header": c.node, "after_header": c.node, "before": c.before, "after": c.after} for c in changes
        ]
    return result


def main() -> None:
    module = GpufleetModule(
        ARGUMENT_SPEC,
        requirements=("kubernetes", "yaml", "jsonschema"),
        mutually_exclusive=[("inventory_dir", "assignment")],
        required_one_of=[("inventory_dir", "assignment")],
        required_by={"inventory_dir": "cluster"},
    )
    module.run(fence)


if __name__ == "__main__":
    main()
