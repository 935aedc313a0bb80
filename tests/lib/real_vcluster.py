"""One real vCluster (the ``vcluster`` binary built by ``tools/build.sh vcluster``) per tenant, run as
a process against a local host control plane, configured exactly as the vcluster chart configures it.

What is real: the vcluster chart of the pinned release, templated by the Go-built ``helm`` with the
tenant's rendered values (``gitops/.../tenants/<t>/vcluster/values.yaml``); every host object it
renders except the control-plane StatefulSet is applied to the host (ServiceAccount, Role/RoleBinding,
ClusterRole/ClusterRoleBinding, Services, the config Secret, ResourceQuota); ``vcluster start`` runs
the syncer and starts the virtual kube-apiserver and kube-controller-manager (the bed's binaries) with
the config Secret's ``config.yaml``; its host access is the chart's ServiceAccount (a token from the
TokenRequest API in a kubeconfig), so its RBAC is the chart's.

What differs from the chart's pod (no container runtime here):

* The process runs in its own network namespace (the virtual apiserver binds 127.0.0.1:6443 and the
  syncer :8443, fixed) and a private mount namespace whose root is a tmpfs with the host's /usr, /etc,
  /dev, /proc, /sys bound in, plus ``/binaries``, ``/data`` and ``/var/lib/vcluster`` (the paths the
  image has, ``pkg/constants``). The host apiserver is forwarded into the namespace on its own port
  (tools/netns-forward.py) and reached through ``KUBECONFIG`` (controller-runtime's ``GetConfig``
  reads it before the in-cluster files); ``NAMESPACE`` replaces the service-account namespace file.
  The downward-API environment of the chart's container (``POD_NAME``, ``POD_NAMESPACE``, ...) is
  set from the rendered StatefulSet.
* Backing store: the chart's default is the embedded database (kine + SQLite in the image). kine is
  not built here; ``/binaries/kine`` is a small stand-in (``kine_shim.py``) that runs the bed's etcd
  and serves it on the unix socket vCluster gives kine. Storage only: the API the syncer and the
  virtual apiserver use is the real one.
* Pods: the host copies of pods are scheduled by the host's real kube-scheduler and run by KWOK.
* Reached from outside: the syncer's port 8443 in the namespace is forwarded to a free port on the
  caller's loopback (``port``), as the chart's Service ``<release>.vc-<tenant>:443`` would route to
  the pod; the serving certificate is vCluster's own (it covers the Service names).
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import yaml
from controlplane import KWOK_STAGES, LocalControlPlane  # tests/integration/kube, on the callers' path
from daemons import Daemon, stop_all

from ansible_collections.gpufleet.core.plugins.module_utils.versions import CHARTS

REPO_ROOT = Path(__file__).resolve().parents[2]
BIN_DIR = Path(os.environ.get("GPUFLEET_BIN", REPO_ROOT / ".build" / "bin"))
# the chart of the pinned release (tools/build.sh vcluster puts it here when its source has chart/)
CHART = Path(os.environ.get("GPUFLEET_VCLUSTER_CHART", REPO_ROOT / ".build" / "share" / "vcluster-chart"))
FORWARD = REPO_ROOT / "tools" / "netns-forward.py"
SHIM = Path(__file__).resolve().parent / "kine_shim.py"
CONTROL_PLANE_KINDS = {"StatefulSet", "Deployment"}  # the chart's pod: run as a process instead
VERSION = CHARTS["vcluster"]["version"]  # the release tools/build.sh vcluster builds and the bed deploys

MOUNT_SCRIPT = r"""
set -eu
R="$STATE/root"
mount -t tmpfs gpufleet-vc "$R"
for d in usr etc; do mkdir -p "$R/$d"; mount --rbind "/$d" "$R/$d"; done
for d in bin sbin lib lib64; do
  if [ -L "/$d" ]; then ln -s "$(readlink "/$d")" "$R/$d"
  elif [ -d "/$d" ]; then mkdir -p "$R/$d"; mount --rbind "/$d" "$R/$d"; fi
