"""The real Slinky operator v1.2.1 reconciling a tenant's rendered Slurm cluster against real Slurm.

One bed for the module: the Slurm build's slurmctld (SlurmUser=slurm, ``AuthAltTypes=auth/jwt``) and
slurmrestd (as the RestApi pod runs it); a local control plane (etcd, kube-apiserver, scheduler,
controller-manager, KWOK nodes) with the v1.2.1 CRDs; the operator's manager as a process in its own
network namespace (tests/lib/slinky_operator.py); the sample's ``research`` tenant: its rendered objects
(namespace, PVC, ConfigMaps), PriorityClass and the chart's Controller, Accounting, RestApi, the
``research-batch`` NodeSet, the ``main`` LoginSet and the sssd.conf Secret made from its rendered
values (tests/lib/slinky_objects.py). Two KWOK nodes carry that pool's label and taint.

What differs from a real pod (NodeSet pods are KWOK pods: no container runtime here): for each pod
the operator creates, the test starts one slurmd process of the same build under the Slurm node name
the operator gives the pod (its ``pod-hostname`` label: the Kubernetes node's name in DaemonSet
mode). That slurmd is a static node of slurm.conf, not a dynamic one (``slurmd -Z --conf
<extraConf>``) registering itself; it does not run inside the pod's cgroup, mounts or network, so
the pod's volumes, resources and its own death do not touch it. The operator's Controller and
RestApi pods are KWOK pods too: the slurmctld and slurmrestd the operator talks to are the test's,
and the slurm.conf the operator renders for its Controller is not the one slurmctld reads.
docs/adr/slinky-operator-bed.md has the whole list.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import re
import secrets
import shutil
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from argocd_health import argocd_health
from controlplane import REPO_ROOT, LocalControlPlane, require_control_plane_tools, shared_test_helpers
from gpufleet_testlib.slurm_build import usable_by_every_user
from harness import SlurmCluster, free_ports, require_slurm
from polling import wait_for
from slinky_objects import (
    NAMESPACE,
    accounting,
    chart_values,
    controller,
    loginset,
    nodeset,
    restapi,
    sssd_ref,
    sssd_secret,
)
from slinky_operator import BIN, SlinkyOperator, SlinkyWebhook

from ansible_collections.gpufleet.core.plugins.module_utils.model.rollout_model import Rollout, Window
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants import rollout

TENANT = REPO_ROOT / "gitops" / "clusters" / "gpu-east" / "tenants" / "research"
CRDS = REPO_ROOT.parent / "shared" / "upstream" / "crds" / "slinky"
POOL = "research-batch"
LOGINSET = "main"
NODES = [f"{POOL}-0", f"{POOL}-1"]
POOL_LABEL = "node-restriction.kubernetes.io/gpufleet-pool"
HOSTNAME_LABEL = "nodeset.slinky.slurm.net/pod-hostname"
CORDON_REASON = "nodeset.slinky.slurm.net/node-cordon-reason"
REVISION_LABEL = "controller.kubernetes.io/hash"  # the pod's revision (the NodeSet's status.nodeSetHash)
REASON_PREFIX = "slurm-operator: "
# the drain reason the operator gives a node whose pod it is about to delete
PENDING = re.compile(rf"Pod \({NAMESPACE}/(\S+)\) is pending termination for scale-in")


def _kwok_node(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {POOL_LABEL: POOL}},
        "spec": {"taints": [{"key": POOL_LABEL, "value": POOL, "effect": "NoSchedule"}]},
        "status": {
            "capacity": {"cpu": "224", "memory": "2Ti", "nvidia.com/gpu": "8", "pods": "110"},
            "allocatable": {"cpu": "224", "memory": "2Ti", "nvidia.com/gpu": "8", "pods": "110"},
        },
    }


def _docs(path: Path, kinds: set[str]) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d and d["kind"] in kinds]


def _apply(plane: LocalControlPlane, objs: list[dict]) -> None:
    plane.kubectl("apply", "--server-side", "--field-manager=gpufleet-tests", "-f", "-",
                  input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))  # fmt: skip


def _secret(name: str, key: str, data: bytes) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": NAMESPACE},
            "data": {key: base64.b64encode(data).decode()}}  # fmt: skip


def _home_pv() -> dict:
    """The rendered PV binds the vCluster's host copy of the claim; with no vCluster here the claim is
    ``slurm/slurm-home`` itself (a test-side PV of the same shape, on hostPath)."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "slinky-bed-slurm-home"},
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "capacity": {"storage": "20Ti"},
            "claimRef": {"namespace": NAMESPACE, "name": "slurm-home"},
            "hostPath": {"path": "/nonexistent"},
            "storageClassName": "",
        },
    }


