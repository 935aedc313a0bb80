"""Issue 15 on the real test apiserver (kube-apiserver + controller-manager + KWOK): the rendered
tree's pieces a cluster enforces.

* defect 5: no vCluster ServiceAccount may list/watch Secrets cluster-wide. The vcluster chart
  cannot be downloaded here, so its RBAC is built from the rendered values by
  ``vcluster_chart_model`` (the pinned template's Secret-relevant paths, cited there); the
  apiserver's authorizer then answers ``auth can-i``.
* defects 4 and 5: the tenant role (real ansible-playbook) from an empty cluster: it waits for the
  vCluster to export its kubeconfig (created here late, as Argo CD's vCluster wave would), writes the
  Slurm keys into the vCluster through that kubeconfig (the test apiserver stands in for the vCluster
  API) and nothing into the host namespace; a second run changes nothing; a vCluster that never
  comes fails after the configured timeout with a message that says where to look.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from controlplane import REPO_ROOT, LocalControlPlane, shared_test_helpers

sys.path.insert(0, str(REPO_ROOT / "tests" / "unit"))
from render_fixtures import make_inventory
from vcluster_chart_model import cluster_rbac

from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_inventory

pytestmark = pytest.mark.kube

C = "clusters/gpu-east"
COLLECTIONS = REPO_ROOT / ".build" / "collections"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    return render_inventory(make_inventory(tmp_path_factory.mktemp("inv"))).files


def load(files: dict[str, bytes], rel: str):
    return yaml.safe_load(files[rel])


def apply(kube: LocalControlPlane, objs: list[dict]) -> None:
    kube.kubectl(
        "apply",
        "--server-side",
        "--field-manager=bringup-test",
        "-f",
        "-",
        input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}),
    )


def can_i(kube: LocalControlPlane, verb: str, resource: str, sa: str) -> bool:
    proc = kube.kubectl("auth", "can-i", verb, resource, "--all-namespaces", f"--as={sa}", check=False)
    return proc.stdout.strip() == "yes"


# ------------------------------------------------------------------ defect 5: RBAC


def test_no_vcluster_service_account_can_read_secrets_cluster_wide(kube_cluster, files) -> None:
    for t in ("research", "llm-pretrain", "inference"):
        ns = f"bringup-rbac-vc-{t}"
        kube_cluster.create_namespace(ns)
        values = load(files, f"{C}/tenants/{t}/vcluster/values.yaml")
        objs = cluster_rbac(values, t, ns)
        assert objs, "the node syncer alone makes the chart create a ClusterRole"
        apply(kube_cluster, objs)
        sa = f"system:serviceaccount:{ns}:vc-{t}"
        assert can_i(kube_cluster, "list", "nodes", sa), "the model's ClusterRole is bound"
        for verb in ("list", "watch", "get"):
            assert not can_i(kube_cluster, verb, "secrets", sa), f"{t}: {verb} secrets cluster-wide"


def test_the_pre_fix_values_did_grant_it(kube_cluster, files) -> None:
    """The values the renderer produced before the fix (host Secret sync of the Slurm keys):
    the same check answers yes, so the test above can fail."""
    ns = "bringup-rbac-old"
    kube_cluster.create_namespace(ns)
    values = load(files, f"{C}/tenants/research/vcluster/values.yaml")
    values["sync"]["fromHost"]["secrets"] = {
        "enabled": True,
        "mappings": {"byName": {f"{ns}/slurm-auth-slurm": "slurm/slurm-auth-slurm"}},
    }
    apply(kube_cluster, cluster_rbac(values, "old", ns))
    sa = f"system:serviceaccount:{ns}:vc-old"
    assert can_i(kube_cluster, "list", "secrets", sa) and can_i(kube_cluster, "watch", "secrets", sa)


# ------------------------------------------------------------------ defects 4 and 5: bootstrap


def vc_kubeconfig_secret(kube: LocalControlPlane, tenant: str) -> dict:
    """A Secret shaped like the one vCluster exports (``vc-<t>`` in ``vc-<t>``), whose kubeconfig
    points at the test apiserver (standing in for the vCluster API)."""
    admin = yaml.safe_load(Path(kube.kubeconfig).read_text())
    cluster = dict(admin["clusters"][0]["cluster"])
    user = dict(admin["users"][0]["user"])
    for key in ("certificate-authority", "client-certificate", "client-key"):
        if key in cluster or key in user:
            src = cluster if key in cluster else user
            src[f"{key}-data"] = base64.b64encode(Path(src.pop(key)).read_bytes()).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "my-vcluster", "cluster": cluster}],
        "users": [{"name": "my-vcluster", "user": user}],
        "contexts": [{"name": "my-vcluster", "context": {"cluster": "my-vcluster", "user": "my-vcluster"}}],
        "current-context": "my-vcluster",
    }
    b64 = lambda s: base64.b64encode(s.encode() if isinstance(s, str) else s).decode()  # noqa: E731
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": f"vc-{tenant}", "namespace": f"vc-{tenant}"},
        "type": "Opaque",
        "data": {
            "config": b64(yaml.safe_dump(config)),
            "certificate-authority": cluster["certificate-authority-data"],
            "client-certificate": user["client-certificate-data"],
            "client-key": user["client-key-data"],
        },
    }


def run_tenant_role(
    kube: LocalControlPlane, work: Path, tenant: str, timeout: int, slurm_ns: str
) -> subprocess.CompletedProcess:
    helpers = shared_test_helpers()
    playbook_bin = Path(sys.executable).parent / "ansible-playbook"
    if not playbook_bin.exists():
        playbook_bin = Path(helpers.require_tool("ansible-playbook", "runs the tenant role"))
    play = work / f"tenant-{tenant}.yml"
    play.write_text(
        yaml.safe_dump(
            [
                {
                    "name": "tenant",
                    "hosts": "localhost",
                    "gather_facts": False,
                    "roles": [
                        {
                            "role": "gpufleet.core.tenant",
                            "vars": {
                                "tenant_name": tenant,
                                "tenant_cluster": "kwok",
                                "tenant_slurm": True,
                                "tenant_slurm_namespace": slurm_ns,
                                "tenant_kubeconfig": str(kube.kubeconfig),
                                "tenant_vcluster_wait_timeout": timeout,
                                "tenant_vcluster_wait_delay": 1,
                            },
                        }
                    ],
                }
            ]
        )
    )
    env = dict(os.environ)
    env.update(
        ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS),
        ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
        ANSIBLE_LOCALHOST_WARNING="False",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
        ANSIBLE_PYTHON_INTERPRETER=sys.executable,
        ANSIBLE_NOCOLOR="1",
    )
    return subprocess.run(
        [str(playbook_bin), "-i", "localhost,", "-c", "local", str(play)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def stats(proc: subprocess.CompletedProcess) -> dict:
    return json.loads(proc.stdout)["stats"]["localhost"]


def secrets(kube: LocalControlPlane, ns: str) -> dict[str, dict]:
    out = kube.get_json("secrets", "-n", ns, "-l", "app.kubernetes.io/managed-by=gpufleet")
    return {s["metadata"]["name"]: s for s in out["items"]}


def test_tenant_role_from_an_empty_cluster(kube_cluster, tmp_path) -> None:
    tenant, slurm_ns = "bootorder", "slurm-bootorder"
    kube_cluster.create_namespace("argocd")  # the bootstrap installs Argo CD before the tenant role runs
    assert kube_cluster.kubectl("get", "namespace", f"vc-{tenant}", check=False).returncode != 0

    def argocd_vcluster_wave() -> None:  # the namespace and the vCluster appear while the role waits
        time.sleep(6)
        kube_cluster.create_namespace(f"vc-{tenant}")
        time.sleep(2)
        apply(kube_cluster, [vc_kubeconfig_secret(kube_cluster, tenant)])

    wave = threading.Thread(target=argocd_vcluster_wave)
    wave.start()
    try:
        first = run_tenant_role(kube_cluster, tmp_path, tenant, timeout=120, slurm_ns=slurm_ns)
    finally:
        wave.join()
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-2000:]
    keys = secrets(kube_cluster, slurm_ns)
    assert sorted(keys) == ["slurm-auth-jwt", "slurm-auth-slurm"]
    lengths = {n: len(base64.b64decode(next(iter(s["data"].values())))) for n, s in keys.items()}
    assert lengths == {"slurm-auth-jwt": 64, "slurm-auth-slurm": 1024}
    assert secrets(kube_cluster, f"vc-{tenant}") == {}, "no Slurm key on the host"
    assert kube_cluster.kubectl("get", "secret", f"cluster-{tenant}", "-n", "argocd", check=False).returncode == 0

    second = run_tenant_role(kube_cluster, tmp_path, tenant, timeout=120, slurm_ns=slurm_ns)
    assert second.returncode == 0, second.stdout[-4000:]
    assert stats(second)["changed"] == 0
    again = secrets(kube_cluster, slurm_ns)
    assert {n: s["data"] for n, s in again.items()} == {n: s["data"] for n, s in keys.items()}, "keys never replaced"


def test_tenant_role_fails_clearly_when_the_vcluster_never_comes(kube_cluster, tmp_path) -> None:
    tenant, slurm_ns = "ghost", "slurm-ghost"
    t0 = time.monotonic()
    proc = run_tenant_role(kube_cluster, tmp_path, tenant, timeout=3, slurm_ns=slurm_ns)
    assert proc.returncode != 0
    assert time.monotonic() - t0 < 120
    out = proc.stdout
    assert "exported no kubeconfig" in out and "vc-ghost/vc-ghost" in out and "ghost-root" in out, out[-3000:]
    assert "tenant_vcluster_wait_timeout" in out
    assert kube_cluster.kubectl("get", "namespace", slurm_ns, check=False).returncode != 0
    assert kube_cluster.kubectl("get", "secret", "cluster-ghost", "-n", "argocd", check=False).returncode != 0
