# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for gpufleet.core.fleet_validate: validate in the controller process.

The inventory is on the controller, so there is nothing to ship: running the core in-process
skips packing the module and starting a Python interpreter per call (docs/adr/code-shape.md), which keeps
the "broken inventory fails in the first seconds" promise. Same options and result as the module.
"""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError

try:
    from ansible_collections.gpufleet.core.plugins.module_utils.model.facts import fleet_facts
except ImportError as exc:  # jsonschema missing on the controller
    fleet_facts = None
    IMPORT_ERROR = str(exc)
else:
    IMPORT_ERROR = None


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self.validate_argument_spec(argument_spec={"inventory_dir": {"type": "path", "required": True}})[1]
        if fleet_facts is None:
            raise AnsibleActionFail(f"gpufleet.core.fleet_validate needs jsonschema and PyYAML: {IMPORT_ERROR}")
        try:
            fleet = fleet_facts(args["inventory_dir"])
        except GpufleetError as exc:
            result.update(failed=True, changed=False, msg=str(exc))
            return result
        result.update(changed=False, fleet=fleet)
        return result
