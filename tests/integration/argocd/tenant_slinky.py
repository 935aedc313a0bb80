"""The real Slinky operator v1.2.1 (``slurm-operator`` and ``slurm-operator-webhook``, built by
tools/build.sh slinky) inside each Slurm tenant's real vCluster of the Argo CD bed.

Both run as processes (tests/lib/slinky_operator.py) in the tenant vCluster's network namespace,
where the vCluster's API is ``127.0.0.1:8443`` (the kubeconfig vCluster exported, as a pod inside it
would reach the API), with that kubeconfig's admin rights, not the operator chart's RBAC. The webhook
serves on ``127.0.0.1:9443`` there; the virtual kube-apiserver runs in the same namespace and calls it
by URL (the chart: by its Service, with a cert-manager certificate; here a self-signed one): a
ValidatingWebhookConfiguration for the six Slinky kinds and a MutatingWebhookConfiguration for pod
bindings, as the webhook's kubebuilder markers declare them.

Before Argo CD syncs, the bed writes what the apply step writes into the vCluster (the tenant role's
slurm_keys and accounting tasks): namespace ``slurm``, the Slurm key and the accounting database
password, random per run. It does not write the JWT key: there is no slurmctld or slurmrestd in this
bed, and with a JWT key the operator makes a Slurm client for the Controller
(internal/controller/slurmclient) whose every call fails, and a NodeSet's status is then never written
(``CalculateNodeStatus`` returns the error). Without it the operator logs that it cannot read the key
and runs with no Slurm client, which it supports (every Slurm call is skipped). Left unexercised here,
covered by tests/integration/slinky against real Slurm: the Slurm node state in NodeSet status and pod
conditions, cordon/drain, update strategies through Slurm, reservations, Token reconciliation.
"""

from __future__ import annotations

import base64
import json
import secrets
import subprocess
import threading
from pathlib import Path
from typing import Any

import yaml
from real_vcluster import RealVCluster, run_kubectl
from slinky_operator import SlinkyOperator, SlinkyWebhook, running_binary

WEBHOOK_PORT = 9443  # inside the vCluster's network namespace
WEBHOOK_HEALTH_PORT = 9444
SLURM_NAMESPACE = "slurm"
VALIDATED = ("accountings", "controllers", "loginsets", "nodesets", "restapis", "tokens")


class TenantSlinky:
    """The operator and its webhook in one tenant's vCluster."""

    def __init__(self, vc: RealVCluster, values: Path, work: Path) -> None:
        self.vc = vc
        self.values = yaml.safe_load(values.read_text())
        self.kubeconfig = vc.state / "virtual-kubeconfig"
        self.operator = SlinkyOperator(work / "operator", self.kubeconfig, netns=vc.netns)
        self.webhook = SlinkyWebhook(work / "webhook", self.kubeconfig, WEBHOOK_PORT, WEBHOOK_HEALTH_PORT, vc.netns)
        self.stopping = threading.Event()
        self.waiter = threading.Thread(target=self._start_operator, daemon=True, name=f"slinky-{vc.tenant}")
        self.error = ""

    def _start_operator(self) -> None:
        want = {f"customresourcedefinition.apiextensions.k8s.io/{p}.slinky.slurm.net" for p in VALIDATED}
        while not self.stopping.is_set():
            p = self.kubectl("get", "crd", "-o", "name", check=False)
            if p.returncode == 0 and want <= set(p.stdout.split()):
                try:
                    self.operator.start()
                except Exception as exc:  # reported with runs_built_binaries() by the test
                    self.error = f"{type(exc).__name__}: {exc}"
                return
            self.stopping.wait(1.0)

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run_kubectl(["ip", "netns", "exec", self.vc.netns], self.kubeconfig, "kubectl", args, input, check)

    def apply_step_secrets(self) -> list[dict[str, Any]]:
        """The Secrets the apply step writes (values' secretRefs), with random contents."""
        key = self.values["slurmKey"]["secretRef"]
        out = [(key["name"], key["key"], secrets.token_bytes(1024))]
        acct = self.values.get("accounting") or {}
        if acct.get("enabled"):
            ref = acct["storageConfig"]["passwordKeyRef"]
            out.append((ref["name"], ref["key"], secrets.token_hex(24).encode()))
        return [
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "type": "Opaque",
                "metadata": {"name": name, "namespace": SLURM_NAMESPACE},
                "data": {k: base64.b64encode(v).decode()},
            }
            for name, k, v in out
        ]

    def start(self) -> None:
        """The webhook and its configurations now; the manager once the Slinky CRDs are served (Argo CD
        installs them from the slurm-operator-crds app, a wave before the operator's: controller-runtime
        gives up on kinds not served within its cache sync timeout and the manager exits)."""
        self.webhook.start()
        self.waiter.start()
        ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SLURM_NAMESPACE}}
        items = [ns, *self.apply_step_secrets(), self.webhook.configuration(resources=VALIDATED)]
        items.append(self.webhook.binding_configuration())
        body = json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
        self.kubectl("apply", "--server-side", "--field-manager=gpufleet-apply", "-f", "-", input=body)

    def processes(self) -> dict[str, int]:
        """Binary name -> pid of the running processes (an exited one is left out)."""
        procs = {"slurm-operator": self.operator.proc, "slurm-operator-webhook": self.webhook.proc}
        return {name: p.pid for name, p in procs.items() if p is not None and p.poll() is None}

    def runs_built_binaries(self) -> bool:
        running = self.processes()
        return len(running) == 2 and all(running_binary(pid, name) for name, pid in running.items())

    def stop(self) -> None:
        self.stopping.set()
        if self.waiter.is_alive():
            self.waiter.join(timeout=30)
        self.operator.stop()
        self.webhook.stop()


def slurm_values(tenant_dir: Path, tenant: str) -> Path | None:
    f = tenant_dir / tenant / "slurm" / "values.yaml"
    return f if f.is_file() else None
