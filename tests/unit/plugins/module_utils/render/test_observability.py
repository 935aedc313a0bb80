"""Per-tenant monitoring/health options (schema, defaults, hostile values) and what they render:
Slurm metrics + DCGM job mapping + HealthCheckProgram in the slurm values, PodMonitors, the
Grafana dashboard, and that no rendered toleration tolerates the GPU-health quarantine taint."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from render_fixtures import copy_sample, edit_vars

from ansible_collections.gpufleet.core.plugins.module_utils.errors import ModelError
from ansible_collections.gpufleet.core.plugins.module_utils.health import quarantine
from ansible_collections.gpufleet.core.plugins.module_utils.model import fence
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import TenantHealth
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.render.platform import monitoring
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants import health
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_fleet

REPO = Path(__file__).resolve().parents[5]
SAMPLE = REPO / "inventories" / "sample"
T = "clusters/gpu-east/tenants"


@pytest.fixture
def inv(tmp_path: Path) -> Path:
    return copy_sample(tmp_path, snapshots=True)


@pytest.fixture(scope="module")
def sample_files() -> dict[str, bytes]:
    return render_fleet(load_fleet(SAMPLE)).files


def test_defaults_are_on_and_typed(inv):
    def strip(d):
        for t in d["gpufleet_tenants"]:
            t.pop("monitoring", None)
            t.pop("health", None)

    edit_vars(inv, "tenants.yml", strip)
    fleet = load_fleet(inv)
    t = fleet.tenants["research"]
    assert t.monitoring.enabled and t.monitoring.scrape_interval == "30s"
    assert t.health == TenantHealth()
    assert (
        t.health.enabled and t.health.dcgm_diag_level == 1 and set(t.health.checks) == {"dcgm", "ecc", "nvlink", "xid"}
    )
    assert 79 in t.health.xids and 13 not in t.health.xids
    assert fleet.clusters["gpu-east"].monitoring.prometheus_operator is True


@pytest.mark.parametrize(
    ("where", "key", "value", "needle"),
    [
        ("health", "dcgm_diag_level", 9, "dcgm_diag_level"),
        ("health", "interval", 1, "interval"),
        ("health", "checks", ["ecc", "gpu-burn"], "checks"),
        ("health", "checks", ["ecc", "ecc"], "checks"),
        ("health", "xids", ["79; reboot"], "xids"),
        ("health", "node_state", "ANY,CYCLE\nHealthCheckProgram=/tmp/x", "node_state"),
        ("health", "program", "/bin/sh", "program"),
        ("monitoring", "scrape_interval", '30s"; rm -rf /', "scrape_interval"),
        ("monitoring", "enabled", "yes", "enabled"),
    ],
)
def test_hostile_tenant_values_fail_closed(inv, where, key, value, needle):
    def bad(d):
        d["gpufleet_tenants"][1].setdefault(where, {})[key] = value

    edit_vars(inv, "tenants.yml", bad)
    with pytest.raises(ModelError) as exc:
        load_fleet(inv)
    text = str(exc.value)
    assert "tenants.yml" in text and needle in text, text


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("labels", {"release name": "x"}),
        ("labels", {"release": "a\nb"}),
        ("labels", {"release": "x" * 64}),
        ("dashboard_label", "grafana dashboard"),
        ("namespace", "Monitoring"),
        ("prometheus_operator", "true"),
    ],
)
def test_hostile_cluster_monitoring_fails_closed(inv, key, value):
    edit_vars(inv, "clusters.yml", lambda d: d["gpufleet_clusters"][0]["monitoring"].__setitem__(key, value))
    with pytest.raises(ModelError) as exc:
        load_fleet(inv)
    assert "clusters.yml" in str(exc.value) and "monitoring" in str(exc.value)


def test_slurm_values_carry_metrics_mapping_and_health(sample_files):
    v = yaml.safe_load(sample_files[f"{T}/research/slurm/values.yaml"])
    assert v["controller"]["metrics"] == {"enabled": True, "serviceMonitor": {"enabled": False}}
    assert v["prologScripts"][monitoring.JOB_MAPPING_SCRIPT] == monitoring.prolog_script()
    assert v["epilogScripts"][monitoring.JOB_MAPPING_SCRIPT] == monitoring.epilog_script()
    assert v["vendor"]["nvidia"]["dcgm"]["enabled"] is False  # our scripts replace the chart's
    conf = v["controller"]["extraConfMap"]
    assert conf["HealthCheckProgram"] == "/etc/gpufleet/health/gpu-healthcheck.sh"
    assert conf["HealthCheckInterval"] == "300" and conf["HealthCheckNodeState"] == ["ANY", "CYCLE"]
    for ns in v["nodesets"].values():
        mounts = {m["name"]: m["mountPath"] for m in ns["slurmd"]["volumeMounts"]}
        vols = {x["name"]: x for x in ns["podSpec"]["volumes"]}
        assert mounts[monitoring.JOB_MAPPING_VOLUME] == vols[monitoring.JOB_MAPPING_VOLUME]["hostPath"]["path"]
        assert mounts[health.HEALTH_VOLUME] == health.HEALTH_DIR
        assert vols[health.HEALTH_VOLUME]["configMap"] == {"name": health.HEALTH_CONFIGMAP, "defaultMode": 0o755}
    objs = list(yaml.safe_load_all(sample_files[f"{T}/research/objects/objects.yaml"]))
    cm = next(o for o in objs if o and o["metadata"]["name"] == health.HEALTH_CONFIGMAP)
    assert cm["metadata"]["namespace"] == "slurm"
    op = yaml.safe_load(sample_files[f"{T}/research/slurm-operator/values.yaml"])
    assert op["propagatedNodeConditions"] == [fence.QUARANTINE_CONDITION]


def test_options_off_render_nothing_of_it(inv):
    def off(d):
        for t in d["gpufleet_tenants"]:
            t["monitoring"] = {"enabled": False}
            t["health"] = {"enabled": False}

    edit_vars(inv, "tenants.yml", off)
    files = render_fleet(load_fleet(inv)).files
    v = yaml.safe_load(files[f"{T}/research/slurm/values.yaml"])
    assert "prologScripts" not in v and "metrics" not in v["controller"]
    assert "HealthCheckProgram" not in v["controller"]["extraConfMap"]
    assert not any(p.endswith(("/host/monitoring.yaml", "/platform/monitoring/dashboard.yaml")) for p in files)
    assert health.HEALTH_CONFIGMAP.encode() not in files[f"{T}/research/objects/objects.yaml"]


def test_health_script_settings_and_syntax(tmp_path):
    fleet = load_fleet(SAMPLE)
    from dataclasses import replace

    t = replace(fleet.tenants["research"], health=TenantHealth(dcgm_diag_level=3, checks=("ecc", "xid"), xids=(48, 79)))
    text = health.health_script(t)
    assert 'CHECKS="ecc xid"' in text and 'FATAL_XIDS="48 79"' in text and "DCGM_DIAG_LEVEL=3" in text
    assert 'scontrol update nodename="$NODE" state=drain reason="$reason"' in text
    for name, body in (("hc", text), ("prolog", monitoring.prolog_script()), ("epilog", monitoring.epilog_script())):
        f = tmp_path / name
        f.write_text(body)
        assert subprocess.run(["bash", "-n", str(f)], capture_output=True, check=False).returncode == 0, name


def test_pod_monitors_per_slurm_tenant(sample_files):
    pms = {
        p: yaml.safe_load(d.split(b"---", 1)[1]) for p, d in sample_files.items() if p.endswith("/host/monitoring.yaml")
    }
    assert sorted(pms) == [f"{T}/llm-pretrain/host/monitoring.yaml", f"{T}/research/host/monitoring.yaml"]
    pm = pms[f"{T}/research/host/monitoring.yaml"]
    assert pm["kind"] == "PodMonitor" and pm["metadata"]["namespace"] == "vc-research"
    assert pm["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert [e["path"] for e in pm["spec"]["podMetricsEndpoints"]] == list(monitoring.SLURM_METRICS_PATHS)
    assert all(e["relabelings"][0]["replacement"] == "research" for e in pm["spec"]["podMetricsEndpoints"])


def test_grafana_dashboard_configmap(sample_files):
    cm = yaml.safe_load(sample_files["clusters/gpu-east/platform/monitoring/dashboard.yaml"].split(b"---", 1)[1])
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1" and cm["metadata"]["namespace"] == "monitoring"
    (text,) = cm["data"].values()
    dash = json.loads(text)
    assert dash["uid"] == monitoring.DASHBOARD_UID and len({p["id"] for p in dash["panels"]}) == len(dash["panels"])
    exprs = " ".join(t["expr"] for p in dash["panels"] for t in p.get("targets", []))
    for metric in ("DCGM_FI_DEV_GPU_UTIL", "hpc_job", "slurm_partition_jobs_pending", "slurm_partition_jobs_running"):
        assert metric in exprs
    pools = next(p for p in dash["panels"] if p["type"] == "text")["options"]["content"]
    assert "| pretrain | slurm | llm-pretrain |" in pools and "| nodes |" not in pools  # no sizes
    assert dash["templating"]["list"][1]["query"] == "inference,llm-pretrain,research"
    app = yaml.safe_load(sample_files["clusters/gpu-east/apps/50-monitoring.yaml"].split(b"---", 1)[1])
    assert app["spec"]["source"]["path"].endswith("platform/monitoring")


def test_dcgm_tenant_label_comes_from_the_node_label_not_a_list_of_nodes(sample_files):
    """The tenant of a GPU metric is the tenant label of its node (set by the apply step): the monitor
    names no node and no tenant, and the GPU Operator's own ServiceMonitor (no node metadata) is off."""
    gpu = yaml.safe_load(sample_files["clusters/gpu-east/platform/gpu-operator/values.yaml"])
    assert gpu["dcgmExporter"]["hpcJobMapping"] == {"enabled": True, "directory": monitoring.DCGM_JOB_MAPPING_DIR}
    assert gpu["dcgmExporter"]["serviceMonitor"] == {"enabled": False}
    (sm,) = yaml.safe_load_all(sample_files["clusters/gpu-east/platform/monitoring/dcgm-exporter.yaml"])
    assert sm["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert sm["spec"]["attachMetadata"] == {"node": True}
    assert sm["spec"]["namespaceSelector"] == {"matchNames": ["gpu-operator"]}
    (endpoint,) = sm["spec"]["endpoints"]
    (relabel,) = endpoint["relabelings"]
    assert relabel["sourceLabels"] == ["__meta_kubernetes_node_label_node_restriction_kubernetes_io_gpufleet_tenant"]
    assert relabel["targetLabel"] == "tenant" and "replacement" not in relabel
    text = sample_files["clusters/gpu-east/platform/monitoring/dcgm-exporter.yaml"].decode()
    assert "gpu0" not in text and "research" not in text


def _tolerations(obj, found):
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "tolerations" and isinstance(v, list):
                found += [t for t in v if isinstance(t, dict)]
            elif k == "enforceTolerations" and isinstance(v, list):
                for s in v:  # "key=value:Effect" / "key:Effect" / "key op value:Effect"
                    key = s.partition("=")[0]
                    found.append({"key": key.split(":")[0], "operator": "Equal", "effect": s.rsplit(":", 1)[-1]})
            else:
                _tolerations(v, found)
    elif isinstance(obj, list):
        for v in obj:
            _tolerations(v, found)


def test_no_rendered_toleration_tolerates_the_quarantine_taint(sample_files):
    """Workloads (NodeSets, Kueue flavors, vCluster pods) never land on a quarantined node; the GPU
    Operator's node agents (driver, device plugin, DCGM, NFD worker) must stay on it, or the node
    cannot be checked and returned."""
    found: list[dict] = []
    agents: list[dict] = []
    gpu_operator = "clusters/gpu-east/platform/gpu-operator/values.yaml"
    for rel, data in sample_files.items():
        if rel.endswith(".yaml"):
            for doc in yaml.safe_load_all(data):
                _tolerations(doc, agents if rel == gpu_operator else found)
    assert len(found) >= 8  # NodeSets, Kueue flavors, vCluster enforceTolerations, ...
    assert not [t for t in found if health.tolerates(t)], "a rendered toleration tolerates the GPU-health taint"
    values = yaml.safe_load(sample_files[gpu_operator])
    for where in (values["daemonsets"]["tolerations"], values["node-feature-discovery"]["worker"]["tolerations"]):
        assert [t for t in where if health.tolerates(t)], where
    # the check can fail
    assert health.tolerates({"operator": "Exists"})
    assert health.tolerates({"key": fence.QUARANTINE_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"})
    assert not health.tolerates({"key": fence.QUARANTINE_TAINT_KEY, "operator": "Exists", "effect": "NoExecute"})


def test_quarantine_plan_is_idempotent_and_keeps_pool_taints():
    pool_taint = {"key": "node-restriction.kubernetes.io/gpufleet-pool", "value": "pretrain", "effect": "NoSchedule"}
    node = {"metadata": {"name": "n1", "resourceVersion": "7"}, "spec": {"taints": [pool_taint]}, "status": {}}
    p = quarantine.plan(node, "quarantined", "XID 79")
    assert p["spec"]["spec"]["taints"] == [
        pool_taint,
        {"key": fence.QUARANTINE_TAINT_KEY, "value": "true", "effect": "NoSchedule"},
    ]
    assert p["spec"]["metadata"]["resourceVersion"] == "7"
    assert p["status"]["status"]["conditions"][0]["status"] == "True"
    done = {
        "metadata": {"name": "n1", "annotations": {quarantine.REASON_ANNOTATION: "XID 79"}},
        "spec": {"taints": p["spec"]["spec"]["taints"]},
        "status": {"conditions": [{"type": fence.QUARANTINE_CONDITION, "status": "True", "message": "XID 79"}]},
    }
    assert quarantine.plan(done, "quarantined", "XID 79") is None
    r = quarantine.plan(done, "resumed")
    assert r["spec"]["spec"]["taints"] == [pool_taint] and r["status"]["status"]["conditions"][0]["status"] == "False"
    assert quarantine.plan(node, "resumed") is None
    for bad in ("", "x" * 201, "a\nb", "$(reboot)", "`id`"):
        with pytest.raises(quarantine.HealthError):
            quarantine.plan(node, "quarantined", bad)
