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
requirements:
  - jsonschema
  - PyYAML
options:
  inventory_dir:
    description:
      - The inventory directory (the folder holding C(hosts.yml) and C(group_vars/)), or its
        C(hosts.yml) file.
    type: path
    required: true
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
      C(enabled), C(install_method), C(namespace), C(values) and C(options).
  returned: success
  type: dict
  sample:
    name: sample
    clusters: [{name: gpu-east, server: https://kubernetes.default.svc, components: {}}]
    tenants: [{name: research, cluster: gpu-east, pools: [research-batch]}]
    pools: [{name: research-batch, cluster: gpu-east, kind: slurm}]
    summary: {clusters: 1, tenants: 3, pools: 6}
"""

import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError

try:
    from ansible_collections.gpufleet.core.plugins.module_utils.model.facts import fleet_facts
except ImportError:
    fleet_facts = None
    IMPORT_ERROR = traceback.format_exc()
else:
    IMPORT_ERROR = None


def main():
    spec = {"inventory_dir": {"type": "path", "required": True}}
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    if fleet_facts is None:
        module.fail_json(msg=missing_required_lib("jsonschema and PyYAML"), exception=IMPORT_ERROR)
    try:
        fleet = fleet_facts(module.params["inventory_dir"])
    except GpufleetError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=False, fleet=fleet)


if __name__ == "__main__":
    main()
