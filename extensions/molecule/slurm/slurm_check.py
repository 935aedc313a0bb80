"""Run a tenant's rendered Slurm configuration on real slurmctld + emulated slurmd (molecule `slurm`).

Reads what gitops_render wrote for one tenant, as the Slinky operator would use it:
``tenants/<t>/slurm/values.yaml`` (NodeSets with their pool nodeSelector and Gres, partitions,
``extraConfMap`` with TopologyPlugin/GresTypes) and ``topology.conf``, plus the pool lock next to
the inventory's nodes snapshot (node -> pool). It builds slurm.conf with
tests/lib/gpufleet_testlib/slurm_conf.py, starts the harness of the Slurm integration tests
(tests/integration/slurm/harness.py: munged, slurmctld, one ``slurmd -N`` per node) and checks:

* slurmctld loads the configuration and the topology with no error or warning;
* ``scontrol show topology`` has exactly the leaves of topology.conf and every node is under one;
* jobs submitted with ``--switches=1`` land inside one leaf, for the largest leaf size that fits;
* the partitions hold exactly the nodes of their pools.

Prints one JSON line per tenant; exits 1 with the reason on the first failure.
Usage: slurm_check.py GITOPS_DIR POOL_LOCK CLUSTER TENANT...
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / ".build" / "collections"))
sys.path.insert(0, str(REPO / "tests" / "integration" / "slurm"))
sys.path.insert(0, str(REPO / "tests" / "lib"))
from gpufleet_testlib.slurm_build import check_version
from gpufleet_testlib.slurm_conf import (
    SlurmCluster,
    SlurmNode,
    SlurmPartition,
    render_gres_conf,
    render_slurm_conf,
)
from harness import SlurmCluster as Harness
from harness import leaf_of, parse_show_topology

from ansible_collections.gpufleet.core.plugins.module_utils.hostlist import compress, expand

POOL_KEY = "node-restriction.kubernetes.io/gpufleet-pool"


def fail(msg: str) -> None:
    print(f"slurm_check: FAILED: {msg}", file=sys.stderr)
    sys.exit(1)


def conf_for(tenant: str, values: dict, lock: dict[str, str]) -> tuple[SlurmCluster, dict[str, list[str]]]:
    nodes, members = [], {}
    for ns_name, ns in sorted(values["nodesets"].items()):
        if not ns.get("enabled", True):
            continue
        pool = ns["podSpec"]["nodeSelector"][POOL_KEY]
        names = sorted(n for n, p in lock.items() if p == pool)
        if not names:
            fail(f"{tenant}: NodeSet {ns_name} selects pool {pool!r}, which has no nodes in the lock")
        extra = ns.get("extraConfMap", {})
        gres = next((g for g in extra.get("Gres", []) if g.startswith("gpu:")), "gpu:0")
        gpus = int(gres.rsplit(":", 1)[1])
        nodes.append(SlurmNode(compress(names), cpus=4, memory_mb=1000, gpus=gpus, features=extra.get("Features", [])))
        members[ns_name] = names
    partitions = []
    for p_name, part in sorted(values["partitions"].items()):
        if not part.get("enabled", True):
            continue
        opts = dict(part.get("configMap", {}))
        default = str(opts.pop("Default", "NO")).upper() == "YES"
        names = sorted(n for ns in part["nodesets"] for n in members[ns])
        partitions.append(SlurmPartition(p_name, compress(names), default=default, options=opts))
    extra = values.get("controller", {}).get("extraConfMap", {}) | values.get("extraConfMap", {})
    cluster = SlurmCluster(
        name=re.sub(r"[^a-z0-9_-]", "-", tenant)[:40],
        control_host="slurm-controller",  # the harness puts localhost and a free port here
        nodes=nodes,
        partitions=partitions,
        topology_plugin=extra.get("TopologyPlugin", "topology/tree"),
    )
    return cluster, members


def check_tenant(slurm_dir: Path, lock: dict[str, str], tenant: str) -> dict:
    values = yaml.safe_load((slurm_dir / "values.yaml").read_text(encoding="utf-8"))
    topology = (slurm_dir / "topology.conf").read_text(encoding="utf-8")
    cluster, members = conf_for(tenant, values, lock)
    conf = render_slurm_conf(cluster)
    with tempfile.TemporaryDirectory(prefix=f"slurm-{tenant}-") as tmp:
        h = Harness(Path(tmp), conf, topology=topology, gpu_devices=8, cluster_name=cluster.name)
        h.gres = render_gres_conf(cluster.nodes, device_path=h.device_path)
        with h:
            # AllowGroups names directory groups (identity: SSSD provides them on the real login and
            # worker pods; tests/integration/slurm/test_slurm_identity.py resolves them for real); this
            # host has none, so exactly those groups' "not found" lines are expected here
            groups = sorted(
                {
                    str(g)
                    for part in (values.get("partitions") or {}).values()
                    for g in ((part or {}).get("configMap") or {}).get("AllowGroups") or []
                }
            )
            problems = h.ctld_problems(
                allow=[rf"error: _get_group_members: Could not find configured group {re.escape(g)}$" for g in groups]
            )
            if problems:
                fail(f"{tenant}: slurmctld reported problems with the rendered config:\n  " + "\n  ".join(problems))
            topo = parse_show_topology(h.scontrol("show", "topology"))
            leaves = {k: v["nodes"] for k, v in topo.items() if v["level"] == 0}
            all_nodes = sorted(n for names in members.values() for n in names)
            placed = sorted(n for names in leaves.values() for n in names)
            if placed != all_nodes:
                fail(f"{tenant}: leaves cover {compress(placed)}, nodes are {compress(all_nodes)}")
            parts = {}
            for line in h.scontrol("show", "partition", "-o").splitlines():
                f = dict(re.findall(r"(\w+)=(\S+)", line))
                parts[f["PartitionName"]] = expand(f["Nodes"])
            want = {p.name: sorted(expand(p.nodes)) for p in cluster.partitions}
            if {k: sorted(v) for k, v in parts.items()} != want:
                fail(f"{tenant}: partitions {parts} != rendered {want}")
            jobs = []
            for part in cluster.partitions:
                in_part = set(expand(part.nodes))
                groups = sorted((sorted(set(m) & in_part) for m in leaves.values()), key=lambda g: g[:1])
                groups = [g for g in groups if g]
                if len(groups) < 2 or len(groups[0]) < 2:
                    continue
                # Hold the first node of the first leaf. A job as big as the largest other leaf no
                # longer fits in the first leaf; lowest-free-node placement would straddle the first
                # two leaves. With the rendered topology and --switches=1 it must take one whole leaf.
                size = max(len(g) for g in groups[1:])
                if size <= len(groups[0]) - 1:
                    continue
                blocker = h.sbatch("-p", part.name, "-N", "1", "-w", groups[0][0], wrap="sleep 120")
                h.wait_job(blocker, timeout=60)
                job = h.sbatch("-p", part.name, "-N", str(size), "--exclusive", "--switches=1", wrap="sleep 120")
                got = h.wait_job(job, timeout=60)
                leaf = leaf_of(got.nodes, leaves)
                if leaf is None or set(got.nodes) & set(groups[0]):
                    fail(f"{tenant}: --switches=1 job {job} in {part.name} was placed on {compress(got.nodes)}")
                jobs.append({"partition": part.name, "nodes": size, "leaf": leaf, "held": groups[0][0]})
                h.scancel(job, blocker)
            if not jobs:
                fail(f"{tenant}: no partition spans two leaves; the placement check proves nothing")
    return {"tenant": tenant, "slurm": check_version(), "nodes": len(all_nodes), "leaves": len(leaves), "jobs": jobs}


def main() -> None:
    gitops, lock_file, cluster, *tenants = sys.argv[1:]
    lock = yaml.safe_load(Path(lock_file).read_text(encoding="utf-8"))["nodes"]
    for tenant in tenants:
        slurm_dir = Path(gitops) / "clusters" / cluster / "tenants" / tenant / "slurm"
        print(json.dumps(check_tenant(slurm_dir, lock, tenant), sort_keys=True))


if __name__ == "__main__":
    main()
