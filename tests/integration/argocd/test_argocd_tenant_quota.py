"""The vCluster host quota and the product as shipped, through the vCluster syncer double: the sample with
accounting, monitoring and health on installs whole, every tenant claim lands in ``vc-<tenant>``
under vCluster's translated name and the host ResourceQuota admits them exactly (used == hard); a
quota one byte too small refuses the accounting database's claim and ``argocd_status`` says so.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from argocd_bed import CLUSTER, ROOT_APP, ArgoBed, Synced, argocd_status, rendered_apps
from argocd_harness import git, synced_healthy
from real_vcluster import translated

from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants.quota import quantity_bytes

SLURM_TENANTS = ("llm-pretrain", "research")
WAIT = 300


def quota_of(bed: ArgoBed, tenant: str) -> dict[str, Any]:
    return bed.host.get_json("resourcequota", f"vc-{tenant}", "-n", f"vc-{tenant}")


def test_accounting_and_every_claim_of_the_sample_are_up(argocd_bed: ArgoBed, synced: Synced) -> None:
    bed = argocd_bed
    apps = rendered_apps(bed)
    live = bed.argocd.apps()
    for t in SLURM_TENANTS:  # the sample as shipped: accounting on, its apps Synced+Healthy
        for part in ("mariadb-operator-crds", "mariadb-operator", "accounting-db", "slurm", "accounting"):
            assert f"{t}-{part}" in apps and synced_healthy(live[f"{t}-{part}"]), f"{t}-{part}"
        claims = {p["metadata"]["name"]: p for p in bed.host.get_json("pvc", "-n", f"vc-{t}")["items"]}
        want = {
            translated("slurm-home", "slurm", t),
            translated("storage-slurm-accounting-db-0", "slurm", t),
            translated("statesave-slurm-controller-0", "slurm", t),
            f"data-{t}-0",
        }
        assert want <= set(claims), sorted(claims)
        assert all(claims[n]["status"]["phase"] == "Bound" for n in want), {n: claims[n]["status"] for n in want}
        q = quota_of(bed, t)
        hard = quantity_bytes(q["status"]["hard"]["requests.storage"], "hard")
        used = quantity_bytes(q["status"]["used"]["requests.storage"], "used")
        assert used == hard, (t, q["status"])  # the rendered quota is exactly what the tenant claims
        job = [j for j in bed.tenants[t].get_json("jobs", "-n", "slurm")["items"]]
        assert job and all(j["status"].get("succeeded") for j in job), [j.get("status") for j in job]
    assert not bed.doubles.errors(), bed.doubles.errors()


def _delete(plane: Any, *args: str) -> None:
    plane.kubectl("delete", "--wait=true", "--ignore-not-found", *args)


def test_a_quota_one_byte_short_refuses_the_database_with_the_reason(argocd_bed: ArgoBed, synced: Synced) -> None:
    bed = argocd_bed
    t = "research"
    values = bed.repo / "gitops" / "clusters" / CLUSTER / "tenants" / t / "vcluster" / "values.yaml"
    original = values.read_text()
    doc = yaml.safe_load(original)
    hard = quantity_bytes(doc["policies"]["resourceQuota"]["quota"]["requests.storage"], "rendered")
    doc["policies"]["resourceQuota"]["quota"]["requests.storage"] = str(hard - 1)
    app = f"{t}-accounting-db"
    vclaim = "storage-slurm-accounting-db-0"
    hclaim = translated(vclaim, "slurm", t)
    try:
        values.write_text(yaml.safe_dump(doc))
        git(bed.repo, "commit", "-qam", f"{t}: quota one byte short")
        deadline = time.monotonic() + WAIT
        while quota_of(bed, t)["status"]["hard"]["requests.storage"] != str(hard - 1):
            assert time.monotonic() < deadline, quota_of(bed, t)["status"]
            time.sleep(2)
        # the database's claim is made again (a restore, a move): it no longer fits
        volume = bed.host.get_json("pvc", hclaim, "-n", f"vc-{t}")["spec"]["volumeName"]
        _delete(bed.tenants[t], "pvc", vclaim, "-n", "slurm")
        _delete(bed.host, "pvc", hclaim, "-n", f"vc-{t}")
        _delete(bed.host, "pv", volume)
        _delete(bed.tenants[t], "pv", volume)

        def refused(a: dict[str, Any]) -> bool:  # the controller's view, persisted in the app status
            return any(
                "exceeded quota" in ((r.get("health") or {}).get("message") or "")
                for r in (a.get("status") or {}).get("resources") or []
            )

        apps = bed.argocd.wait([app], refused, "refused by the quota", timeout=WAIT)
        res = argocd_status(bed, names=[app])
        assert res["ready"] is False, res
        reason = res["apps"][0]["reason"]
        assert "exceeded quota" in reason and "requests.storage" in reason, (reason, apps[app]["status"].get("health"))
    finally:
        values.write_text(original)
        git(bed.repo, "commit", "-qam", f"{t}: rendered quota")
    names = [*sorted(rendered_apps(bed)), ROOT_APP]
    try:
        bed.argocd.wait(names, synced_healthy, "Synced+Healthy again", timeout=WAIT)
    except Exception as exc:  # report: the tree is what later tests read
        pytest.fail(f"did not converge back after the rendered quota was restored: {exc}")