class Bed:
    def __init__(self, plane, cluster, operator, values):
        self.plane, self.cluster, self.operator, self.values = plane, cluster, operator, values

    def pods(self) -> list[dict]:
        """The NodeSet's pods (owned by it), by node."""
        owner = ("NodeSet", f"slurm-worker-{POOL}")
        items = [
            p
            for p in self.plane.get_json("pods", "-n", NAMESPACE)["items"]
            if owner in {(o["kind"], o["name"]) for o in p["metadata"].get("ownerReferences", [])}
        ]
        return sorted(items, key=lambda p: p["spec"].get("nodeName", ""))

    def running_pods(self) -> list[dict]:
        pods = self.pods()
        return pods if len(pods) == len(NODES) and all(p["status"].get("phase") == "Running" for p in pods) else []

    def nodeset_status(self) -> dict:
        return self.plane.get_json("nodesets.slinky.slurm.net", "-n", NAMESPACE, f"slurm-worker-{POOL}").get(
            "status", {}
        )

    def node(self, name: str) -> str:
        return self.cluster.scontrol("show", "node", name)


@pytest.fixture(scope="module")
def bed(tmp_path_factory):
    require_slurm()
    require_control_plane_tools()
    helpers = shared_test_helpers()
    helpers.require_tool("ip", "Debian package iproute2 (the operator's network namespace)")
    helpers.require_tool("openssl", "Debian package openssl (the webhook's serving certificate)")
    helpers.require_path(BIN / "slurm-operator", "the Slinky operator: tools/build.sh slinky")
    helpers.require_path(CRDS, "the Slinky v1.2.1 CRDs (../shared/upstream/crds/slinky)")
    values = chart_values(TENANT / "slurm" / "values.yaml")
    db = values["accounting"]["storageConfig"]
    work = Path(tempfile.mkdtemp(prefix="gf-slinky-", dir="/tmp"))
    work.chmod(0o755)
    reachable = usable_by_every_user()
    reachable.__enter__()
    conf = f"NodeName={POOL}-[0-1] CPUs=2 RealMemory=1000 State=UNKNOWN\nPartitionName=all Nodes=ALL Default=YES"
    cluster = SlurmCluster(work / "slurm", conf, nodes=[], jwt=True, slurm_user="slurm",
                           cluster_name=values["clusterName"])  # fmt: skip
    plane = LocalControlPlane()
    operator = None
    try:
        cluster.start()
        cluster.start_slurmrestd()
        plane.start(tmp_path_factory.mktemp("kube") / "cluster")
        plane.apply_crds(sorted(CRDS.glob("*.yaml")))
        plane.create_nodes_from_snapshot([_kwok_node(n) for n in NODES])
        _apply(plane, _docs(TENANT / "objects" / "objects.yaml", {"Namespace"}))
        _apply(plane, _docs(TENANT / "objects" / "objects.yaml", {"PersistentVolumeClaim", "ConfigMap"}))
        _apply(plane, [*_docs(TENANT / "host" / "priority.yaml", {"PriorityClass"}), _home_pv()])
        _apply(plane, [
            _secret(values["slurmKey"]["secretRef"]["name"], values["slurmKey"]["secretRef"]["key"],
                    secrets.token_bytes(1024)),
            _secret(values["jwtKey"]["secretRef"]["name"], values["jwtKey"]["secretRef"]["key"],
                    cluster.jwt_key_path.read_bytes()),
            _secret(db["passwordKeyRef"]["name"], db["passwordKeyRef"]["key"], secrets.token_bytes(16)),
        ])  # fmt: skip
        service = f"slurm-restapi.{NAMESPACE}"  # the RestApi's Service, as the operator names it
        operator = SlinkyOperator(work / "operator", plane.kubeconfig, cluster.restd_port, [service])
        operator.start()
        _apply(plane, sssd_secret(values))
        _apply(plane, [controller(values), accounting(values), restapi(values), nodeset(values, POOL),
                       loginset(values, LOGINSET)])  # fmt: skip
        b = Bed(plane, cluster, operator, values)
        # one slurmd per pod as soon as the operator made it (a pod's slurmd starts with the pod),
        # under the Slurm node name the operator gave the pod
        pods = wait_for(lambda: len(p := b.pods()) == len(NODES) and p, 90, "the NodeSet's pods")
        for pod in pods:
            cluster.start_slurmd(pod["metadata"]["labels"][HOSTNAME_LABEL])
        cluster.wait_idle(NODES, 60)
        wait_for(b.running_pods, 90, "the NodeSet's pods Running")
        yield b
    finally:
        if operator is not None:
            operator.stop()
            # kept with pytest's temporary files for a look after a failure
            shutil.copy(operator.log, tmp_path_factory.getbasetemp() / "slinky-operator.log")
        plane.stop()
        cluster.stop()
        reachable.__exit__(None, None, None)
        shutil.rmtree(work, ignore_errors=True)


