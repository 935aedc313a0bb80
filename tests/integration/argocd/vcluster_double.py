"""Doubles of what runs inside a real tenant vCluster and cannot run here: vCluster's syncer and the
operators (mariadb-operator, Slinky slurm-operator). One thread, polling every second.

vCluster syncer (pinned vcluster 0.36 line; reference, loft-sh/vcluster):

* What it copies, virtual -> host namespace ``vc-<t>``: PersistentVolumeClaims, Services, Pods and
  the ConfigMaps/Secrets a Pod uses, Endpoints of Services without a selector
  (``pkg/controllers/resources/{persistentvolumeclaims,services,pods,configmaps,secrets,endpoints}/``).
  Name translation ``<name>-x-<namespace>-x-<vcluster>`` (``pkg/util/translate/single_namespace.go``,
  the same rule render/values.py ``translated_name`` renders the home PV's claimRef with); labels
  ``vcluster.loft.sh/namespace``, ``vcluster.loft.sh/object-name``, ``vcluster.loft.sh/managed-by``
  added, the object's own labels kept.
* Claims: the host claim is what the host quota and the host binder see; the virtual claim is bound
  to a virtual PersistentVolume named after the host volume once the host claim is Bound (vCluster's
  fake persistent volumes, ``pkg/controllers/resources/persistentvolumes/fake_syncer.go``). A host
  claim the host refuses (quota) is recorded on the virtual claim as an event-like annotation
  ``gpufleet.io/test-sync-error`` (vCluster emits a ``SyncError`` event) and stays Pending.
* Status back: host claim phase/volume, host pod phase/conditions (``pods/syncer.go`` translates
  status up).
* Nodes (``sync.fromHost.nodes``): one untainted host node is copied into the stand-in as a KWOK
  node, so the stand-in's scheduler places pods and KWOK runs them (its ``pod-complete`` stage
  completes Job pods).

Not modelled: the vCluster control plane itself (the stand-in API is a plain kube-apiserver), host
scheduling of synced pods (they are scheduled and run by the stand-in's own scheduler and KWOK; the
host copy is for quota and policy objects only and gets the stand-in's node name cleared),
Ingresses, NetworkPolicies, ServiceAccounts, storage classes, RBAC, webhooks, sync of deletions of
host objects back up, ``enforceTolerations`` and ``fromHost`` node selection (the copied node is
picked, not selected by label), the vCluster's own DNS.

Host volumes: no provisioner runs here, so a host claim that is not pre-bound gets a hostPath
volume made for it (a provisioner's job), deleted once its claim is gone (the ``Delete`` reclaim a
provisioner performs); the home claim binds to the rendered static NFS volume.

The syncer runs in ``vc-<t>``: the double syncs nothing for a tenant before that namespace exists or
once it is being deleted (removing the tenant deletes the vCluster with it).

Operators (their controllers cannot run: they need slurmctld/MariaDB processes):

* MariaDB: the claim ``storage-<name>-0`` of ``spec.storage`` is created (as the operator's
  StatefulSet would); ``Ready`` is True only once that claim is Bound, else False with the reason.
* Slinky ``Controller``: its state claim ``statesave-<name>-controller-0`` (``spec.persistence``); condition
  ``SlurmReachable`` True only once the claim is Bound and, with accounting, the ``Accounting`` is
  ready. ``Accounting``: ready once the MariaDB it points to is Ready. ``NodeSet``/``LoginSet``:
  status replicas ready once the Controller is.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kubernetes
from controlplane import fake_node
from kubernetes.client.rest import ApiException

SLINKY = ("slinky.slurm.net", "v1beta1")
MARIADB = ("k8s.mariadb.com", "v1alpha1")
SYNC_ERROR = "gpufleet.io/test-sync-error"
MANAGED = "vcluster.loft.sh/managed-by"


def translated(name: str, namespace: str, vcluster: str) -> str:
    return f"{name}-x-{namespace}-x-{vcluster}"


def client(kubeconfig: Path) -> kubernetes.client.ApiClient:
    return kubernetes.config.new_client_from_config(config_file=str(kubeconfig))


class TenantDouble:
    """The syncer and the operators of one tenant vCluster."""

    def __init__(self, tenant: str, virtual: Path, host: Path) -> None:
        self.t = tenant
        self.ns = f"vc-{tenant}"
        self.v = client(virtual)
        self.h = client(host)
        self.vcore = kubernetes.client.CoreV1Api(self.v)
        self.hcore = kubernetes.client.CoreV1Api(self.h)
        self.vcustom = kubernetes.client.CustomObjectsApi(self.v)
        self.hstorage = kubernetes.client.StorageV1Api(self.h)
        self.node_copied = False
        self.errors: list[str] = []

    # ---- syncer ---------------------------------------------------------------------------
    def _host_meta(self, meta: Any) -> dict[str, Any]:
        labels = dict(meta.labels or {})
        labels.update(
            {
                "vcluster.loft.sh/namespace": meta.namespace,
                "vcluster.loft.sh/object-name": meta.name,
                MANAGED: self.t,
            }
        )
        return {"name": translated(meta.name, meta.namespace, self.t), "namespace": self.ns, "labels": labels}

    def sync_claims(self) -> None:
        host = {p.metadata.name: p for p in self.hcore.list_namespaced_persistent_volume_claim(self.ns).items}
        for pvc in self.vcore.list_persistent_volume_claim_for_all_namespaces().items:
            hname = translated(pvc.metadata.name, pvc.metadata.namespace, self.t)
            hp = host.get(hname)
            if hp is None:
                body = {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": self._host_meta(pvc.metadata),
                    "spec": {
                        "accessModes": pvc.spec.access_modes,
                        "resources": {"requests": dict(pvc.spec.resources.requests or {})},
                        "storageClassName": pvc.spec.storage_class_name,
                        "volumeMode": pvc.spec.volume_mode,
                    },
                }
                try:
                    self.hcore.create_namespaced_persistent_volume_claim(self.ns, body)
                    self._annotate(pvc, None)
                except ApiException as exc:
                    self._annotate(pvc, f"SyncError: {_reason(exc)}")
                continue
            if hp.status.phase == "Bound" and pvc.status.phase != "Bound":
                self._bind_virtual(pvc, hp)
        for hp in host.values():  # synced ones and the vCluster's own data claim
            if hp.status.phase == "Pending" and not hp.spec.volume_name:
                self._provision(hp)

    def _annotate(self, pvc: Any, message: str | None) -> None:
        have = (pvc.metadata.annotations or {}).get(SYNC_ERROR)
        if have == message:
            return
        self.vcore.patch_namespaced_persistent_volume_claim(
            pvc.metadata.name, pvc.metadata.namespace, {"metadata": {"annotations": {SYNC_ERROR: message}}}
        )

    def _provision(self, hp: Any) -> None:
        """A host volume for a host claim nothing pre-binds (a provisioner's job)."""
        name = f"pv-{hp.metadata.namespace}-{hp.metadata.name}"[:253]
        try:
            self.hcore.read_persistent_volume(name)
            return
        except ApiException as exc:
            if exc.status != 404:
                raise
        cls = hp.spec.storage_class_name
        if cls and cls not in {c.metadata.name for c in self.hstorage.list_storage_class().items}:
            return  # no such class: nothing would provision it (stays Pending, as on a real cluster)
        pvs = self.hcore.list_persistent_volume().items
        if any(
            p.spec.claim_ref and p.spec.claim_ref.name == hp.metadata.name and p.spec.claim_ref.namespace == self.ns
            for p in pvs
        ):
            return  # pre-bound (the rendered Slurm-home volume): the host binder takes it
        self.hcore.create_persistent_volume(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": name, "labels": {"gpufleet.io/test-provisioned": "true"}},
                "spec": {
                    "capacity": {"storage": hp.spec.resources.requests["storage"]},
                    "accessModes": hp.spec.access_modes,
                    "storageClassName": hp.spec.storage_class_name or "",
                    "persistentVolumeReclaimPolicy": "Delete",
                    "hostPath": {"path": f"/var/lib/gpufleet-test/{name}"},
                    "claimRef": {"namespace": self.ns, "name": hp.metadata.name},
                },
            }
        )

    def _bind_virtual(self, pvc: Any, hp: Any) -> None:
        """vCluster's fake PV: a virtual volume named after the host one, pre-bound to the claim."""
        name = hp.spec.volume_name
        try:
            self.vcore.read_persistent_volume(name)
            return
        except ApiException as exc:
            if exc.status != 404:
                raise
        self.vcore.create_persistent_volume(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": name, "labels": {"vcluster.loft.sh/fake-pv": "true"}},
                "spec": {
                    "capacity": {"storage": pvc.spec.resources.requests["storage"]},
                    "accessModes": pvc.spec.access_modes,
                    "storageClassName": pvc.spec.storage_class_name or "",
                    "persistentVolumeReclaimPolicy": "Retain",
                    "hostPath": {"path": f"/fake/{name}"},
                    "claimRef": {"namespace": pvc.metadata.namespace, "name": pvc.metadata.name},
                },
            }
        )

    def sync_pods(self) -> None:
        """Pods (and the ConfigMaps/Secrets they use) and Services, down to the host namespace."""
        host_pods = {p.metadata.name for p in self.hcore.list_namespaced_pod(self.ns).items}
        for pod in self.vcore.list_pod_for_all_namespaces().items:
            if pod.metadata.namespace == "kube-system":
                continue
            hname = translated(pod.metadata.name, pod.metadata.namespace, self.t)
            if hname in host_pods:
                continue
            for vol in pod.spec.volumes or []:
                for ref in _used(vol):
                    self._copy_config(ref[0], ref[1], pod.metadata.namespace)
            body = kubernetes.client.ApiClient().sanitize_for_serialization(pod)
            spec = body["spec"]
            spec.pop("nodeName", None)  # host scheduling is not modelled (see the module doc)
            for key in ("serviceAccountName", "serviceAccount", "priority", "preemptionPolicy"):
                spec.pop(key, None)
            spec["automountServiceAccountToken"] = False
            spec["volumes"] = [_translate_volume(v, pod.metadata.namespace, self.t) for v in spec.get("volumes") or []]
            spec["containers"] = [{**c, "volumeMounts": c.get("volumeMounts") or []} for c in spec["containers"]]
            spec["nodeSelector"] = {"gpufleet.io/test-never-scheduled": "true"}  # the host copy never runs
            try:
                self.hcore.create_namespaced_pod(
                    self.ns,
                    {"apiVersion": "v1", "kind": "Pod", "metadata": self._host_meta(pod.metadata), "spec": spec},
                )
            except ApiException as exc:
                self.errors.append(f"pod {hname}: {_reason(exc)}")
        host_svcs = {s.metadata.name for s in self.hcore.list_namespaced_service(self.ns).items}
        for svc in self.vcore.list_service_for_all_namespaces().items:
            if svc.metadata.namespace in ("default", "kube-system"):
                continue
            hname = translated(svc.metadata.name, svc.metadata.namespace, self.t)
            if hname in host_svcs:
                continue
            spec: dict[str, Any] = {
                "type": svc.spec.type,
                "ports": [
                    {k: v for k, v in {"name": p.name, "port": p.port, "protocol": p.protocol}.items() if v}
                    for p in svc.spec.ports or []
                ],
            }
            if svc.spec.cluster_ip == "None":
                spec["clusterIP"] = "None"
            if svc.spec.type == "LoadBalancer":
                spec["loadBalancerSourceRanges"] = svc.spec.load_balancer_source_ranges
                spec["externalTrafficPolicy"] = svc.spec.external_traffic_policy
            try:
                self.hcore.create_namespaced_service(
                    self.ns,
                    {"apiVersion": "v1", "kind": "Service", "metadata": self._host_meta(svc.metadata), "spec": spec},
                )
            except ApiException as exc:
                self.errors.append(f"service {hname}: {_reason(exc)}")

    def _copy_config(self, kind: str, name: str, namespace: str) -> None:
        hname = translated(name, namespace, self.t)
        read, create = (
            (self.vcore.read_namespaced_config_map, self.hcore.create_namespaced_config_map)
            if kind == "ConfigMap"
            else (self.vcore.read_namespaced_secret, self.hcore.create_namespaced_secret)
        )
        try:
            obj = read(name, namespace)
        except ApiException:
            return
        meta = self._host_meta(obj.metadata)
        body: dict[str, Any] = {"apiVersion": "v1", "kind": kind, "metadata": meta, "data": obj.data or {}}
        if kind == "Secret":
            body["type"] = obj.type
        try:
            create(self.ns, body)
        except ApiException as exc:
            if exc.status != 409:
                self.errors.append(f"{kind} {hname}: {_reason(exc)}")

    def copy_node(self, host_node: dict[str, Any]) -> None:
        """fromHost.nodes: one untainted host node, as a KWOK node of the stand-in."""
        if self.node_copied:
            return
        body = fake_node(host_node)
        try:
            self.vcore.create_node(body)
        except ApiException as exc:
            if exc.status != 409:
                raise
        self.node_copied = True

    # ---- operators ------------------------------------------------------------------------
    def _list(self, api: tuple[str, str], plural: str) -> list[dict[str, Any]]:
        try:
            return self.vcustom.list_cluster_custom_object(api[0], api[1], plural)["items"]
        except ApiException as exc:
            if exc.status == 404:
                return []  # CRD not installed yet
            raise

    def _status(self, api: tuple[str, str], plural: str, obj: dict[str, Any], status: dict[str, Any]) -> None:
        if obj.get("status") and all(obj["status"].get(k) == v for k, v in status.items()):
            return
        self.vcustom.patch_namespaced_custom_object_status(
            api[0], api[1], obj["metadata"]["namespace"], plural, obj["metadata"]["name"], {"status": status}
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
            self.vcore.create_namespaced_persistent_volume_claim(
                ns, {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": spec}
            )
            return "Pending", f"PVC {name} created"
        why = (pvc.metadata.annotations or {}).get(SYNC_ERROR) or f"PVC {name} is {pvc.status.phase}"
        return pvc.status.phase, why

    def operators(self) -> None:
        now = _now()
        ready_dbs = set()
        for db in self._list(MARIADB, "mariadbs"):
            m, spec = db["metadata"], db.get("spec") or {}
            storage = spec.get("storage") or {}
            phase, why = self._claim(
                m["namespace"], f"storage-{m['name']}-0", storage.get("size", "1Gi"), storage.get("storageClassName")
            )
            ok = phase == "Bound"
            if ok:
                ready_dbs.add((m["namespace"], m["name"]))
            cond = _cond("Ready", ok, "Running" if ok else "Provisioning", "Running" if ok else why, now, m)
            self._status(MARIADB, "mariadbs", db, {"conditions": [cond]})
        accounting_ready = {}
        for acct in self._list(SLINKY, "accountings"):
            m = acct["metadata"]
            host = str(((acct.get("spec") or {}).get("storageConfig") or {}).get("host", ""))
            db = (m["namespace"], host.split(".")[0])
            ok = db in ready_dbs
            accounting_ready[m["namespace"]] = ok
            cond = _cond("Available", ok, "Ready" if ok else "WaitingForDatabase", host, now, m)
            self._status(SLINKY, "accountings", acct, {"conditions": [cond]})
        controllers_ready = set()
        for ctl in self._list(SLINKY, "controllers"):
            m, spec = ctl["metadata"], ctl.get("spec") or {}
            pers = spec.get("persistence") or {}
            size = ((pers.get("resources") or {}).get("requests") or {}).get("storage", "4Gi")
            phase, why = self._claim(
                m["namespace"], f"statesave-{m['name']}-controller-0", size, pers.get("storageClassName")
            )
            ok = phase == "Bound" and accounting_ready.get(m["namespace"], True)
            if phase == "Bound" and not ok:
                why = "waiting for the Accounting (slurmdbd)"
            if ok:
                controllers_ready.add(m["namespace"])
            cond = _cond("SlurmReachable", ok, "Reachable" if ok else "Unreachable", "" if ok else why, now, m)
            self._status(SLINKY, "controllers", ctl, {"conditions": [cond]})
        for plural in ("nodesets", "loginsets"):
            for obj in self._list(SLINKY, plural):
                m = obj["metadata"]
                want = int((obj.get("spec") or {}).get("replicas") or 1)  # DaemonSet mode: the copied node
                ready = want if m["namespace"] in controllers_ready else 0
                st = {"replicas": ready, "observedGeneration": m.get("generation", 1)}
                if plural == "nodesets":
                    st.update(desired=want, readyReplicas=ready)
                self._status(SLINKY, plural, obj, st)

    def host_namespace_up(self) -> bool:
        """The syncer runs in ``vc-<t>``: nothing syncs before it exists or once it is being deleted."""
        try:
            ns = self.hcore.read_namespace(self.ns)
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return ns.metadata.deletion_timestamp is None

    def reclaim(self) -> None:
        """A provisioner's reclaim: a volume it made for this tenant (``Delete`` policy) goes once its
        claim is gone."""
        for pv in self.hcore.list_persistent_volume(label_selector="gpufleet.io/test-provisioned=true").items:
            ref = pv.spec.claim_ref
            if ref and ref.namespace == self.ns and pv.status.phase in ("Released", "Failed"):
                try:
                    self.hcore.delete_persistent_volume(pv.metadata.name)
                except ApiException as exc:
                    if exc.status != 404:
                        raise

    def step(self, host_node: dict[str, Any] | None) -> None:
        self.reclaim()
        if not self.host_namespace_up():
            return
        if host_node is not None:
            self.copy_node(host_node)
        self.operators()
        self.sync_claims()
        self.sync_pods()


def _cond(ctype: str, ok: bool, reason: str, message: str, now: str, meta: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": ctype,
        "status": "True" if ok else "False",
        "reason": reason,
        "message": message,
        "lastTransitionTime": now,
        "observedGeneration": meta.get("generation", 1),
    }


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(time.time() // 3600 * 3600)))


def _reason(exc: ApiException) -> str:
    import json

    try:
        return str(json.loads(exc.body).get("message"))
    except (TypeError, ValueError):
        return str(exc.reason)


def _used(vol: Any) -> list[tuple[str, str]]:
    out = []
    if vol.config_map:
        out.append(("ConfigMap", vol.config_map.name))
    if vol.secret:
        out.append(("Secret", vol.secret.secret_name))
    if vol.projected:
        for src in vol.projected.sources or []:
            if src.config_map:
                out.append(("ConfigMap", src.config_map.name))
            if src.secret:
                out.append(("Secret", src.secret.name))
    return out


def _translate_volume(vol: dict[str, Any], ns: str, vc: str) -> dict[str, Any]:
    vol = dict(vol)
    if "configMap" in vol:
        vol["configMap"] = {**vol["configMap"], "name": translated(vol["configMap"]["name"], ns, vc)}
    if "secret" in vol:
        vol["secret"] = {**vol["secret"], "secretName": translated(vol["secret"]["secretName"], ns, vc)}
    if "persistentVolumeClaim" in vol:
        claim = vol["persistentVolumeClaim"]
        vol["persistentVolumeClaim"] = {**claim, "claimName": translated(claim["claimName"], ns, vc)}
    if "projected" in vol:
        sources = []
        for src in vol["projected"].get("sources") or []:
            src = dict(src)
            for key in ("configMap", "secret"):
                if key in src:
                    src[key] = {**src[key], "name": translated(src[key]["name"], ns, vc)}
            sources.append(src)
        vol["projected"] = {**vol["projected"], "sources": sources}
    return vol


class VClusterDoubles:
    """Every tenant's double, stepped by one thread until ``stop``."""

    def __init__(self, tenants: dict[str, Path], host: Path, host_node: Callable[[], dict[str, Any] | None]) -> None:
        self.doubles = [TenantDouble(t, k, host) for t, k in sorted(tenants.items())]
        self.host_node = host_node
        self.stopping = threading.Event()
        self.failures: list[str] = []
        self.thread = threading.Thread(target=self._run, daemon=True, name="vcluster-doubles")

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        node = None
        while not self.stopping.is_set():
            if node is None:
                node = self.host_node()
            for d in self.doubles:
                try:
                    d.step(node)
                except Exception as exc:  # report, keep syncing (an apiserver restart is transient)
                    self.failures.append(f"{d.t}: {type(exc).__name__}: {exc}")
                    del self.failures[:-50]
            self.stopping.wait(1.0)

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=10)

    def errors(self) -> list[str]:
        return [*self.failures, *(e for d in self.doubles for e in d.errors)]
