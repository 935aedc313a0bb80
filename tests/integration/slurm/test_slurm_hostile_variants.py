"""Every valid variant of the bad-input corpus renders a Slurm config that real slurmctld loads.

The corpus (tests/lib/hostile_cases.py) refuses free strings that would break or inject into
slurm.conf (``max_time: "two hours"``, ``"02:00:00 AllowAccounts=ALL\\nPartitionName=evil"``). Its
valid variants (every Slurm time form, partition names with ``_``/``-``, the sample itself) must
still load: for each Slurm tenant the rendered chart values (partitions' configMap, NodeSet
features, controller extraConfMap, configFiles/topology.conf) become a slurm.conf body that the
harness runs in slurmctld 26.05. The test fails on any slurmctld error or warning, and checks that
each partition's MaxTime is what the inventory said.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest
import yaml
from harness import SlurmHarnessError, require_slurm

from ansible_collections.gpufleet.core.plugins.module_utils.hostlist import compress
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.render.inputs import cluster_inputs
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants import accounting
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_fleet

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests" / "lib"))

from hostile_cases import INV, VALID

pytestmark = pytest.mark.slurm
SLURM_VARIANTS = ["sample", *sorted(k for k in VALID if k.startswith(("max-time", "partition", "allow-unmatched")))]


NO_DIRECTORY_GROUP = r"error: _get_group_members: Could not find configured group "


def _value(v: object) -> str:
    return ",".join(map(str, v)) if isinstance(v, list) else str(v)


def slurm_bodies(inv: Path) -> dict[str, tuple[str, str | None, dict[str, str]]]:
    """tenant -> (slurm.conf body, topology.conf or None, partition -> MaxTime) from the render."""
    fleet = load_fleet(inv)
    result = render_fleet(fleet)
    out = {}
    for cname, cluster in fleet.clusters.items():
        members = cluster_inputs(fleet, cluster).members
        for t in fleet.cluster_tenants(cname):
            rel = f"clusters/{cname}/tenants/{t.name}/slurm/values.yaml"
            if rel not in result.files:
                continue
            values = yaml.safe_load(result.files[rel])
            lines = [f"ClusterName={values['clusterName']}"]
            # The accounting keys need a slurmdbd (slurmctld refuses TRES gres/gpu without one): they
            # are loaded with a real slurmdbd in test_slurm_accounting.py, not here.
            acct = set(accounting.slurm_conf(t.accounting)) if t.accounting.enabled else set()
            for k, v in sorted(values["controller"]["extraConfMap"].items()):
                if k not in acct:
                    lines.append(f"{k}={_value(v)}")
            for pool, ns in sorted(values["nodesets"].items()):
                conf = {k: v for k, v in ns["extraConfMap"].items() if k != "Gres"}  # no GPU devices here
                opts = " ".join(f"{k}={_value(v)}" for k, v in sorted(conf.items()))
                lines.append(f"NodeName={compress(members[pool])} CPUs=4 RealMemory=1000 {opts}")
            max_times = {}
            for part, spec in sorted(values["partitions"].items()):
                if not spec.get("enabled"):
                    continue
                nodes = sorted(n for pool in spec["nodesets"] for n in members[pool])
                opts = " ".join(f"{k}={_value(v)}" for k, v in sorted(spec["configMap"].items()))
                lines.append(f"PartitionName={part} Nodes={compress(nodes)} {opts}")
                max_times[part] = str(spec["configMap"]["MaxTime"])
            out[t.name] = ("\n".join(lines) + "\n", values["configFiles"].get("topology.conf"), max_times)
    return out


@pytest.mark.parametrize("variant", SLURM_VARIANTS)
def test_rendered_slurm_config_loads(variant: str, tmp_path: Path, slurm_cluster) -> None:
    require_slurm()
    repo = tmp_path / "repo"
    shutil.copytree(REPO / INV, repo / INV)
    if variant != "sample":
        VALID[variant](repo)
    bodies = slurm_bodies(repo / INV)
    assert bodies, "no Slurm tenant rendered"
    for tenant, (body, topology, max_times) in sorted(bodies.items()):
        c = slurm_cluster(body, topology=topology, nodes=[])
        # AllowGroups names directory groups (identity) that this host does not have
        assert c.ctld_problems(allow=[NO_DIRECTORY_GROUP]) == [], f"{tenant}:\n{body}"
        shown = {}
        for line in c.scontrol("show", "partition", "-o").splitlines():
            f = dict(re.findall(r"(\w+)=(\S+)", line))
            shown[f["PartitionName"]] = f["MaxTime"]
        assert set(shown) == set(max_times), (shown, max_times)
        for part, want in max_times.items():
            assert (shown[part] == "UNLIMITED") == (want in ("UNLIMITED", "INFINITE")), (part, want, shown[part])
        c.stop()


def test_injected_max_time_would_not_load(tmp_path: Path, slurm_cluster) -> None:
    """The control: what the schema now refuses is what slurmctld refuses (or turns into a new
    partition). Built by hand from the sample's config, since the renderer no longer emits it."""
    require_slurm()
    bodies = slurm_bodies(REPO / INV)
    body, topology, _ = bodies["research"]
    bad = re.sub(r"MaxTime=\S+", "MaxTime=two hours", body, count=1)
    with pytest.raises(SlurmHarnessError):
        slurm_cluster(bad, topology=topology, nodes=[])
    injected = re.sub(r"MaxTime=\S+", "MaxTime=02:00:00 AllowAccounts=ALL\nPartitionName=evil Nodes=ALL", body, count=1)
    c = slurm_cluster(injected, topology=topology, nodes=[])
    assert "PartitionName=evil" in c.scontrol("show", "partition", "evil")  # the injection is real
