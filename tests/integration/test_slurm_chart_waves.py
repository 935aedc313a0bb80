"""A sync wave changes no Slurm pod template: the real ``slurm`` chart 1.2.1 (the release archive in
../shared/upstream/src) templated by the Go-built ``helm`` with each Slurm tenant's rendered values.

The chart writes a component's ``metadata`` both on its custom resource and as its pod template's
metadata (templates/*/*-cr.yaml), so the wave annotation is in ``spec.template``, which the operator's
revision hashes. The tenant's ``slurm`` app must therefore make Argo CD ignore exactly that path of every
such object and keep its live value on sync (``RespectIgnoreDifferences``), while the custom resource's
own wave (what Argo CD orders by) stays managed.
"""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.module_utils.model.contracts import SYNC_WAVE
from ansible_collections.gpufleet.core.plugins.module_utils.versions import CHARTS

REPO = Path(__file__).resolve().parents[2]
HELM = REPO / ".build" / "bin" / "helm"
ARCHIVE = REPO.parent / "shared" / "upstream" / "src" / f"slinky-charts-{CHARTS['slurm']['version']}.tar.gz"
TENANTS = REPO / "gitops" / "clusters" / "gpu-east" / "tenants"


def _pointer(obj: dict, pointer: str):
    node = obj
    for raw in pointer.lstrip("/").split("/"):
        key = raw.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


@pytest.fixture(scope="module")
def chart(tmp_path_factory) -> Path:
    if not HELM.is_file() or not ARCHIVE.is_file():
        pytest.skip(f"needs {HELM} (tools/build.sh helm) and {ARCHIVE}")
    out = tmp_path_factory.mktemp("slinky-charts")
    with tarfile.open(ARCHIVE) as tar:
        tar.extractall(out, filter="data")
    (path,) = out.glob("*/helm/slurm")
    return path


@pytest.mark.parametrize("tenant", ["research", "llm-pretrain"])
def test_the_wave_copy_in_every_pod_template_is_left_to_the_live_object(chart: Path, tenant: str) -> None:
    values = TENANTS / tenant / "slurm" / "values.yaml"
    p = subprocess.run([str(HELM), "template", "slurm", str(chart), "-n", "slurm", "-f", str(values)],
                       capture_output=True, text=True, check=False, timeout=120)  # fmt: skip
    assert p.returncode == 0, p.stderr
    objs = [o for o in yaml.safe_load_all(p.stdout) if o]
    app = next(d for d in yaml.safe_load_all((TENANTS / tenant / "apps" / "6-slurm.yaml").read_text()) if d)
    spec = app["spec"]
    ignored = {(i.get("group", ""), i["kind"]): set(i.get("jsonPointers", [])) for i in spec["ignoreDifferences"]}
    assert "RespectIgnoreDifferences=true" in app["spec"]["syncPolicy"]["syncOptions"]
    carrying = []
    for o in objs:
        template = ((o.get("spec") or {}).get("template") or {}).get("metadata") or {}
        if SYNC_WAVE not in (template.get("annotations") or {}):
            continue
        group = o["apiVersion"].split("/")[0] if "/" in o["apiVersion"] else ""
        carrying.append(o["kind"])
        pointers = ignored.get((group, o["kind"]), set())
        hits = [ptr for ptr in pointers if _pointer(o, ptr) == template["annotations"][SYNC_WAVE]]
        assert hits, f"{o['kind']}/{o['metadata']['name']}: the chart copies the wave into its pod template"
        # nothing but the wave is ignored in the template, and the CR's own wave is what Argo CD orders by
        assert all(ptr.endswith(SYNC_WAVE.replace("/", "~1")) for ptr in hits), hits
        assert o["metadata"]["annotations"][SYNC_WAVE] == template["annotations"][SYNC_WAVE]
    # the components that carry a wave: Accounting (with accounting on), Controller, NodeSets, LoginSet, RestApi
    assert {"Controller", "NodeSet", "LoginSet", "RestApi"} <= set(carrying), carrying
