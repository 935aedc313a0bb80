"""The real Slinky operator (``slurm-operator``, cmd/manager of v1.2.1, built by tools/build.sh slinky)
run as a process against the test's control plane and the test's real slurmrestd.

How the operator finds slurmrestd (read from its source, internal/controller/slurmclient): for each
Controller it takes the oldest RestApi bound to it and calls ``http://<restapi>-restapi.<namespace>:6820``
(the RestApi Service's short DNS name and slurmrestd's fixed port), with an HS256 JWT for user
``slurm`` that it signs itself with the Controller's ``jwtKeyRef`` Secret. There is no cluster DNS
here, so the operator runs in a network namespace of its own that has only ``lo``:

* ``/etc/netns/<ns>/hosts`` maps the Service name to 127.0.0.1 (``ip netns exec`` bind-mounts it
  over /etc/hosts for the operator alone; the machine's /etc/hosts is not touched);
* tools/netns-forward.py listens inside the namespace on 127.0.0.1:6820 (to the test's slurmrestd)
  and on the kube-apiserver's port (to the host's kube-apiserver), so the kubeconfig stays as is;
* the operator's health and metrics ports are inside the namespace: no clash with other tests.

The operator's own ``DEBUG=1`` switch (which points every client at localhost:6820) is not used: it
would skip the Service-name lookup this wiring exercises.

Given ``netns``, the operator joins a network namespace the caller owns instead (the Argo CD bed runs
one per tenant in that tenant's vCluster namespace, where the vCluster's API is 127.0.0.1:8443): no
hosts file, no forwarder, no health port (``--health-addr=0``).
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlparse

import yaml
from daemons import Daemon

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / ".build" / "bin"
FORWARD = REPO / "tools" / "netns-forward.py"
SLURMRESTD_PORT = 6820  # the operator's restapibuilder.SlurmrestdPort


class OperatorError(RuntimeError):
    pass


class SlinkyOperator:
    """``start()`` the manager in its own netns; ``stop()`` ends it, the forwarder and the netns."""

    def __init__(self, workdir: Path, kubeconfig: Path, restd_port: int | None = None,
                 service_names: list[str] | None = None, netns: str | None = None):  # fmt: skip
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.kubeconfig = Path(kubeconfig)
        self.restd_port = restd_port
        self.service_names = service_names or []
        self.own_netns = netns is None
        self.netns = netns or f"gf-slinky-{os.getpid()}"
        self.log = self.workdir / "operator.log"
        self.proc: Daemon | None = None
        self._procs: list[Daemon] = []

    def _apiserver_port(self) -> int:
        cfg = yaml.safe_load(self.kubeconfig.read_text())
        url = urlparse(cfg["clusters"][0]["cluster"]["server"])
        if url.hostname != "127.0.0.1" or not url.port:
            raise OperatorError(f"{self.kubeconfig}: server {url.geturl()} is not 127.0.0.1:<port>")
        return url.port

    def _spawn(self, argv: list[str], log: Path) -> Daemon:
        proc = Daemon(argv, log)
        self._procs.append(proc)
        return proc

    def start(self) -> SlinkyOperator:
        binary = BIN / "slurm-operator"
        if not binary.is_file():
            raise OperatorError(f"{binary} missing: run tools/build.sh slinky")
        health = "0"
        if self.own_netns:
            self._own_netns()
            health = "127.0.0.1:8081"
        argv = ["ip", "netns", "exec", self.netns, str(binary), f"--kubeconfig={self.kubeconfig}",
                f"--health-addr={health}", "--metrics-addr=0", "--zap-log-level=2"]  # fmt: skip
        self.proc = self._spawn(argv, self.log)
        return self

    def _own_netns(self) -> None:
        subprocess.run(["ip", "netns", "add", self.netns], check=True, capture_output=True)
        subprocess.run(["ip", "-n", self.netns, "link", "set", "lo", "up"], check=True, capture_output=True)
        etc = Path("/etc/netns") / self.netns
        etc.mkdir(parents=True, exist_ok=True)
        (etc / "hosts").write_text("127.0.0.1 localhost\n" + "".join(f"127.0.0.1 {n}\n" for n in self.service_names))
        api = self._apiserver_port()
        pairs = [f"{SLURMRESTD_PORT}={self.restd_port}", f"{api}={api}"]
        fwd = self._spawn(["python3", str(FORWARD), f"/run/netns/{self.netns}", *pairs], self.workdir / "forward.log")
        fwd.wait_logged("ready", 10, "forwarder", OperatorError)

    def tail(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def logged(self, needle: str) -> bool:
        return self.log.exists() and needle in self.log.read_text(errors="replace")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        for proc in reversed(self._procs):  # the operator, then the forwarder it talks through
            proc.stop(grace=10)
        if self.own_netns:
            subprocess.run(["ip", "netns", "del", self.netns], check=False, capture_output=True)
            shutil.rmtree(Path("/etc/netns") / self.netns, ignore_errors=True)


class SlinkyWebhook:
    """The operator's admission webhook (``slurm-operator-webhook``, cmd/webhook) as a process on
    127.0.0.1 (in network namespace ``netns`` when given), with a self-signed serving certificate for
    that address (the chart gets one from cert-manager), and webhook configurations that call it by URL
    (in a cluster: by its Service). They mirror the webhook's own kubebuilder markers
    (internal/webhook/*_webhook.go: path, name, rules, ``failurePolicy: Fail``): ``configuration``
    validates the given Slinky kinds (``namespace`` scopes it so other tests' objects are not sent to
    it), ``binding_configuration`` is the mutating one on pod bindings."""

    def __init__(self, workdir: Path, kubeconfig: Path, port: int, health_port: int, netns: str | None = None):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.kubeconfig = Path(kubeconfig)
        self.port, self.health_port = port, health_port
        self.netns = netns
        self.log = self.workdir / "webhook.log"
        self.proc: Daemon | None = None

    def start(self) -> SlinkyWebhook:
        binary = BIN / "slurm-operator-webhook"
        if not binary.is_file():
            raise OperatorError(f"{binary} missing: run tools/build.sh slinky")
        # controller-runtime reads the serving pair from $TMPDIR/k8s-webhook-server/serving-certs
        certs = self.workdir / "tmp" / "k8s-webhook-server" / "serving-certs"
        certs.mkdir(parents=True, exist_ok=True)
        pair = ["-keyout", str(certs / "tls.key"), "-out", str(certs / "tls.crt")]
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
             "-addext", "subjectAltName=IP:127.0.0.1", *pair],
            check=True, capture_output=True,
        )  # fmt: skip
        env = dict(os.environ, TMPDIR=str(self.workdir / "tmp"))
        argv = [str(binary), f"--kubeconfig={self.kubeconfig}", f"--server-addr=127.0.0.1:{self.port}",
                f"--health-addr=127.0.0.1:{self.health_port}", "--metrics-addr=0"]  # fmt: skip
        if self.netns:
            argv = ["ip", "netns", "exec", self.netns, *argv]
        self.proc = Daemon(argv, self.log, env=env)
        return self

    def _hook(self, name: str, path: str, group: str, resource: str) -> dict:
        ca = base64.b64encode((self.workdir / "tmp/k8s-webhook-server/serving-certs/tls.crt").read_bytes()).decode()
        version, ops = ("v1beta1", ["CREATE", "UPDATE"]) if group else ("v1", ["CREATE"])
        return {
            "name": name,
            "clientConfig": {"url": f"https://127.0.0.1:{self.port}{path}", "caBundle": ca},
            "rules": [{"apiGroups": [group], "apiVersions": [version], "operations": ops, "resources": [resource]}],
            "failurePolicy": "Fail",
            "matchPolicy": "Equivalent",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        }  # fmt: skip

    def configuration(self, namespace: str | None = None, resources: tuple[str, ...] = ("nodesets",)) -> dict:
        hooks = []
        for plural in resources:
            singular = plural[:-1]
            hook = self._hook(f"{singular}-v1beta1.kb.io", f"/validate-slinky-slurm-net-v1beta1-{singular}",
                              "slinky.slurm.net", plural)  # fmt: skip
            if namespace:
                hook["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
            hooks.append(hook)
        name = "slinky-bed-nodeset" if namespace else "slurm-operator-webhook"
        return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": name}, "webhooks": hooks}  # fmt: skip

    def binding_configuration(self) -> dict:
        hook = self._hook("podsbinding-v1.kb.io", "/mutate--v1-binding", "", "pods/binding")
        return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
                "metadata": {"name": "slurm-operator-webhook"}, "webhooks": [hook]}  # fmt: skip

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop(grace=10)


def running_binary(pid: int, name: str) -> bool:
    """Process ``pid`` executes the binary tools/build.sh installed as ``.build/bin/<name>``."""
    return Path(f"/proc/{pid}/exe").read_bytes() == (BIN / name).read_bytes()
