"""The feature-gate table against the real binaries: each Kubernetes component the bed builds at the
pinned version (tools/build.sh k8s) and slurm-bridge's scheduler (tools/build.sh bridge, a kube-scheduler
built against k8s.io/kubernetes v1.36.0) lists in ``--help`` every alpha and beta gate it registers with
its maturity and default (component-base featuregate.KnownFeatures: GA and deprecated gates are left
out); each must be what the generated table says. The gates the slurm-bridge chart passes start the
bridge's scheduler, and an unknown gate stops it, as the check in model/feature_gates.py assumes."""

from __future__ import annotations

import re
import subprocess
import tarfile
from pathlib import Path

import pytest
from controlplane import shared_test_helpers

from ansible_collections.gpufleet.core.plugins.module_utils.model import feature_gates
from ansible_collections.gpufleet.core.plugins.module_utils.model.feature_gate_table import GATES

REPO = Path(__file__).resolve().parents[3]
# "kube:Name=true|false (BETA - default=true)"; versioned gates carry the component prefix
LISTED = re.compile(r"^\s*(?:[a-z-]+:)?(\w+)=true\|false \((ALPHA|BETA) - default=(true|false)\)", re.MULTILINE)
BRIDGE_SRC = REPO.parent / "shared" / "upstream" / "src" / "slurm-bridge-1.2.1-src.tar.gz"
SCHEDULER_TEMPLATE = "slurm-bridge-1.2.1/helm/slurm-bridge/templates/scheduler/deployment.yaml"


def _help(binary: str) -> str:
    path = shared_test_helpers().require_tool(binary, "tools/build.sh")
    p = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=60, check=False)
    return p.stdout + p.stderr


@pytest.mark.parametrize(
    "binary", ["kube-apiserver", "kube-controller-manager", "kube-scheduler", "slurm-bridge-scheduler"]
)
def test_every_gate_a_binary_lists_is_in_the_table_as_listed(binary: str) -> None:
    listed = {name: (stage, default == "true") for name, stage, default in LISTED.findall(_help(binary))}
    assert len(listed) > 20, f"{binary} --help lists no feature gates in the expected form"
    wrong = {
        n: (s, GATES.get(n))
        for n, s in listed.items()
        if n not in ("AllAlpha", "AllBeta") and GATES.get(n, ("",))[:2] != s
    }
    assert not wrong, wrong


def _chart_flag() -> str:
    """The ``--feature-gates`` argument the slurm-bridge chart's scheduler Deployment passes (fixed in
    its template at the pinned release: no value changes it)."""
    with tarfile.open(shared_test_helpers().require_path(BRIDGE_SRC, "../shared/upstream (SOURCES.md)")) as tar:
        member = tar.extractfile(SCHEDULER_TEMPLATE)
        assert member is not None
        text = member.read().decode()
    (flag,) = re.findall(r"^\s*- (--feature-gates=\S+)$", text, re.MULTILINE)
    return flag


def test_the_bridge_charts_gates_are_not_alpha_and_start_its_scheduler(tmp_path: Path) -> None:
    flag = _chart_flag()
    gates = feature_gates.parse_flag(flag)
    assert isinstance(gates, dict)
    assert {g: feature_gates.maturity(g) for g in gates} == {
        "DRAExtendedResource": "BETA",
        "DynamicResourceAllocation": "GA",
        "SchedulerPopFromBackoffQ": "BETA",
    }
    path = shared_test_helpers().require_tool("slurm-bridge-scheduler", "tools/build.sh bridge")

    kubeconfig = tmp_path / "kubeconfig"  # a server nothing listens on: clients connect lazily
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
        "current-context: x\n"
    )

    def run(flag: str) -> subprocess.CompletedProcess[str]:
        # --write-config-to: parse the flags (the gates included), build the scheduler, write its
        # configuration and exit 0, before contacting the server
        args = [path, flag, f"--kubeconfig={kubeconfig}", "--leader-elect=false"]
        args.append(f"--write-config-to={tmp_path / 'config.yaml'}")
        return subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)

    ok = run(flag)
    assert ok.returncode == 0 and (tmp_path / "config.yaml").is_file(), ok.stderr[-2000:]
    bad = run("--feature-gates=GenericWorkloads=true")
    assert bad.returncode != 0 and "GenericWorkloads" in bad.stderr, bad.stderr[-2000:]
