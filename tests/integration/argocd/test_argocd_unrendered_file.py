"""A file the render never wrote, committed into a tenant's rendered folder, is refused by CI's command
and, pushed past CI, is not applied by the real Argo CD.

The files: a ClusterRoleBinding giving the tenant's service accounts ``cluster-admin`` in the tenant's
host folder (synced by ``<t>-host`` in the platform project, whose cluster whitelist is ``*/*``), and
an extra Application in the tenant's apps folder (synced by the tenant root, also in the platform
project). ``gpufleet.py render --check`` (CI) exits 2 naming them. Committed anyway, Argo CD reads the
new revision (both apps report it, Synced) and applies neither: each directory source names the
rendered files (``directory.include``), and the host app's project allows only the kinds of the
rendered host folder. The control: the host app edited by hand (no include, the platform project)
applies the binding, so the bed would show the attack if the guards were missing. Everything is
reverted at the end.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from argocd_bed import CLUSTER, ArgoBed, Synced
from argocd_harness import GPUFLEET_CLI, git

TENANT = "research"
FOLDER = f"gitops/clusters/{CLUSTER}/tenants/{TENANT}"
ADMIN = f"{FOLDER}/host/zz-admin.yaml"
EXTRA_APP = f"{FOLDER}/apps/9-extra.yaml"
HOST_APP = f"{TENANT}-host"
ROOT = f"{TENANT}-root"
BINDING = "zz-tenant-admin"
WAIT = 300  # convergence deadline (not a timing assertion)


def admin_binding() -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": BINDING},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "Group", "name": f"system:serviceaccounts:vc-{TENANT}"}],
    }


def extra_app(repo_url: str) -> dict[str, Any]:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": f"{TENANT}-extra", "namespace": "argocd"},
        "spec": {
            "project": f"{CLUSTER}-platform",
            "destination": {"server": "https://kubernetes.default.svc", "namespace": f"vc-{TENANT}"},
            "source": {"repoURL": repo_url, "targetRevision": "main", "path": f"{FOLDER}/host"},
            "syncPolicy": {"automated": {"prune": True, "selfHeal": True}},
        },
    }


def at_revision(sha: str) -> Any:
    def ok(app: dict[str, Any]) -> bool:
        sync = (app.get("status") or {}).get("sync") or {}
        return sync.get("revision") == sha and sync.get("status") == "Synced"

    return ok


def binding_exists(bed: ArgoBed) -> bool:
    items = bed.host.get_json("clusterrolebindings")["items"]
    return any(o["metadata"]["name"] == BINDING for o in items)


def ci_check(bed: ArgoBed) -> subprocess.CompletedProcess[str]:
    """CI's command on the bed's repository."""
    cmd = [sys.executable, str(GPUFLEET_CLI), "render", "--inventory", str(bed.inventory), "--check"]
    return subprocess.run(
        [*cmd, "--out", str(bed.repo / "gitops")], capture_output=True, text=True, check=False, timeout=300
    )


def commit(bed: ArgoBed, message: str) -> str:
    git(bed.repo, "add", "-A")
    git(bed.repo, "commit", "-q", "-m", message)
    return git(bed.repo, "rev-parse", "HEAD").strip()


def test_an_unrendered_file_is_refused_by_ci_and_not_applied(argocd_bed: ArgoBed, synced: Synced) -> None:
    bed = argocd_bed
    repo_url = yaml.safe_load((bed.inventory / "group_vars/all/fleet.yml").read_text())["gpufleet_fleet"]["gitops"][
        "repo_url"
    ]
    start = git(bed.repo, "rev-parse", "HEAD").strip()
    (bed.repo / ADMIN).write_text(yaml.safe_dump(admin_binding(), sort_keys=False))
    (bed.repo / EXTRA_APP).write_text(yaml.safe_dump(extra_app(repo_url), sort_keys=False))

    # CI's command refuses the change, naming both files, and writes nothing
    ci = ci_check(bed)
    assert ci.returncode == 2 and "Traceback" not in ci.stderr, ci.stderr
    assert ADMIN.removeprefix("gitops/") in ci.stderr and EXTRA_APP.removeprefix("gitops/") in ci.stderr
    assert "not written by the render" in ci.stderr
    assert git(bed.repo, "status", "--porcelain").count("??") == 2  # nothing else written

    try:
        # pushed past CI: Argo CD reads the new revision and applies neither file
        sha = commit(bed, "an unrendered binding and Application, past CI")
        bed.argocd.wait([HOST_APP, ROOT], at_revision(sha), f"Synced at {sha[:8]}", timeout=WAIT)
        apps = bed.argocd.apps()
        assert f"{TENANT}-extra" not in apps
        assert not binding_exists(bed)
        host_resources = {r.get("name") for r in apps[HOST_APP]["status"].get("resources") or []}
        assert BINDING not in host_resources and "vc-research" in host_resources

        # the control: without the include and in the platform project, the bed applies the same file
        app_file = bed.repo / FOLDER / "apps" / "1-host.yaml"
        docs = [d for d in yaml.safe_load_all(app_file.read_text()) if d]
        assert docs[0]["spec"]["source"].pop("directory")["include"]
        assert docs[0]["spec"]["project"] == f"{CLUSTER}-host-{TENANT}"
        docs[0]["spec"]["project"] = f"{CLUSTER}-platform"
        app_file.write_text(yaml.safe_dump(docs[0], sort_keys=False))
        commit(bed, "the host app without its include, in the platform project (control)")
        # the tenant root applies the changed host app, which then applies the binding
        bed.argocd.wait([HOST_APP], lambda _app: binding_exists(bed), "applied the binding (control)", timeout=WAIT)
    finally:  # back to the rendered tree of the start, the binding pruned
        git(bed.repo, "rm", "-rq", "--ignore-unmatch", "gitops")
        (bed.repo / ADMIN).unlink(missing_ok=True)
        (bed.repo / EXTRA_APP).unlink(missing_ok=True)
        git(bed.repo, "checkout", "-q", start, "--", "gitops")
        sha = commit(bed, "back to the rendered tree")
    bed.argocd.wait([HOST_APP, ROOT], at_revision(sha), f"Synced at {sha[:8]}", timeout=WAIT)
    # the binding is of a kind the host project does not permit: Argo CD no longer manages (or prunes) it
    if binding_exists(bed):
        bed.host.kubectl("delete", "clusterrolebinding", BINDING)
    ci = ci_check(bed)
    assert ci.returncode == 0, ci.stderr
