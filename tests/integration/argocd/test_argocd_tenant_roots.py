"""On the real controller: no tenant's health gates the cluster root.

One tenant is made stuck (a Deployment on its host side that never becomes available: its host app
stays Progressing, so its root's sync operation never ends). Then a commit adds tenant ``newt`` (whose
vCluster does not exist: its root never becomes Healthy either), and a second commit adds tenant
``newt2``. Both roots must appear: the cluster root's sync operation does not wait on tenant roots'
health (``gpufleet.io/parent-health: ignore`` honoured by the Application health check in
argocd-cm). Before the fix the first of those commits left the cluster root's operation Running on
the stuck tenant and the second was never applied. The tree is put back and converges at the end.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from argocd_bed import CLUSTER, ROOT_APP, ArgoBed, Synced, rendered_apps
from argocd_harness import git, status_of, summary, synced_healthy

STUCK = "research"
WAIT = 300  # convergence deadline (not a timing assertion)


def commit(bed: ArgoBed, message: str) -> str:
    git(bed.repo, "add", "-A")
    git(bed.repo, "commit", "-q", "-m", message)
    return git(bed.repo, "rev-parse", "HEAD").strip()


def copy_tenant(base: Path, src: str, dst: str) -> None:
    """A new tenant shaped like ``src`` (its projects, root and tree, names replaced)."""
    for f in (f"tenant-{src}-0-project.yaml", f"tenant-{src}-0-host-project.yaml", f"tenant-{src}.yaml"):
        if not (base / "apps" / f).exists():  # a tenant without host objects of its own has no host project
            continue
        text = (base / "apps" / f).read_text().replace(src, dst)
        (base / "apps" / f.replace(src, dst)).write_text(text)
    shutil.copytree(base / "tenants" / src, base / "tenants" / dst)
    for p in (base / "tenants" / dst).rglob("*.yaml"):
        p.write_text(p.read_text().replace(src, dst))


def terminate_op(bed: ArgoBed, name: str) -> None:
    """What ``argocd app terminate-op`` does: a running sync operation of a deleted app is ended."""
    app = bed.argocd.apps().get(name)
    op = ((app or {}).get("status") or {}).get("operationState") or {}
    if app and app["metadata"].get("deletionTimestamp") and op.get("phase") == "Running":
        bed.host.kubectl(
            "patch",
            "applications.argoproj.io",
            name,
            "-n",
            "argocd",
            "--type=merge",
            "-p",
            '{"status":{"operationState":{"phase":"Terminating"}}}',
            check=False,
        )


def stuck_deployment() -> dict[str, Any]:
    """Never available (no node matches), Progressing for an hour (its progress deadline)."""
    labels = {"app": "never-ready"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "never-ready", "namespace": f"vc-{STUCK}"},
        "spec": {
            "replicas": 1,
            "progressDeadlineSeconds": 3600,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "nodeSelector": {"gpufleet.io/test-no-such-node": "true"},
                    "containers": [{"name": "c", "image": "registry.invalid/never:1"}],
                },
            },
        },
    }


def test_a_stuck_tenant_does_not_hold_back_the_next_tenant(argocd_bed: ArgoBed, synced: Synced) -> None:
    bed = argocd_bed
    base = bed.repo / "gitops" / "clusters" / CLUSTER
    before = git(bed.repo, "rev-parse", "HEAD").strip()
    host_app, tenant_root = f"{STUCK}-host", f"{STUCK}-root"
    try:
        (base / "tenants" / STUCK / "host" / "stuck.yaml").write_text(yaml.safe_dump(stuck_deployment()))
        # Argo CD applies only what the render listed, in a project of exactly the host folder's kinds:
        # the stuck Deployment is added to both, as a platform change would
        host = base / "tenants" / STUCK / "apps" / "1-host.yaml"
        host.write_text(host.read_text().replace("priority.yaml}'", "priority.yaml,stuck.yaml}'"))
        project = base / "apps" / f"tenant-{STUCK}-0-host-project.yaml"
        allow = "  namespaceResourceWhitelist:\n"
        project.write_text(project.read_text().replace(allow, allow + "  - group: apps\n    kind: Deployment\n"))
        assert "stuck.yaml" in host.read_text() and "kind: Deployment" in project.read_text()
        commit(bed, f"{STUCK}: a Deployment that never becomes available")
        bed.argocd.wait(
            [host_app, tenant_root],
            lambda a: status_of(a)[1] == "Progressing",
            "Progressing (stuck on the Deployment)",
            timeout=WAIT,
        )
        copy_tenant(base, "inference", "newt")
        rev1 = commit(bed, "add tenant newt")
        bed.argocd.wait(["newt-root"], lambda a: True, "created", timeout=WAIT)
        copy_tenant(base, "inference", "newt2")
        rev2 = commit(bed, "add tenant newt2")
        # the commit after a tenant was added while another is stuck is applied too
        bed.argocd.wait(["newt2-root"], lambda a: True, "created by the cluster root", timeout=WAIT)

        def root_done(app: dict[str, Any]) -> bool:
            op = (app.get("status") or {}).get("operationState") or {}
            return op.get("phase") == "Succeeded" and (op.get("syncResult") or {}).get("revision") == rev2

        bed.argocd.wait([ROOT_APP], root_done, f"sync of {rev2[:8]} Succeeded", timeout=WAIT)
        assert rev1 != rev2
        live = bed.argocd.apps()
        assert status_of(live[tenant_root])[1] != "Healthy", summary(live[tenant_root])  # still stuck
        assert status_of(live["newt-root"])[1] != "Healthy", summary(live["newt-root"])  # never healthy
        # the root sees its tenant roots as Healthy by the override (where the controller persists
        # resource health in the Application status), with their own health in the message
        entry = next(
            r for r in live[ROOT_APP]["status"]["resources"] if r["kind"] == "Application" and r["name"] == tenant_root
        )
        if "health" in entry:
            assert entry["health"]["status"] == "Healthy", entry
            assert "own health: Progressing" in entry["health"].get("message", ""), entry
        # other tenants were never held
        for t in ("llm-pretrain-root", "inference-root"):
            assert synced_healthy(live[t]), summary(live[t])
    finally:
        git(bed.repo, "checkout", "-q", before, "--", "gitops")
        for t in ("newt", "newt2"):
            shutil.rmtree(base / "tenants" / t, ignore_errors=True)
            for f in (base / "apps").glob(f"tenant-{t}*.yaml"):
                f.unlink()
        (base / "tenants" / STUCK / "host" / "stuck.yaml").unlink(missing_ok=True)
        commit(bed, "back to the rendered tree")
    # newt's vCluster never existed (no registration): Argo CD drops the resources finalizers of the
    # apps aimed at an unregistered destination by itself; no finalizer is released by hand. But
    # newt's roots are still in their sync operation, waiting for their vCluster app's health that
    # never comes, and Argo CD 3.2 finalizes a deletion only once no operation runs
    # (processAppOperationQueueItem): a person removing a stuck tenant ends that operation, as
    # `argocd app terminate-op newt-root` does (docs/adr/tenant-removal.md)
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline and [n for n in bed.argocd.apps() if n.startswith("newt")]:
        for n in ("newt-root", "newt2-root"):
            terminate_op(bed, n)
        time.sleep(5)
    names = [*sorted(rendered_apps(bed)), ROOT_APP]
    try:
        bed.argocd.wait(names, synced_healthy, "Synced+Healthy again", timeout=WAIT)
        bed.argocd.wait(
            [ROOT_APP],
            lambda a: not [n for n in bed.argocd.apps() if n.startswith("newt")],
            "newt's apps all gone",
            timeout=WAIT,
        )
    except Exception as exc:  # report: the tree is what later tests read
        pytest.fail(f"the tree did not converge back: {exc}")
