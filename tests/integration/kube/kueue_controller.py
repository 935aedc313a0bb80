"""The real Kueue controller manager (built by ``tools/build.sh kueue`` from the Go module at the pinned
chart's version) run as a local process against the test control plane.

How it differs from the chart's Deployment (same release, v0.19.2):

- no webhooks are registered with the API server: Kueue has no switch to turn its webhook server
  off, so it listens on 127.0.0.1 with a throw-away self-signed certificate, but no
  Mutating/ValidatingWebhookConfiguration points at it. Jobs are therefore created the way Kueue's
  Job webhook would leave them: ``spec.suspend: true`` with the ``kueue.x-k8s.io/queue-name`` label.
  Flavor/queue/topology defaulting comes from the CRD schemas; their validation from the CRDs' CEL rules.
- internal certificate management is off (it needs a Service and the webhook configurations); with it
  off, Kueue 0.19.2 reads its metrics certificate from the fixed path /etc/kueue/metrics/certs, so the
  process runs in a private mount namespace (``unshare -m``, root) with a directory of the test's
  bind-mounted over /etc. Metrics are not served (``bindAddress: "0"``).
- the on-demand visibility API (feature gate ``VisibilityOnDemand``) is off: it is an aggregated API
  server needing its own certificate and APIService; TAS does not use it.
- one replica, no leader election, the ``batch/job`` integration only, admin kubeconfig (no RBAC).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml
from controlplane import BIN_DIR
from daemons import Daemon


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _self_signed(cert_dir: Path) -> None:
    cert_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
            "-keyout", str(cert_dir / "tls.key"), "-out", str(cert_dir / "tls.crt"),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip


class KueueController:
    """``start(kubeconfig, state)`` runs the controller until ``/readyz`` answers; ``stop()`` ends it."""

    def __init__(self, binary: Path = BIN_DIR / "kueue") -> None:
        self.binary = binary
        self.proc: Daemon | None = None
        self.log: Path | None = None

    def config(self, state: Path, health: int, webhook: int) -> dict[str, Any]:
        return {
            "apiVersion": "config.kueue.x-k8s.io/v1beta2",
            "kind": "Configuration",
            "namespace": "kueue-system",
            "health": {"healthProbeBindAddress": f"127.0.0.1:{health}"},
            "metrics": {"bindAddress": "0"},
            "webhook": {"host": "127.0.0.1", "port": webhook, "certDir": str(state / "webhook-certs")},
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "manageJobsWithoutQueueName": False,
            "integrations": {"frameworks": ["batch/job"]},
            # the on-demand visibility API server wants its certificate at /visibility (an APIService)
            "featureGates": {"VisibilityOnDemand": False},
        }

    def start(self, kubeconfig: Path, state: Path, timeout: float = 120) -> None:
        state.mkdir(parents=True, exist_ok=True)
        _self_signed(state / "webhook-certs")
        _self_signed(state / "etc" / "kueue" / "metrics" / "certs")
        health, webhook = free_port(), free_port()
        cfg = state / "kueue-config.yaml"
        cfg.write_text(yaml.safe_dump(self.config(state, health, webhook)))
        self.log = state / "kueue.log"
        script = 'mount --bind "$1" /etc && shift && exec "$@"'
        cmd = ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", str(state / "etc")]
        cmd += [str(self.binary), f"--config={cfg}", "--zap-log-level=2"]
        env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
        self.proc = Daemon(cmd, self.log, env=env, append=False)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"kueue exited ({self.proc.returncode}):\n{self.tail()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{health}/readyz", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"kueue not ready after {timeout}s:\n{self.tail()}")

    def tail(self, lines: int = 40) -> str:
        if self.log is None or not self.log.exists():
            return ""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.stop(grace=20, kill_wait=10)
        self.proc = None
