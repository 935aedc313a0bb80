"""model/contracts.py against the upstream constants it mirrors, read from the pinned release sources
(../shared/upstream/src): each Go string constant named in a contract's comment is evaluated from the
file named there (string literals and other constants joined with ``+``), never copied into the test.
The integration beds check the same names on objects the real components write."""

from __future__ import annotations

import re
import tarfile
from pathlib import Path

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.model import contracts
from ansible_collections.gpufleet.core.plugins.module_utils.render.platform import driver_upgrade
from ansible_collections.gpufleet.core.plugins.module_utils.versions import CHARTS

SRC = Path(__file__).resolve().parents[5].parent / "shared" / "upstream" / "src"
SLINKY = CHARTS["slurm_operator"]["version"]
# Kueue's source is the Go module tools/build.sh kueue builds from (not in ../shared)
KUEUE = Path.home() / "go" / "pkg" / "mod" / "sigs.k8s.io" / f"kueue@v{CHARTS['kueue']['version']}"
# contract -> (archive, file inside the release tree, Go constant)
MIRRORS = {
    "POD_PROTECT_LABEL": (f"slurm-operator-{SLINKY}-src.tar.gz", "api/v1beta1/well_known.go", "LabelNodeSetPodProtect"),
    "NODE_CORDON_REASON": (f"slurm-operator-{SLINKY}-src.tar.gz", "api/v1beta1/well_known.go",
                           "AnnotationNodeCordonReason"),
    "NODE_TOPOLOGY_SPEC": (f"slurm-operator-{SLINKY}-src.tar.gz", "api/v1beta1/well_known.go",
                           "AnnotationNodeTopologySpec"),
    "POD_HOSTNAME_LABEL": (f"slurm-operator-{SLINKY}-src.tar.gz", "api/v1beta1/well_known.go",
                           "LabelNodeSetPodHostname"),
    "APP_LABEL": (f"slurm-operator-{SLINKY}-src.tar.gz", "internal/builder/labels/labels.go", "AppLabel"),
    "SLURMD_APP": (f"slurm-operator-{SLINKY}-src.tar.gz", "internal/builder/labels/labels.go", "WorkerApp"),
    "SYNC_WAVE": ("argo-cd-gitops-engine-3.5.1-src.tar.gz", "pkg/sync/common/types.go", "AnnotationSyncWave"),
    "SYNC_OPTIONS": ("argo-cd-gitops-engine-3.5.1-src.tar.gz", "pkg/sync/common/types.go", "AnnotationSyncOptions"),
    "HOOK": ("argo-cd-gitops-engine-3.5.1-src.tar.gz", "pkg/sync/common/types.go", "AnnotationKeyHook"),
    "HOOK_DELETE_POLICY": ("argo-cd-gitops-engine-3.5.1-src.tar.gz", "pkg/sync/common/types.go",
                           "AnnotationKeyHookDeletePolicy"),
    "KUEUE_QUEUE_LABEL": (KUEUE, "pkg/controller/constants/constants.go", "QueueLabel"),
    "KUEUE_REQUIRED_TOPOLOGY": (KUEUE, "apis/kueue/v1beta2/topology_types.go", "PodSetRequiredTopologyAnnotation"),
    "KUEUE_TOPOLOGY_GATE": (KUEUE, "apis/kueue/v1beta2/topology_types.go", "TopologySchedulingGate"),
}  # fmt: skip


def go_source(archive: str | Path, path: str) -> str:
    if isinstance(archive, Path):
        if not (archive / path).is_file():
            pytest.skip(f"{archive / path} missing (tools/build.sh kueue fetches the module)")
        return (archive / path).read_text()
    if not (SRC / archive).is_file():
        pytest.skip(f"{SRC / archive} missing (../shared/upstream/src)")
    with tarfile.open(SRC / archive) as tar:
        member = next(m for m in tar.getmembers() if m.name.split("/", 1)[-1] == path)
        return tar.extractfile(member).read().decode()  # type: ignore[union-attr]


def go_const(source: str, name: str) -> str:
    """The value of string constant ``name`` in ``source`` (literals and constants joined by ``+``)."""
    found = re.findall(rf"^\s*{name}\s*=\s*(.+?)\s*(?://.*)?$", source, flags=re.MULTILINE)
    assert len(found) == 1, f"{name}: {found}"
    parts = [p.strip() for p in found[0].split("+")]
    return "".join(p[1:-1] if p.startswith('"') else go_const(source, p) for p in parts)


@pytest.mark.parametrize("contract", sorted(MIRRORS))
def test_contract_is_the_upstream_constant(contract: str) -> None:
    archive, path, const = MIRRORS[contract]
    assert getattr(contracts, contract) == go_const(go_source(archive, path), const)
    # the comment next to the contract names the constant it mirrors
    assert const in Path(contracts.__file__).read_text()


def test_busy_slurmd_budget_selects_what_the_operators_own_budget_selects() -> None:
    """The operator's worker budget (workerbuilder/worker_pdb.go) selects ``WithPodProtect()``, whose
    value is set in internal/builder/labels/labels.go; the host twin selects the same label and value."""
    labels = go_source(f"slurm-operator-{SLINKY}-src.tar.gz", "internal/builder/labels/labels.go")
    value = re.search(r"LabelNodeSetPodProtect\]\s*=\s*\"([^\"]+)\"", labels)
    assert value, "WithPodProtect not found in labels.go"
    well_known = go_source(f"slurm-operator-{SLINKY}-src.tar.gz", "api/v1beta1/well_known.go")
    pdb = driver_upgrade.busy_slurmd_budget("vc-x")
    assert pdb["spec"]["selector"] == {"matchLabels": {go_const(well_known, "LabelNodeSetPodProtect"): value[1]}}
