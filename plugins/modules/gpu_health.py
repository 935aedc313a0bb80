#!/usr/bin/python
# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_health
short_description: List, quarantine or resume GPU nodes on the Kubernetes side
version_added: 0.2.0
description:
  - Kubernetes side of gpufleet's GPU health handling. A quarantined Node carries the taint
    C(gpufleet.io/gpu-unhealthy=true:NoSchedule) (tolerated by no pool fence, so neither Slinky
    NodeSet pods nor Kueue workloads are placed there), the node condition C(GpuUnhealthy=True)
    (which the Slinky operator turns into a Slurm drain) and the annotation
    C(gpufleet.io/gpu-unhealthy-reason).
  - O(operation=resume) removes the taint and the annotation and sets the condition C(False).
  - Pool labels and taints (owned by M(gpufleet.core.node_pools)) are never touched; the node stays
    in its pool, so no pool lock or GitOps change is involved.
  - O(operation=list) changes nothing and returns every Node's health (RV(nodes)).
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.core.common.kube
options:
  operation:
    description: What to do.
    type: str
    choices: [list, quarantine, resume]
    default: list
  nodes:
    description: Node names to quarantine or resume. Required unless O(operation=list).
    type: list
    elements: str
    default: []
  reason:
    description:
      - Why the nodes are quarantined (1-200 characters, letters, digits, space and C(-_.,:;()/=)).
      - Required with O(operation=quarantine).
    type: str
attributes:
  check_mode:
    description: Reports what would change without patching any Node.
    support: full
  diff_mode:
    description: Returns the health of each changed Node before and after.
    support: full
"""

EXAMPLES = r"""
- name: Quarantine a node whose GPU failed
  gpufleet.core.gpu_health:
    operation: quarantine
    nodes: [gpu-h100-017]
    reason: "XID 79 gpu3 fallen off the bus"

- name: List quarantined nodes
  gpufleet.core.gpu_health:
    operation: list
  register: health

- name: Return a repaired node
  gpufleet.core.gpu_health:
    operation: resume
    nodes: [gpu-h100-017]
"""

RETURN = r"""
nodes:
  description: Health of every Node (O(operation=list)) or of the O(nodes) after the change.
  returned: always
  type: list
  elements: dict
  sample:
    - node: gpu-h100-017
      quarantined: true
      reason: XID 79 gpu3 fallen off the bus
      pool: pretrain
      tenant: llm-pretrain
      condition: "True"
quarantined:
  description: Names of the quarantined Nodes (among all Nodes, or among O(nodes)).
  returned: always
  type: list
  elements: str
  sample: [gpu-h100-017]
"""

from ansible_collections.gpufleet.core.plugins.module_utils.health import quarantine
from ansible_collections.gpufleet.core.plugins.module_utils.module import GpufleetModule, kube_spec

ARGUMENT_SPEC = {
    "operation": {"type": "str", "choices": ["list", "quarantine", "resume"], "default": "list"},
    "nodes": {"type": "list", "elements": "str", "default": []},
    "reason": {"type": "str"},
    **kube_spec(),
}


def health(module: GpufleetModule) -> dict:
    params = module.params
    op = params["operation"]
    if op != "list" and not params["nodes"]:
        module.fail_json(msg=f"operation={op} needs nodes")
    reason = params["reason"] or ""
    if op == "quarantine":
        quarantine.check_reason(reason)
    api = quarantine.core_api(params["kubeconfig"], params["context"])
    if op == "list":
        nodes = [h.as_dict() for h in quarantine.list_health(api)]
        return {"changed": False, "nodes": nodes, "quarantined": [n["node"] for n in nodes if n["quarantined"]]}
    state = {"quarantine": "quarantined", "resume": "resumed"}[op]
    results = [quarantine.apply(api, n, state, reason, check=module.check_mode) for n in sorted(set(params["nodes"]))]
    out = {
        "changed": any(r["changed"] for r in results),
        "nodes": [r["after"] for r in results],
        "quarantined": [r["node"] for r in results if r["after"]["quarantined"]],
    }
    if module.diff_mode:
        out["diff"] = [
            {"before_header": r["node"], "after_header": r["node"], "before": r["before"], "after": r["after"]}
            for r in results
            if r["changed"]
        ]
    return out


def main() -> None:
    module = GpufleetModule(
        ARGUMENT_SPEC,
        requirements=("kubernetes",),
        required_if=[("operation", "quarantine", ("reason",))],
    )
    module.run(health)


if __name__ == "__main__":
    main()
