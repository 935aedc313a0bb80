"""A real Argo CD (v3.5.1, built by tools/build.sh argocd) reading a rendered GitOps tree.

Pieces, all on 127.0.0.1:
- ``LocalArgoCD``: tools/argocd.sh (redis, argocd-repo-server, argocd-application-controller in a
  network namespace that has only ``lo``) against a tools/cluster.sh control plane.
- ``fleet_repository``: renders an inventory into a Git repository read by ``file://``.
- ``HelmRepo``: a Helm chart repository served by ``http.server`` in this process, holding small
  charts written here (``double_chart``), and under ``/git/`` Git repositories over Git's smart HTTP
  protocol (``git http-backend``): the mirror of the argo-cd repository whose ``manifests/crds`` at the
  pinned tag the rendered argocd-crds Application syncs (``publish_git``).
"""

from __future__ import annotations

import atexit
import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

KUBE_DIR = Path(__file__).resolve().parents[1] / "kube"
sys.path.insert(0, str(KUBE_DIR))

from controlplane import BIN_DIR, REPO_ROOT, ControlPlaneError, LocalControlPlane

ARGOCD_SH = REPO_ROOT / "tools" / "argocd.sh"
GPUFLEET_CLI = REPO_ROOT / "scripts" / "gpufleet.py"
UPSTREAM = REPO_ROOT.parent / "shared" / "upstream"
# the Argo CD CRDs of the release the bed runs: manifests/crds of the argo-cd module at its tag
# (tools/build.sh charts); the bed serves them as the mirror of the argo-cd repository
ARGOCD_CRDS = REPO_ROOT / ".build" / "share" / "argocd-crds"
PART_OF = {"app.kubernetes.io/part-of": "argocd"}


class ArgoCDError(RuntimeError):
    """The local Argo CD could not be started or did not reach the expected state."""


# --------------------------------------------------------------------------- Helm repository