def test_operator_reconciles_the_rendered_objects_without_error(bed):
    # what the operator makes from the Controller, Accounting and RestApi; the Service is the name its slurm
    # client calls (and the name the bed's hosts file maps to the test's slurmrestd)
    for kind, name in (("statefulset", "slurm-controller"), ("deployment", "slurm-restapi"),
                       ("service", "slurm-restapi"), ("service", "slurm-controller")):  # fmt: skip
        bed.plane.kubectl("get", kind, "-n", NAMESPACE, name)
    owners = {o["kind"] for s in bed.plane.get_json("statefulsets", "-n", NAMESPACE)["items"]
              for o in s["metadata"].get("ownerReferences", [])}  # fmt: skip
    assert {"Controller", "Accounting"} <= owners, owners  # slurmctld's and slurmdbd's
    assert bed.operator.logged('"msg":"Added slurm client"'), bed.operator.tail()
    # a controller's normal retries are not failures: optimistic-concurrency conflicts, and the LoginSet's
    # status read of the Deployment it has just made through its cache before the cache has it
    retries = ("the object has been modified", 'Deployment.apps \\"slurm-login-main\\" not found')
    errors = [
        line
        for line in bed.operator.log.read_text().splitlines()
        if '"level":"error"' in line and not any(r in line for r in retries)
    ]
    warnings = [line for line in bed.operator.log.read_text().splitlines() if '"type":"Warning"' in line]
    assert errors == [] and warnings == [], (errors + warnings)[:5]


def test_operator_names_pods_after_their_nodes_and_registers_them_in_slurm(bed):
    pods = bed.pods()
    assert [p["spec"]["nodeName"] for p in pods] == NODES
    assert [p["metadata"]["labels"][HOSTNAME_LABEL] for p in pods] == NODES
    # the operator writes each pod's identity into its Slurm node's comment (through slurmrestd)
    for pod in pods:
        name = pod["metadata"]["name"]
        shown = wait_for(lambda n=pod["spec"]["nodeName"], p=name: p in bed.node(n) and bed.node(n), 60,
                         f"pod {name} in the Slurm node's comment")  # fmt: skip
        assert f'"namespace":"{NAMESPACE}"' in shown, shown
    # and counts the Slurm nodes' states in the NodeSet status (refreshed on its periodic resync, ~30 s)
    status = wait_for(lambda: (s := bed.nodeset_status()).get("slurmIdle") == len(NODES) and s, 120, "slurmIdle")
    assert status.get("replicas") == len(NODES), status


def _owned_pods(bed, selector: dict[str, str]) -> list[dict]:
    sel = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
    return bed.plane.get_json("pods", "-n", NAMESPACE, "-l", sel)["items"]


