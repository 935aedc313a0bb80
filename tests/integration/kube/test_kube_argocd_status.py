"""gpufleet.core.argocd_status against a real kube-apiserver holding Argo CD Applications.

The Argo CD CRDs are installed into the local apiserver; the test creates an app-of-apps tree and
then writes each Application's ``status`` with a patch of the object, which is how Argo CD's
application controller publishes sync and health (the Application CRD has no status subresource).
The test's patches stand in for that controller: the real controller syncing the rendered tree runs
in the Argo CD test bed (tests that start argocd-application-controller); here the point is the
module reading, waiting and reporting, driven by states the test chooses, including failures a
healthy test bed would never show. The module runs through ``ansible-playbook`` (real).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from controlplane import REPO_ROOT, LocalControlPlane
from playbook_runner import ansible_playbook, playbook_env, write_play

sys.path.insert(0, str(REPO_ROOT / "tests" / "lib"))
from argocd_apps import application, child, resource, status

pytestmark = pytest.mark.kube

NS = "argocd-status"
ROOT = "east-root"
CHILDREN = ("east-cilium", "east-gpu-operator", "east-tenants")
GRANDCHILDREN = ("east-t1-project", "east-t1-slurm")
WAVES = {"east-cilium": 10, "east-gpu-operator": 30, "east-tenants": 50, "east-t1-project": 0, "east-t1-slurm": 6}
DEGRADED_MSG = "Deployment does not have minimum availability."
REFUSED_MSG = (
    "application destination server 'https://kubernetes.default.svc' and namespace 'kube-system' "
    "do not match any of the allowed destinations in project 't1'"
)


def healthy_status(name: str) -> dict:
    kids = {ROOT: CHILDREN, "east-tenants": GRANDCHILDREN}.get(name, ())
    res = [child(k, NS) for k in kids] or [resource("ConfigMap", f"{name}-cfg", "kube-system")]
    return status(resources=res)


def degraded_status() -> dict:
    res = [
        resource("ServiceAccount", "gpu-operator", "gpu-operator"),
        resource("Deployment", "gpu-operator", "gpu-operator", group="apps", health="Degraded", message=DEGRADED_MSG),
    ]
    return status("Synced", "Degraded", resources=res)


def refused_status() -> dict:
    return status("Unknown", "Unknown", phase=None, conditions=[{"type": "InvalidSpecError", "message": REFUSED_MSG}])


@pytest.fixture(scope="module")
def argo(kube_cluster: LocalControlPlane, upstream_crd_files, tmp_path_factory) -> dict:
    crds = [p for p in upstream_crd_files if p.parent.name == "argocd"]
    assert {p.name for p in crds} >= {"application-crd.yaml", "appproject-crd.yaml"}
    install_crds(kube_cluster, crds)
    kube_cluster.create_namespace(NS)
    apps = [application(n, namespace=NS, wave=WAVES.get(n)) for n in (ROOT, *CHILDREN, *GRANDCHILDREN)]
    kube_cluster.kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": apps}))
    work = tmp_path_factory.mktemp("argocd-status")
    (work / "hosts.yml").write_text("all:\n  hosts:\n    localhost:\n      ansible_connection: local\n")
    return {"kube": kube_cluster, "dir": work}


def install_crds(kube: LocalControlPlane, files: list[Path], timeout: float = 180) -> None:
    """Server-side apply the CRDs and poll until Established (``kubectl wait`` errors on a CRD whose
    status has no conditions yet, which a fresh one briefly has)."""
    args = ["apply", "--server-side", "--force-conflicts", "--field-manager=gpufleet-tests", "-o", "name"]
    for f in files:
        args += ["-f", str(f)]
    names = [n.split("/", 1)[1] for n in kube.kubectl(*args, timeout=timeout).stdout.split()]
    deadline = time.monotonic() + timeout
    pending = set(names)
    while pending and time.monotonic() < deadline:
        for name in sorted(pending):
            conds = (kube.get_json("crd", name).get("status") or {}).get("conditions") or []
            if any(c["type"] == "Established" and c["status"] == "True" for c in conds):
                pending.discard(name)
        time.sleep(0.2)
    assert not pending, f"CRDs not Established after {timeout}s: {sorted(pending)}"


def set_status(kube: LocalControlPlane, name: str, st: dict) -> None:
    """Replace .status of one Application, as the application controller does."""
    patch = [{"op": "add", "path": "/status", "value": st}]
    kube.kubectl("patch", "application", name, "-n", NS, "--type", "json", "-p", json.dumps(patch))


def all_healthy(kube: LocalControlPlane) -> None:
    for name in (ROOT, *CHILDREN, *GRANDCHILDREN):
        set_status(kube, name, healthy_status(name))


def playbook(argo: dict, args: dict, *flags: str) -> tuple[list[str], dict, dict]:
    """Command, environment and the module args of a one-task play (written next to the inventory)."""
    task_args = {"namespace": NS, "kubeconfig": str(argo["kube"].kubeconfig), **args}
    play = argo["dir"] / f"play-{abs(hash(json.dumps(task_args, sort_keys=True)))}.yml"
    write_play(play, [{"name": "argocd_status", "gpufleet.core.argocd_status": task_args}], name="status")
    return [ansible_playbook(), "-i", str(argo["dir"] / "hosts.yml"), str(play), *flags], playbook_env(), task_args


def parse(proc_stdout: str) -> dict:
    return json.loads(proc_stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]


def run_module(argo: dict, args: dict, *flags: str, ok: bool = True) -> dict:
    cmd, env, _ = playbook(argo, args, *flags)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, check=False)
    assert (proc.returncode == 0) is ok, proc.stdout[-4000:] + proc.stderr[-4000:]
    return parse(proc.stdout)


def resource_versions(kube: LocalControlPlane) -> dict[str, str]:
    items = kube.get_json("applications", "-n", NS)["items"]
    return {i["metadata"]["name"]: i["metadata"]["resourceVersion"] for i in items}


def test_table_and_failure_name_the_unhealthy_apps_and_why(argo):
    kube = argo["kube"]
    all_healthy(kube)
    set_status(kube, "east-gpu-operator", degraded_status())
    set_status(kube, "east-t1-project", refused_status())
    before = resource_versions(kube)

    r = run_module(argo, {"root": ROOT}, ok=False)
    assert r["failed"] is True and r["ready"] is False
    lines = r["msg"].splitlines()
    assert lines[0] == "2 of 6 Argo CD Applications not Synced/Healthy:"
    assert lines[1] == (f"  - {NS}/east-t1-project: Unknown/Unknown: InvalidSpecError: {REFUSED_MSG}")
    assert lines[2] == (
        f"  - {NS}/east-gpu-operator: Synced/Degraded (Succeeded): "
        f"Deployment/gpu-operator/gpu-operator Degraded: {DEGRADED_MSG}"
    )
    # the whole tree, children of children included; root first, then by sync wave
    assert [a["name"] for a in r["apps"]] == [
        ROOT,
        "east-t1-project",
        "east-t1-slurm",
        "east-cilium",
        "east-gpu-operator",
        "east-tenants",
    ]
    assert {a["name"]: a["parent"] for a in r["apps"]}["east-t1-slurm"] == "east-tenants"
    assert r["summary"] == {"total": 6, "ready": 4, "not_ready": ["east-t1-project", "east-gpu-operator"]}
    table = {line.split()[0]: line for line in r["table"][1:]}
    assert r["table"][0].split() == ["APP", "WAVE", "SYNC", "HEALTH", "OPERATION", "REASON"]
    assert table["east-cilium"].split() == ["east-cilium", "10", "Synced", "Healthy", "Succeeded"]
    assert table["east-gpu-operator"].split()[:5] == ["east-gpu-operator", "30", "Synced", "Degraded", "Succeeded"]
    assert table["east-gpu-operator"].endswith(DEGRADED_MSG)
    assert table["east-t1-project"].split()[:5] == ["east-t1-project", "0", "Unknown", "Unknown", "-"]

    # reporting without failing; and selecting by label/name instead of the tree
    r = run_module(argo, {"root": ROOT, "fail_on_not_ready": False})
    assert r["ready"] is False and r["changed"] is False and len(r["table"]) == 7
    r = run_module(argo, {"names": ["east-cilium", "east-missing"]}, ok=False)
    assert "east-missing: NotFound/Missing: the Application does not exist" in r["msg"]
    assert resource_versions(kube) == before  # reading changed nothing


def test_check_mode_only_reads(argo):
    kube = argo["kube"]
    all_healthy(kube)
    before = resource_versions(kube)
    r = run_module(argo, {"root": ROOT, "wait": True, "wait_timeout": 30, "wait_interval": 1}, "--check")
    assert r["ready"] is True and r["changed"] is False and r["summary"]["ready"] == 6
    assert resource_versions(kube) == before


def _module_started(proc: subprocess.Popen, timeout: float = 120) -> None:
    """Wait until ansible-playbook runs the module (its AnsiballZ process exists under ours)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for p in Path("/proc").iterdir():
            if not p.name.isdigit():
                continue
            try:
                cmd = (p / "cmdline").read_bytes()
            except OSError:
                continue
            if b"AnsiballZ_argocd_status" in cmd and str(proc.pid).encode() in _ancestors(p.name):
                return
        if proc.poll() is not None:
            raise AssertionError(f"ansible-playbook ended early: {proc.communicate()}")
        time.sleep(0.2)
    raise AssertionError("the module did not start")


