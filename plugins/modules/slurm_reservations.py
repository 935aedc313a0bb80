#!/usr/bin/python
# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: slurm_reservations
short_description: Keep a tenant's Slurm MAINT reservations equal to the rendered maintenance windows
version_added: 0.3.0
description:
  - Reads the reservations of O(tenant) from the rendered C(<gitops_dir>/clusters/<cluster>/maintenance.yaml)
    (one per maintenance window, written by the renderer from C(gpufleet_maintenance)) and makes the
    tenant's Slurm hold exactly those, through C(scontrol). Missing ones are created
    (C(Flags=MAINT,IGNORE_JOBS), C(Users=root)), ones whose nodes, start or duration differ are updated,
    and C(gpufleet-) reservations no longer rendered are deleted (the return of a maintenance).
  - Reservations with other names are never touched.
  - Slurm keeps jobs whose time limit would overlap a reservation off its nodes, so the nodes are free
    when the window opens; the cordon (M(gpufleet.core.node_pools)) then drains them.
author:
  - gpufleet maintainers (@gpufleet)
requirements:
  - PyYAML
options:
  gitops_dir:
    description: Root of the rendered GitOps tree (the directory holding C(clusters/)).
    type: path
    required: true
  cluster:
    description: Cluster of the tenant.
    type: str
    required: true
  tenant:
    description: The Slurm tenant whose reservations are reconciled.
    type: str
    required: true
  exec_prefix:
    description:
      - Command prefix that reaches the tenant's controller (the tenant's entry of C(gpufleet_slurm_exec),
        e.g. C(kubectl exec) into the controller pod); empty runs C(scontrol) here.
    type: list
    elements: str
    default: []
attributes:
  check_mode:
    support: full
    description: Reads the reservations and reports the commands without running them.
  diff_mode:
    support: full
    description: The tenant's gpufleet reservations before and after.
  platform:
    support: full
    platforms: posix
    description: Runs where the controller is reachable, normally C(localhost).
notes:
  - C(changed) is true only when a reservation was (or, in check mode, would be) created, updated or deleted.
"""

EXAMPLES = r"""
- name: Reservations of research's maintenance windows
  gpufleet.core.slurm_reservations:
    gitops_dir: "{{ playbook_dir }}/../gitops"
    cluster: gpu-east
    tenant: research
    exec_prefix: [kubectl, --kubeconfig, vc-research.yaml, exec, -n, slurm, slurm-controller-0, --]
"""

RETURN = r"""
commands:
  description: The scontrol commands run (or, in check mode, that would run), without the prefix.
  returned: always
  type: list
  elements: list
  sample: [[scontrol, create, reservation, ReservationName=gpufleet-firmware, "StartTime=2026-12-01T06:00:00",
            Duration=240, "Nodes=gpu[003-008]", Users=root, "Flags=MAINT,IGNORE_JOBS"]]
reservations:
  description: The tenant's gpufleet reservations as rendered (name, nodes, start, minutes).
  returned: always
  type: list
  elements: dict
"""

from ansible_collections.gpufleet.core.plugins.module_utils.daytwo import reservations as resv
from ansible_collections.gpufleet.core.plugins.module_utils.module import GpufleetModule

ARGUMENT_SPEC = {
    "gitops_dir": {"type": "path", "required": True},
    "cluster": {"type": "str", "required": True},
    "tenant": {"type": "str", "required": True},
    "exec_prefix": {"type": "list", "elements": "str", "default": []},
}


def _scontrol(module: GpufleetModule, argv: list[str]) -> str:
    rc, out, err = module.run_command([*module.params["exec_prefix"], *argv])
    if rc != 0:
        raise resv.ReservationError(f"{' '.join(argv)} failed (exit {rc}): {(err or out).strip()}")
    return out


def reconcile(module: GpufleetModule) -> dict:
    p = module.params
    want = resv.desired(p["gitops_dir"], p["cluster"], p["tenant"])
    have = resv.shown(_scontrol(module, ["scontrol", "show", "reservation", "-o"]))
    cmds = resv.plan(want, have)
    if not module.check_mode:
        for argv in cmds:
            _scontrol(module, argv)
    result = {"changed": bool(cmds), "commands": cmds, "reservations": [resv.as_dict(r) for r in want]}
    if module.diff_mode:
        result["diff"] = {
            "before": {n: resv.as_dict(r) for n, r in sorted(have.items())},
            "after": {r.name: resv.as_dict(r) for r in want},
        }
    return result


def main() -> None:
    GpufleetModule(ARGUMENT_SPEC, requirements=("yaml",)).run(reconcile)


if __name__ == "__main__":
    main()