def test_loginset_makes_login_pods_with_the_rendered_sssd_conf(bed):
    """The rendered LoginSet and the sssd.conf Secret the chart makes from the values: the operator's
    Deployment makes the login pod with that sssd.conf mounted at /etc/sssd/sssd.conf next to the
    rendered bind-password and CA mounts, and the LoginSet reports its replicas."""
    want = bed.values["loginsets"][LOGINSET]
    name = f"slurm-login-{LOGINSET}"
    ref = sssd_ref(bed.values)
    conf = bed.values["sssd"]["conf"]
    secret = bed.plane.get_json("secret", "-n", NAMESPACE, ref["name"])
    assert base64.b64decode(secret["data"][ref["key"]]).decode() == conf
    owner = [("LoginSet", name)]

    def deployments() -> list[dict]:
        items = bed.plane.get_json("deployments", "-n", NAMESPACE)["items"]
        return [d for d in items if [(o["kind"], o["name"]) for o in d["metadata"]["ownerReferences"]] == owner]

    deploy = wait_for(deployments, 60, "the login Deployment")
    assert len(deploy) == 1, deploy
    selector = deploy[0]["spec"]["selector"]["matchLabels"]
    pods = wait_for(lambda: len(p := _owned_pods(bed, selector)) == want["replicas"] and p, 60, "login pods")
    spec = pods[0]["spec"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    projected = [src["secret"] for src in volumes["sssd-conf"]["projected"]["sources"]]
    assert projected == [{"name": ref["name"], "items": [{"key": ref["key"], "path": "sssd.conf", "mode": 0o600}]}]
    login = next(c for c in spec["containers"] if c["name"] == "login")
    mounts = {m["mountPath"]: m for m in login["volumeMounts"]}
    assert mounts["/etc/sssd/sssd.conf"]["name"] == "sssd-conf" and mounts["/etc/sssd/sssd.conf"]["readOnly"]
    for m in want["login"]["volumeMounts"]:  # the rendered bind password, CA and home
        assert {k: v for k, v in mounts[m["mountPath"]].items() if k in m} == m, mounts[m["mountPath"]]
        assert m["name"] in volumes
    # the pod restarts when sssd.conf changes: it carries the hash of the Secret's sssd.conf
    annotations = pods[0]["metadata"]["annotations"]
    assert annotations["slinky.slurm.net/sssd-conf-hash"] == hashlib.sha256(conf.encode()).hexdigest()
    assert spec["priorityClassName"] == bed.values["priorityClass"]["name"]
    sshd = bed.plane.get_json("configmap", "-n", NAMESPACE, f"{name}-ssh-config")["data"]["sshd_config"]
    assert all(line in sshd.splitlines() for line in want["extraSshdConfig"].splitlines()), sshd
    # the rendered LoginSet carries no pool toleration of its own (in the fleet the vCluster adds the
    # pools' tolerations and the tenant's node selector when it syncs the pod to the host): here, with
    # only the pool's tainted nodes, the scheduler keeps it off them
    assert not any(t.get("key") == POOL_LABEL for t in spec.get("tolerations", [])), spec.get("tolerations")
    scheduled = wait_for(lambda: next((c for c in _owned_pods(bed, selector)[0]["status"].get("conditions", [])
                                       if c["type"] == "PodScheduled"), None), 30, "PodScheduled")  # fmt: skip
    assert scheduled["status"] == "False" and "untolerated taint" in scheduled["message"], scheduled
    replicas = wait_for(lambda: bed.plane.get_json("loginsets.slinky.slurm.net", "-n", NAMESPACE, name)
                        .get("status", {}).get("replicas"), 60, "LoginSet status.replicas")  # fmt: skip
    assert replicas == want["replicas"], replicas


def test_cordon_drains_the_slurm_node_and_uncordon_resumes_it(bed):
    node = NODES[0]
    job = bed.cluster.sbatch("-w", node, wrap="sleep 20")
    bed.cluster.wait_job(job)
    bed.plane.kubectl("cordon", node)
    pod = next(p for p in bed.pods() if p["spec"]["nodeName"] == node)["metadata"]["name"]
    want = f"Reason={REASON_PREFIX}Node ({node}) was cordoned, Pod ({NAMESPACE}/{pod}) must be cordoned"
    shown = wait_for(lambda: "DRAIN" in (s := bed.node(node)) and s, 90, f"{node} DRAIN")
    assert want in shown, shown
    # drained while the job runs (DRAINING), and the job is not killed: it runs to its end
    assert re.search(r"State=(ALLOCATED|MIXED)\+DRAIN", shown), shown
    bed.cluster.wait_job(job, ("COMPLETED",), timeout=60)
    wait_for(lambda: "State=IDLE+DRAIN" in bed.node(node), 30, f"{node} drained")
    # the other node is untouched
    assert "DRAIN" not in bed.node(NODES[1])
    bed.plane.kubectl("uncordon", node)
    wait_for(lambda: "DRAIN" not in bed.node(node), 120, f"{node} resumed")
    bed.cluster.wait_idle([node], 30)


def test_cordon_reason_annotation_becomes_the_drain_reason(bed):
    """The project's maintenance cordons with Slinky's cordon-reason annotation (node_pools)."""
    node = NODES[1]
    reason = "gpufleet maintenance: driver upgrade"
    bed.plane.kubectl("annotate", "node", node, f"{CORDON_REASON}={reason}", "--overwrite")
    bed.plane.kubectl("cordon", node)
    shown = wait_for(lambda: "DRAIN" in (s := bed.node(node)) and s, 90, f"{node} DRAIN")
    assert f"Reason={REASON_PREFIX}{reason}" in shown, shown
    bed.plane.kubectl("uncordon", node)
    bed.plane.kubectl("annotate", "node", node, f"{CORDON_REASON}-")
    wait_for(lambda: "DRAIN" not in bed.node(node), 120, f"{node} resumed")


def _evict(bed, pod: str):
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod, "namespace": NAMESPACE}}
    return bed.plane.kubectl("create", "--raw", f"/api/v1/namespaces/{NAMESPACE}/pods/{pod}/eviction", "-f", "-",
                             input=json.dumps(body), check=False)  # fmt: skip


