#!/usr/bin/python
# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gitops_render
short_description: Render the GitOps tree (Argo CD apps, platform, tenants) of a gpufleet inventory
version_added: 0.1.0
description:
  - Renders, in one call for the whole fleet, the desired state of every cluster into a GitOps tree
    that Argo CD syncs, from the inventory and its snapshots (nodes, fabric, pool lock).
  - Per cluster a root app-of-apps Application, the C(argoproj.io/Application) health check in
    C(argocd-cm), platform Applications (Cilium, cert-manager, NVIDIA GPU Operator, csi-driver-nfs
    with static Slurm-home PVs), and per tenant an AppProject, a vCluster, network isolation and,
    inside the vCluster, a Slinky Slurm cluster and/or Kueue queues; plus the pool table and a report.
  - Deterministic (same inputs, same bytes) and atomic (the new tree is built aside and swapped in;
    an interruption leaves the old tree or the new one). Only changed files are rewritten; files the
    renderer owns (listed in C(.gpufleet-manifest)) and no longer produces are removed; other files are
    never touched. The pool lock next to each nodes snapshot is updated too.
  - No credentials are rendered; Secrets the tenants need are listed in each cluster's C(REPORT.md).
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.core.common.gitops
  - gpufleet.core.common.inventory
options:
  gitops_dir:
    aliases: [dest]
    description:
      - Root of the GitOps tree to write (the directory holding C(clusters/)).
      - Default is C(gpufleet_fleet.gitops.path) under the Git work tree that holds the inventory.
    type: path
attributes:
  check_mode:
    support: full
    description: Plans without writing; RV(files_added), RV(files_changed), RV(files_removed) say what would change.
  diff_mode:
    support: full
    description: Returns a diff per file added, changed or removed (and per pool lock).
  platform:
    support: full
    platforms: posix
    description: Runs where the inventory and the GitOps tree are, normally the controller (C(localhost)).
"""

EXAMPLES = r"""
- name: Render the GitOps tree of the fleet
  gpufleet.core.gitops_render:
    inventory_dir: "{{ inventory_dir }}"
  register: gitops_render_result

- name: Show what a render would change, without writing
  gpufleet.core.gitops_render:
    inventory_dir: "{{ inventory_dir }}"
    gitops_dir: "{{ playbook_dir }}/gitops"
  check_mode: true
  diff: true
"""

RETURN = r"""
dest:
  description: The GitOps tree root written (or planned).
  returned: always
  type: str
  sample: /srv/fleet/gitops
files_added:
  description: Files (relative to O(gitops_dir)) created by this render.
  returned: always
  type: list
  elements: str
  sample: [clusters/gpu-east/tenants/research/apps/6-slurm.yaml]
files_changed:
  description: Files whose bytes changed.
  returned: always
  type: list
  elements: str
  sample: [clusters/gpu-east/POOLS.md]
files_removed:
  description: Files the renderer owned and no longer produces, removed.
  returned: always
  type: list
  elements: str
  sample: []
files_unchanged:
  description: Number of rendered files left untouched.
  returned: always
  type: int
  sample: 61
locks_changed:
  description: Pool lock files (absolute paths) written.
  returned: always
  type: list
  elements: str
  sample: [/srv/fleet/inventories/prod/snapshots/gpu-east/pools.lock.yaml]
summary:
  description: Per cluster, the node count, tenant count and nodes per pool.
  returned: always
  type: dict
  sample: {gpu-east: {nodes: 66, tenants: 3, pools: {pretrain: 32, system: 2}}}
"""

from ansible_collections.gpufleet.core.plugins.module_utils.module import GpufleetModule, gitops_spec, inventory_spec
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import run

ARGUMENT_SPEC = {**inventory_spec(), **gitops_spec(aliases=["dest"])}


def render(module: GpufleetModule) -> dict:
    p = module.params
    result = run(p["inventory_dir"], p["gitops_dir"], module.check_mode, module.diff_mode)
    result["warnings"] = [w for cluster in result.get("summary", {}).values() for w in cluster.get("warnings", [])]
    return result


def main() -> None:
    GpufleetModule(ARGUMENT_SPEC, requirements=("yaml", "jsonschema")).run(render)


if __name__ == "__main__":
    main()
