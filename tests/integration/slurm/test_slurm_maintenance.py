"""Maintenance on real slurmctld/slurmd: the drain that follows a cordon, the return, the window's reservation.

A small fleet whose nodes are the harness's Slurm nodes is rendered with ``gpufleet_maintenance`` (the
real renderer writes ``clusters/<cluster>/maintenance.yaml``). No Slinky operator runs here, so the test
does the operator's part the way it documents it: a cordoned Node's Slurm node is drained with
``slurm-operator: <node-cordon-reason>`` and resumed on uncordon (docs/day-two.md). The reservation of a
window is created by ``gpufleet.core.slurm_reservations`` through ``ansible-playbook``.

Shown: a running job finishes first, then the node is drained with the reason, and nothing new lands
there meanwhile; the return resumes it; the MAINT reservation keeps a job that would overlap the window
off its node while a job that ends before the window runs, and the return deletes it. Nothing here
depends on the Slurm release (22.05 or 26.05).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import yaml
from playbook_runner import playbook_env, run_playbook
from polling import wait_for

from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.pools import cordon
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_fleet, write_render

CLUSTER = "mslurm"
TENANT = "ms-a"
NODES = ["ms1", "ms2", "ms3"]
CONF = """\
ClusterName=mslurm
NodeName=ms[1-3] CPUs=2 RealMemory=1000
PartitionName=batch Nodes=ms[1-3] Default=YES MaxTime=INFINITE State=UP
"""
REASON = "PSU swap RMA-4411"


def _fleet_inventory(root: Path) -> Path:
    inv = root / "inv"
    gv = inv / "group_vars" / "all"
    gv.mkdir(parents=True)
    gv.joinpath("fleet.yml").write_text(
        yaml.safe_dump(
            {
                "gpufleet_schema_version": 1,
                "gpufleet_fleet": {"name": "ms", "gitops": {"repo_url": "https://example.invalid/ms.git"}},
                "gpufleet_clusters": [{"name": CLUSTER, "nodes_snapshot": f"snapshots/{CLUSTER}/nodes.yaml"}],
                "gpufleet_pools": [{"name": "ms-batch", "cluster": CLUSTER, "kind": "slurm", "size": {"nodes": 3}}],
                "gpufleet_tenants": [{"name": TENANT, "cluster": CLUSTER, "pools": ["ms-batch"]}],
            }
        )
    )
    res = {"cpu": "2", "memory": "1Gi", "pods": "110"}
    items = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": n}, "status": {"capacity": res}} for n in NODES]
    snap = inv / "snapshots" / CLUSTER / "nodes.yaml"
    snap.parent.mkdir(parents=True)
    snap.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    return inv


def _render(inv: Path, gitops: Path, maintenance: list[dict]) -> dict:
    f = inv / "group_vars" / "all" / "maintenance.yml"
    if maintenance:
        f.write_text(yaml.safe_dump({"gpufleet_maintenance": maintenance}))
    else:
        f.unlink(missing_ok=True)
    write_render(render_fleet(load_fleet(inv)), gitops)
    path = cordon.maintenance_file(gitops, CLUSTER)
    return yaml.safe_load(path.read_text()) if path.is_file() else {}


def _operator_sync(c, entries: dict, returned: list[str]) -> None:
    """What the Slinky operator does for the apply step's cordons (it reads the annotation the apply step
    set from these same entries): drain with the prefixed reason; resume what it drained on uncordon."""
    for node, entry in sorted(entries.items()):
        c.scontrol("update", f"nodename={node}", "state=drain", f"reason={cordon.SLURM_REASON_PREFIX}{entry['reason']}")
    for node in returned:
        c.scontrol("update", f"nodename={node}", "state=resume")


def _node(c, name: str) -> dict[str, str]:
    text = c.scontrol("show", "node", "-o", name)
    fields = dict(kv.split("=", 1) for kv in text.split() if "=" in kv)
    reason = text.split("Reason=", 1)[1].split(" [", 1)[0] if "Reason=" in text else ""
    return {"state": fields.get("State", ""), "reason": reason}


def _reservations_module(c, gitops: Path, work: Path) -> dict:
    play = work / "reservations.yml"
    play.write_text(
        yaml.safe_dump(
            [
                {
                    "hosts": "localhost",
                    "gather_facts": False,
                    "environment": {"SLURM_CONF": str(c.conf_path)},
                    "tasks": [
                        {
                            "gpufleet.core.slurm_reservations": {
                                "gitops_dir": str(gitops),
                                "cluster": CLUSTER,
                                "tenant": TENANT,
                            }
                        }
                    ],
                }
            ]
        )
    )
    hosts = work / "hosts.yml"
    hosts.write_text("all:\n  hosts:\n    localhost:\n      ansible_connection: local\n")
    proc = run_playbook(hosts, play, env=playbook_env(c.env), timeout=300)
    return json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]


def test_running_job_finishes_then_node_drains_and_returns(slurm_cluster, tmp_path: Path) -> None:
    c = slurm_cluster(CONF)
    c.wait_idle(NODES)
    inv, gitops = _fleet_inventory(tmp_path), tmp_path / "gitops"
    running = c.sbatch("-w", "ms1", "--exclusive", wrap="sleep 8")
    c.wait_job(running)

    doc = _render(inv, gitops, [{"name": "psu-swap", "cluster": CLUSTER, "nodes": "ms1", "reason": REASON}])
    assert doc["nodes"] == {"ms1": {"maintenance": "psu-swap", "reason": REASON}}
    _operator_sync(c, doc["nodes"], [])
    want_reason = f"slurm-operator: {REASON}"
    # draining: the job keeps running, the reason is there, nothing new is placed on the node
    n = _node(c, "ms1")
    assert "DRAIN" in n["state"] and n["reason"] == want_reason, n
    assert c.job(running).state == "RUNNING"
    blocked = c.sbatch("-w", "ms1", wrap="sleep 1")
    assert c.wait_evaluated(blocked).state == "PENDING"
    # the job finishes on its own, then the node is drained (not draining) with the reason
    assert c.wait_job(running, states=("COMPLETED",), timeout=60).state == "COMPLETED"

    def drained() -> dict | None:
        x = _node(c, "ms1")
        return x if "DRAIN" in x["state"] and "ALLOCATED" not in x["state"] else None

    n = wait_for(drained, 30, "drained")
    assert n["reason"] == want_reason
    assert c.node_states()["ms1"] == "drained"
    assert c.job(blocked).state == "PENDING"

    # the return: the maintenance is gone from the render, the operator resumes the node, work lands
    assert _render(inv, gitops, []) == {}
    _operator_sync(c, {}, ["ms1"])
    assert c.wait_job(blocked, states=("RUNNING", "COMPLETED"), timeout=60).nodes == ["ms1"]
    assert _node(c, "ms1")["reason"] == ""
    assert c.ctld_problems() == []


def test_window_reservation_keeps_overlapping_jobs_off(slurm_cluster, tmp_path: Path) -> None:
    c = slurm_cluster(CONF)
    c.wait_idle(NODES)
    inv, gitops = _fleet_inventory(tmp_path), tmp_path / "gitops"
    start = (datetime.now(timezone.utc) + timedelta(minutes=30)).replace(second=0, microsecond=0)  # noqa: UP017
    window = {"start": start.strftime("%Y-%m-%dT%H:%M:%SZ"), "duration": "2h"}
    entry = {"name": "firmware", "cluster": CLUSTER, "nodes": "ms2", "reason": "firmware 2.3", "window": window}
    doc = _render(inv, gitops, [entry])
    assert [r["name"] for r in doc["reservations"]] == ["gpufleet-firmware"]

    r = _reservations_module(c, gitops, tmp_path)
    assert r["changed"] is True and r["commands"][0][:3] == ["scontrol", "create", "reservation"]
    shown = c.scontrol("show", "reservation", "-o", "gpufleet-firmware")
    assert "Nodes=ms2" in shown and "MAINT" in shown and "Duration=02:00:00" in shown, shown
    assert _reservations_module(c, gitops, tmp_path)["changed"] is False  # idempotent

    # a 60-minute job would run into the window: not on ms2; a 10-minute job ends before it: runs there
    long_job = c.sbatch("-w", "ms2", "--time=60", wrap="sleep 1")
    assert c.wait_evaluated(long_job).state == "PENDING"
    short_job = c.sbatch("-w", "ms2", "--time=10", wrap="sleep 1")
    assert c.wait_job(short_job, states=("RUNNING", "COMPLETED")).nodes == ["ms2"]
    assert c.job(long_job).state == "PENDING"

    # the return deletes the reservation; the long job runs
    _render(inv, gitops, [])
    r = _reservations_module(c, gitops, tmp_path)
    assert r["commands"] == [["scontrol", "delete", "ReservationName=gpufleet-firmware"]]
    assert c.wait_job(long_job, states=("RUNNING", "COMPLETED"), timeout=60).nodes == ["ms2"]
    assert c.ctld_problems() == []