def test_rendered_host_budget_holds_the_pod_the_operator_marks_busy(bed):
    """The driver upgrade's drain waits on the rendered ``slurmd-busy`` budget (tenants/<t>/host/
    disruption.yaml). Whatever label the operator puts on the pod of a Slurm node that runs a job (read
    from the pod, as the operator wrote it) is what the rendered budget selects: with a job on one node
    the budget holds that pod alone, the API refuses its eviction, and once the job ended the operator
    takes the label away again. The operator's own worker budget selects the same label.

    Here the operator runs beside the pods, so its own budget and the rendered one share a namespace and
    the API refuses the eviction for that ("more than one PodDisruptionBudget"). In the fleet they do not
    meet: the operator's budget stays in the tenant's vCluster (vCluster 0.36.1 syncs no budget to the
    host, ``sync.toHost.podDisruptionBudgets.enabled: false``) and the rendered one is on the host. So the
    rendered budget's own verdict is read from its status: the busy pod counted, no disruption allowed."""
    node, other = NODES
    idle = {p["spec"]["nodeName"]: dict(p["metadata"]["labels"]) for p in bed.pods()}
    rendered = _docs(TENANT / "host" / "disruption.yaml", {"PodDisruptionBudget"})
    assert [d["metadata"]["name"] for d in rendered] == ["slurmd-busy"], rendered
    pdb = {**rendered[0], "metadata": {**rendered[0]["metadata"], "namespace": NAMESPACE}}
    selector = pdb["spec"]["selector"]["matchLabels"]
    job = bed.cluster.sbatch("-w", node, wrap="sleep 90")
    bed.cluster.wait_job(job)

    def marked() -> dict | None:  # the labels the operator added to the busy pod since it was idle
        pod = next(p for p in bed.pods() if p["spec"]["nodeName"] == node)
        added = {k: v for k, v in pod["metadata"]["labels"].items() if idle[node].get(k) != v}
        return added and {"pod": pod, "added": added}

    seen = wait_for(marked, 120, f"the operator's label on the pod of busy {node}")
    busy = seen["pod"]
    assert selector.items() <= seen["added"].items(), (selector, seen["added"])
    idle_now = next(p for p in bed.pods() if p["spec"]["nodeName"] == other)
    assert not selector.items() <= idle_now["metadata"]["labels"].items(), idle_now["metadata"]["labels"]
    # the operator's own worker budget in the namespace selects the same label
    own = [b["spec"]["selector"]["matchLabels"] for b in bed.plane.get_json("pdb", "-n", NAMESPACE)["items"]]
    assert any(selector.items() <= m.items() for m in own), own
    _apply(bed.plane, [pdb])
    try:
        status = wait_for(lambda: (s := bed.plane.get_json("pdb", "-n", NAMESPACE, "slurmd-busy").get("status", {}))
                          .get("currentHealthy") == 1 and s, 120, "slurmd-busy counting the busy pod",
                 detail=lambda: json.dumps([(b["metadata"]["name"], b.get("status")) for b in
                                            bed.plane.get_json("pdb", "-n", NAMESPACE)["items"]]))  # fmt: skip
        assert (status["expectedPods"], status["disruptionsAllowed"]) == (1, 0), status
        refused = _evict(bed, busy["metadata"]["name"])
        assert refused.returncode != 0, refused.stdout
        reasons = ("disruption budget", "more than one PodDisruptionBudget")
        assert any(m in refused.stderr for m in reasons), refused.stderr
        assert (
            "deletionTimestamp" not in bed.plane.get_json("pod", "-n", NAMESPACE, busy["metadata"]["name"])["metadata"]
        )
    finally:  # the job ends here whatever failed: the next tests need both nodes idle
        bed.cluster.scancel(job)
        bed.plane.kubectl("delete", "pdb", "-n", NAMESPACE, "slurmd-busy", "--ignore-not-found")
    wait_for(lambda: not marked(), 120, f"the operator's label gone from the pod of {node} once idle")
    bed.cluster.wait_idle(NODES, 60)


def _rollout_state(nodeset: dict) -> tuple:
    """(generation, observedGeneration, desired, readyReplicas, updatedReplicas): what the health reads."""
    s = nodeset.get("status") or {}
    return (nodeset["metadata"]["generation"], s.get("observedGeneration"), s.get("desired", 0),
            s.get("readyReplicas", 0), s.get("updatedReplicas", 0))  # fmt: skip


def _available(pod: dict) -> bool:
    conds = {c["type"]: c["status"] for c in pod["status"].get("conditions", [])}
    return "deletionTimestamp" not in pod["metadata"] and conds.get("Ready") == "True"


