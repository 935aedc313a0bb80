"""The real slurm-bridge 1.2.1 chart (../shared/upstream/src, tests/lib/real_charts.py) templated by the real
helm with the values gpufleet renders for a bridged tenant: the objects the chart makes carry what the
render meant (the scheduler name the webhook and the scheduler agree on, slurmrestd of the tenant's Slurm,
the Secret the Slinky Token writes, the managed namespaces, the bridged partition, the mirrored images),
and the feature gates its scheduler really passes are the ones the model judges
(``bridge_model.SCHEDULER_FEATURE_GATES``), none alpha at the pinned Kubernetes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from real_charts import chart_defaults, chart_dir, helpers, template
from render_fixtures import bridged_sample

from ansible_collections.gpufleet.core.plugins.module_utils.model import bridge_model, feature_gates
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants import bridge
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.versions import CHARTS

T = "clusters/gpu-east/tenants/llm-pretrain"
MIRROR = "registry.site.internal/mirror"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    """(bridge values, Token, objects of the real chart templated with those values)."""
    helm = helpers().require_tool("helm", "templating the real slurm-bridge chart")
    work = tmp_path_factory.mktemp("bridge-chart")
    files = render_fleet(load_fleet(bridged_sample(work / "inv", MIRROR))).files
    values_file = work / "values.yaml"
    values_file.write_bytes(files[f"{T}/slurm-bridge/values.yaml"])
    (token,) = list(yaml.safe_load_all(files[f"{T}/slurm-bridge-token/token.yaml"]))
    app = yaml.safe_load(files[f"{T}/apps/8-slurm-bridge.yaml"])
    chart = chart_dir("slurm_bridge", work / "charts")
    meta = yaml.safe_load((chart / "Chart.yaml").read_text(encoding="utf-8"))
    assert (meta["name"], str(meta["version"])) == (CHARTS["slurm_bridge"]["chart"], CHARTS["slurm_bridge"]["version"])
    ns = app["spec"]["destination"]["namespace"]
    objs = template(helm, chart, [values_file], release=app["spec"]["sources"][0]["helm"]["releaseName"], namespace=ns)
    values = yaml.safe_load(values_file.read_text())
    assert unknown_keys(values, chart_defaults(chart)) == []
    return values, token, objs


def unknown_keys(values: Any, defaults: Any, at: str = "") -> list[str]:
    """Key paths of the rendered ``values`` the chart's values.yaml does not have (a typo does nothing)."""
    if not isinstance(values, dict) or not isinstance(defaults, dict) or not defaults:
        return []
    out = []
    for k, v in values.items():
        out += [f"{at}{k}"] if k not in defaults else unknown_keys(v, defaults[k], f"{at}{k}.")
    return out


def one(objs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (obj,) = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    return obj


def containers(objs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        o["metadata"]["name"]: o["spec"]["template"]["spec"]["containers"][0] for o in objs if o["kind"] == "Deployment"
    }


def test_the_bridge_config_is_what_the_render_meant(rendered) -> None:
    values, _token, objs = rendered
    config = yaml.safe_load(one(objs, "ConfigMap", "slurm-bridge-config")["data"]["config.yaml"])
    assert config["managedNamespaces"] == ["ml-jobs"]
    assert config["partition"] == "k8s"
    assert config["slurmRestApi"] == "http://slurm-restapi.slurm:6820" == values["sharedConfig"]["slurmRestApi"]
    assert config["mcsLabel"] == "kubernetes"
    assert "managedNamespaceSelector" not in config
    # the name the admission webhook gives pods is the scheduler's own profile name
    sched = yaml.safe_load(one(objs, "ConfigMap", "scheduler-config")["data"]["scheduler-config.yaml"])
    assert [p["schedulerName"] for p in sched["profiles"]] == [config["schedulerName"]]
    assert config["schedulerName"] == values["schedulerConfig"]["schedulerName"]


def test_every_component_reads_the_jwt_the_token_writes(rendered) -> None:
    _values, token, objs = rendered
    deployments = containers(objs)
    assert set(deployments) == {"slurm-bridge-scheduler", "slurm-bridge-admission", "slurm-bridge-controllers"}
    for name, c in deployments.items():
        (env,) = [e for e in c["env"] if e["name"] == "SLURM_JWT"]
        ref = env["valueFrom"]["secretKeyRef"]
        assert {"name": ref["name"], "key": ref["key"]} == token["spec"]["secretRef"], name
    namespaces = {o["metadata"].get("namespace") for o in objs if o["kind"] in ("Deployment", "ConfigMap")}
    assert namespaces == {token["metadata"]["namespace"]}  # the Token's Secret is in the pods' namespace


def test_the_bridges_own_pods_tolerate_its_taint(rendered) -> None:
    """Its node controller taints every Kubernetes node that is a Slurm node NoExecute; inside the vCluster
    (whose own scheduler runs kube-controller-manager's taint eviction) its pods would evict themselves."""
    _values, _token, objs = rendered
    pods = {o["metadata"]["name"]: o["spec"]["template"]["spec"] for o in objs if o["kind"] == "Deployment"}
    for name, spec in pods.items():
        assert bridge.MANAGED_TOLERATION in spec.get("tolerations", []), name


def test_the_images_are_the_tables_through_the_mirror(rendered) -> None:
    _values, _token, objs = rendered
    for name, c in containers(objs).items():
        part = name.removeprefix("slurm-bridge-")
        assert c["image"] == f"{MIRROR}/ghcr.io/slinkyproject/slurm-bridge-{part}:{CHARTS['slurm_bridge']['version']}"


def test_the_webhook_certificate_comes_from_cert_manager(rendered) -> None:
    _values, _token, objs = rendered
    hook = one(objs, "MutatingWebhookConfiguration", "slurm-bridge-admission")
    assert "cert-manager.io/inject-ca-from" in hook["metadata"]["annotations"]
    assert not [o for o in objs if o["kind"] == "Secret"]  # no key minted by helm (it would change each render)
    assert [o for o in objs if o["kind"] == "Certificate"]


def test_the_schedulers_feature_gates_are_the_judged_ones(rendered) -> None:
    _values, _token, objs = rendered
    args = containers(objs)["slurm-bridge-scheduler"]["args"]
    (flag,) = [a for a in args if a.startswith(feature_gates.FLAG)]
    assert flag == bridge_model.SCHEDULER_FEATURE_GATES
    gates = feature_gates.parse_flag(flag)
    assert isinstance(gates, dict) and gates
    stages = {g: feature_gates.maturity(g) for g in gates}
    assert None not in stages.values() and "ALPHA" not in stages.values(), stages


def test_validate_judges_the_bridge_scheduler(tmp_path: Path) -> None:
    """The model reads the bridge's gates for every bridged tenant (so an alpha one would be refused)."""
    fleet = load_fleet(bridged_sample(tmp_path))
    c = fleet.source.data["gpufleet_clusters"][0]
    args = feature_gates.cluster_args(0, c)
    assert (("gpufleet_clusters", 0, "slurm_bridge", "llm-pretrain"), "slurm-bridge scheduler of tenant 'llm-pretrain'",
            bridge_model.SCHEDULER_FEATURE_GATES) in args  # fmt: skip
