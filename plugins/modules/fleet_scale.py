#!/usr/bin/python
# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: fleet_scale
short_description: Scale a gpufleet node pool as a reviewed Git change (edit, re-render, plan, pull request)
version_added: 0.1.0
description:
  - Sets the size of one pool in the inventory, in place, changing only that number in the vars file
    (comments, quotes, layout and line ends are kept byte for byte).
  - Re-renders the GitOps tree and the pool lock (one call for the whole fleet) and returns a plan, as
    data and as Markdown tables, of what moves - nodes that change pool (from the pool lock, old
    against new), Slurm partitions and NodeSets that change, topology files that change and every file
    added, changed or removed under the GitOps tree.
  - Refuses to scale when the GitOps tree or the pool lock is not current with the inventory before the
    change, so the change under review is the scale change alone.
  - With O(publish=true), first refuses a dirty working tree or a remote that moved (after
    C(git fetch)), then commits the change on branch C(scale/<pool>-<size>) (C(-<size>gpus) for GPU
    sizes), pushes it to C(gpufleet_fleet.gitops.remote) and opens a GitHub pull request or GitLab
    merge request whose body is the plan, when a token is available (the environment variable named in
    C(gpufleet_fleet.gitops.forge.token_env), or O(forge_token)). Without a token it returns the URL
    where the pull request is opened by hand. Running it again finds the branch and the request already
    there and changes nothing.
  - Nothing is written or pushed when any check fails (unknown pool, negative size, a size the cluster
    cannot hold, stale tree, dirty tree, moved remote).
author:
  - gpufleet maintainers (@gpufleet)
requirements:
  - ruamel.yaml
  - git (command line) on the controller when O(publish=true)
extends_documentation_fragment:
  - gpufleet.core.common.gitops
  - gpufleet.core.common.inventory
  - gpufleet.core.publish
options:
  pool:
    description: Name of the pool to scale (as in C(gpufleet_pools)).
    type: str
    required: true
  size:
    description:
      - The new size, in the pool's own unit (C(nodes), or C(gpus) for a pool sized in GPUs) unless
        O(size_unit) says otherwise.
    type: int
    required: true
  size_unit:
    description:
      - Unit of O(size). Default is the unit the pool is sized in now. Giving the other unit switches the
        pool's size key too (C(nodes:) <-> C(gpus:)).
    type: str
    choices: [nodes, gpus]
  publish:
    description: Commit on a branch, push and open the pull/merge request.
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    description: >-
      Computes the plan and the diff without writing, committing or pushing (with O(publish=true) the
      preflight, including C(git fetch), still runs so a dirty tree or a moved remote is reported).
  diff_mode:
    support: full
    description: Returns the diff of the inventory file and of the pool lock.
  platform:
    support: full
    platforms: posix
    description: Runs where the inventory and its Git work tree are, normally the controller (C(localhost)).
"""

EXAMPLES = r"""
- name: Grow the pretrain pool to 36 nodes and open a pull request
  gpufleet.core.fleet_scale:
    inventory_dir: "{{ inventory_dir }}"
    pool: pretrain
    size: 36
    publish: true
  register: fleet_scale_result

- name: Show the plan
  ansible.builtin.debug:
    msg: "{{ fleet_scale_result.plan_markdown }}"

- name: What would 104 GPUs for inference move? (nothing written)
  gpufleet.core.fleet_scale:
    inventory_dir: "{{ inventory_dir }}"
    pool: inference
    size: 104
  check_mode: true
"""

RETURN = r"""
summary:
  description: One line, what changes and how many nodes move.
  returned: success
  type: str
  sample: "scale pretrain: 32 nodes -> 36 nodes; 4 nodes move (4 spare -> pretrain); 9 files change"
plan:
  description:
    - The plan as data. C(moves) (node, from, to), C(required_moves) (the change of the pool's node count),
      C(pool_nodes) (pool -> before/after node counts), C(partitions), C(nodesets), C(topology) (each
      name, file, change, fields), C(files) (added, changed, removed; paths relative to the Git work tree).
  returned: success
  type: dict
plan_markdown:
  description: The plan as Markdown tables (the pull request body).
  returned: success
  type: str
inventory_diff:
  description: Unified diff of the inventory vars file (one line).
  returned: success
  type: str
written:
  description: Files written (empty in check mode).
  returned: success
  type: list
  elements: str
branch:
  description: The branch published (O(publish=true)), else null.
  returned: success
  type: str
  sample: scale/pretrain-36
commit:
  description: Commit on the branch.
  returned: when published
  type: str
pushed:
  description: Whether this run pushed the branch.
  returned: success
  type: bool
pull_request:
  description: C(url), C(number), C(created), C(compare_url) and C(forge) of the pull/merge request.
  returned: when published
  type: dict
  sample: {url: "https://github.com/example-org/gpu-fleet/pull/7", number: 7, created: true}
messages:
  description: Human notes (the compare URL when no token is set, already open requests).
  returned: success
  type: list
  elements: str
"""

from ansible_collections.gpufleet.core.plugins.module_utils.module import (
    GpufleetModule,
    gitops_spec,
    inventory_spec,
    publish_args,
    publish_spec,
)
from ansible_collections.gpufleet.core.plugins.module_utils.scale.run import scale

ARGUMENT_SPEC = {
    **inventory_spec(),
    "pool": {"type": "str", "required": True},
    "size": {"type": "int", "required": True},
    "size_unit": {"type": "str", "choices": ["nodes", "gpus"]},
    **gitops_spec(),
    "publish": {"type": "bool", "default": False},
    **publish_spec(),
}


def scale_pool(module: GpufleetModule) -> dict:
    p = module.params
    res = scale(
        p["inventory_dir"],
        p["pool"],
        p["size"],
        p["size_unit"],
        check=module.check_mode,
        publish=p["publish"],
        gitops_dir=p["gitops_dir"],
        **publish_args(p),
    )
    out = res.as_dict()
    if module.diff_mode:
        out["diff"] = res.diffs()
    return out


def main() -> None:
    GpufleetModule(ARGUMENT_SPEC, requirements=("yaml", "jsonschema", "ruamel.yaml")).run(scale_pool)


if __name__ == "__main__":
    main()