def test_rolling_update_keeps_max_unavailable_and_waits_for_the_job(bed):
    """The rendered strategy (RollingUpdate, maxUnavailable 1) on the real operator: a template change
    replaces the pods one at a time. Before deleting a pod the operator drains its Slurm node with
    ``Pod (<ns>/<pod>) is pending termination for scale-in`` and waits until the node is drained, so
    the pod whose node runs a job goes only after the job ended. (Seen here: the next pod's drain
    starts as soon as the previous replacement is Ready, a moment before the operator undrains the
    previous node; so at most one *existing* pod is pending termination, not at most one Slurm node
    in DRAIN.) The NodeSet's Argo CD health (the rendered Lua, Argo CD's engine) on the NodeSet as the
    operator writes it: Progressing from the template change until the last pod is replaced, then
    Healthy; so a NodeSet in a later sync wave waits for this rollout."""
    strategy = bed.values["nodesets"][POOL]["updateStrategy"]
    assert strategy == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}, strategy
    before = {p["spec"]["nodeName"]: p["metadata"]["name"] for p in bed.pods()}
    job = bed.cluster.sbatch("-w", NODES[0], wrap="sleep 12")
    bed.cluster.wait_job(job)
    patch = {"spec": {"template": {"metadata": {"annotations": {"gpufleet.test/revision": "2"}}}}}
    bed.plane.kubectl("patch", "nodesets.slinky.slurm.net", "-n", NAMESPACE, f"slurm-worker-{POOL}",
                      "--type=merge", "-p", json.dumps(patch))  # fmt: skip
    least_available, most_pending, job_states_without_pod, drained = len(NODES), 0, set(), set()
    seen: list[dict] = []  # the NodeSet each time its status or generation changed
    end = time.monotonic() + 150
    while time.monotonic() < end:
        obj = bed.plane.get_json("nodesets.slinky.slurm.net", "-n", NAMESPACE, f"slurm-worker-{POOL}")
        if not seen or _rollout_state(obj) != _rollout_state(seen[-1]):
            seen.append(obj)
        pods = bed.pods()
        names = {p["metadata"]["name"] for p in pods}
        least_available = min(least_available, sum(_available(p) for p in pods))
        shown = {n: bed.node(n) for n in NODES}
        pending = {m for s in shown.values() for m in PENDING.findall(s)}
        drained |= pending
        most_pending = max(most_pending, len(pending & names))
        if before[NODES[0]] not in names:
            job_states_without_pod.add(bed.cluster.job(job).state)
        replaced = len(pods) == len(NODES) and all(_available(p) and p["metadata"]["name"] not in before.values()
                                                   for p in pods)  # fmt: skip
        if replaced and not any("DRAIN" in s for s in shown.values()):
            break
        time.sleep(0.3)
    else:
        raise AssertionError(f"rolling update did not finish: {sorted(p['metadata']['name'] for p in bed.pods())}")
    assert least_available >= len(NODES) - 1, least_available
    assert most_pending == 1, most_pending
    assert drained == set(before.values()), drained  # every old pod's node was drained before it went
    # the job's node lost its pod only once the job was over: the job ran to its end
    assert job_states_without_pod == {"COMPLETED"}, job_states_without_pod
    status = wait_for(lambda: (s := bed.nodeset_status()).get("updatedReplicas") == len(NODES) and s, 120, "updated")
    wait_for(lambda: bed.nodeset_status().get("slurmIdle") == len(NODES), 120, f"slurmIdle in {status}")
    # the Argo CD health of every state the operator wrote: Progressing until it reports the new template
    # on every pod, all Ready, Healthy from then on
    done = bed.plane.get_json("nodesets.slinky.slurm.net", "-n", NAMESPACE, f"slurm-worker-{POOL}")
    got = [(_rollout_state(o), argocd_health(o)) for o in [*seen, done]]
    first_done = next(i for i, (state, _h) in enumerate(got) if state[1:] == (state[0], 2, 2, 2))
    assert first_done > 0 and all(h[0] == "Progressing" for _s, h in got[:first_done]), got
    assert any(h[1].startswith("rolling update in progress:") for _s, h in got[:first_done]), got
    healthy = ("Healthy", "2/2 slurmd pods ready, 2/2 on the current template")
    assert all(h == healthy for _s, h in got[first_done:]), got


def _patch_nodeset(bed, strategy: dict, revision: str | None = None) -> None:
    """Set the NodeSet's ``updateStrategy`` (merge patch) and, with ``revision``, change its pod template."""
    spec: dict = {"updateStrategy": strategy}
    if revision:
        spec["template"] = {"metadata": {"annotations": {"gpufleet.test/revision": revision}}}
    bed.plane.kubectl("patch", "nodesets.slinky.slurm.net", "-n", NAMESPACE, f"slurm-worker-{POOL}",
                      "--type=merge", "-p", json.dumps({"spec": spec}))  # fmt: skip


