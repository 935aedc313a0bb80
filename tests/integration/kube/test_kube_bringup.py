"""Bring-up on the real test apiserver (kube-apiserver + controller-manager + KWOK): the rendered
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
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from controlplane import REPO_ROOT, LocalControlPlane, shared_test_helpers

sys.path.insert(0, str(REPO_ROOT / "tests" / "unit"))
from playbook_runner import playbook_env, run_playbook
from render_fixtures import load
from vcluster_chart_model import cluster_rbac

pytestmark = pytest.mark.kube

C = "clusters/gpu-east"


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
    kube: LocalControlPlane, work: Path, tenant: str, timeout: int, slurm_ns: str, extra: dict | None = None
) -> subprocess.CompletedProcess:
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
                                "cluster_access_kubeconfig": str(kube.kubeconfig),
                                "tenant_vcluster_wait_timeout": timeout,
                                "tenant_vcluster_wait_delay": 1,
                                **(extra or {}),
                            },
                        }
                    ],
                }
            ]
        )
    )
    env = playbook_env(ANSIBLE_INVENTORY_UNPARSED_WARNING="False")
    return run_playbook("localhost,", play, "-c", "local", env=env, ok=None, timeout=300)


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


# ------------------------------------------------------------------ defect 2: ResourceQuota

VCLUSTER_VALUES = REPO_ROOT.parent / "shared" / "upstream" / "charts" / "vcluster" / "values.yaml"


def chart_default_quota() -> dict:
    """``policies.resourceQuota.quota`` of the pinned vcluster chart's values.yaml (0.36.1):
    requests.storage 100Gi, services.nodeports 0, services.loadbalancers 1, ..."""
    shared_test_helpers().require_path(VCLUSTER_VALUES, "the pinned vcluster chart values")
    return yaml.safe_load(VCLUSTER_VALUES.read_text())["policies"]["resourceQuota"]["quota"]


def effective_quota(rendered: dict) -> dict[str, str]:
    """Helm's merge of the rendered values over the chart's: maps merge, null deletes a key."""
    merged = {**chart_default_quota(), **rendered}
    return {k: str(v) for k, v in merged.items() if v is not None}


def quota_namespace(kube: LocalControlPlane, ns: str, hard: dict[str, str]) -> None:
    kube.create_namespace(ns)
    apply(
        kube,
        [
            {
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": {"name": "vc-quota", "namespace": ns},
                "spec": {"hard": hard},
            }
        ],
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # admission needs the controller-manager to publish status.hard
        q = kube.get_json("resourcequota", "vc-quota", "-n", ns)
        if (q.get("status") or {}).get("hard") and set(q["status"]["hard"]) == set(hard):
            return
        time.sleep(0.3)
    raise AssertionError(f"{ns}: quota status never populated")


def tenant_host_objects(files: dict[str, bytes], tenant: str, ns: str) -> list[dict]:
    """What a Slurm tenant's vCluster creates in its host namespace (vCluster syncs PVCs and Services
    down under translated names): the Slurm-home claim, slurmctld's and the vCluster's own data
    claims, the login Service as rendered."""
    objects = yaml.safe_load_all(files[f"{C}/tenants/{tenant}/objects/objects.yaml"])
    home = next(o for o in objects if o and o["kind"] == "PersistentVolumeClaim")
    slurm = load(files, f"{C}/tenants/{tenant}/slurm/values.yaml")
    vcluster = load(files, f"{C}/tenants/{tenant}/vcluster/values.yaml")
    # absent keys mean the chart defaults: no class (the cluster default) and a LoadBalancer login
    vc_class = (
        vcluster["controlPlane"]
        .get("statefulSet", {})
        .get("persistence", {})
        .get("volumeClaim", {})
        .get("storageClass")
    )
    ctld_class = slurm["controller"].get("persistence", {}).get("storageClassName")

    def pvc(name: str, size: str, cls: str | None, modes: list[str]) -> dict:
        spec = {"accessModes": modes, "resources": {"requests": {"storage": size}}}
        if cls is not None:
            spec["storageClassName"] = cls
        return {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": ns},
            "spec": spec,
        }

    login = slurm["loginsets"]["main"].get("service", {}).get("spec", {"type": "LoadBalancer"})
    return [
        pvc("slurm-home-x-slurm-x-t", home["spec"]["resources"]["requests"]["storage"], "", ["ReadWriteMany"]),
        pvc("data-t-0", "5Gi", vc_class, ["ReadWriteOnce"]),
        pvc("statesave-slurm-controller-0-x-slurm-x-t", "4Gi", ctld_class, ["ReadWriteOnce"]),
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "slurm-login-main-x-slurm-x-t", "namespace": ns},
            "spec": {**login, "selector": {"app": "login"}, "ports": [{"name": "ssh", "port": 22, "protocol": "TCP"}]},
        },
    ]


def create(kube: LocalControlPlane, obj: dict) -> subprocess.CompletedProcess:
    return kube.kubectl("create", "-f", "-", input=json.dumps(obj), check=False)


def test_rendered_quota_admits_the_tenant_objects(kube_cluster, files) -> None:
    tenant, ns = "research", "bringup-quota-rendered"
    vcluster = load(files, f"{C}/tenants/{tenant}/vcluster/values.yaml")
    quota_namespace(kube_cluster, ns, effective_quota(vcluster["policies"]["resourceQuota"]["quota"]))
    objs = tenant_host_objects(files, tenant, ns)
    assert objs[0]["spec"]["resources"]["requests"]["storage"] == "20Ti"
    assert objs[-1]["spec"]["type"] == "LoadBalancer", "the sample exposes research's login"
    for obj in objs:
        proc = create(kube_cluster, obj)
        assert proc.returncode == 0, f"{obj['kind']} {obj['metadata']['name']}: {proc.stderr}"


def test_chart_default_quota_refuses_them(kube_cluster, files) -> None:
    ns = "bringup-quota-default"
    default = effective_quota({})
    assert default["requests.storage"] == "100Gi" and default["services.nodeports"] == "0"
    quota_namespace(kube_cluster, ns, default)
    home, _, _, login = tenant_host_objects(files, "research", ns)
    for obj in (home, login):
        proc = create(kube_cluster, obj)
        assert proc.returncode != 0 and "exceeded quota" in proc.stderr, proc.stderr


def test_closed_tenant_quota_refuses_a_load_balancer(kube_cluster, files) -> None:
    """llm-pretrain exposes nothing: its login Service is ClusterIP and the quota allows no LoadBalancer."""
    ns = "bringup-quota-closed"
    vcluster = load(files, f"{C}/tenants/llm-pretrain/vcluster/values.yaml")
    quota_namespace(kube_cluster, ns, effective_quota(vcluster["policies"]["resourceQuota"]["quota"]))
    objs = tenant_host_objects(files, "llm-pretrain", ns)
    assert objs[-1]["spec"] == {**objs[-1]["spec"], "type": "ClusterIP"}
    for obj in objs:
        assert create(kube_cluster, obj).returncode == 0
    lb = {**objs[-1], "metadata": {"name": "sneaky-lb", "namespace": ns}}
    lb["spec"] = {**lb["spec"], "type": "LoadBalancer"}
    proc = create(kube_cluster, lb)
    assert proc.returncode != 0 and "exceeded quota" in proc.stderr, proc.stderr


# ------------------------------------------------------------------ defect 3: StorageClass


def test_rendered_nfs_class_is_never_the_databases_class(kube_cluster, files) -> None:
    """Storage classes (was: NFS the default class, named for every control-plane volume): the
    NFS class is rendered but not default, so a chart claim without a class (vCluster store,
    slurmctld state, MariaDB) never lands on NFS; none of them names it."""
    rels = [r for r in files if r.startswith(f"{C}/platform/storage-class/")]
    assert len(rels) == 1
    (sc,) = [d for d in yaml.safe_load_all(files[rels[0]]) if d]
    kube_cluster.kubectl(
        "apply", "--server-side", "--validate=strict", "--field-manager=bringup-test", "-f", "-", input=json.dumps(sc)
    )
    name = sc["metadata"]["name"]
    live = kube_cluster.get_json("storageclass", name)
    assert live["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"] == "false"
    ns = kube_cluster.create_namespace("bringup-storage")
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "no-class", "namespace": ns},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    create(kube_cluster, claim)
    got = kube_cluster.get_json("pvc", "no-class", "-n", ns)
    assert got["spec"].get("storageClassName") != name, "a chart claim without a class must not get NFS"
    for t in ("research", "llm-pretrain", "inference"):
        vc = load(files, f"{C}/tenants/{t}/vcluster/values.yaml")
        assert (
            vc["controlPlane"]["statefulSet"].get("persistence", {}).get("volumeClaim", {}).get("storageClass") != name
        )
    for t in ("research", "llm-pretrain"):
        slurm = load(files, f"{C}/tenants/{t}/slurm/values.yaml")
        assert slurm["controller"].get("persistence", {}).get("storageClassName") != name
        db = load(files, f"{C}/tenants/{t}/accounting-db/mariadb.yaml")
        assert db["spec"]["storage"].get("storageClassName") != name


def test_tenant_role_writes_the_directory_bind_secret_inside_the_vcluster(kube_cluster, tmp_path) -> None:
    """identity: the bind password becomes the SSSD snippet Secret the slurm values mount,
    inside the vCluster only; rerun unchanged; a new password rewrites it; never logged."""
    tenant, slurm_ns = "dirbind", "slurm-dirbind"
    kube_cluster.create_namespace("argocd")
    kube_cluster.create_namespace(f"vc-{tenant}")
    apply(kube_cluster, [vc_kubeconfig_secret(kube_cluster, tenant)])
    ident = {"domain": "example.org", "bind_dn": "cn=sssd,dc=example,dc=org", "bind_secret": "slurm-identity-bind"}
    pw = "s3cret pass-" + tenant

    def role(password: str) -> subprocess.CompletedProcess:
        return run_tenant_role(
            kube_cluster, tmp_path, tenant, timeout=60, slurm_ns=slurm_ns,
            extra={"tenant_identity": ident, "tenant_identity_bind_password": password},
        )  # fmt: skip

    first = role(pw)
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-2000:]
    assert pw not in first.stdout + first.stderr
    found = secrets(kube_cluster, slurm_ns)
    snippet = base64.b64decode(found["slurm-identity-bind"]["data"]["bind.conf"]).decode()
    assert snippet == f"[domain/example.org]\nldap_default_authtok = {pw}\n"
    assert secrets(kube_cluster, f"vc-{tenant}") == {}, "nothing on the host"
    again = role(pw)
    assert again.returncode == 0 and stats(again)["changed"] == 0, again.stdout[-3000:]
    kept = role("")  # the Secret exists: no password needed, nothing changes
    assert kept.returncode == 0 and stats(kept)["changed"] == 0, kept.stdout[-3000:]
    rotated = role(pw + "-2")
    assert rotated.returncode == 0 and stats(rotated)["changed"] == 1, rotated.stdout[-3000:]
    now = base64.b64decode(secrets(kube_cluster, slurm_ns)["slurm-identity-bind"]["data"]["bind.conf"]).decode()
    assert now.endswith(f"= {pw}-2\n")
    kube_cluster.kubectl("delete", "secret", "slurm-identity-bind", "-n", slurm_ns)
    missing = role("")
    assert missing.returncode != 0 and "tenant_identity_bind_password" in missing.stdout, missing.stdout[-3000:]
