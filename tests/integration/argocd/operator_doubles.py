"""Doubles of the two operators that run inside a tenant's (real) vCluster but cannot run in this
branch, and of the host's volume provisioner. One thread, polling every second.

Limits, what each double does NOT do:

* Slinky slurm-operator (v1.2.1, ``internal/controller/``): no slurmctld/slurmd/slurmdbd/slurmrestd
  processes, no Slurm API, no webhooks, no ``RestApi``/``Token`` reconciliation, no
  ``ControllerRevision``s, no rolling updates, no cordon/drain. Pods carry the CR's pod template's
  scheduling fields only (nodeSelector, tolerations, affinity; a placeholder container, no volumes).
  What it does, as v1.2.1 does: sets **no conditions** on Controller or Accounting (the operator
  writes none); makes the Controller's state claim ``statesave-<name>-controller-0`` (the
  volumeClaimTemplate of its ``<name>-controller`` StatefulSet); makes a Deployment named after
  each LoginSet and copies the Deployment's ``status.replicas`` (pods, ready or not) into the
  LoginSet's ``status.replicas`` (``loginset_sync_status.go``); for a NodeSet in DaemonSet scaling
  mode makes one pod per vCluster node its template's nodeSelector matches and whose NoSchedule
  taints it tolerates, pinned to that node by node affinity on ``metadata.name`` (as a DaemonSet
  does), with ``status.desired`` = the number of such nodes, ``replicas`` = pods,
  ``readyReplicas`` = Running+Ready pods, ``updatedReplicas`` = pods (it never replaces a pod, so it
  calls every pod it made current: a template change is not rolled out) (``nodeset_sync_status.go``).
  StatefulSet scaling mode:
  ``desired`` = ``spec.replicas``, pods are not made.
* mariadb-operator: no MariaDB server, no StatefulSet: makes the claim ``storage-<name>-0`` of
  ``spec.storage``; condition ``Ready`` True once that claim is Bound, else False with the last
  ``SyncError`` event vCluster's syncer recorded on the claim (e.g. the host quota's refusal).
* Host volume provisioner: a host claim that nothing pre-binds gets a hostPath volume made for it
  (its storage class must exist); a volume it made goes once its claim is gone (``Delete``).

Everything else in the tenant vClusters is real: vCluster 0.36.1 syncs the pods, claims, Services,
ConfigMaps and Secrets to ``vc-<tenant>`` and the host's kube-scheduler places the pods on KWOK nodes.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import kubernetes
from kubernetes.client.rest import ApiException

SLINKY = ("slinky.slurm.net", "v1beta1")
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


def tolerates(tolerations: list[dict[str, Any]], taint: dict[str, Any]) -> bool:
    if taint.get("effect") not in ("NoSchedule", "NoExecute"):
        return True
    for t in tolerations:
        if t.get("effect") not in (None, "", taint.get("effect")):
            continue
        if t.get("operator") == "Exists" and t.get("key") in (None, "", taint.get("key")):
            return True
        if t.get("key") == taint.get("key") and t.get("value", "") == taint.get("value", ""):
            return True
    return False


def matching_nodes(nodes: list[Any], pod_spec: dict[str, Any]) -> list[str]:
    """Nodes a DaemonSet-mode NodeSet wants a pod on: nodeSelector matches, NoSchedule taints tolerated."""
    selector = pod_spec.get("nodeSelector") or {}
    tolerations = pod_spec.get("tolerations") or []
    out = []
    for n in nodes:
        labels = n.metadata.labels or {}
        taints = [{"key": t.key, "value": t.value, "effect": t.effect} for t in n.spec.taints or []]
        if all(labels.get(k) == v for k, v in selector.items()) and all(tolerates(tolerations, t) for t in taints):
            out.append(n.metadata.name)
    return sorted(out)


def pinned(pod_spec: dict[str, Any], node: str) -> dict[str, Any]:
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    return {
        **_scheduling(pod_spec),
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}},
    }


def _scheduling(pod_spec: dict[str, Any]) -> dict[str, Any]:
    keep = {k: pod_spec[k] for k in ("nodeSelector", "tolerations", "affinity") if pod_spec.get(k)}
    return {**keep, "containers": [{"name": "placeholder", "image": "registry.invalid/operator-double"}]}


class TenantOperators:
    """The operator doubles of one tenant's vCluster and the provisioner of its host namespace."""

    def __init__(self, tenant: str, virtual: Path, host: Path) -> None:
        self.t = tenant
        self.ns = f"vc-{tenant}"
        self.vcore = kubernetes.client.CoreV1Api(client(virtual))
        self.vapps = kubernetes.client.AppsV1Api(self.vcore.api_client)
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

    def controllers(self) -> None:
        for ctl in self._list(SLINKY, "controllers"):
            m, pers = ctl["metadata"], (ctl.get("spec") or {}).get("persistence") or {}
            size = ((pers.get("resources") or {}).get("requests") or {}).get("storage", "4Gi")
            self._claim(m["namespace"], f"statesave-{m['name']}-controller-0", size, pers.get("storageClassName"))

    def loginsets(self) -> None:
        for ls in self._list(SLINKY, "loginsets"):
            m, spec = ls["metadata"], ls.get("spec") or {}
            labels = {"app.kubernetes.io/instance": m["name"], "app.kubernetes.io/name": "login"}
            body = {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": m["name"], "labels": {OWNER: "true"}},
                "spec": {
                    "replicas": int(spec.get("replicas") or 1),
                    "selector": {"matchLabels": labels},
                    "template": {
                        "metadata": {"labels": labels},
                        "spec": _scheduling((spec.get("template") or {}).get("spec") or {}),
                    },
                },
            }
            try:
                dep = self.vapps.read_namespaced_deployment(m["name"], m["namespace"])
            except ApiException as exc:
                if exc.status != 404:
                    raise
                dep = self.vapps.create_namespaced_deployment(m["namespace"], body)
            self._status(SLINKY, "loginsets", ls, {"replicas": dep.status.replicas or 0})

    def nodesets(self) -> None:
        nodes = self.vcore.list_node().items
        for nset in self._list(SLINKY, "nodesets"):
            m, spec = nset["metadata"], nset.get("spec") or {}
            pod_spec = (spec.get("template") or {}).get("spec") or {}
            if spec.get("scalingMode") != "DaemonSet":
                self._status(SLINKY, "nodesets", nset, {"desired": int(spec.get("replicas") or 1)})
                continue
            want = matching_nodes(nodes, pod_spec)
            sel = f"{OWNER}={m['name']}"
            pods = {
                p.metadata.name: p for p in self.vcore.list_namespaced_pod(m["namespace"], label_selector=sel).items
            }
            for node in want:
                name = f"{m['name']}-{node}"[:63]
                if name not in pods:
                    meta = {"name": name, "labels": {OWNER: m["name"]}}
                    self.vcore.create_namespaced_pod(
                        m["namespace"],
                        {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pinned(pod_spec, node)},
                    )
            ready = sum(
                1
                for p in pods.values()
                if p.status.phase == "Running"
                and any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])
            )
            status = {"desired": len(want), "replicas": len(pods), "readyReplicas": ready, "updatedReplicas": len(pods)}
            self._status(SLINKY, "nodesets", nset, {**status, "observedGeneration": m.get("generation", 1)})

    def step(self) -> None:
        self.reclaim()
        self.provision()
        self.mariadbs()
        self.controllers()
        self.loginsets()
        self.nodesets()


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