def _revisions(bed) -> dict[str, tuple[str, str]]:
    """node -> (pod name, pod revision) of the NodeSet's live pods."""
    return {p["spec"]["nodeName"]: (p["metadata"]["name"], p["metadata"]["labels"][REVISION_LABEL])
            for p in bed.pods() if "deletionTimestamp" not in p["metadata"]}  # fmt: skip


def _new_revision(bed, old: set[str]) -> str:
    """The NodeSet's revision once the operator has seen the change (not one of ``old``)."""
    gen = int(bed.plane.get_json("nodesets.slinky.slurm.net", "-n", NAMESPACE, f"slurm-worker-{POOL}")
              ["metadata"]["generation"])  # fmt: skip
    status = wait_for(lambda: (s := bed.nodeset_status()).get("observedGeneration", 0) >= gen
                      and s.get("nodeSetHash") not in old and s, 60, "the new revision")  # fmt: skip
    return status["nodeSetHash"]


def test_on_delete_replaces_a_pod_only_when_it_is_deleted(bed):
    before = _revisions(bed)
    _patch_nodeset(bed, {"type": "OnDelete", "rollingUpdate": None}, revision="3")
    new = _new_revision(bed, {rev for _, rev in before.values()})
    # the template changed, yet no pod goes and no Slurm node is drained for it
    end = time.monotonic() + 8
    while time.monotonic() < end:
        assert _revisions(bed) == before, _revisions(bed)
        assert not any("DRAIN" in bed.node(n) for n in NODES)
        time.sleep(0.5)
    bed.plane.kubectl("delete", "pod", "-n", NAMESPACE, before[NODES[1]][0], "--wait=false")
    now = wait_for(lambda: (r := _revisions(bed)).get(NODES[1], ("", ""))[1] == new and r, 60, "the replacement pod")
    assert now[NODES[0]] == before[NODES[0]], now  # the other pod stays at the old revision
    wait_for(lambda: bed.nodeset_status().get("updatedReplicas") == 1, 60, "updatedReplicas 1")


def _reservations(bed) -> list[dict]:
    return json.loads(bed.cluster.scontrol("--json", "show", "reservation"))["reservations"]


def test_scheduled_update_replaces_pods_inside_the_maint_reservation(bed):
    """``ScheduledUpdate`` as render/tenants/rollout.py writes an update window (``startTime`` RFC 3339 UTC,
    ``duration`` a Go duration, no flag): the operator makes a Slurm reservation with MAINT over [start,
    start + duration] on the NodeSet's nodes, and replaces the pods only once their nodes are in it."""
    # the operator makes the reservation on the nodes of the NodeSet's pods, once its status counts Slurm
    # nodes (resync)
    wait_for(bed.running_pods, 60, "the NodeSet's pods Running")
    wait_for(lambda: (s := bed.nodeset_status()).get("slurmIdle", 0) + s.get("slurmAllocated", 0), 120, "slurm counts")
    before = _revisions(bed)
    # the operator acts on its next NodeSet sync: a start far enough ahead that a loaded machine still gets
    # the reservation in before it (the operator never makes one for a window already open)
    start = int(time.time()) + 45
    _patch_nodeset(bed, _rendered_window(start, "2m"), revision="4")
    name = f"SlurmOperatorMaint-slurm-worker-{POOL}"
    res = wait_for(lambda: next((r for r in _reservations(bed) if r["name"] == name), None), 40, f"reservation {name}")
    assert time.time() < start, "the reservation came after its start"
    assert {"MAINT", "IGNORE_JOBS"} <= set(res["flags"]), res["flags"]
    assert res["start_time"]["number"] == start and res["end_time"]["number"] == start + 120, res
    assert res["node_list"] == f"{POOL}-[0-1]" and res["users"] == "slurm", res
    assert _revisions(bed) == before  # nothing replaced before the window opens
    first_gone = None
    new = _new_revision(bed, {rev for _, rev in before.values()})

    def replaced():
        nonlocal first_gone
        now = _revisions(bed)
        if first_gone is None and any(now.get(n) != before[n] for n in NODES):
            first_gone = time.time()
        return len(now) == len(NODES) and all(rev == new for _, rev in now.values())

    wait_for(replaced, 120, "the pods replaced in the window")
    assert start <= first_gone < start + 120, (start, first_gone)
    assert all(re.search(r"State=\S*\+MAINT", bed.node(n)) for n in NODES), [bed.node(n) for n in NODES]
    # back to the rendered strategy: the operator deletes its reservation
    rendered = bed.values["nodesets"][POOL]["updateStrategy"]
    _patch_nodeset(bed, {**rendered, "scheduledUpdate": None})
    wait_for(lambda: all(r["name"] != name for r in _reservations(bed)), 60, f"reservation {name} deleted")


