#!/usr/bin/python
# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: fabric_facts
short_description: Discover the InfiniBand fabric (ibnetdiscover) and report leaf groups and fabric health
version_added: 0.1.0
description:
  - Runs C(ibnetdiscover) on a host with an HCA (read-only, so it also runs in check mode), or reads
    saved output, a fabric YAML file or a Kubernetes Node list, and returns the leaf groups, the
    switch tree and a health report (hosts missing rails, unnamed HCAs, missing or asymmetric spine
    links, nodes missing from the fabric and the reverse).
  - With O(dest), saves the raw C(ibnetdiscover) output as a snapshot file (atomically, only when
    its bytes change), so a fabric change shows up as a diff in review.
author:
  - gpufleet maintainers (@gpufleet)
requirements:
  - Python 3.9 or later on the target (the module runs on the host with the HCA)
  - C(ibnetdiscover) (infiniband-diags) on the target when O(src) is not given
  - PyYAML on the target only for O(fabric) and O(nodes_snapshot) (YAML files); saved or live
    C(ibnetdiscover) output needs no library
extends_documentation_fragment:
  - gpufleet.core.common.fabric
options:
  src:
    description: Saved C(ibnetdiscover) output (default or C(-p) format). Without it, C(ibnetdiscover) is run.
    type: path
  discover:
    description:
      - Run C(ibnetdiscover) when neither O(src) nor O(fabric) is given. Set to false to build the
        fabric from the labels in O(nodes_snapshot) instead.
    type: bool
    default: true
  ibnetdiscover_path:
    description: The C(ibnetdiscover) binary to run.
    type: str
    default: ibnetdiscover
  ports:
    description: Run C(ibnetdiscover -p) (ports report) instead of the default format.
    type: bool
    default: false
  hcas:
    description:
      - HCA ports to discover from, as C(<device>) or C(<device>:<port>) (for example C(mlx5_0:1)); one
        C(ibnetdiscover -C <device> -P <port>) run each. Rail-optimized fabrics have one subnet per rail,
        so list one HCA per rail; the outputs are concatenated (and saved so in O(dest)).
      - Empty runs C(ibnetdiscover) once on the default port.
    type: list
    elements: str
    default: []
  extra_args:
    description: More arguments for C(ibnetdiscover) (for example C(-C mlx5_0 -P 1) to pick the HCA port).
    type: list
    elements: str
    default: []
  dest:
    description: Save the raw C(ibnetdiscover) output here (on the target).
    type: path
attributes:
  check_mode:
    support: full
    description: Discovery is read-only and runs; O(dest) is not written.
  diff_mode:
    support: full
    description: Shows the change of the saved snapshot.
"""

EXAMPLES = r"""
- name: Discover the fabric from a host with an HCA and keep the snapshot
  gpufleet.core.fabric_facts:
    dest: /var/lib/gpufleet/ibnetdiscover.out
  register: fabric

- name: Show hosts that lost a rail
  ansible.builtin.debug:
    var: fabric.fabric.health.hosts_missing_rails
"""

RETURN = r"""
fabric:
  description: Roots, leaf groups, node to leaf group map, blocks and the health report.
  returned: success
  type: dict
dest:
  description: The snapshot file.
  returned: when dest is set and ibnetdiscover ran
  type: str
"""

from ansible_collections.gpufleet.core.plugins.module_utils.module import GpufleetModule, fabric_spec
from ansible_collections.gpufleet.core.plugins.module_utils.topology.task import run_fabric_facts

ARGUMENT_SPEC = {
    "src": {"type": "path"},
    **fabric_spec(),
    "discover": {"type": "bool", "default": True},
    "ibnetdiscover_path": {"type": "str", "default": "ibnetdiscover"},
    "ports": {"type": "bool", "default": False},
    "hcas": {"type": "list", "elements": "str", "default": []},
    "extra_args": {"type": "list", "elements": "str", "default": []},
    "dest": {"type": "path"},
}


def discover(module: GpufleetModule, p: dict) -> str:
    """Run ibnetdiscover once per HCA port (once on the default port without hcas); the outputs joined."""
    binary = module.get_bin_path(p["ibnetdiscover_path"], required=True)
    outputs = []
    for hca in p["hcas"] or [None]:
        where = []
        if hca:
            dev, _sep, port = hca.partition(":")
            where = ["-C", dev, *(["-P", port] if port else [])]
        cmd = [binary, *(["-p"] if p["ports"] else []), *where, *p["extra_args"]]
        rc, out, err = module.run_command(cmd)
        if rc != 0:
            module.fail_json(msg=f"{' '.join(cmd)} failed (rc={rc}): {err.strip()}", rc=rc)
        outputs.append(out if out.endswith("\n") or not out else out + "\n")
    return "".join(outputs)


def facts(module: GpufleetModule) -> dict:
    p = dict(module.params)
    text = None
    if p["src"]:
        p["ibnetdiscover"] = [p["src"]]
    elif not p["fabric"] and p["discover"]:
        text = discover(module, p)
        p["fabric_kind"] = "ibnetdiscover-ports" if p["ports"] else "ibnetdiscover"
    return run_fabric_facts(p, text, check_mode=module.check_mode, diff_mode=module.diff_mode)


def main() -> None:
    # no requirements: PyYAML, only for YAML inputs, fails on use with MissingLibraryError (deps.py)
    GpufleetModule(ARGUMENT_SPEC, mutually_exclusive=[("src", "fabric")]).run(facts)


if __name__ == "__main__":
    main()
