"""The double of the operator that runs inside a tenant's (real) vCluster but cannot run here, and
of the host's volume provisioner. One thread, polling every second. (The Slinky operator is the real
one: tenant_slinky.py.)

Limits, what each double does NOT do:

* mariadb-operator (its chart and images cannot be fetched here): no MariaDB server, no StatefulSet,
  no Secrets, users, grants or backups: makes the claim ``storage-<name>-0`` of ``spec.storage``;
  condition ``Ready`` True once that claim is Bound, else False with the last ``SyncError`` event
  vCluster's syncer recorded on the claim (e.g. the host quota's refusal).
* Host volume provisioner: a host claim that nothing pre-binds gets a hostPath volume made for it
  (its storage class must exist); a volume it made goes once its claim is gone (``Delete``). No
  volume is ever attached or mounted (KWOK runs no containers).

Everything else in the tenant vClusters is real: vCluster 0.36.1 syncs the pods, claims, Services,
ConfigMaps and Secrets to ``vc-<tenant>`` and the host's kube-scheduler places the pods on KWOK nodes.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import kubernetes
from kubernetes.client.rest import ApiException

MARIADB = ("k8s.mariadb.com", "v1alpha1")
OWNER = "gpufleet.io/test-operator-double"
PROVISIONED = "gpufleet.io/test-provisioned"


def client(kubeconfig: Path) -> kubernetes.client.ApiClient:
    return kubernetes.config.new_client_from_config(config_file=str(kubeconfig))


def _reason(exc: ApiException) -> str:
    import json

    try:
        return str(json.loads(exc.body).get("message"))
    except (TypeError, ValueError):
        return str(exc.reason)


class TenantOperators:
    """The operator double of one tenant's vCluster and the provisioner of its host namespace."""

    def __init__(self, tenant: str, virtual: Path, host: Path) -> None:
        self.t = tenant
        self.ns = f"vc-{tenant}"
        self.vcore = kubernetes.client.CoreV1Api(client(virtual))
        self.vcustom = kubernetes.client.CustomObjectsApi(self.vcore.api_client)
        self.hcore = kubernetes.client.CoreV1Api(client(host))
        self.hstorage = kubernetes.client.StorageV1Api(self.hcore.api_client)

    # ---- host volume provisioner ---------------------------------------------------------------
    def provision(self) -> None:
        try:
            claims = self.hcore.list_namespaced_persistent_volume_claim(self.ns).items
        except ApiException as exc:
            if exc.status == 404:
                return
            raise
        pvs = self.hcore.list_persistent_volume().items
        prebound = {(p.spec.claim_ref.namespace, p.spec.claim_ref.name) for p in pvs if p.spec.claim_ref}
        classes = {c.metadata.name for c in self.hstorage.list_storage_class().items}
        for hp in claims:
            if hp.status.phase != "Pending" or hp.spec.volume_name or (self.ns, hp.metadata.name) in prebound:
                continue
            cls = hp.spec.storage_class_name
            if cls and cls not in classes:
                continue  # nothing would provision it: stays Pending, as on a real cluster
            self.hcore.create_persistent_volume(
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolume",
                    "metadata": {"name": f"pv-{self.ns}-{hp.metadata.name}"[:253], "labels": {PROVISIONED: "true"}},
                    "spec": {
                        "capacity": {"storage": hp.spec.resources.requests["storage"]},
                        "accessModes": hp.spec.access_modes,
                        "storageClassName": cls or "",
                        "persistentVolumeReclaimPolicy": "Delete",
                        "hostPath": {"path": f"/var/lib/gpufleet-test/{self.ns}/{hp.metadata.name}"},
                        "claimRef": {"namespace": self.ns, "name": hp.metadata.name},
                    },
                }
            )

    def reclaim(self) -> None:
        for pv in self.hcore.list_persistent_volume(label_selector=f"{PROVISIONED}=true").items:
            ref = pv.spec.claim_ref
            if ref and ref.namespace == self.ns and pv.status.phase in ("Released", "Failed"):
                try:
                    self.hcore.delete_persistent_volume(pv.metadata.name)
                except ApiException as exc:
                    if exc.status != 404:
                        raise

    # ---- operators (inside the vCluster) ------------------------------------------------------
    def _list(self, api: tuple[str, str], plural: str) -> list[dict[str, Any]]:
        try:
            return self.vcustom.list_cluster_custom_object(api[0], api[1], plural)["items"]
        except ApiException as exc:
            if exc.status == 404:
                return []  # CRD not installed yet
            raise

    def _status(self, api: tuple[str, str], plural: str, obj: dict[str, Any], status: dict[str, Any]) -> None:
        have = obj.get("status") or {}
        if all(have.get(k) == v for k, v in status.items()):
            return
        m = obj["metadata"]
        self.vcustom.patch_namespaced_custom_object_status(
            api[0], api[1], m["namespace"], plural, m["name"], {"status": status}
        )

    def _claim(self, ns: str, name: str, size: str, cls: str | None) -> tuple[str, str]:
        """Create the operator's claim if missing; (phase, why-not-bound)."""
        try:
            pvc = self.vcore.read_namespaced_persistent_volume_claim(name, ns)
        except ApiException as exc:
            if exc.status != 404:
                raise
            spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}
            if cls:
                spec["storageClassName"] = cls
            meta = {"name": name, "labels": {OWNER: "true"}}
            self.vcore.create_namespaced_persistent_volume_claim(
                ns, {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}
            )
            return "Pending", f"PVC {name} created"
        if pvc.status.phase == "Bound":
            return "Bound", ""
        events = self.vcore.list_namespaced_event(ns, field_selector=f"involvedObject.name={name}").items
        errors = sorted((e for e in events if e.reason == "SyncError"), key=lambda e: e.last_timestamp or e.event_time)
        return pvc.status.phase, (f"SyncError: {errors[-1].message}" if errors else f"PVC {name} is {pvc.status.phase}")

    def mariadbs(self) -> None:
        for db in self._list(MARIADB, "mariadbs"):
            m, storage = db["metadata"], (db.get("spec") or {}).get("storage") or {}
            phase, why = self._claim(
                m["namespace"], f"storage-{m['name']}-0", storage.get("size", "1Gi"), storage.get("storageClassName")
            )
            ok = phase == "Bound"
            cond = {
                "type": "Ready",
                "status": "True" if ok else "False",
                "reason": "Running" if ok else "Provisioning",
                "message": "Running" if ok else why,
                "lastTransitionTime": "2000-01-01T00:00:00Z",
                "observedGeneration": m.get("generation", 1),
            }
            self._status(MARIADB, "mariadbs", db, {"conditions": [cond]})

    def step(self) -> None:
        self.reclaim()
        self.provision()
        self.mariadbs()


class OperatorDoubles:
    """Every tenant's operator doubles, stepped by one thread until ``stop``."""

    def __init__(self, tenants: dict[str, Path], host: Path) -> None:
        self.tenants = [TenantOperators(t, k, host) for t, k in sorted(tenants.items())]
        self.stopping = threading.Event()
        self.failures: list[str] = []
        self.thread = threading.Thread(target=self._run, daemon=True, name="operator-doubles")

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        while not self.stopping.is_set():
            for d in self.tenants:
                try:
                    d.step()
                except Exception as exc:  # report, keep going (an apiserver restart is transient)
                    self.failures.append(
                        f"{d.t}: {type(exc).__name__}: {_reason(exc) if isinstance(exc, ApiException) else exc}"
                    )
                    del self.failures[:-50]
            self.stopping.wait(1.0)

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=10)

    def errors(self) -> list[str]:
        return list(self.failures)
