#!/usr/bin/python
# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: argocd_status
short_description: Report (and optionally wait for) the sync and health status of Argo CD Applications
version_added: 0.1.0
description:
  - Reads Argo CD C(Application) objects (C(argoproj.io/v1alpha1)) through the Kubernetes API and
    reports, per app, the sync status, the health status, the phase of the last sync operation and
    the first reason it is not ready (an C(*Error) condition, a failed sync and the resource that
    failed, a resource that is Degraded/Missing/Progressing or OutOfSync, the health message).
  - An app is ready when it is C(Synced) and C(Healthy) and no sync operation is running.
  - Select the apps by O(names), by O(label_selector), or as the tree under a root app-of-apps
    (O(root)), followed recursively through each app's C(status.resources) entries of kind
    C(Application); a child that is listed but does not exist yet counts as not ready.
  - With O(wait), polls until every selected app is ready or O(wait_timeout) passes; each change of
    an app's state adds a line to RV(progress) (modules report when they return, so the lines are
    shown after the task).
  - Only reads; never changes anything (C(changed) is always false).
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.core.common.kube
options:
  namespace:
    description: Namespace the Applications live in (where Argo CD runs).
    type: str
    default: argocd
  root:
    description:
      - Name of a root Application (app-of-apps). The result holds it and every Application below
        it, children of children too.
    type: str
  names:
    description: Names of the Applications to report. A name that does not exist is reported as not ready.
    type: list
    elements: str
  label_selector:
    description: Kubernetes label selector for the Applications to report (for example C(gpufleet.io/cluster=gpu-east)).
    type: str
  wait:
    description: Poll until every selected Application is Synced and Healthy, or O(wait_timeout) passes.
    type: bool
    default: false
  wait_timeout:
    description: Seconds to wait at most with O(wait).
    type: int
    default: 600
  wait_interval:
    description: Seconds between two reads with O(wait).
    type: float
    default: 5
  fail_on_not_ready:
    description:
      - Fail when an app is not ready (after the wait with O(wait)); the message lists each such
        app with its state and reason. With C(false), the state is only reported.
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    description: Only reads; runs the same in check mode.
  diff_mode:
    support: none
    description: Nothing is written.
  platform:
    support: full
    platforms: posix
    description: Runs where the kubeconfig is, normally the controller (C(localhost)).
notes:
  - Status comes from the Application objects the Argo CD application controller maintains; no Argo CD
    API server or CLI is needed.
"""

EXAMPLES = r"""
- name: Wait for the whole app tree of the cluster and show it
  gpufleet.core.argocd_status:
    root: gpu-east-root
    wait: true
    wait_timeout: 1200
  register: fleet_apps

- name: Show the table
  ansible.builtin.debug:
    var: fleet_apps.table

- name: Report the tenant apps of one cluster without failing
  gpufleet.core.argocd_status:
    label_selector: gpufleet.io/cluster=gpu-east,gpufleet.io/tenant
    fail_on_not_ready: false
"""

RETURN = r"""
apps:
  description: One entry per Application, the root first, then by sync wave and name.
  returned: always
  type: list
  elements: dict
  sample:
    - name: gpu-east-cilium
      namespace: argocd
      sync: Synced
      health: Healthy
      phase: Succeeded
      reason: ""
      revision: 3f2a9c1d0b7e
      wave: 10
      parent: gpu-east-root
      found: true
      ready: true
table:
  description: The apps as a fixed-width table, one line each, header first.
  returned: always
  type: list
  elements: str
  sample:
    - "APP              WAVE  SYNC       HEALTH       OPERATION  REASON"
    - "gpu-east-root    0     Synced     Progressing  Succeeded  Application/argocd/gpu-east-cilium Progressing"
ready:
  description: Whether every selected app is Synced and Healthy (and there is at least one).
  returned: always
  type: bool
summary:
  description: Counts and the names of the apps that are not ready.
  returned: always
  type: dict
  sample: {total: 27, ready: 26, not_ready: [gpu-east-gpu-operator]}
progress:
  description: With O(wait), one line per change of an app's sync/health/operation state, with the elapsed time.
  returned: always
  type: list
  elements: str
  sample: ["[  12.0s] gpu-east-cilium: OutOfSync/Missing -> Synced/Healthy/Succeeded"]
not_ready_report:
  description:
    - The apps that are not ready after a header line, one line each with namespace/name, sync and health
      status, operation phase and reason; empty when all are ready.
    - The same text is the failure message with O(fail_on_not_ready).
  returned: always
  type: list
  elements: str
  sample:
    - "1 of 27 Argo CD Applications not Synced/Healthy after waiting 1800s:"
    - "  - argocd/gpu-east-gpu-operator: Synced/Degraded (Succeeded): DaemonSet/gpu-operator/nvidia-driver Degraded"
waited:
  description: Seconds spent waiting (0 without O(wait)).
  returned: always
  type: float
"""

from ansible_collections.gpufleet.core.plugins.module_utils.argocd import kube, status, watch
from ansible_collections.gpufleet.core.plugins.module_utils.module import GpufleetModule, kube_spec

ARGUMENT_SPEC = {
    "namespace": {"type": "str", "default": "argocd"},
    "root": {"type": "str"},
    "names": {"type": "list", "elements": "str"},
    "label_selector": {"type": "str"},
    "wait": {"type": "bool", "default": False},
    "wait_timeout": {"type": "int", "default": 600},
    "wait_interval": {"type": "float", "default": 5},
    "fail_on_not_ready": {"type": "bool", "default": True},
    **kube_spec(),
}


def fetcher(params):
    api = kube.custom_api(params["kubeconfig"], params["context"])
    ns = params["namespace"]
    if params["root"]:
        return lambda: status.tree(params["root"], ns, lambda n: kube.by_name(kube.list_applications(api, n)))
    selector = params["label_selector"] or ""
    return lambda: status.select(kube.list_applications(api, ns, selector), params["names"] or (), ns)


def report(module: GpufleetModule) -> dict:
    params = module.params
    if params["wait_timeout"] < 0 or params["wait_interval"] <= 0:
        module.fail_json(msg="wait_timeout must be >= 0 and wait_interval > 0")
    fetch = fetcher(params)
    if params["wait"]:
        res = watch.wait_ready(fetch, timeout=params["wait_timeout"], interval=params["wait_interval"])
        records, ready, waited, progress = res.records, res.ready, res.waited, res.progress
    else:
        records = fetch()
        ready, waited, progress = bool(records) and not status.not_ready(records), 0.0, []
    result = {
        "changed": False,
        "apps": [r.as_dict() for r in records],
        "table": status.table(records),
        "ready": ready,
        "summary": status.summary(records),
        "progress": progress,
        "waited": round(waited, 1),
        "not_ready_report": [],
    }
    if not ready:
        if records:
            msg = status.failure_message(records, waited if params["wait"] else None)
        else:
            msg = f"no Argo CD Applications matched in namespace {params['namespace']}"
        result["not_ready_report"] = msg.splitlines()
        if params["fail_on_not_ready"]:
            module.fail_json(msg=msg, **result)
    return result


def main() -> None:
    module = GpufleetModule(
        ARGUMENT_SPEC,
        requirements=("kubernetes",),
        mutually_exclusive=[("root", "names"), ("root", "label_selector")],
    )
    module.run(report)


if __name__ == "__main__":
    main()