def _ancestors(pid: str) -> bytes:
    chain = []
    while pid not in ("0", "1"):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        pid = stat.rsplit(")", 1)[1].split()[1]
        chain.append(pid)
    return " ".join(chain).encode()


def _lists_after(kube: LocalControlPlane, proc: subprocess.Popen, seen: int, timeout: float = 120) -> int:
    """Wait until the apiserver has answered two more Application LISTs than ``seen`` (the module's
    polls; nothing else lists Applications here) and return the new count."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = kube.requests_served("applications", "LIST")
        if now >= seen + 2:
            return now
        if proc.poll() is not None:
            raise AssertionError(f"ansible-playbook ended early: {proc.communicate()}")
        time.sleep(0.2)
    raise AssertionError(f"the module made no new Application LIST in {timeout}s")


def test_wait_succeeds_when_the_apps_turn_healthy_mid_wait(argo):
    kube = argo["kube"]
    all_healthy(kube)
    set_status(kube, "east-gpu-operator", degraded_status())
    running = status("OutOfSync", "Missing", phase="Running", op_message="waiting for completion of hook batch/Job/x")
    set_status(kube, "east-t1-slurm", running)
    cmd, env, _ = playbook(argo, {"root": ROOT, "wait": True, "wait_timeout": 240, "wait_interval": 1})
    before = kube.requests_served("applications", "LIST")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        _module_started(proc)
        # each state change follows two LISTs the module made after the previous one (the second
        # began after the change, whatever the machine's speed), never a wall-clock sleep
        _lists_after(kube, proc, before)
        set_status(kube, "east-t1-slurm", healthy_status("east-t1-slurm"))
        _lists_after(kube, proc, kube.requests_served("applications", "LIST"))
        set_status(kube, "east-gpu-operator", healthy_status("east-gpu-operator"))
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, out[-4000:] + err[-4000:]
    r = parse(out)
    assert r["ready"] is True and r["waited"] >= 3
    flips = [line for line in r["progress"] if "->" in line and "new ->" not in line]
    assert [line.split("] ", 1)[1] for line in flips] == [
        "east-t1-slurm: OutOfSync/Missing/Running -> Synced/Healthy/Succeeded",
        "east-gpu-operator: Synced/Degraded/Succeeded -> Synced/Healthy/Succeeded",
    ]
    assert sum("new ->" in line for line in r["progress"]) == 6
    assert all(line.split()[3] == "Healthy" for line in r["table"][1:])


def test_wait_times_out_and_says_which_apps(argo):
    kube = argo["kube"]
    all_healthy(kube)
    set_status(
        kube,
        "east-cilium",
        status("OutOfSync", "Healthy", resources=[resource("ConfigMap", "c", "kube-system", status="OutOfSync")]),
    )
    r = run_module(argo, {"root": ROOT, "wait": True, "wait_timeout": 3, "wait_interval": 1}, ok=False)
    assert r["msg"].splitlines() == [
        "1 of 6 Argo CD Applications not Synced/Healthy after waiting 3s:",
        f"  - {NS}/east-cilium: OutOfSync/Healthy (Succeeded): ConfigMap/kube-system/c OutOfSync",
    ]
    assert r["waited"] >= 3
    # a root that never appears: the error says so after the timeout
    r = run_module(argo, {"root": "no-such-root", "wait": True, "wait_timeout": 2, "wait_interval": 1}, ok=False)
    assert r["msg"] == f"root Application {NS}/no-such-root not found (apply the root app first) (waited 2s)"


def run_role(argo: dict, role_vars: dict, *flags: str, ok: bool = True) -> list[dict]:
    """The argocd role's ``status`` entry point (what apply runs last), through ansible-playbook."""
    cmd, env, _ = playbook(argo, {})
    play = Path(cmd[3])
    task = {
        "name": "status of the app tree",
        "ansible.builtin.include_role": {"name": "gpufleet.core.argocd", "tasks_from": "status"},
        "vars": {"argocd_namespace": NS, "cluster_access_kubeconfig": str(argo["kube"].kubeconfig), **role_vars},
    }
    play = play.with_name(f"role-{abs(hash(json.dumps(role_vars, sort_keys=True)))}.yml")
    play.write_text(yaml.safe_dump([{"name": "status", "hosts": "localhost", "gather_facts": False, "tasks": [task]}]))
    cmd[3] = str(play)
    proc = subprocess.run([*cmd, *flags], capture_output=True, text=True, env=env, timeout=300, check=False)
    assert (proc.returncode == 0) is ok, proc.stdout[-4000:] + proc.stderr[-4000:]
    tasks = json.loads(proc.stdout)["plays"][0]["tasks"]
    # included tasks are named "<role> : <task>"
    return [{**t["hosts"]["localhost"], "name": t["task"]["name"].split(" : ", 1)[-1]} for t in tasks]


