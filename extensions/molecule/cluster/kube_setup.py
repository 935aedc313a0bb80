"""Prepare the local control plane for the molecule `cluster` scenario.

Runs against a cluster already started with tools/cluster.sh (its admin kubeconfig is argv[1]):
KWOK fake Nodes from the inventory's nodes snapshot, the upstream Argo CD and Slinky CRDs (from
../shared/upstream, as the kube integration tests do), the argocd namespace, and for every tenant a
Secret shaped like the kubeconfig Secret vCluster 0.36 exports (`vc-<tenant>` in namespace
`vc-<tenant>`: keys config, certificate-authority, client-certificate, client-key), made from the
local cluster's own PKI, so the registration reads real certificates.

Usage: kube_setup.py KUBECONFIG STATE_DIR NODES_SNAPSHOT TENANT...
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(REPO / "tests" / "integration" / "kube"), str(REPO / "tests" / "lib")]  # its imports
from controlplane import fake_node, load_node_snapshot

CRDS = REPO.parent / "shared" / "upstream" / "crds"


def kubectl(kubeconfig: str, *args: str, stdin: str | None = None) -> str:
    cmd = [str(REPO / ".build" / "bin" / "kubectl"), f"--kubeconfig={kubeconfig}", *args]
    proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=180, check=False)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    return proc.stdout


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def vc_secret(tenant: str, state: Path, server: str) -> dict:
    """``server``: the local apiserver, standing in for every tenant's vCluster API (the Slurm keys
    the apply step writes through this kubeconfig land in its ``slurm`` namespace)."""
    pki = state / "pki"
    ca, cert, key = ((pki / f).read_bytes() for f in ("ca.crt", "admin.crt", "admin.key"))
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "my-vcluster",
                "cluster": {"server": server, "certificate-authority-data": b64(ca)},
            }
        ],
        "users": [{"name": "my-vcluster", "user": {"client-certificate-data": b64(cert), "client-key-data": b64(key)}}],
        "contexts": [{"name": "my-vcluster", "context": {"cluster": "my-vcluster", "user": "my-vcluster"}}],
        "current-context": "my-vcluster",
    }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": f"vc-{tenant}",
            "namespace": f"vc-{tenant}",
            "labels": {"app": "vcluster", "vcluster-name": tenant},
        },
        "type": "Opaque",
        "data": {
            "config": b64(yaml.safe_dump(kubeconfig).encode()),
            "certificate-authority": b64(ca),
            "client-certificate": b64(cert),
            "client-key": b64(key),
        },
    }


def main() -> None:
    kubeconfig, state, snapshot, *tenants = sys.argv[1:]
    nodes = [fake_node(n) for n in load_node_snapshot(snapshot)]
    existing = set(kubectl(kubeconfig, "get", "nodes", "-o", "name").split())
    new = [n for n in nodes if f"node/{n['metadata']['name']}" not in existing]
    if new:
        kubectl(kubeconfig, "create", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": new}))
    crds = sorted(str(p) for sub in ("argocd", "slinky") for p in (CRDS / sub).glob("*.yaml"))
    args = ["apply", "--server-side", "--force-conflicts", "--field-manager=gpufleet-molecule"]
    for f in crds:
        args += ["-f", f]
    kubectl(kubeconfig, *args)
    names = [
        f"crd/{d['metadata']['name']}"
        for f in crds
        for d in yaml.safe_load_all(Path(f).read_text(encoding="utf-8"))
        if d and d.get("kind") == "CustomResourceDefinition"
    ]
    deadline = time.monotonic() + 120
    while True:  # `kubectl wait` errors out while a new CRD has no status yet
        status = json.loads(kubectl(kubeconfig, "get", *names, "-o", "json"))
        established = [
            any(
                c.get("type") == "Established" and c.get("status") == "True"
                for c in (i.get("status") or {}).get("conditions") or []
            )
            for i in status["items"]
        ]
        if all(established):
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"CRDs not Established after 120 s: {names}")
        time.sleep(0.5)
    objs = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "argocd"}}]
    server = yaml.safe_load(Path(kubeconfig).read_text(encoding="utf-8"))["clusters"][0]["cluster"]["server"]
    for t in tenants:
        objs.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"vc-{t}"}})
        objs.append(vc_secret(t, Path(state), server))
    kubectl(
        kubeconfig,
        "apply",
        "--server-side",
        "--field-manager=gpufleet-molecule",
        "-f",
        "-",
        stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}),
    )
    print(json.dumps({"nodes": len(nodes), "created": len(new), "crds": len(crds), "tenants": tenants}))


if __name__ == "__main__":
    main()