def minimal_crd(group: str, version: str, kind: str, plural: str, scope: str = "Namespaced") -> dict[str, Any]:
    """A CRD that accepts any spec: stands in for an upstream CRD whose schema is not at hand."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": scope,
            "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                }
            ],
        },
    }


# what the real charts install besides their workloads, as far as the rendered tree relies on it
KUEUE_CRDS = [
    minimal_crd("kueue.x-k8s.io", "v1beta2", "ResourceFlavor", "resourceflavors", "Cluster"),
    minimal_crd("kueue.x-k8s.io", "v1beta2", "ClusterQueue", "clusterqueues", "Cluster"),
    minimal_crd("kueue.x-k8s.io", "v1beta2", "LocalQueue", "localqueues"),
    minimal_crd("kueue.x-k8s.io", "v1beta2", "Topology", "topologies", "Cluster"),
]
# the mariadb-operator-crds chart ships the MariaDB CRD the tenants' accounting database uses (a
# stand-in with the status subresource: the mariadb-operator double in operator_doubles.py writes it)
MARIADB_CRDS = [
    {**c, "spec": {**c["spec"], "versions": [{**c["spec"]["versions"][0], "subresources": {"status": {}}}]}}
    for c in [minimal_crd("k8s.mariadb.com", "v1alpha1", "MariaDB", "mariadbs")]
]
# the slurm-operator-crds chart ships the Slinky CRDs: the real ones of the pinned release
SLINKY_CRDS = [yaml.safe_load(f.read_text()) for f in sorted((UPSTREAM / "crds" / "slinky").glob("*.yaml"))]
CHART_EXTRAS = {"kueue": KUEUE_CRDS, "mariadb-operator-crds": MARIADB_CRDS, "slurm-operator-crds": SLINKY_CRDS}
# what the stand-in of the slurm chart (slurm 1.2.1) renders besides the values ConfigMap: the custom
# resources and the sssd Secret tests/lib/slinky_objects.py makes, by hand from the real chart's
# templates, from each Slurm tenant's rendered values (``objects/<clusterName>.yaml``, written when
# the bed publishes the chart: values changed later are not seen), and ``extraObjects`` as the real
# chart renders them; the vcluster chart is the real one (real_vcluster.CHART)
SLURM_TEMPLATE = """{{- $objects := .Files.Get (printf "objects/%s.yaml" .Values.clusterName) }}
{{- if not $objects }}{{ fail (printf "no objects published for clusterName %s" .Values.clusterName) }}{{ end }}
{{ $objects }}
{{- range .Values.extraObjects }}
---
{{ toYaml . }}
{{- end }}
"""
CHART_TEMPLATES = {"slurm": SLURM_TEMPLATE}
# the Cilium operator (not the chart) registers Cilium's CRDs when it starts
CILIUM_CRDS = [
    minimal_crd("cilium.io", "v2", "CiliumClusterwideNetworkPolicy", "ciliumclusterwidenetworkpolicies", "Cluster"),
    minimal_crd("cilium.io", "v2", "CiliumLoadBalancerIPPool", "ciliumloadbalancerippools", "Cluster"),
    minimal_crd("cilium.io", "v2", "CiliumBGPAdvertisement", "ciliumbgpadvertisements", "Cluster"),
    minimal_crd("cilium.io", "v2alpha1", "CiliumL2AnnouncementPolicy", "ciliuml2announcementpolicies", "Cluster"),
]


def double_chart(root: Path, name: str, version: str, files: dict[str, str] | None = None) -> Path:
    """A chart standing in for an upstream chart that cannot be downloaded here.

    It renders one ConfigMap ``<release>-values`` whose data holds the chart name, version, the
    release namespace and the complete values it was given (``values.json``), so a test can see
    which value files Argo CD passed through ``$values``; ``files`` (path -> text) are packaged with it.
    """
    d = root / name
    (d / "templates").mkdir(parents=True, exist_ok=True)
    (d / "Chart.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v2",
                "name": name,
                "version": version,
                "appVersion": version,
                "description": f"gpufleet test double of the {name} chart",
            }
        )
    )
    (d / "values.yaml").write_text("{}\n")
    (d / "templates" / "values.yaml").write_text(
        "apiVersion: v1\n"
        "kind: ConfigMap\n"
        "metadata:\n"
        "  name: {{ .Release.Name }}-values\n"
        "  namespace: {{ .Release.Namespace }}\n"
        "  labels:\n"
        "    gpufleet.io/test-double: {{ .Chart.Name }}\n"
        "data:\n"
        "  chart: {{ .Chart.Name | quote }}\n"
        "  version: {{ .Chart.Version | quote }}\n"
        "  values.json: {{ toJson .Values | quote }}\n"
    )
    if name in CHART_TEMPLATES:
        (d / "templates" / "objects.yaml").write_text(CHART_TEMPLATES[name])
    for rel, text in (files or {}).items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text(text)
    extras = CHART_EXTRAS.get(name, [])
    if extras:
        (d / "crds").mkdir(exist_ok=True)
        (d / "crds" / "crds.yaml").write_text(yaml.safe_dump_all(extras))
    return d


class HelmRepo:
    """A Helm chart repository (index.yaml + .tgz) served on 127.0.0.1 from a thread."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        (root / "git").mkdir(exist_ok=True)
        handler = functools.partial(_RepoHandler, directory=str(root))
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def publish(
        self,
        charts: list[tuple[str, str]],
        work: Path,
        real: dict[str, Path] | None = None,
        files: dict[str, dict[str, str]] | None = None,
    ) -> None:
        """Package each (name, version): the chart directory ``real[name]`` where given (its version
        must be the pinned one), else a double (with ``files[name]``); (re)write index.yaml."""
        real, files = real or {}, files or {}
        for name, version in charts:
            if name in real and yaml.safe_load((real[name] / "Chart.yaml").read_text())["version"] != version:
                raise ArgoCDError(f"{real[name]}: not chart {name} {version}")
        helm = str(BIN_DIR / "helm")
        for name, version in charts:
            src = real.get(name) or double_chart(work, name, version, files.get(name))
            run([helm, "package", str(src), "--destination", str(self.root)])
        run([helm, "repo", "index", str(self.root), "--url", self.url])

    def publish_git(self, name: str, files: dict[str, Path], tag: str, work: Path) -> str:
        """A Git repository ``<name>.git`` holding ``files`` (path in the repository -> file) in one
        commit tagged ``tag`` (and branch ``main``); returns its URL."""
        src = work / f"{name}-src"
        src.mkdir(parents=True)
        git(src, "init", "-q", "-b", "main")
        for rel, f in sorted(files.items()):
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, src / rel)
        git(src, "add", "-A")
        git(src, "commit", "-qm", f"{name} {tag}")
        git(src, "tag", tag)
        bare = self.root / "git" / f"{name}.git"
        run(["git", "clone", "-q", "--bare", str(src), str(bare)])
        return f"{self.url}/git/{name}.git"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _cgi_split(raw: bytes) -> tuple[bytes, bytes]:
    """A CGI response's header block and body (the headers end at the first empty line)."""
    crlf, lf = raw.find(b"\r\n\r\n"), raw.find(b"\n\n")
    if crlf != -1 and (lf == -1 or crlf < lf):
        return raw[:crlf], raw[crlf + 4 :]
    if lf == -1:
        return raw, b""
    return raw[:lf], raw[lf + 2 :]


