"""Our topology/tree rule checker (topology_render.validate_tree) against the real slurmctld 26.05.

Each case is a topology.conf for 8 emulated nodes n[1-8]. Slurm's verdict comes from starting
slurmctld with it: ``fatal`` (slurmctld exits), ``warn`` (error/warning lines in its log) or
``clean``. Ours: ``fatal`` (validate_tree raises), ``warn`` (it returns warnings) or ``clean``.
Where we are deliberately stricter than 26.05 (rules of other Slurm releases), the case says so.
"""

from __future__ import annotations

import pytest
from harness import SlurmHarnessError

from ansible_collections.gpufleet.core.plugins.module_utils.fabric.model import FabricError
from ansible_collections.gpufleet.core.plugins.module_utils.hostlist import HostlistError
from ansible_collections.gpufleet.core.plugins.module_utils.topology.render import parse_tree_conf, validate_tree

pytestmark = pytest.mark.slurm

CONF = """\
TopologyPlugin=topology/tree
NodeName=n[1-8] CPUs=2 RealMemory=500
PartitionName=p Nodes=n[1-8] Default=YES MaxTime=INFINITE State=UP
"""

LEAVES = "SwitchName=l1 Nodes=n[1-4]\nSwitchName=l2 Nodes=n[5-8]\n"

# id: (topology.conf, slurm 26.05 verdict, our verdict, slurmctld log text expected)
CASES = {
    "clean": (LEAVES + "SwitchName=top Switches=l[1-2]\n", "clean", "clean", None),
    "duplicate switch": (
        LEAVES + "SwitchName=l1 Nodes=n1\nSwitchName=top Switches=l[1-2]\n",
        "fatal",
        "fatal",
        "has already been defined",
    ),
    "undefined child": (LEAVES + "SwitchName=top Switches=l[1-3]\n", "fatal", "fatal", "invalid child"),
    "self child": (LEAVES + "SwitchName=top Switches=l[1-2],top\n", "fatal", "fatal", "invalid child"),
    "cycle": (LEAVES + "SwitchName=a Switches=l1,b\nSwitchName=b Switches=l2,a\n", "fatal", "fatal", "not a tree"),
    # 22.05 was fatal on a switch with neither Nodes= nor Switches=; 26.05 ignores it; we refuse it
    "bare switch": (LEAVES + "SwitchName=top Switches=l[1-2]\nSwitchName=root\n", "clean", "fatal", None),
    "node under two leaves": (
        LEAVES.replace("n[5-8]", "n[4-8]") + "SwitchName=top Switches=l[1-2]\n",
        "warn",
        "fatal",
        "Multiple leaf switches",
    ),
    "two roots": (LEAVES, "warn", "warn", "no switch can reach all nodes"),
    "empty file": ("# nothing\n", "fatal", "fatal", "No switches configured"),  # 22.05 only logged an error
    # 22.05 accepted names over 64 characters; 24.05.5+ rejects them
    "long switch name": (
        LEAVES.replace("l2", "l" * 70) + f"SwitchName=top Switches=l1,{'l' * 70}\n",
        "fatal",
        "fatal",
        None,
    ),
    # Slurm reads the digit tail as uint64 and clamps it: leaf99999999999999999999 becomes
    # leaf18446744073709551615 in Switches=, which names no switch. (A tail equal to 2**64-1, e.g.
    # leaf018446744073709551615, round-trips and Slurm accepts it.)
    "digit tail overflow": (
        "SwitchName=l1 Nodes=n[1-4]\nSwitchName=leaf99999999999999999999 Nodes=n[5-8]\n"
        "SwitchName=top Switches=l1,leaf99999999999999999999\n",
        "fatal",
        "fatal",
        "invalid child",
    ),
}


def _ours(text: str) -> str:
    try:
        return "warn" if validate_tree(parse_tree_conf(text)) else "clean"
    except (FabricError, HostlistError):  # parse_tree_conf expands hostlists: overflowing names fail there
        return "fatal"


@pytest.mark.parametrize("case", list(CASES))
def test_rule_checker_agrees_with_slurmctld(slurm_cluster, case):
    text, slurm_verdict, our_verdict, log_text = CASES[case]
    assert _ours(text) == our_verdict
    c = slurm_cluster(CONF, topology=text, start=False)
    try:
        c.start(timeout=15)
        got = "warn" if c.ctld_problems() else "clean"
    except SlurmHarnessError:
        got = "fatal"
    assert got == slurm_verdict, c.tail("slurmctld")
    if log_text:
        assert log_text in c.ctld_log()
    # never weaker than Slurm: whatever slurmctld flags, we flag at least as hard
    rank = {"clean": 0, "warn": 1, "fatal": 2}
    assert rank[our_verdict] >= rank[slurm_verdict]
