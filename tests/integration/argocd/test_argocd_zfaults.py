"""Faults on the real controller (issue 19): the tree converges and nothing is pruned that should
not be. Runs last in the bed (it rewrites the branch).

* Argo CD killed mid-sync (controller, repo-server and redis with its cache, SIGTERM then SIGKILL)
  and started again: the commit being synced is applied, every app Synced+Healthy.
* Force-push: a commit is applied, then the branch is rewritten without it and with another one:
  the first commit's object is pruned, the second's created, every other live object kept.

Convergence times are printed (``-s``) for the bench table; nothing asserts a duration.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from argocd_bed import CLUSTER, ROOT_APP, ArgoBed, Synced, rendered_apps
from argocd_harness import git, synced_healthy

WAIT = 400
TENANT = "inference"


def probe(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": f"vc-{TENANT}"},
        "data": {"probe": name},
    }


def write_probe(bed: ArgoBed, name: str) -> Path:
    f = bed.repo / "gitops" / "clusters" / CLUSTER / "tenants" / TENANT / "host" / f"{name}.yaml"
    f.write_text(yaml.safe_dump(probe(name)))
    return f


def host_has(bed: ArgoBed, name: str) -> bool:
    return bed.host.kubectl("get", "configmap", name, "-n", f"vc-{TENANT}", check=False).returncode == 0


def wait_until(cond, what: str, timeout: float = WAIT) -> float:
    t0 = time.monotonic()
    while not cond():
        assert time.monotonic() - t0 < timeout, f"not converged: {what}"
        time.sleep(1)
    return time.monotonic() - t0


def live_inventory(bed: ArgoBed) -> set[str]:
    """Names of the live objects the tree owns on the host's tenant namespaces and in the stand-ins."""
    out = set()
    for t in bed.tenants:
        for kind in ("configmap", "pvc", "resourcequota"):
            for o in bed.host.get_json(kind, "-n", f"vc-{t}")["items"]:
                out.add(f"host/{kind}/vc-{t}/{o['metadata']['name']}")
    return out


def converged(bed: ArgoBed) -> bool:
    apps = bed.argocd.apps()
    return all(n in apps and synced_healthy(apps[n]) for n in [*rendered_apps(bed), ROOT_APP])


def test_argocd_killed_mid_sync_converges(argocd_bed: ArgoBed, synced: Synced) -> None:
    bed = argocd_bed
    before = live_inventory(bed)
    f = write_probe(bed, "fault-kill")
    git(bed.repo, "add", "-A")
    git(bed.repo, "commit", "-qm", "probe: kill mid-sync")
    t0 = time.monotonic()
    # mid-sync: once the controller noticed the commit (the host app is OutOfSync or syncing)
    wait_until(
        lambda: (
            (bed.argocd.apps()[f"{TENANT}-host"]["status"].get("sync") or {}).get("status") != "Synced"
            or host_has(bed, "fault-kill")
        ),
        "the commit seen",
    )
    bed.argocd.restart()
    wait_until(lambda: host_has(bed, "fault-kill") and converged(bed), "after the restart")
    print(f"\nbench: Argo CD killed mid-sync -> all Synced+Healthy: {time.monotonic() - t0:.1f}s")
    assert before <= live_inventory(bed)  # nothing pruned
    f.unlink()
    git(bed.repo, "add", "-A")
    git(bed.repo, "commit", "-qm", "probe removed")
    wait_until(lambda: not host_has(bed, "fault-kill") and converged(bed), "probe pruned")
    assert before == live_inventory(bed)


def test_force_push_converges(argocd_bed: ArgoBed, synced: Synced) -> None:
    bed = argocd_bed
    before = live_inventory(bed)
    write_probe(bed, "fault-first")
    git(bed.repo, "add", "-A")
    git(bed.repo, "commit", "-qm", "probe: first")
    wait_until(lambda: host_has(bed, "fault-first"), "first probe applied")
    git(bed.repo, "reset", "-q", "--hard", "HEAD~1")  # the branch rewritten: the commit is gone
    write_probe(bed, "fault-second")
    git(bed.repo, "add", "-A")
    git(bed.repo, "commit", "-qm", "probe: second (after force-push)")
    t0 = time.monotonic()
    wait_until(
        lambda: host_has(bed, "fault-second") and not host_has(bed, "fault-first") and converged(bed),
        "the rewritten branch",
    )
    print(f"\nbench: force-push -> all Synced+Healthy: {time.monotonic() - t0:.1f}s")
    after = live_inventory(bed)
    assert after ^ before == {f"host/configmap/vc-{TENANT}/fault-second"}, after ^ before
