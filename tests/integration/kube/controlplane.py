"""A real local Kubernetes control plane for integration tests.

Thin Python driver over ``tools/cluster.sh`` (etcd, kube-apiserver,
kube-scheduler, kube-controller-manager and kwok built by ``tools/build.sh``
into ``.build/bin``). Nodes are KWOK fake nodes created from a nodes snapshot
(a Kubernetes ``kind: List`` of ``v1 Node`` objects).
"""

from __future__ import annotations

import atexit
import copy
import json
import os
import subprocess
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml
from lead_conftest import lead_conftest

_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
REPO_ROOT = Path(__file__).resolve().parents[3]
BIN_DIR = Path(os.environ.get("GPUFLEET_BIN", REPO_ROOT / ".build" / "bin"))
KWOK_STAGES = Path(os.environ.get("GPUFLEET_KWOK_STAGES", REPO_ROOT / ".build" / "share" / "kwok" / "stages.yaml"))
CLUSTER_SH = REPO_ROOT / "tools" / "cluster.sh"
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
REQUIRED_BINARIES = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
    "kubectl",
)
_NODE_STATUS_KEEP = ("capacity", "allocatable")
_METADATA_DROP = (
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "managedFields",
    "generation",
    "selfLink",
    "ownerReferences",
    "finalizers",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)


class ControlPlaneError(RuntimeError):
    """The local control plane could not be started, used or stopped."""


shared_test_helpers = lead_conftest  # the kube tests' name for it


def require_control_plane_tools() -> None:
    """Skip (locally) or fail (CI=true) unless every tool the cluster needs exists."""
    helpers = shared_test_helpers()
    for name in REQUIRED_BINARIES:
        helpers.require_path(BIN_DIR / name, f"{name} for the local control plane; build it with tools/build.sh")
    helpers.require_path(KWOK_STAGES, "kwok stages; build with tools/build.sh kwok")
    for name in ("openssl", "curl", "python3", "ps"):
        helpers.require_tool(name, "used by tools/cluster.sh")


def missing_binaries(bin_dir: Path = BIN_DIR) -> list[str]:
    return [b for b in REQUIRED_BINARIES if not os.access(bin_dir / b, os.X_OK)]


