"""Removing a tenant from the inventory leaves nothing of it behind, with no hand-holding.

The tenant (and its pool) is dropped from the bed's inventory, the inventory re-rendered and committed;
then only the real controller acts. The cluster root prunes the tenant root before the tenant's
AppProject (prune waves run in reverse); deleting the tenant root deletes its children in reverse
sync-wave order (Argo CD 3.2 ``FilterObjectsForDeletion``): the apps inside the vCluster first, then
the vCluster, then the host namespace. The registration (the Argo CD cluster Secret, owned by the
vCluster's host namespace, roles/tenant/tasks/register.yml) is garbage-collected with that namespace.

Asserted: no Application, AppProject or cluster Secret of the tenant left, no host object of it
(namespace ``vc-<t>`` and everything in it, its cluster-wide policies, volumes), the other tenants'
Applications and host objects untouched (same uids), every remaining app Synced+Healthy. No finalizer
is removed by hand anywhere. Runs last in the bed (the tenant is gone afterwards).
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from argocd_bed import ROOT_APP, ArgoBed, Synced, rendered_apps
from argocd_harness import GPUFLEET_CLI, git, run, synced_healthy

TENANT = "inference"
LABEL = "gpufleet.io/tenant"
WAIT = 600  # convergence deadline (not a timing assertion)


def drop_tenant(inventory: Path, tenant: str) -> None:
    """The inventory change a platform engineer makes: the tenant and the pools it owned go."""
    tfile = inventory / "group_vars" / "all" / "tenants.yml"
    tdoc = yaml.safe_load(tfile.read_text())
    owned = next(set(t.get("pools") or []) for t in tdoc["gpufleet_tenants"] if t["name"] == tenant)
    tdoc["gpufleet_tenants"] = [t for t in tdoc["gpufleet_tenants"] if t["name"] != tenant]
    tfile.write_text(yaml.safe_dump(tdoc, sort_keys=False))
    pfile = inventory / "group_vars" / "all" / "pools.yml"
    pdoc = yaml.safe_load(pfile.read_text())
    pdoc["gpufleet_pools"] = [p for p in pdoc["gpufleet_pools"] if p["name"] not in owned]
    pfile.write_text(yaml.safe_dump(pdoc, sort_keys=False))


def tenant_traces(bed: ArgoBed, tenant: str) -> list[str]:
    """Everything of ``tenant`` still on the host: Argo CD objects, its namespace, labelled objects."""
    left = [f"Application/{n}" for n, a in bed.argocd.apps().items() if is_tenants(a, tenant)]
    for kind, args in (
        ("appprojects.argoproj.io", ["-n", "argocd"]),
        ("secrets", ["-n", "argocd"]),
        ("namespaces", []),
        ("ciliumclusterwidenetworkpolicies.cilium.io", []),
        ("persistentvolumes", []),
    ):
        for o in bed.host.get_json(kind, *args)["items"]:
            meta = o["metadata"]
            ref = (o.get("spec") or {}).get("claimRef") or {}
            if (
                (meta.get("labels") or {}).get(LABEL) == tenant
                or meta["name"] in (tenant, f"vc-{tenant}", f"cluster-{tenant}")
                or ref.get("namespace") == f"vc-{tenant}"
            ):
                left.append(f"{kind}/{meta['name']}")
    return sorted(left)


def is_tenants(app: dict, tenant: str) -> bool:
    return (app["metadata"].get("labels") or {}).get(LABEL) == tenant or app["metadata"]["name"].startswith(
        f"{tenant}-"
    )


def uids(bed: ArgoBed, tenants: list[str]) -> dict[str, str]:
    """Uids of the other tenants' Applications, namespaces and the objects in them."""
    out = {f"app/{n}": a["metadata"]["uid"] for n, a in bed.argocd.apps().items() if not is_tenants(a, TENANT)}
    for t in tenants:
        out[f"ns/vc-{t}"] = bed.host.get_json("namespace", f"vc-{t}")["metadata"]["uid"]
        for kind in ("pvc", "resourcequota", "configmap", "networkpolicy"):
            for o in bed.host.get_json(kind, "-n", f"vc-{t}")["items"]:
                if "probe" in (o.get("data") or {}):
                    continue  # earlier tests' probes: not in the inventory, the re-render prunes them
                if o["metadata"]["name"].startswith("kube-root-ca.crt-x-"):
                    continue  # vCluster's own copy per namespace, dropped and re-made as pods come and go
                out[f"{kind}/vc-{t}/{o['metadata']['name']}"] = o["metadata"]["uid"]
    return out


def test_removing_a_tenant_leaves_nothing_behind(argocd_bed: ArgoBed, synced: Synced) -> None:
    bed = argocd_bed
    others = sorted(t for t in bed.tenants if t != TENANT)
    assert tenant_traces(bed, TENANT), "the tenant is not installed to begin with"
    before = uids(bed, others)
    drop_tenant(bed.inventory, TENANT)
    out = bed.repo / "gitops"
    shutil.rmtree(out)
    run([sys.executable, str(GPUFLEET_CLI), "render", "--inventory", str(bed.inventory), "--out", str(out)])
    git(bed.repo, "add", "-A")
    git(bed.repo, "commit", "-q", "-m", f"tenant {TENANT} removed from the inventory")
    want = [*sorted(rendered_apps(bed)), ROOT_APP]
    assert not [n for n in want if n.startswith(f"{TENANT}-")]
    t0 = time.monotonic()
    left: list[str] = []
    while time.monotonic() - t0 < WAIT:
        left = tenant_traces(bed, TENANT)
        apps = bed.argocd.apps()
        if not left and all(n in apps and synced_healthy(apps[n]) for n in want):
            break
        time.sleep(2)
    print(f"\nbench: tenant removed (commit -> nothing left, all Synced+Healthy): {time.monotonic() - t0:.1f}s")
    assert not left, f"left behind after {WAIT}s: {left}\ncontroller log:\n{bed.argocd.logs('controller', 40)}"
    apps = bed.argocd.apps()
    assert set(apps) == set(want), sorted(set(apps) ^ set(want))
    after = uids(bed, others)
    changed = {k for k in before if before[k] != after.get(k)}
    assert not changed, sorted(changed)  # the other tenants were not touched (nothing re-created)
