#!/usr/bin/python
# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: fleet_maintenance
short_description: Put nodes into maintenance or return them, as an inventory change rendered for review
version_added: 0.3.0
description:
  - Adds (O(action=start)) or removes (O(action=end)) one entry of C(gpufleet_maintenance) in
    C(<inventory>/group_vars/all/maintenance.yml) (a file the module owns and rewrites), validates the
    edited inventory, renders it and writes the GitOps tree and then the file.
  - The render lists the nodes in C(clusters/<cluster>/maintenance.yaml), which the apply step
    (M(gpufleet.core.node_pools)) cordons, and the plan in C(clusters/<cluster>/MAINTENANCE.md), per
    tenant the nodes and GPUs that leave and when, and the Slurm MAINT reservation of a window
    (M(gpufleet.core.slurm_reservations)).
  - A GitOps tree that is not current before the change, an unknown node or switch, a node already in
    another maintenance or a name already used is refused before anything is written.
  - To publish the change as a pull request, run M(gpufleet.core.fleet_publish) after it.
author:
  - gpufleet maintainers (@gpufleet)
requirements:
  - git (command line) on the controller
extends_documentation_fragment:
  - gpufleet.core.common.gitops
  - gpufleet.core.common.inventory
options:
  action:
    description: C(start) puts the nodes into maintenance, C(end) returns them.
    type: str
    choices: [start, end]
    required: true
  name:
    description: Name of the maintenance (the Slurm reservation of its window is C(gpufleet-<name>)).
    type: str
    required: true
  cluster:
    description: Cluster of the nodes. Required with O(action=start).
    type: str
  nodes:
    description: The nodes, as a hostlist (C(gpu[041-044])). One of O(nodes) and O(switch) with O(action=start).
    type: str
  switch:
    description: Every node under this switch, leaf group or block of the cluster's topology.
    type: str
  reason:
    description: Why; Slurm shows it as the drain reason. Required with O(action=start).
    type: str
  start:
    description: Start of the window (UTC, C(2026-12-01T06:00:00Z)); without it the nodes go at the next apply.
    type: str
  duration:
    description: Length of the window (C(90m), C(4h), C(2d)); required with O(start).
    type: str
attributes:
  check_mode:
    support: full
    description: Plans the change (the plan, the files) without writing anything.
  diff_mode:
    support: full
    description: The inventory file before and after.
  platform:
    support: full
    platforms: posix
    description: Runs where the inventory and its Git work tree are, normally the controller (C(localhost)).
"""

EXAMPLES = r"""
- name: Swap the PSUs of two nodes
  gpufleet.core.fleet_maintenance:
    inventory_dir: "{{ inventory_dir }}"
    action: start
    name: psu-swap
    cluster: gpu-east
    nodes: gpu[041-042]
    reason: PSU swap RMA-4411

- name: Switch firmware under one leaf, in a window
  gpufleet.core.fleet_maintenance:
    inventory_dir: "{{ inventory_dir }}"
    action: start
    name: su01-firmware
    cluster: gpu-east
    switch: su01-leaf
    reason: switch firmware 2.3
    start: "2026-12-01T06:00:00Z"
    duration: 4h

- name: Return them
  gpufleet.core.fleet_maintenance:
    inventory_dir: "{{ inventory_dir }}"
    action: end
    name: psu-swap
"""

RETURN = r"""
plan_markdown:
  description: The rendered MAINTENANCE.md of every cluster after the change (the pull request's plan).
  returned: always
  type: str
file:
  description: The inventory file written (or removed when the last maintenance ends).
  returned: always
  type: str
files:
  description: The rendered files (relative to the GitOps tree) the change adds, changes or removes.
  returned: always
  type: list
  elements: str
"""

from ansible_collections.gpufleet.core.plugins.module_utils.daytwo.maintenance_change import (
    MaintenanceError,
    plan_maintenance,
    write_maintenance,
)
from ansible_collections.gpufleet.core.plugins.module_utils.model.maintenance_model import Maintenance
from ansible_collections.gpufleet.core.plugins.module_utils.module import GpufleetModule, gitops_spec, inventory_spec

ARGUMENT_SPEC = {
    **inventory_spec(),
    **gitops_spec(),
    "action": {"type": "str", "choices": ["start", "end"], "required": True},
    "name": {"type": "str", "required": True},
    "cluster": {"type": "str"},
    "nodes": {"type": "str"},
    "switch": {"type": "str"},
    "reason": {"type": "str"},
    "start": {"type": "str"},
    "duration": {"type": "str"},
}


def maintenance(module: GpufleetModule) -> dict:
    p = module.params
    start = None
    if p["action"] == "start":
        if not p["cluster"] or not p["reason"] or bool(p["nodes"]) == bool(p["switch"]):
            raise MaintenanceError("action=start needs cluster, reason and one of nodes or switch")
        start = Maintenance(p["name"], p["cluster"], p["reason"], p["nodes"], p["switch"], p["start"], p["duration"])
    change = plan_maintenance(
        p["inventory_dir"], start=start, end=p["name"] if p["action"] == "end" else None, gitops_dir=p["gitops_dir"]
    )
    if not module.check_mode:
        write_maintenance(change)
    result = {
        "changed": change.old_text != change.new_text or bool(change.files()),
        "plan_markdown": change.plan_markdown(),
        "file": str(change.file),
        "files": change.files(),
    }
    if module.diff_mode:
        result["diff"] = {
            "before_header": str(change.file),
            "after_header": str(change.file),
            "before": (change.old_text or b"").decode("utf-8"),
            "after": (change.new_text or b"").decode("utf-8"),
        }
    return result


def main() -> None:
    GpufleetModule(
        ARGUMENT_SPEC,
        requirements=("yaml", "jsonschema"),
        required_together=[("start", "duration")],
    ).run(maintenance)


if __name__ == "__main__":
    main()
