"""The StorageClass of the tenants' control-plane volumes (vCluster data, slurmctld state).

Neither chart gets a class from gpufleet otherwise: the vcluster chart's data volume and the slurm
chart's ``controller.persistence`` leave ``storageClass`` empty/null, i.e. they need a default
StorageClass, which a fresh cluster does not have. gpufleet names the class explicitly in both
and, unless ``shared_storage.storage_class_create`` is false (the site brings its own), renders
it: NFS dynamic provisioning (csi-driver-nfs) on the shared-storage server, marked default.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Cluster

DEFAULT_CLASS = "gpufleet-nfs"
NFS_DRIVER = "nfs.csi.k8s.io"
DEFAULT_ANNOTATION = "storageclass.kubernetes.io/is-default-class"


def storage_class_name(cluster: Cluster) -> str | None:
    """The class to name explicitly, or None to leave the charts on the site's default class."""
    comp = cluster.components["shared_storage"]
    if comp.enabled:
        return str(comp.options.get("storage_class") or DEFAULT_CLASS)
    return comp.options.get("storage_class") or None


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
            "annotations": {DEFAULT_ANNOTATION: "true"},
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