class _RepoHandler(http.server.SimpleHTTPRequestHandler):
    """Static files (the chart repository), and ``/git/...`` through ``git http-backend`` (CGI)."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.startswith("/git/"):
            self._git()
        else:
            super().do_GET()

    def do_POST(self) -> None:
        if self.path.startswith("/git/"):
            self._git()
        else:
            self.send_error(405)

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))
        out = b""
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                self.rfile.readline()
                return out
            out += self.rfile.read(size)
            self.rfile.readline()

    def _git(self) -> None:
        path, _sep, query = self.path[len("/git") :].partition("?")
        body = self._body() if self.command == "POST" else b""
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": str(Path(self.directory) / "git"),
            "GIT_HTTP_EXPORT_ALL": "1",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
            "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
            "REMOTE_ADDR": self.client_address[0],
        }
        p = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, check=False, timeout=120)
        if p.returncode != 0 and not p.stdout:
            self.send_error(500, p.stderr.decode(errors="replace")[:200])
            return
        head, out = _cgi_split(p.stdout)
        status, headers = 200, []
        for line in head.decode("latin-1").splitlines():
            key, _c, value = line.partition(":")
            if key.lower() == "status":
                status = int(value.split()[0])
            elif key:
                headers.append((key, value.strip()))
        self.send_response(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


# --------------------------------------------------------------------------- Git


def run(cmd: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=300)
    if p.returncode != 0:
        raise ArgoCDError(f"{' '.join(cmd)} failed (exit {p.returncode}):\n{p.stderr}{p.stdout}")
    return p.stdout


def git(repo: Path, *args: str) -> str:
    env = dict(os.environ)
    env.update(
        GIT_AUTHOR_NAME="gpufleet-tests",
        GIT_AUTHOR_EMAIL="tests@gpufleet.invalid",
        GIT_COMMITTER_NAME="gpufleet-tests",
        GIT_COMMITTER_EMAIL="tests@gpufleet.invalid",
        GIT_CONFIG_NOSYSTEM="1",
        HOME=str(repo.parent),
    )
    return run(["git", "-C", str(repo), *args], env=env)


def bed_inventory(dst: Path, repo_url: str, mirrors: dict[str, str]) -> Path:
    """The sample inventory with the GitOps repository and chart mirrors of this test bed."""
    src = REPO_ROOT / "inventories" / "sample"
    shutil.copytree(src, dst)
    fleet_file = dst / "group_vars" / "all" / "fleet.yml"
    fleet = yaml.safe_load(fleet_file.read_text())
    fleet["gpufleet_fleet"]["gitops"]["repo_url"] = repo_url
    fleet["gpufleet_fleet"]["gitops"].pop("forge", None)
    fleet["gpufleet_chart_mirrors"] = dict(sorted(mirrors.items()))
    fleet_file.write_text(yaml.safe_dump(fleet, sort_keys=False))
    return dst


def fleet_repository(repo: Path, inventory: Path) -> Path:
    """Render ``inventory`` into ``repo``/gitops and commit it on branch ``main``."""
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    run([sys.executable, str(GPUFLEET_CLI), "render", "--inventory", str(inventory), "--out", str(repo / "gitops")])
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "rendered by gpufleet")
    return repo


# --------------------------------------------------------------------------- Argo CD


class LocalArgoCD:
    """tools/argocd.sh up/down plus the Argo CD configuration objects on the host apiserver."""

    def __init__(self, host: LocalControlPlane, state_dir: Path) -> None:
        self.host = host
        self.state_dir = state_dir
        self.netns: str | None = None
        self.startup_seconds: float | None = None
        self.wiring: tuple[dict[str, int] | None, dict[str, str] | None] = (None, None)
        atexit.register(self.stop)

    def restart(self) -> str:
        """Every Argo CD process killed (``down``: TERM, then KILL after 3 s; redis' cache goes with
        it) and started again with the same wiring."""
        self.stop()
        return self.start(*self.wiring)

    def restart_component(self, component: str) -> float:
        """One Argo CD process killed (SIGKILL) and started again by the runner with the same flags
        (``tools/argocd.sh restart``: redis, repo-server, controller); returns the seconds until Argo
        CD answered again."""
        t0 = time.monotonic()
        p = subprocess.run(
            ["bash", str(ARGOCD_SH), "restart", str(self.state_dir), component],
            capture_output=True,
            text=True,
            env=dict(os.environ, GPUFLEET_BIN=str(BIN_DIR)),
            check=False,
            timeout=400,
        )
        if p.returncode != 0:
            raise ArgoCDError(f"tools/argocd.sh restart {component} failed (exit {p.returncode}):\n{p.stderr}")
        return time.monotonic() - t0

    def install_config(self, crds: Callable[[], None] | None = None) -> None:
        """Namespace, CRDs and the argocd-cm/argocd-rbac-cm/argocd-secret an install would create.
        ``crds`` installs the CRDs (the bed: the argocd role's bootstrap from the rendered argocd-crds
        Application); without it, the release's own ``manifests/crds`` are applied as they are."""
        self.host.create_namespace("argocd")
        for attempt in range(5):
            try:  # kubectl wait can race a just-created CRD ("status.conditions accessor error")
                if crds is not None:
                    crds()
                else:
                    self.host.apply_crds(sorted(ARGOCD_CRDS.glob("*-crd.yaml")))
                break
            except ControlPlaneError:
                if attempt == 4:
                    raise
                time.sleep(2)
        secret_key = os.urandom(24).hex()  # generated per run, never stored
        objs = [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "argocd-cm", "namespace": "argocd", "labels": PART_OF},
                "data": {"timeout.reconciliation": "10s", "application.resourceTrackingMethod": "annotation"},
            },
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "argocd-rbac-cm", "namespace": "argocd", "labels": PART_OF},
                "data": {"policy.default": "role:readonly"},
            },
            {  # argocd-server creates it at start; it does not run here
                "apiVersion": "argoproj.io/v1alpha1",
                "kind": "AppProject",
                "metadata": {"name": "default", "namespace": "argocd"},
                "spec": {
                    "sourceRepos": ["*"],
                    "destinations": [{"server": "*", "namespace": "*"}],
                    "clusterResourceWhitelist": [{"group": "*", "kind": "*"}],
                },
            },
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "argocd-secret", "namespace": "argocd", "labels": PART_OF},
                "stringData": {"server.secretkey": secret_key},
            },
        ]
        self.host.kubectl(
            "apply",
            "--server-side",
            "--field-manager=argocd-install",
            "-f",
            "-",
            input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}),
        )

    def start(self, forwards: dict[str, int] | None = None, hosts: dict[str, str] | None = None) -> str:
        """``forwards``: "[127.x.y.z:]port" in Argo CD's namespace -> port on the host's 127.0.0.1;
        ``hosts``: name -> 127.x.y.z inside the namespace."""
        if self.host.kubeconfig is None:
            raise ArgoCDError("host control plane not started")
        self.wiring = (forwards, hosts)
        args = ["bash", str(ARGOCD_SH), "up", str(self.state_dir), "--kubeconfig", str(self.host.kubeconfig)]
        args += ["--owner-pid", str(os.getpid())]
        for listen, target in sorted((forwards or {}).items()):
            args += ["--forward", f"{listen}={target}"]
        for name, addr in sorted((hosts or {}).items()):
            args += ["--host", f"{name}={addr}"]
        env = dict(os.environ, GPUFLEET_BIN=str(BIN_DIR))
        t0 = time.monotonic()
        p = subprocess.run(args, capture_output=True, text=True, env=env, check=False, timeout=400)
        if p.returncode != 0:
            raise ArgoCDError(f"tools/argocd.sh up failed (exit {p.returncode}):\n{p.stderr}")
        self.startup_seconds = time.monotonic() - t0
        self.netns = p.stdout.strip().splitlines()[-1]
        return self.netns

    def stop(self) -> None:
        if not self.state_dir.exists():
            return
        subprocess.run(["bash", str(ARGOCD_SH), "down", str(self.state_dir)], capture_output=True, check=False)

    def logs(self, name: str, lines: int = 40) -> str:
        f = self.state_dir / "logs" / f"{name}.log"
        return "\n".join(f.read_text(errors="replace").splitlines()[-lines:]) if f.exists() else ""

    # ---- Applications --------------------------------------------------------------------
    def apps(self) -> dict[str, dict[str, Any]]:
        items = self.host.get_json("applications.argoproj.io", "-n", "argocd")["items"]
        return {a["metadata"]["name"]: a for a in items}

    def wait(
        self,
        names: list[str],
        ok: Callable[[dict[str, Any]], bool],
        what: str,
        timeout: float = 300,
    ) -> dict[str, dict[str, Any]]:
        """Poll until ``ok(app)`` holds for every app in ``names``; the error lists those that do not."""
        deadline = time.monotonic() + timeout
        apps: dict[str, dict[str, Any]] = {}
        bad: list[str] = list(names)
        while time.monotonic() < deadline:
            apps = self.apps()
            bad = [n for n in names if n not in apps or not ok(apps[n])]
            if not bad:
                return apps
            time.sleep(1)
        detail = "\n".join(f"  {n}: {summary(apps.get(n))}" for n in bad)
        raise ArgoCDError(f"apps not {what} after {timeout}s:\n{detail}\ncontroller log:\n{self.logs('controller')}")


def status_of(app: dict[str, Any] | None) -> tuple[str, str]:
    st = (app or {}).get("status") or {}
    return (st.get("sync") or {}).get("status", ""), (st.get("health") or {}).get("status", "")


def synced_healthy(app: dict[str, Any]) -> bool:
    return status_of(app) == ("Synced", "Healthy")


def conditions(app: dict[str, Any] | None) -> list[str]:
    return [f"{c.get('type')}: {c.get('message')}" for c in ((app or {}).get("status") or {}).get("conditions") or []]


def summary(app: dict[str, Any] | None) -> str:
    if app is None:
        return "missing"
    sync, health = status_of(app)
    op = (app.get("status") or {}).get("operationState") or {}
    return f"sync={sync} health={health} op={op.get('phase')} {op.get('message', '')!r} conditions={conditions(app)}"