done
for d in dev proc sys; do mkdir -p "$R/$d"; mount --rbind "/$d" "$R/$d"; done
mkdir -p "$R/tmp" "$R/binaries" "$R/data" "$R/var/lib/vcluster" "$R/state"
mount --bind "$STATE/tmp" "$R/tmp"
mount --bind "$STATE/binaries" "$R/binaries"
mount --bind "$STATE/data" "$R/data"
mount --bind "$STATE/config" "$R/var/lib/vcluster"
mount --bind "$STATE" "$R/state"
cd "$R"
exec chroot "$R" /binaries/vcluster start --config /var/lib/vcluster/config.yaml
"""


class VClusterError(RuntimeError):
    pass


SYNCED_OWNERS = '(.metadata.annotations."vcluster.loft.sh/owner-references" // "[]") | fromjson | .[].kind'
NOT_READY = "gpufleet.io/test-not-ready"  # a Running pod annotated so is kept not Ready (stage pod-not-ready)
READY_CONDITIONS = """{{ $now := Now }}
conditions:
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: Initialized
- lastTransitionTime: {{ $now | Quote }}
  status: "READY"
  type: Ready
- lastTransitionTime: {{ $now | Quote }}
  status: "READY"
  type: ContainersReady
{{ range .spec.readinessGates }}
- lastTransitionTime: {{ $now | Quote }}
  status: "READY"
  type: {{ .conditionType | Quote }}
{{ end }}
"""
READY_AGAIN = READY_CONDITIONS.replace("READY", "True")
NOT_READY_NOW = READY_CONDITIONS.replace("READY", "False")


def kubelet_like_stages(src: Path, dst: Path) -> Path:
    """KWOK's upstream stages plus two a kubelet makes unnecessary, for the pods vCluster syncs:

    * ``pod-ready-again``: a Running pod whose Ready condition is not True gets it back. vCluster
      copies pod conditions both ways (``pods/translate/diff.go``); when its copy of the virtual
      conditions races KWOK's one-shot ``pod-ready``, the host pod is left Running without Ready,
      which a kubelet would report again on its next status sync.
    * ``pod-complete-synced``: ``pod-complete`` for pods whose owner is a Job by vCluster's
      ``vcluster.loft.sh/owner-references`` annotation (the host copy's ownerReference is the
      vCluster's Service), where a kubelet would run the container to completion.

    And one a test uses to stand for a pod whose readiness probe fails (a crash loop, a daemon that
    never comes up): ``pod-not-ready`` sets Ready False on a Running pod annotated ``NOT_READY``
    (vCluster copies the annotation from the virtual pod to its host copy), which ``pod-ready-again``
    leaves alone.
    """
    docs = [d for d in yaml.safe_load_all(src.read_text()) if d]
    by_name = {d["metadata"]["name"]: d for d in docs}
    ready = copy.deepcopy(by_name["pod-ready"])
    ready["metadata"]["name"] = "pod-ready-again"
    for e in ready["spec"]["selector"]["matchExpressions"]:
        if e["key"] == ".status.phase":
            e["values"] = ["Running"]
    ready["spec"]["next"] = {"statusTemplate": READY_AGAIN}
    not_ready = copy.deepcopy(ready)
    not_ready["metadata"]["name"] = "pod-not-ready"
    not_ready["spec"]["next"] = {"statusTemplate": NOT_READY_NOW}
    marked = f'.metadata.annotations."{NOT_READY}"'
    ready["spec"]["selector"]["matchExpressions"].append({"key": marked, "operator": "DoesNotExist"})
    for e in not_ready["spec"]["selector"]["matchExpressions"]:
        if e["key"].startswith(".status.conditions"):
            e["operator"] = "In"
    not_ready["spec"]["selector"]["matchExpressions"].append({"key": marked, "operator": "In", "values": ["true"]})
    complete = copy.deepcopy(by_name["pod-complete"])
    complete["metadata"]["name"] = "pod-complete-synced"
    for e in complete["spec"]["selector"]["matchExpressions"]:
        if e["key"] == ".metadata.ownerReferences.[].kind":
            e["key"] = SYNCED_OWNERS
    dst.write_text(yaml.safe_dump_all([*docs, ready, not_ready, complete], sort_keys=False))
    return dst


class FenceHost(LocalControlPlane):
    """The host control plane the vClusters sync into: KWOK with ``kubelet_like_stages``."""

    def _env(self) -> dict[str, str]:
        env = super()._env()
        if self.state_dir is not None:
            stages = self.state_dir.parent / f"{self.state_dir.name}-kwok-stages.yaml"
            env["GPUFLEET_KWOK_STAGES"] = str(kubelet_like_stages(KWOK_STAGES, stages))
        return env


def translated(name: str, namespace: str, vcluster: str) -> str:
    """The syncer's host name for a namespaced object (``pkg/util/translate``); names past 63
    characters are hashed by the syncer, which the tests' short names never reach."""
    out = f"{name}-x-{namespace}-x-{vcluster}"
    if len(out) > 63:
        raise ValueError(f"{out}: past 63 characters the syncer hashes the name")
    return out


def fence_nodes(nodes: list[dict[str, Any]], inventory: Path, lock: Path, cluster: str) -> list[dict[str, Any]]:
    """The snapshot's Nodes with the pool labels and taints the apply step sets (pools.lock.yaml)."""
    from ansible_collections.gpufleet.core.plugins.module_utils.model import fence
    from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
    from ansible_collections.gpufleet.core.plugins.module_utils.pools.lock import parse_lock

    fleet = load_fleet(inventory)
    pools = parse_lock(lock.read_text(), cluster=cluster)
    for node in nodes:
        pool = pools.get(node["metadata"]["name"])
        if pool is not None:
            node["metadata"].setdefault("labels", {}).update(fence.node_labels(fleet.pools[pool]))
            node.setdefault("spec", {})["taints"] = fence.node_taints(fleet.pools[pool])
    return nodes


def helm_template(release: str, namespace: str, values: Path) -> list[dict[str, Any]]:
    p = subprocess.run(
        [str(BIN_DIR / "helm"), "template", release, str(CHART), "-n", namespace, "-f", str(values)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if p.returncode != 0:
        raise VClusterError(f"helm template {CHART} -f {values}: {p.stderr}")
    return [d for d in yaml.safe_load_all(p.stdout) if d]


def container_env(statefulset: dict[str, Any], pod_name: str, namespace: str) -> dict[str, str]:
    """The syncer container's environment, the downward API filled in as the kubelet would."""
    spec = statefulset["spec"]["template"]["spec"]
    (syncer,) = [c for c in spec["containers"] if c["name"] == "syncer"]
    fields = {
        "metadata.name": pod_name,
        "metadata.namespace": namespace,
        "status.podIP": "127.0.0.1",
        "status.hostIP": "127.0.0.1",
        "spec.nodeName": "localhost",
    }
    env = {}
    for e in syncer.get("env") or []:
        if "value" in e:
            env[e["name"]] = str(e["value"])
        elif "fieldRef" in (e.get("valueFrom") or {}):
            env[e["name"]] = fields[e["valueFrom"]["fieldRef"]["fieldPath"]]
    return env


class RealVCluster:
    def __init__(self, tenant: str, values: Path, host_kubeconfig: Path, state: Path) -> None:
        self.tenant = tenant
        self.release = tenant
        self.namespace = f"vc-{tenant}"
        self.values = values
        self.host_kubeconfig = host_kubeconfig
        self.state = state.resolve()
        # one namespace per state directory: runs with their own base temp dirs never share one
        self.netns = f"gpfvc-{hashlib.sha256(str(self.state).encode()).hexdigest()[:8]}-{tenant}"
        self.procs: list[Daemon] = []
        self.objects: list[dict[str, Any]] = []
        self.port = 0  # the syncer's 8443 on the caller's loopback (``expose``)

    # ---- host side -------------------------------------------------------------------------
    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run_kubectl([], self.host_kubeconfig, "kubectl", args, input, check)

    def apply_chart(self) -> dict[str, Any]:
        """Template the chart, apply what it renders for the host but the pod; return the StatefulSet."""
        self.objects = helm_template(self.release, self.namespace, self.values)
        host = [o for o in self.objects if o["kind"] not in CONTROL_PLANE_KINDS]
        for o in host:
            if o["kind"] not in {"ClusterRole", "ClusterRoleBinding", "Namespace"}:
                o["metadata"].setdefault("namespace", self.namespace)
        self.kubectl("create", "namespace", self.namespace, check=False)
        items = json.dumps({"apiVersion": "v1", "kind": "List", "items": host})
        self.kubectl("apply", "--server-side", "-f", "-", input=items)
        (sts,) = [o for o in self.objects if o["kind"] == "StatefulSet"]
        return sts

    def config_yaml(self) -> bytes:
        name = f"vc-config-{self.release}"
        (secret,) = [o for o in self.objects if o["kind"] == "Secret" and o["metadata"]["name"] == name]
        data = secret.get("data") or {}
        if "config.yaml" in data:
            return base64.b64decode(data["config.yaml"])
        return str(secret["stringData"]["config.yaml"]).encode()

    def service_account_kubeconfig(self, sts: dict[str, Any], port: int) -> Path:
        sa = sts["spec"]["template"]["spec"]["serviceAccountName"]
        token = self.kubectl("create", "token", sa, "-n", self.namespace, "--duration", "24h").stdout.strip()
        admin = yaml.safe_load(self.host_kubeconfig.read_text())
        ca = admin["clusters"][0]["cluster"]["certificate-authority-data"]
        cfg = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": "host", "cluster": {"server": f"https://127.0.0.1:{port}", "certificate-authority-data": ca}}
            ],
            "users": [{"name": sa, "user": {"token": token}}],
            "contexts": [{"name": "host", "context": {"cluster": "host", "user": sa, "namespace": self.namespace}}],
            "current-context": "host",
        }
        path = self.state / "config" / "host-kubeconfig"
        path.write_text(yaml.safe_dump(cfg))
        path.chmod(0o600)
        return path

    # ---- process ---------------------------------------------------------------------------
    def start(self, timeout: float = 600) -> None:
        for d in ("root", "tmp", "binaries", "data", "config", "logs"):
            (self.state / d).mkdir(parents=True, exist_ok=True)
        for name in ("vcluster", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "helm", "etcd"):
            shutil.copy2(BIN_DIR / name, self.state / "binaries" / name)
        kine = self.state / "binaries" / "kine"
        # the venv interpreter is not found where vCluster runs kine, the system python3 is (tests/lib has no shebangs)
        kine.write_text("#!/usr/bin/env python3\n" + SHIM.read_text())
        kine.chmod(0o755)
        sts = self.apply_chart()
        (self.state / "config" / "config.yaml").write_bytes(self.config_yaml())
        server = yaml.safe_load(self.host_kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        port = int(server.rsplit(":", 1)[1])
        self.service_account_kubeconfig(sts, port)
        subprocess.run(["ip", "netns", "del", self.netns], capture_output=True, check=False)
        subprocess.run(["ip", "netns", "add", self.netns], check=True)
        subprocess.run(["ip", "netns", "exec", self.netns, "ip", "link", "set", "lo", "up"], check=True)
        forward = ["python3", str(FORWARD), f"/run/netns/{self.netns}", f"{port}={port}"]
        # listening before the syncer starts: it does not retry its first call to the apiserver
        fwd = self._spawn("forward", forward, netns=False)
        fwd.wait_logged("ready", 30, f"vCluster {self.tenant}: the apiserver forward", VClusterError)
        env = {
            "PATH": "/binaries:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": "/tmp",
            "STATE": str(self.state),
            **container_env(sts, f"{self.release}-0", self.namespace),
            "KUBECONFIG": "/var/lib/vcluster/host-kubeconfig",
            "NAMESPACE": self.namespace,
        }
        self._spawn(
            "vcluster",
            ["unshare", "-m", "--propagation", "private", "bash", "-c", MOUNT_SCRIPT],
            netns=True,
            env=env,
        )
        self.wait_ready(timeout)
        self.expose()

    def expose(self) -> None:
        """Forward a free port on this process's loopback to the syncer's 8443 in the namespace: the
        forwarder starts inside the namespace, listens in ours and connects in its own."""
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        here = f"/proc/{os.getpid()}/ns/net"
        self._spawn("expose", ["python3", str(FORWARD), here, f"{self.port}=8443"], netns=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.2)
        raise VClusterError(f"vCluster {self.tenant}: forward of 8443 to {self.port} did not open")

    def syncer_pid(self) -> int:
        """The running ``vcluster start`` process of this tenant (the one whose root holds our state)."""
        for proc in Path("/proc").iterdir():
            try:
                argv = (proc / "cmdline").read_bytes().split(b"\0")
                if argv[:2] != [b"/binaries/vcluster", b"start"]:
                    continue
                if os.path.samefile(proc / "root" / "state", self.state):
                    return int(proc.name)
            except OSError:
                continue
        raise VClusterError(f"no running vcluster syncer for {self.tenant}")

    def syncer_build(self) -> tuple[str, str]:
        """What the running syncer process executes: the Go main package of its executable (from the
        build info Go embeds) and the build stamp of the identical binary tools/build.sh installed
        (``vcluster <release>+<source sha> ...``). The binary's own ``version`` prints ``dev`` (the
        build leaves SyncerVersion unset, which keeps its telemetry off)."""
        exe = Path(f"/proc/{self.syncer_pid()}/exe")
        info = subprocess.run(["go", "version", "-m", str(exe)], capture_output=True, text=True, check=True).stdout
        main = next(line.split()[1] for line in info.splitlines() if line.strip().startswith("path"))
        built = BIN_DIR / "vcluster"
        if exe.read_bytes() != built.read_bytes():
            raise VClusterError(f"the syncer of {self.tenant} does not run {built}")
        return main, (BIN_DIR / ".stamps" / "vcluster").read_text().strip()

    def _spawn(self, name: str, cmd: list[str], netns: bool, env: dict[str, str] | None = None) -> Daemon:
        if netns:
            cmd = ["ip", "netns", "exec", self.netns, *cmd]
        self.procs.append(Daemon(cmd, self.state / "logs" / f"{name}.log", env=env))
        return self.procs[-1]

    def virtual_kubeconfig(self) -> Path:
        """The kubeconfig vCluster exported (Secret ``vc-<release>`` in the host namespace), pointed at
        the syncer's own port inside the namespace."""
        p = self.kubectl("get", "secret", f"vc-{self.release}", "-n", self.namespace, "-o", "json", check=False)
        if p.returncode != 0:
            raise VClusterError(f"no exported kubeconfig yet: {p.stderr.strip()}")
        cfg = yaml.safe_load(base64.b64decode(json.loads(p.stdout)["data"]["config"]))
        for c in cfg["clusters"]:
            c["cluster"]["server"] = "https://127.0.0.1:8443"
            c["cluster"]["tls-server-name"] = "localhost"
        path = self.state / "virtual-kubeconfig"
        path.write_text(yaml.safe_dump(cfg))
        return path

    def vkubectl(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        """kubectl against the virtual cluster, from inside its network namespace."""
        netns = ["ip", "netns", "exec", self.netns]
        return run_kubectl(netns, self.state / "virtual-kubeconfig", "vcluster kubectl", args, input, check)

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in self.procs):
                break
            try:
                self.virtual_kubeconfig()
                p = self.vkubectl("get", "--raw", "/readyz", check=False)
                if p.returncode == 0 and p.stdout.strip() == "ok":
                    return
                last = p.stderr.strip()
            except VClusterError as exc:
                last = str(exc)
            time.sleep(2)
        raise VClusterError(f"vCluster {self.tenant} not ready ({last}); log tail:\n{self.log_tail()}")

    def log_tail(self, lines: int = 60) -> str:
        f = self.state / "logs" / "vcluster.log"
        return "\n".join(f.read_text(errors="replace").splitlines()[-lines:]) if f.exists() else ""

    def stop(self) -> None:
        stop_all(self.procs, grace=10, kill_wait=10)
        subprocess.run(["ip", "netns", "del", self.netns], capture_output=True, check=False)


def run_kubectl(
    prefix: list[str], kubeconfig: Path, what: str, args: tuple[str, ...], input: str | None, check: bool
) -> subprocess.CompletedProcess[str]:
    """The bed's kubectl against ``kubeconfig`` (run under ``prefix``, e.g. inside the netns)."""
    p = subprocess.run(
        [*prefix, str(BIN_DIR / "kubectl"), "--kubeconfig", str(kubeconfig), *args],
        input=input,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if check and p.returncode != 0:
        raise VClusterError(f"{what} {' '.join(args)}: {p.stderr}")
    return p