def test_apply_status_step_prints_the_table_and_fails_naming_the_apps(argo):
    kube = argo["kube"]
    all_healthy(kube)
    set_status(kube, "east-gpu-operator", degraded_status())
    results = run_role(
        argo, {"argocd_status_root": ROOT, "argocd_status_wait_timeout": 2, "argocd_status_wait_interval": 1}, ok=False
    )
    by_name = {r["name"]: r for r in results}
    table = by_name["Show the Argo CD Applications"]["msg"]
    assert table[0].split() == ["APP", "WAVE", "SYNC", "HEALTH", "OPERATION", "REASON"] and len(table) == 7
    failed = by_name["Fail when Applications are not Synced/Healthy"]
    assert failed["failed"] is True
    assert failed["msg"][0].startswith("1 of 6 Argo CD Applications not Synced/Healthy after waiting")
    assert failed["msg"][1:] == [
        f"  - {NS}/east-gpu-operator: Synced/Degraded (Succeeded): "
        f"Deployment/gpu-operator/gpu-operator Degraded: {DEGRADED_MSG}"
    ]
    # switched off: the table, no wait, no failure; in check mode: only a report, even for a missing root
    results = run_role(argo, {"argocd_status_root": ROOT, "argocd_status_wait": False})
    assert "Fail when Applications are not Synced/Healthy" not in {r["name"] for r in results if not r.get("skipped")}
    results = run_role(argo, {"argocd_status_root": "not-applied-yet"}, "--check")
    shown = next(r for r in results if r["name"] == "Show the Argo CD Applications")["msg"]
    assert shown == [f"root Application {NS}/not-applied-yet not found (apply the root app first)"]
