"""render/tenants/bridge.py: a tenant with slurm-bridge gets the pinned chart and a Slinky Token inside its
vCluster, the bridged partition in its slurm.conf, the node-name labels for the apply step, and its
vCluster's own scheduler with the host fence over exactly its nodes; nothing changes for the others.
The real chart templated with these values: tests/integration/test_slurm_bridge_chart.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from render_checks import crd_index, crd_validator
from render_fixtures import bridged_sample

from ansible_collections.gpufleet.core.plugins.module_utils.model import fence
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.pools.lock import parse_lock
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants import bridge, host_fence
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.versions import CHARTS

T = "clusters/gpu-east/tenants/llm-pretrain"
MIRROR = "registry.site.internal/mirror"


@pytest.fixture(scope="module")
def sample() -> dict[str, str]:
    return render_fleet(load_fleet(Path(__file__).resolve().parents[5] / "inventories" / "sample")).files


@pytest.fixture(scope="module")
def inv(tmp_path_factory) -> Path:
    return bridged_sample(tmp_path_factory.mktemp("bridge"))


@pytest.fixture(scope="module")
def files(inv: Path) -> dict[str, str]:
    return render_fleet(load_fleet(inv)).files


def load(files: dict[str, str], rel: str) -> Any:
    return yaml.safe_load(files[rel])


def pool_nodes(inv: Path, pool: str) -> list[str]:
    lock = parse_lock((inv / "snapshots" / "gpu-east" / "pools.lock.yaml").read_text(), cluster="gpu-east")
    return sorted(n for n, p in lock.items() if p == pool)


def test_the_chart_app_is_the_pinned_chart_inside_the_vcluster(files: dict[str, str]) -> None:
    app = load(files, f"{T}/apps/8-slurm-bridge.yaml")
    chart = app["spec"]["sources"][0]
    pinned = CHARTS["slurm_bridge"]
    assert (chart["repoURL"], chart["chart"], chart["targetRevision"]) == (
        pinned["repo_url"], pinned["chart"], pinned["version"])  # fmt: skip
    assert app["spec"]["destination"] == {"server": "https://llm-pretrain.vc-llm-pretrain:443", "namespace": "slurm"}
    assert app["spec"]["project"] != "llm-pretrain"  # platform-owned: the tenant's project cannot change it
    values = load(files, f"{T}/slurm-bridge/values.yaml")
    assert values["admission"]["managedNamespaces"] == ["ml-jobs"]
    assert values["schedulerConfig"]["partition"] == "k8s"
    assert values["sharedConfig"]["slurmRestApi"] == "http://slurm-restapi.slurm:6820"


def test_the_token_signs_with_the_clusters_jwt_key_into_the_secret_the_chart_reads(files: dict[str, str]) -> None:
    (token,) = list(yaml.safe_load_all(files[f"{T}/slurm-bridge-token/token.yaml"]))
    slurm = load(files, f"{T}/slurm/values.yaml")
    values = load(files, f"{T}/slurm-bridge/values.yaml")
    assert token["apiVersion"] == "slinky.slurm.net/v1beta1" and token["kind"] == "Token"
    assert token["metadata"]["namespace"] == "slurm"
    assert token["spec"]["jwtKeyRef"] == slurm["jwtKey"]["secretRef"]
    assert token["spec"]["secretRef"]["name"] == values["sharedConfig"]["slurmJwtSecret"]
    assert token["spec"]["username"] == "slurm"
    app = load(files, f"{T}/apps/7-slurm-bridge-token.yaml")
    assert app["spec"]["source"]["path"].endswith(f"{T}/slurm-bridge-token")
    # the Slinky 1.2.1 Token CRD (../shared/upstream/crds/slinky) accepts it
    index = crd_index(Path(__file__).resolve().parents[6] / "shared")
    errors = list(crd_validator(*index[("slinky.slurm.net/v1beta1", "Token")]).iter_errors(token))
    assert not errors, [e.message for e in errors]


def test_the_bridged_partition_and_mcs_in_slurm_conf(files: dict[str, str]) -> None:
    slurm = load(files, f"{T}/slurm/values.yaml")
    part = slurm["partitions"]["k8s"]
    assert part["enabled"] and part["nodesets"] == ["pretrain"]
    assert slurm["partitions"]["pretrain"]["nodesets"] == ["pretrain"]  # the pool's own partition stays
    conf = slurm["controller"]["extraConfMap"]
    assert conf["MCSPlugin"] == "mcs/label" and conf["MCSParameters"] == "ondemand,ondemandselect"
    # the bridge taints every Kubernetes node that is a Slurm node: every slurmd tolerates it
    for name, nodeset in slurm["nodesets"].items():
        tolerations = nodeset["podSpec"]["tolerations"]
        assert bridge.MANAGED_TOLERATION in tolerations and fence.toleration(name) in tolerations, name


def test_node_names_for_the_apply_step_cover_the_bridged_pool(inv: Path, files: dict[str, str]) -> None:
    doc = load(files, f"{T}/slurm-bridge/{fence.BRIDGE_NAMES_FILE}")
    nodes = pool_nodes(inv, "pretrain")
    assert nodes and doc["label"] == fence.BRIDGE_NODENAME_LABEL == "slinky.slurm.net/slurm-nodename"
    assert doc["nodes"] == {n: n.split(".")[0] for n in nodes}


def test_the_vcluster_schedules_and_the_host_fences_by_admission(inv: Path, files: dict[str, str]) -> None:
    assert host_fence.runs_own_scheduler(load(files, f"{T}/vcluster/values.yaml"))
    docs = list(yaml.safe_load_all(files[f"{T}/host/fence.yaml"]))
    rule = docs[2]["spec"]["validations"][0]["expression"]
    mine, others = pool_nodes(inv, "pretrain"), pool_nodes(inv, "research-batch")
    assert mine and others
    assert all(f'"{n}"' in rule for n in mine) and not any(f'"{n}"' in rule for n in others), rule


def test_nothing_changes_for_the_other_tenants(files: dict[str, str], sample: dict[str, str]) -> None:
    others = {k for k in sample if "llm-pretrain" not in k and not k.endswith(("README.md", "REPORT.md"))}
    changed = sorted(k for k in others if files.get(k) != sample[k])
    assert changed == [], changed
    assert not any("slurm-bridge" in k for k in sample)  # the sample leaves it off


def test_the_images_go_through_the_mirror(tmp_path: Path) -> None:
    files = render_fleet(load_fleet(bridged_sample(tmp_path, MIRROR))).files
    values = load(files, f"{T}/slurm-bridge/values.yaml")
    for part in ("scheduler", "admission", "controllers"):
        assert values[part]["image"]["repository"] == f"{MIRROR}/ghcr.io/slinkyproject/slurm-bridge-{part}"