def _rendered_window(start: int, duration: str) -> dict:
    """The ``updateStrategy`` render/tenants/rollout.py writes for the sample's research with this window."""
    fleet = load_fleet(REPO_ROOT / "inventories" / "sample")
    window = Rollout(max_unavailable_per_block=1, window=Window(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start)),
                                                                duration))  # fmt: skip
    strategy = rollout.update_strategy(dataclasses.replace(fleet, rollout=window), fleet.tenants["research"])
    assert strategy["type"] == "ScheduledUpdate", strategy
    return strategy


def _syncs(bed) -> int:
    return bed.operator.log.read_text(errors="replace").count('"msg":"Finished syncing NodeSet"')


def test_a_window_that_reaches_the_nodeset_after_its_start_is_never_reserved(bed):
    """Why review refuses a change that sets a window whose start has passed (daytwo/windows.py), on the
    real operator and Slurm 26.05: the rendered strategy of a window that opened 20 s ago gets no
    reservation however often the operator syncs the NodeSet, and no pod is replaced. The operator's way
    around that, the ``FORCE_START`` flag, is no way: slurmrestd refuses the reservation with 422 (its
    description: "FORCE_START flag requires a reoccuring reservation", for a start past or ahead alike),
    the operator logs it and nothing is replaced either; so the render sets no flag."""
    wait_for(bed.running_pods, 60, "the NodeSet's pods Running")
    before = _revisions(bed)
    name = f"SlurmOperatorMaint-slurm-worker-{POOL}"
    late = _rendered_window(int(time.time()) - 20, "3m")
    forced = {**late, "scheduledUpdate": {**late["scheduledUpdate"], "flags": ["FORCE_START"]}}
    for strategy, revision in ((late, "5"), (forced, "6")):
        synced = _syncs(bed)
        _patch_nodeset(bed, strategy, revision=revision)
        # the operator has synced the NodeSet three times since (its periodic resync included)
        wait_for(lambda s=synced: _syncs(bed) >= s + 3, 120, "three NodeSet syncs", detail=bed.operator.tail)
        assert all(r["name"] != name for r in _reservations(bed)), _reservations(bed)
        assert _revisions(bed) == before
    # the operator logs slurmrestd's error; its description (the same POST made by hand) is the one above
    refused = "with error=[Unprocessable Entity, Requested reservation is invalid]"
    assert bed.operator.logged(refused), bed.operator.tail()
    _patch_nodeset(bed, bed.values["nodesets"][POOL]["updateStrategy"])
    wait_for(lambda: len(_revisions(bed)) == len(NODES) and bed.running_pods(), 150, "the pods back to Running")


WEBHOOK_NS = "slinky-webhook-check"


@pytest.fixture(scope="module")
def webhook(bed, tmp_path_factory):
    port, health = free_ports(2)
    hook = SlinkyWebhook(tmp_path_factory.mktemp("webhook"), bed.plane.kubeconfig, port, health)
    try:
        hook.start()

        def ready() -> bool:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{health}/readyz", timeout=2) as r:
                    return r.status == 200
            except OSError:
                assert hook.proc.poll() is None, hook.log.read_text()
                return False

        wait_for(ready, 60, "the webhook ready")
        bed.plane.create_namespace(WEBHOOK_NS)
        _apply(bed.plane, [hook.configuration(WEBHOOK_NS)])
        yield hook
    finally:
        bed.plane.kubectl("delete", "validatingwebhookconfiguration", "slinky-bed-nodeset", "--ignore-not-found")
        hook.stop()


def _dry_run(bed, obj: dict):
    obj = json.loads(json.dumps(obj))
    obj["metadata"]["namespace"] = WEBHOOK_NS
    return bed.plane.kubectl("apply", "--dry-run=server", "-f", "-", input=json.dumps(obj), check=False)


def test_webhook_admits_the_rendered_nodeset_and_refuses_a_bad_one(bed, webhook):
    good = nodeset(bed.values, POOL)
    r = _dry_run(bed, good)
    assert r.returncode == 0, r.stderr
    bad = json.loads(json.dumps(good))
    bad["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = 0
    r = _dry_run(bed, bad)
    # the CRD schema takes any int-or-string here: the refusal is the webhook's
    assert r.returncode != 0
    assert 'admission webhook "nodeset-v1beta1.kb.io" denied the request' in r.stderr, r.stderr
    assert "maxUnavailable must be > 0, got 0" in r.stderr, r.stderr
    bad = json.loads(json.dumps(good))
    bad["spec"]["template"]["spec"]["hostname"] = "Not_A_Hostname-"
    r = _dry_run(bed, bad)
    assert r.returncode != 0 and "template.spec.hostname" in r.stderr, r.stderr
