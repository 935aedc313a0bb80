#!/usr/bin/python
# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: argocd_cluster_secret
short_description: Build the Argo CD cluster Secret for a vCluster from its exported kubeconfig
version_added: 0.1.0
description:
  - Translates the data of the kubeconfig Secret a vCluster exports (C(vc-<name>), keys C(config),
    C(certificate-authority), C(client-certificate), C(client-key), C(token)) into an Argo CD
    declarative cluster Secret (label C(argocd.argoproj.io/secret-type=cluster), keys C(name),
    C(server), C(config) JSON and C(project)).
  - The server URL defaults to C(https://<name>.<namespace>:443), the name the vCluster serving
    certificate covers (not C(.svc)).
  - Pure transformation on the controller; apply the returned O(ignore:secret) with
    M(kubernetes.core.k8s). The result holds credentials, so run this task and the apply with
    C(no_log=true); never write it to Git.
author:
  - gpufleet maintainers (@gpufleet)
requirements:
  - PyYAML
options:
  vcluster_secret_data:
    description:
      - The C(data) of the vCluster kubeconfig Secret, as returned by M(kubernetes.core.k8s_info)
        (values base64-encoded).
    type: dict
    required: true
  name:
    description: Name of the vCluster (its Service name).
    type: str
    required: true
  namespace:
    description: Namespace the vCluster runs in on the host cluster.
    type: str
    required: true
  project:
    description: Argo CD AppProject the cluster is scoped to (the C(project) key of the Secret).
    type: str
  argocd_namespace:
    description: Namespace Argo CD runs in; the Secret is created there.
    type: str
    default: argocd
  secret_name:
    description: Name of the Argo CD Secret. Defaults to C(cluster-<name>).
    type: str
  cluster_name:
    description: Cluster name shown in Argo CD. Defaults to O(name).
    type: str
  server:
    description: API server URL Argo CD uses. Defaults to C(https://<name>.<namespace>:443).
    type: str
  labels:
    description:
      - Extra labels, for ApplicationSet cluster generators (for example C(gpufleet.io/tenant)).
      - C(argocd.argoproj.io/secret-type=cluster) is always set.
    type: dict
    default: {}
  annotations:
    description: Annotations for the Secret.
    type: dict
    default: {}
attributes:
  check_mode:
    support: full
    description: Pure transformation; runs the same in check mode.
  diff_mode:
    support: none
    description: Nothing is written; diff the apply task instead (without showing credentials).
  platform:
    support: full
    platforms: posix
    description: Runs where the inventory and the kubeconfig are, normally the controller (C(localhost)).
"""

EXAMPLES = r"""
- name: Read the kubeconfig the vCluster exported
  kubernetes.core.k8s_info:
    kind: Secret
    namespace: tenant-research
    name: vc-research
  register: tenant_vc_secret
  no_log: true

- name: Build the Argo CD cluster Secret
  gpufleet.core.argocd_cluster_secret:
    vcluster_secret_data: "{{ tenant_vc_secret.resources[0].data }}"
    name: research
    namespace: tenant-research
    project: research
    labels:
      gpufleet.io/tenant: research
  register: tenant_cluster_secret
  no_log: true

- name: Register the vCluster with Argo CD
  kubernetes.core.k8s:
    definition: "{{ tenant_cluster_secret.secret }}"
  no_log: true
"""

RETURN = r"""
secret:
  description: The Argo CD cluster Secret manifest (values in C(data), base64). Holds credentials.
  returned: success
  type: dict
summary:
  description: What may be logged about the Secret, without credentials.
  returned: success
  type: dict
  sample:
    secret_name: cluster-research
    namespace: argocd
    name: research
    server: https://research.tenant-research:443
    project: research
    auth: client-certificate
    labels: {argocd.argoproj.io/secret-type: cluster, gpufleet.io/tenant: research}
"""

from ansible_collections.gpufleet.core.plugins.module_utils.argocd.cluster_secret import cluster_secret, describe
from ansible_collections.gpufleet.core.plugins.module_utils.module import GpufleetModule

ARGUMENT_SPEC = {
    "vcluster_secret_data": {"type": "dict", "required": True, "no_log": True},
    "name": {"type": "str", "required": True},
    "namespace": {"type": "str", "required": True},
    "project": {"type": "str"},
    "argocd_namespace": {"type": "str", "default": "argocd"},
    "secret_name": {"type": "str", "no_log": False},
    "cluster_name": {"type": "str"},
    "server": {"type": "str"},
    "labels": {"type": "dict", "default": {}},
    "annotations": {"type": "dict", "default": {}},
}


def build(module: GpufleetModule) -> dict:
    params = dict(module.params)
    secret = cluster_secret(params.pop("vcluster_secret_data"), **params)
    return {"changed": False, "secret": secret, "summary": describe(secret)}


def main() -> None:
    GpufleetModule(ARGUMENT_SPEC, requirements=("yaml",)).run(build)


if __name__ == "__main__":
    main()
