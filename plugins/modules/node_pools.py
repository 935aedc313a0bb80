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
  - It also owns the slurm-bridge node-name label C(slinky.slurm.net/slurm-nodename) of the Nodes of
    bridged pools (their short name, the name their slurmd registers), read from the rendered
    C(<gitops_dir>/clusters/<cluster>/tenants/<tenant>/slurm-bridge/node-names.yaml); with the rendered
    cluster folder but no such file, every Node loses the label (see RV(bridge_names)).
  - It cordons the Nodes in maintenance (C(gpufleet_maintenance), rendered to
    C(<gitops_dir>/clusters/<cluster>/maintenance.yaml)) whose window has begun, with the annotations
    C(gpufleet.io/maintenance) (the maintenance) and C(nodeset.slinky.slurm.net/node-cordon-reason) (the
    Slinky operator drains the Slurm node behind a cordoned Node with that reason). A Node carrying
    C(gpufleet.io/maintenance) that is no longer in maintenance is uncordoned and loses both annotations;
    Nodes cordoned by anyone else are left alone. Without the rendered tree, cordons are not managed.
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
  now:
    description:
      - The time a maintenance window is compared with (UTC, C(2026-12-01T06:00:00Z)); a Node is cordoned
        once its window's start has passed. Defaults to the current time; set it to plan ahead in check mode.
    type: str
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
  - C(changed) is true only when at least one Node's pool or fabric labels, taints, owned annotations or
    maintenance cordon differ.
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
bridge_names:
  description: Whether the slurm-bridge node-name label was managed, for how many Nodes, and why (not).
  returned: always
  type: dict
  contains:
    managed:
      description: True when the rendered cluster folder was read (the label is then gpufleet's on every Node).
      type: bool
    nodes:
      description: Number of Nodes that carry the label.
      type: int
    msg:
      description: What was read, or why the label was not managed.
      type: str
  sample:
    managed: true
    nodes: 4
    msg: "slurm-bridge node names of 4 node(s) from 1 file(s)"
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
maintenance:
  description: Whether maintenance cordons were managed and why (not), and the nodes whose window has not begun.
  returned: always
  type: dict
  contains:
    managed:
      description: True when the rendered maintenance of O(cluster) was read.
      type: bool
    msg:
      description: Where the maintenance was read from, or why cordons were not managed.
      type: str
    waiting:
      description: Nodes in a maintenance whose window starts after RV(maintenance.now) (not cordoned yet).
      type: list
      elements: str
    now:
      description: The time the windows were compared with.
      type: str
  sample:
    managed: true
    msg: "2 node(s) of gpu-east in maintenance (/repo/gitops/clusters/gpu-east/maintenance.yaml)"
    waiting: []
    now: "2026-12-01T07:00:00Z"
"""

from datetime import datetime, timezone

from ansible_collections.gpufleet.core.plugins.module_utils.model.maintenance_model import parse_start
from ansible_collections.gpufleet.core.plugins.module_utils.module import (
    GpufleetModule,
    gitops_spec,
    inventory_spec,
    kube_spec,
)
from ansible_collections.gpufleet.core.plugins.module_utils.pools import apply as pool_apply
from ansible_collections.gpufleet.core.plugins.module_utils.pools import cordon

ARGUMENT_SPEC = {
    **inventory_spec(required=False, aliases=["inventory"]),
    "cluster": {"type": "str"},
    "assignment": {"type": "dict"},
    **gitops_spec(),
    **kube_spec(),
    "now": {"type": "str"},
}


def _maintenance(params: dict, gitops_dir: str | None) -> tuple[dict | None, dict]:
    """The due maintenance entries of the cluster (None: not managed) and what to report about them."""
    try:
        now = parse_start(params["now"]) if params["now"] else datetime.now(timezone.utc)  # noqa: UP017
    except ValueError:
        raise pool_apply.ApplyError(f"now: {params['now']!r} is not a UTC time like 2026-12-01T06:00:00Z") from None
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    if not params["cluster"]:
        return None, {"managed": False, "msg": "cordons not managed: no cluster given", "waiting": [], "now": stamp}
    entries, msg = cordon.read_maintenance(gitops_dir, params["cluster"])
    active = cordon.due(entries, now) if entries is not None else None
    waiting = sorted(set(entries or {}) - set(active or {}))
    return active, {"managed": entries is not None, "msg": msg, "waiting": waiting, "now": stamp}


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
        names, names_msg = pool_apply.bridge_names_from_gitops(gitops_dir, params["cluster"])
    else:
        annotations, files, msg = None, [], "node annotations not managed: no cluster given"
        fabric, labels_file, labels_msg = None, None, "fabric labels not managed: no cluster given"
        names, names_msg = None, "slurm-bridge node names not managed: no cluster given"
    result["bridge_names"] = {"managed": names is not None, "nodes": len(names or {}), "msg": names_msg}
    result["annotations"] = {"managed": annotations is not None, "files": [str(f) for f in files], "msg": msg}
    maintenance, result["maintenance"] = _maintenance(params, gitops_dir)
    result["fabric_labels"] = {
        "managed": fabric is not None,
        "file": str(labels_file) if labels_file else None,
        "scheme": fabric[0].name if fabric else None,
        "msg": labels_msg,
    }
    api = pool_apply.core_api(params["kubeconfig"], params["context"])
    nodes = pool_apply.list_nodes(api)
    planned = {"fabric": fabric, "maintenance": maintenance, "names": names}
    changes, result["missing"] = pool_apply.plan(nodes, mapping, annotations, **planned)
    if changes and not module.check_mode:
        changes = pool_apply.apply_changes(api, changes, mapping, annotations=annotations, **planned)
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
