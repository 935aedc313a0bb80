"""Faults on the real controller: the tree converges and nothing is pruned that should
not be. Runs late in the bed (it rewrites the branch), each fault on the same shared bed, in turn:

* the application controller alone killed (SIGKILL) mid-sync and started again by the runner;
* the repo-server alone killed mid-sync (the controller's manifest requests fail until it is back);
* the host kube-apiserver killed mid-sync and started again with the same flags and etcd (every
  watch of the controller, the doubles and the tenant registration's API breaks);
* force-push: a commit is applied, then the branch is rewritten without it and with another one:
  the first commit's object is pruned, the second's created, every other live object kept.

"Mid-sync": a commit adds a probe to each tenant's host app; the fault hits once the controller has
seen the commit (an app OutOfSync or its sync operation running). After each: every app
Synced+Healthy, every probe applied, the live objects and a sample of uids (Applications, tenant
namespaces and claims, the vClusters' namespaces) as before (nothing pruned or re-created). Recovery times
are printed (``-s``) for the bench table; nothing asserts a duration.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from argocd_bed import CLUSTER, ROOT_APP, ArgoBed, Synced, rendered_apps
from argocd_harness import git, synced_healthy
from polling import wait_for

WAIT = 400
TENANT = "inference"


def probe(name: str, tenant: str = TENANT) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": f"vc-{tenant}"},
        "data": {"probe": name},
    }


def write_probe(bed: ArgoBed, name: str, tenant: str = TENANT) -> Path:
    """A ConfigMap in the tenant's host folder. Argo CD applies only the files the render listed, in a
    project of exactly the folder's kinds: the probe is added to both, as a platform change would."""
    base = bed.repo / "gitops" / "clusters" / CLUSTER
    f = base / "tenants" / tenant / "host" / f"{name}.yaml"
    f.write_text(yaml.safe_dump(probe(name, tenant)))
    app = base / "tenants" / tenant / "apps" / "1-host.yaml"
    text = app.read_text()
    if f"{name}.yaml," not in text:
        app.write_text(text.replace("include: '{", f"include: '{{{name}.yaml,", 1))
    project = base / "apps" / f"tenant-{tenant}-0-host-project.yaml"
    text = project.read_text()
    if "kind: ConfigMap" not in text:
        cm = "  - group: ''\n    kind: ConfigMap\n"
        text = text.replace("  namespaceResourceWhitelist: []\n", "  namespaceResourceWhitelist:\n" + cm)
        project.write_text(text.replace("  namespaceResourceWhitelist:\n", "  namespaceResourceWhitelist:\n" + cm, 1)
                           if "kind: ConfigMap" not in text else text)  # fmt: skip
    assert f"{name}.yaml," in app.read_text() and "kind: ConfigMap" in project.read_text()
    return f


def host_has(bed: ArgoBed, name: str, tenant: str = TENANT) -> bool:
    return bed.host.kubectl("get", "configmap", name, "-n", f"vc-{tenant}", check=False).returncode == 0


def live_inventory(bed: ArgoBed) -> set[str]:
    """Names of the live objects the tree owns on the host's tenant namespaces (not the root CA copy
    vCluster's syncer keeps for each virtual namespace that runs pods, and drops some time after)."""
    out = set()
    for t in bed.tenants:
        for kind in ("configmap", "pvc", "resourcequota"):
            for o in bed.host.get_json(kind, "-n", f"vc-{t}")["items"]:
                if not o["metadata"]["name"].startswith("kube-root-ca.crt-x-"):  # vCluster's own, per namespace
                    out.add(f"host/{kind}/vc-{t}/{o['metadata']['name']}")
    return out


