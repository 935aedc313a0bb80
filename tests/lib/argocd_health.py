"""The health Argo CD gives an object under gpufleet's ``argocd-cm`` health checks, computed by Argo CD's
own Lua engine: ``argocd admin settings resource-overrides health`` (offline) of the built binary."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.module_utils.render.argocd import health_checks

REPO_ROOT = Path(__file__).resolve().parents[2]
ARGOCD = Path(os.environ.get("GPUFLEET_BIN", REPO_ROOT / ".build" / "bin")) / "argocd"


def argocd_health(obj: dict[str, Any]) -> tuple[str, str]:
    """(status, message) of ``obj``; skips the test when Argo CD is not built."""
    if not ARGOCD.exists():
        pytest.skip("Argo CD; build it with tools/build.sh argocd")
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "argocd-cm"}, "data": health_checks()}
    with tempfile.TemporaryDirectory(prefix="gpf-health-") as tmp:
        work = Path(tmp)
        (work / "cm.yaml").write_text(yaml.safe_dump(cm), encoding="utf-8")
        (work / "obj.yaml").write_text(yaml.safe_dump(obj), encoding="utf-8")
        cmd = [str(ARGOCD), "admin", "settings", "resource-overrides", "health", str(work / "obj.yaml")]
        proc = subprocess.run(
            [*cmd, "--argocd-cm-path", str(work / "cm.yaml")],
            capture_output=True,
            text=True,
            env=dict(os.environ, HOME=str(work)),
            check=True,
            timeout=60,
        )
    out = dict(line.split(": ", 1) for line in proc.stdout.splitlines() if ": " in line)
    return out["STATUS"], out.get("MESSAGE", "")
