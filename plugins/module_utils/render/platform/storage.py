"""StorageClasses: the NFS class gpufleet renders, and the class of the tenants' databases.

* Databases (vCluster backing store, slurmctld state save, the accounting MariaDB's InnoDB) need
  POSIX locking and fsync semantics NFS does not give reliably (SQLite and InnoDB both warn
  against NFS). They go on ``shared_storage.state_storage_class`` (a local or block class: TopoLVM,
  local-path, Ceph RBD, a SAN CSI driver...) when the inventory names one, else on the cluster's
  default StorageClass; never implicitly on NFS.
* ``gpufleet-nfs`` (``shared_storage.storage_class``): NFS dynamic provisioning (csi-driver-nfs) on
  the shared-storage server, rendered unless ``storage_class_create`` is false. It is not the
  default class, so a chart claim without a class never lands on NFS.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Cluster

DEFAULT_CLASS = "gpufleet-nfs"
NFS_DRIVER = "nfs.csi.k8s.io"
DEFAULT_ANNOTATION = "storageclass.kubernetes.io/is-default-class"


def storage_class_name(cluster: Cluster) -> str | None:
    """The NFS class gpufleet renders (None when shared storage is off)."""
    comp = cluster.components["shared_storage"]
    if comp.enabled:
        return str(comp.options.get("storage_class") or DEFAULT_CLASS)
    return None


def state_storage_class(cluster: Cluster) -> str | None:
    """The class of the tenants' databases, or None: the cluster's default class (never NFS)."""
    return cluster.components["shared_storage"].options.get("state_storage_class") or None


def storage_class(cluster: Cluster) -> dict[str, Any] | None:
    comp = cluster.components["shared_storage"]
    if not comp.enabled or not comp.options.get("storage_class_create", True):
        return None
    opts = comp.options
    share = str(opts["nfs_share"]).rstrip("/")
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": storage_class_name(cluster),
            "annotations": {DEFAULT_ANNOTATION: "false"},
            "labels": {"app.kubernetes.io/part-of": "gpufleet"},
        },
        "provisioner": NFS_DRIVER,
        "parameters": {
            "server": str(opts["nfs_server"]),
            "share": share,
            "subDir": "volumes/${pvc.metadata.namespace}-${pvc.metadata.name}",
        },
        "reclaimPolicy": "Retain",
        "volumeBindingMode": "Immediate",
        "allowVolumeExpansion": True,
        "mountOptions": ["nfsvers=4.1"],
    }
