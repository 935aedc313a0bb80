"""playbooks/health.yml and playbooks/resume.yml for real (ansible-playbook, the sample inventory)
against the local kube-apiserver: health lists a quarantined node with its pool, tenant and
reason; resume untaints it; a second resume changes nothing; a bad node name fails early.
The Slurm half of both playbooks (``gpufleet_slurm_exec``) is not reachable here and is reported
as such; the Slurm drain/resume itself is proven in tests/integration/slurm/test_slurm_observability.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playbook_runner import playbook_env, recap_counts, run_playbook

from ansible_collections.gpufleet.core.plugins.module_utils.health import quarantine
from ansible_collections.gpufleet.core.plugins.module_utils.health.quarantine import core_api
from ansible_collections.gpufleet.core.plugins.module_utils.model import fence
from ansible_collections.gpufleet.core.plugins.module_utils.model.fence import QUARANTINE_TAINT_KEY

pytestmark = pytest.mark.kube

REPO = Path(__file__).resolve().parents[3]
NODE = "gpuhealth-pb-0"


def playbook(name: str, kubeconfig: str, *extra: str) -> tuple[int, str, int]:
    """``playbooks/<name>`` on the sample inventory as a user runs it; (exit status, output, changed)."""
    extra = ("-e", json.dumps({"gpufleet_kubeconfig": kubeconfig}), *extra)
    proc = run_playbook(
        "inventories/sample",
        Path("playbooks") / name,
        *extra,
        env=playbook_env(user=True),
        ok=None,
        timeout=300,
        cwd=REPO,
    )
    out = proc.stdout + proc.stderr
    return proc.returncode, out, recap_counts(out).get("changed", -1)


def test_health_lists_and_resume_returns_a_quarantined_node(kube_cluster):
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": NODE,
            "labels": {"kubernetes.io/hostname": NODE, fence.POOL_KEY: "pretrain", fence.TENANT_KEY: "llm-pretrain"},
        },
        "status": {
            "capacity": {"cpu": "8", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "8"},
            "allocatable": {"cpu": "8", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "8"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }
    kube_cluster.create_nodes_from_snapshot([node], timeout=120)
    kc = str(kube_cluster.kubeconfig)
    quarantine.apply(core_api(kc), NODE, "quarantined", "gpufleet-health: gpu2 uncorrected ECC errors 3")

    rc, out, changed = playbook("health.yml", kc)
    assert rc == 0, out
    assert changed == 0, out
    shown = out[out.index("Show the quarantined") :]
    assert NODE in shown and "gpu2 uncorrected ECC errors 3" in shown and "llm-pretrain" in shown, shown
    assert "slurm_not_reachable" in shown and "research" in shown

    rc, out, changed = playbook("resume.yml", kc, "-e", f"node={NODE}")
    assert rc == 0, out
    assert changed == 1, out
    taints = kube_cluster.get_json("node", NODE)["spec"].get("taints") or []
    assert all(t["key"] != QUARANTINE_TAINT_KEY for t in taints)
    rc, out, changed = playbook("resume.yml", kc, "-e", f"node={NODE}")
    assert (rc, changed) == (0, 0), out

    rc, out, _ = playbook("resume.yml", kc, "-e", "node=Bad_Node;rm")
    assert rc != 0 and "give the node to resume" in out, out