def sample_uids(bed: ArgoBed) -> dict[str, str]:
    """A sample of objects whose re-creation would mean a prune: Applications, the tenants' host
    namespaces and claims, the vClusters' namespaces."""
    out = {f"app/{n}": a["metadata"]["uid"] for n, a in bed.argocd.apps().items()}
    for t, plane in bed.tenants.items():
        out[f"host/ns/vc-{t}"] = bed.host.get_json("namespace", f"vc-{t}")["metadata"]["uid"]
        for o in bed.host.get_json("pvc", "-n", f"vc-{t}")["items"]:
            out[f"host/pvc/vc-{t}/{o['metadata']['name']}"] = o["metadata"]["uid"]
        for o in plane.get_json("namespaces")["items"]:
            out[f"{t}/ns/{o['metadata']['name']}"] = o["metadata"]["uid"]
    return out


def converged(bed: ArgoBed) -> bool:
    apps = bed.argocd.apps()
    return all(n in apps and synced_healthy(apps[n]) for n in [*rendered_apps(bed), ROOT_APP])


def seen(bed: ArgoBed, apps: list[str], rev: str) -> bool:
    """The controller noticed commit ``rev``: one of ``apps`` is OutOfSync, syncing, or already at it."""
    live = bed.argocd.apps()
    for n in apps:
        st = live[n].get("status") or {}
        sync = st.get("sync") or {}
        if (
            sync.get("status") != "Synced"
            or sync.get("revision") == rev
            or (st.get("operationState") or {}).get("phase") == "Running"
        ):
            return True
    return False


FAULTS = {
    "application-controller": lambda bed: bed.argocd.restart_component("controller"),
    "repo-server": lambda bed: bed.argocd.restart_component("repo-server"),
    "kube-apiserver": lambda bed: bed.host.restart("kube-apiserver"),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_fault_mid_sync_converges(argocd_bed: ArgoBed, synced: Synced, fault: str) -> None:
    bed = argocd_bed
    before, uids = live_inventory(bed), sample_uids(bed)
    name = f"fault-{fault}"
    for t in bed.tenants:
        write_probe(bed, name, t)
    git(bed.repo, "add", "-A")
    git(bed.repo, "commit", "-qm", f"probes: {fault} killed mid-sync")
    rev = git(bed.repo, "rev-parse", "HEAD").strip()
    t0 = time.monotonic()
    wait_for(lambda: seen(bed, [f"{t}-host" for t in bed.tenants], rev), WAIT, "the commit seen")
    applied = sum(host_has(bed, name, t) for t in bed.tenants)
    back = FAULTS[fault](bed)
    wait_for(lambda: all(host_has(bed, name, t) for t in bed.tenants) and converged(bed), WAIT, f"after {fault}")
    took = time.monotonic() - t0
    print(
        f"\nbench: {fault} killed mid-sync ({applied}/{len(bed.tenants)} probes applied at the kill,"
        f" back in {back:.1f}s) -> all Synced+Healthy: {took:.1f}s"
    )
    after = live_inventory(bed)
    assert before <= after, sorted(before - after)  # nothing pruned
    assert after - before == {f"host/configmap/vc-{t}/{name}" for t in bed.tenants}, sorted(after - before)
    now = sample_uids(bed)
    assert {k: now.get(k) for k in uids} == uids, sorted(k for k in uids if now.get(k) != uids[k])


def test_force_push_converges(argocd_bed: ArgoBed, synced: Synced) -> None:
    bed = argocd_bed
    before = live_inventory(bed)
    write_probe(bed, "fault-first")
    git(bed.repo, "add", "-A")
    git(bed.repo, "commit", "-qm", "probe: first")
    wait_for(lambda: host_has(bed, "fault-first"), WAIT, "first probe applied")
    git(bed.repo, "reset", "-q", "--hard", "HEAD~1")  # the branch rewritten: the commit is gone
    write_probe(bed, "fault-second")
    git(bed.repo, "add", "-A")
    git(bed.repo, "commit", "-qm", "probe: second (after force-push)")
    t0 = time.monotonic()
    wait_for(
        lambda: host_has(bed, "fault-second") and not host_has(bed, "fault-first") and converged(bed),
        WAIT,
        "the rewritten branch",
    )
    print(f"\nbench: force-push -> all Synced+Healthy: {time.monotonic() - t0:.1f}s")
    after = live_inventory(bed)
    assert after ^ before == {f"host/configmap/vc-{TENANT}/fault-second"}, after ^ before
