#!/usr/bin/python
# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: fleet_validate
short_description: Validate a gpufleet inventory and return the fleet model
version_added: 0.1.0
description:
  - Loads the C(gpufleet_*) variables of an inventory directory (C(group_vars/all.yml) or
    C(group_vars/all/*.yml)), validates them against the fleet schema and the cross-reference rules,
    and returns the typed fleet model with every default filled in.
  - A broken inventory fails with one message listing every problem, each with its file, line and
    key path, before anything else runs.
  - Reads files only; never changes anything.
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.core.common.inventory
attributes:
  check_mode:
    support: full
    description: Runs the same in check mode; it never changes anything.
  diff_mode:
    support: none
    description: Nothing is written, so there is nothing to diff.
  platform:
    support: full
    platforms: posix
    description: Runs where the inventory files are, normally the controller (C(localhost)).
"""

EXAMPLES = r"""
- name: Validate the inventory before anything else
  gpufleet.core.fleet_validate:
    inventory_dir: "{{ inventory_dir }}"
  register: validate_inventory_result

- name: Show the tenants
  ansible.builtin.debug:
    msg: "{{ validate_inventory_result.fleet.tenants | map(attribute='name') }}"
"""

RETURN = r"""
fleet:
  description:
    - The validated fleet model with defaults filled in. C(clusters), C(tenants) and C(pools) are
      lists in inventory order; each cluster has C(components) keyed by component name with
      C(enabled), C(install_method), C(namespace), C(values) and C(options), and from its row of the
      component table C(releases) (the Helm releases the apply step installs for install_method helm,
      values files relative to the cluster's folder of the rendered tree) and C(bootstrap).
  returned: success
  type: dict
  sample:
    name: sample
    clusters: [{name: gpu-east, server: https://kubernetes.default.svc, components: {}}]
    tenants: [{name: research, cluster: gpu-east, pools: [research-batch]}]
    pools: [{name: research-batch, cluster: gpu-east, kind: slurm}]
    summary: {clusters: 1, tenants: 3, pools: 6}
"""

from ansible_collections.gpufleet.core.plugins.module_utils.model.facts import fleet_facts
from ansible_collections.gpufleet.core.plugins.module_utils.module import GpufleetModule, inventory_spec

ARGUMENT_SPEC = inventory_spec()


def validate(module: GpufleetModule) -> dict:
    return {"changed": False, "fleet": fleet_facts(module.params["inventory_dir"])}


def main() -> None:
    GpufleetModule(ARGUMENT_SPEC, requirements=("yaml", "jsonschema")).run(validate)


if __name__ == "__main__":
    main()
