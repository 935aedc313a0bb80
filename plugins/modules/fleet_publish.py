#!/usr/bin/python
# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: fleet_publish
short_description: Publish the rendered GitOps tree of a gpufleet inventory as a branch and a pull request
version_added: 0.1.0
description:
  - Commits the changes of the inventory folder and of the rendered GitOps tree (after
    M(gpufleet.core.gitops_render)) on a branch, pushes it to C(gpufleet_fleet.gitops.remote) and opens
    a GitHub pull request or GitLab merge request listing the files and the node moves of the pool locks,
    when a token is available (the environment variable named in C(gpufleet_fleet.gitops.forge.token_env),
    or O(forge_token)); without a token it returns the URL where the request is opened by hand.
  - Refuses, before committing or pushing anything, when a file outside the inventory folder and the
    GitOps tree is modified, when the GitOps tree or a pool lock is not what rendering the inventory
    gives, or when the remote moved (checked with C(git fetch)).
  - The branch is C(gpufleet/render-<hash of the change>) unless O(branch) is given, so publishing the
    same change again finds the same branch and the same open request.
  - To scale a pool use M(gpufleet.core.fleet_scale), which edits, renders and publishes in one step.
author:
  - gpufleet maintainers (@gpufleet)
requirements:
  - git (command line) on the controller
extends_documentation_fragment:
  - gpufleet.core.common.gitops
  - gpufleet.core.common.inventory
  - gpufleet.core.publish
options:
  branch:
    description: Branch to publish on. Default is C(gpufleet/render-<hash>).
    type: str
  title:
    description: Title of the commit and of the pull request. Default names the fleet and the file count.
    type: str
attributes:
  check_mode:
    support: full
    description: >-
      Runs every check (including C(git fetch)) and reports the files and the branch, without
      committing or pushing.
  diff_mode:
    support: none
    description: >-
      The files were written by the render step, which shows their diff; this module commits them
      as they are.
  platform:
    support: full
    platforms: posix
    description: Runs where the inventory and its Git work tree are, normally the controller (C(localhost)).
"""

EXAMPLES = r"""
- name: Render, then publish the tree as a pull request
  gpufleet.core.fleet_publish:
    inventory_dir: "{{ inventory_dir }}"
  register: fleet_publish_result

- name: Where is the pull request
  ansible.builtin.debug:
    msg: "{{ fleet_publish_result.messages }}"
"""

RETURN = r"""
files:
  description: Files published (C(path), C(status) A/M/D/R), relative to the Git work tree.
  returned: success
  type: list
  elements: dict
moves:
  description: Per changed pool lock, the nodes that change pool (C(node), C(from), C(to)).
  returned: success
  type: dict
branch:
  description: The branch published, or null when there was nothing to publish.
  returned: success
  type: str
  sample: gpufleet/render-3f9a1c02be
commit:
  description: The commit on the branch.
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
body:
  description: The pull request body (Markdown tables).
  returned: success
  type: str
messages:
  description: Human notes (nothing to publish, compare URL, already open request).
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
from ansible_collections.gpufleet.core.plugins.module_utils.publish.publish_tree import publish_tree

OPTIONS = {"branch": {"type": "str"}, "title": {"type": "str"}}
ARGUMENT_SPEC = {**inventory_spec(), **gitops_spec(), **OPTIONS, **publish_spec()}


def publish(module: GpufleetModule) -> dict:
    p = module.params
    res = publish_tree(
        p["inventory_dir"],
        gitops_dir=p["gitops_dir"],
        branch=p["branch"],
        title=p["title"],
        check=module.check_mode,
        **publish_args(p),
    )
    return res.as_dict()


def main() -> None:
    GpufleetModule(ARGUMENT_SPEC, requirements=("yaml", "jsonschema")).run(publish)


if __name__ == "__main__":
    main()