def load_node_snapshot(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read a nodes snapshot (``kind: List`` of Nodes, or one Node, or a YAML stream)."""
    p = Path(path)
    try:
        docs = [d for d in yaml.load_all(p.read_text(encoding="utf-8"), Loader=_YAML_LOADER) if d]
    except yaml.YAMLError as exc:
        raise ControlPlaneError(f"{p}: invalid YAML: {exc}") from exc
    nodes: list[dict[str, Any]] = []
    for i, doc in enumerate(docs):
        items = doc.get("items", []) if doc.get("kind") in ("List", "NodeList") else [doc]
        for j, item in enumerate(items):
            if item.get("kind") != "Node":
                raise ControlPlaneError(f"{p}: document {i} item {j}: kind is {item.get('kind')!r}, expected Node")
            nodes.append(item)
    return nodes


def fake_node(node: dict[str, Any]) -> dict[str, Any]:
    """A creatable KWOK-managed copy of a snapshot Node.

    Keeps labels, annotations, spec (taints) and status capacity/allocatable;
    drops server-populated metadata and the rest of status (kwok fills it).
    """
    name = (node.get("metadata") or {}).get("name")
    if not name:
        raise ControlPlaneError(f"node without metadata.name: {json.dumps(node)[:200]}")
    meta = {k: v for k, v in copy.deepcopy(node["metadata"]).items() if k not in _METADATA_DROP}
    annotations = dict(meta.get("annotations") or {})
    annotations[KWOK_ANNOTATION] = "fake"
    annotations.setdefault("node.alpha.kubernetes.io/ttl", "0")
    meta["annotations"] = annotations
    labels = dict(meta.get("labels") or {})
    labels.setdefault("kubernetes.io/hostname", name)
    labels.setdefault("kubernetes.io/os", "linux")
    labels.setdefault("kubernetes.io/arch", "amd64")
    labels.setdefault("type", "kwok")
    meta["labels"] = labels
    spec = copy.deepcopy(node.get("spec") or {})
    spec.pop("podCIDR", None)
    spec.pop("podCIDRs", None)
    status_in = node.get("status") or {}
    status = {k: copy.deepcopy(status_in[k]) for k in _NODE_STATUS_KEEP if k in status_in}
    out: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": meta}
    if spec:
        out["spec"] = spec
    if status:
        out["status"] = status
    return out


class LocalControlPlane:
    """One local cluster. ``start()`` -> kubeconfig path; ``stop()`` removes everything."""

    def __init__(self, bin_dir: str | os.PathLike[str] = BIN_DIR, timeout: int = 180) -> None:
        self.bin_dir = Path(bin_dir)
        self.timeout = timeout
        self.state_dir: Path | None = None
        self.kubeconfig: Path | None = None
        self.startup_seconds: float | None = None
        self._atexit_registered = False

    # ---- lifecycle -------------------------------------------------------
    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["GPUFLEET_BIN"] = str(self.bin_dir)
        return env

    def start(self, state_dir: str | os.PathLike[str]) -> Path:
        if self.state_dir is not None:
            raise ControlPlaneError(f"already started in {self.state_dir}")
        missing = missing_binaries(self.bin_dir)
        if missing:
            raise ControlPlaneError(f"missing binaries in {self.bin_dir}: {', '.join(missing)}; run tools/build.sh")
        self.state_dir = Path(state_dir).resolve()
        if not self._atexit_registered:
            atexit.register(self.stop)
            self._atexit_registered = True
        t0 = time.monotonic()
        proc = subprocess.run(
            [
                "bash",
                str(CLUSTER_SH),
                "up",
                str(self.state_dir),
                "--owner-pid",
                str(os.getpid()),
                "--timeout",
                str(self.timeout),
            ],
            capture_output=True,
            text=True,
            env=self._env(),
            check=False,
        )
        if proc.returncode != 0:
            self.stop()
            raise ControlPlaneError(f"tools/cluster.sh up failed (exit {proc.returncode}):\n{proc.stderr}")
        self.startup_seconds = time.monotonic() - t0
        self.kubeconfig = Path(proc.stdout.strip().splitlines()[-1])
        return self.kubeconfig

    def pids(self) -> dict[str, int]:
        """Recorded component pids (runner, etcd, kube-apiserver, ...)."""
        if self.state_dir is None:
            return {}
        out = {}
        pid_dir = self.state_dir / "pids"
        if pid_dir.is_dir():
            for f in sorted(pid_dir.iterdir()):
                text = f.read_text().strip()
                if text.isdigit():
                    out[f.name] = int(text)
        return out

    def restart(self, component: str) -> float:
        """Kill one component (SIGKILL) and have the runner start it again with the same flags
        (``tools/cluster.sh restart``); returns the seconds until /readyz answered again."""
        if self.state_dir is None:
            raise ControlPlaneError("not started")
        t0 = time.monotonic()
        proc = subprocess.run(
            ["bash", str(CLUSTER_SH), "restart", str(self.state_dir), component],
            capture_output=True,
            text=True,
            env=self._env(),
            check=False,
            timeout=300,
        )
        if proc.returncode != 0:
            raise ControlPlaneError(f"tools/cluster.sh restart {component} failed: {proc.stderr}")
        return time.monotonic() - t0

    def stop(self) -> None:
        """Kill every component and remove the state dir. Safe to call twice."""
        if self.state_dir is None:
            return
        state = self.state_dir
        proc = subprocess.run(
            ["bash", str(CLUSTER_SH), "down", str(state)],
            capture_output=True,
            text=True,
            env=self._env(),
            check=False,
        )
        self.state_dir = None
        self.kubeconfig = None
        if proc.returncode != 0:
            raise ControlPlaneError(f"tools/cluster.sh down failed: {proc.stderr}")

    # ---- kubectl ---------------------------------------------------------
    def kubectl(
        self,
        *args: str,
        input: str | None = None,
        check: bool = True,
        timeout: float = 120,
    ) -> subprocess.CompletedProcess[str]:
        if self.kubeconfig is None:
            raise ControlPlaneError("control plane not started")
        cmd = [str(self.bin_dir / "kubectl"), f"--kubeconfig={self.kubeconfig}", *args]
        proc = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout, check=False)
        if check and proc.returncode != 0:
            raise ControlPlaneError(
                f"kubectl {' '.join(args)} failed (exit {proc.returncode}):\n{proc.stderr}{proc.stdout}"
            )
        return proc

    def get_json(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)

    def requests_served(self, resource: str, verb: str) -> int:
        """How many ``verb`` requests on ``resource`` the apiserver has answered (its own
        ``apiserver_request_total`` counter): lets a test wait for a client to have *read* a state
        instead of sleeping and hoping it did."""
        total = 0
        for line in self.kubectl("get", "--raw", "/metrics").stdout.splitlines():
            if (
                line.startswith("apiserver_request_total{")
                and f'resource="{resource}"' in line
                and (f'verb="{verb}"' in line)
            ):
                total += int(float(line.rsplit(" ", 1)[1]))
        return total

    def create_namespace(self, name: str, timeout: float = 60) -> str:
        """Create a namespace (existing is fine) and wait for its default ServiceAccount (pods need it)."""
        proc = self.kubectl("create", "namespace", name, check=False)
        if proc.returncode != 0 and "AlreadyExists" not in proc.stderr:
            raise ControlPlaneError(f"kubectl create namespace {name} failed: {proc.stderr}")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.kubectl("get", "serviceaccount", "default", "-n", name, check=False).returncode == 0:
                return name
            time.sleep(0.2)
        raise ControlPlaneError(f"namespace {name}: default ServiceAccount not created after {timeout}s")

    def wait_pod_phase(self, namespace: str, name: str, phase: str, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        pod: dict[str, Any] = {}
        while time.monotonic() < deadline:
            pod = self.get_json("pod", name, "-n", namespace)
            if (pod.get("status") or {}).get("phase") == phase:
                return pod
            time.sleep(0.25)
        raise ControlPlaneError(
            f"pod {namespace}/{name} not {phase} after {timeout}s: {json.dumps(pod.get('status'), sort_keys=True)}"
        )

    # ---- nodes -----------------------------------------------------------
    def create_nodes_from_snapshot(
        self,
        snapshot: str | os.PathLike[str] | Sequence[dict[str, Any]],
        wait_ready: bool = True,
        timeout: float = 120,
    ) -> list[str]:
        """Create KWOK fake nodes from a snapshot file or list of Node dicts; return names."""
        nodes = load_node_snapshot(snapshot) if isinstance(snapshot, (str, os.PathLike)) else list(snapshot)
        fakes = [fake_node(n) for n in nodes]
        names = sorted(n["metadata"]["name"] for n in fakes)
        if not fakes:
            return names
        # create (not apply): Node is the one kind whose create keeps .status,
        # so capacity/allocatable (nvidia.com/gpu) arrive with the object.
        doc = {"apiVersion": "v1", "kind": "List", "items": fakes}
        self.kubectl("create", "-f", "-", input=json.dumps(doc))
        if wait_ready:
            self.wait_nodes_ready(names, timeout=timeout)
        return names

    def wait_nodes_ready(self, names: Iterable[str], timeout: float = 120) -> None:
        want = set(names)
        deadline = time.monotonic() + timeout
        not_ready: set[str] = set(want)
        while time.monotonic() < deadline:
            items = self.get_json("nodes")["items"]
            ready = {
                n["metadata"]["name"]
                for n in items
                if any(
                    c.get("type") == "Ready" and c.get("status") == "True"
                    for c in (n.get("status") or {}).get("conditions") or []
                )
            }
            not_ready = want - ready
            if not not_ready:
                return
            time.sleep(0.25)
        raise ControlPlaneError(f"nodes not Ready after {timeout}s: {sorted(not_ready)}")

    # ---- CRDs ------------------------------------------------------------
    def apply_crds(self, paths: Iterable[str | os.PathLike[str]], timeout: float = 180) -> list[str]:
        """Server-side apply CRD files (big ones exceed client-side apply limits); wait Established.

        Returns the sorted CRD names. The files are not parsed here (multi-MB CRDs
        take PyYAML tens of seconds); kubectl reports what it applied.
        """
        files = sorted(str(p) for p in paths)
        if not files:
            return []
        args = ["apply", "--server-side", "--force-conflicts", "--field-manager=gpufleet-tests", "-o", "name"]
        for f in files:
            args += ["-f", f]
        applied = self.kubectl(*args, timeout=timeout).stdout.split()
        crds = [a for a in applied if a.startswith("customresourcedefinition.apiextensions.k8s.io/")]
        deadline = time.monotonic() + timeout
        while crds:
            left = max(1, int(deadline - time.monotonic()))
            try:
                self.kubectl("wait", "--for=condition=Established", f"--timeout={left}s", *crds, timeout=left + 10)
                break
            except ControlPlaneError as exc:
                # kubectl refuses to wait on a CRD the apiextensions controller has not given a status yet
                # ("<nil> is of the type <nil>"; seen under load): ask again until the deadline
                if ".status.conditions accessor error" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(1)
        return sorted(a.split("/", 1)[1] for a in crds)

    def server_dry_run(self, obj: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        """Server-side apply dry-run of one object; returncode 0 = accepted."""
        return self.kubectl(
            "apply",
            "--server-side",
            "--field-manager=gpufleet-tests",
            "--dry-run=server",
            "--validate=strict",
            "-o",
            "name",
            "-f",
            "-",
            input=json.dumps(obj),
            check=False,
        )
