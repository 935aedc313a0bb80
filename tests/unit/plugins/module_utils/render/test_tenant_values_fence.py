"""Tenant chart values: every allow-listed key keeps the fence the platform set.

For each key path of the allow-lists in model/tenant_values.py, the sample inventory's tenant sets
it to the largest value the schema accepts; the schema accepts it, and the rendered vcluster values
keep every platform-owned part (node selector, enforced tolerations, RBAC, sync, quota, policies,
exposure, the control plane's placement and image) byte for byte; the slurm values keep the NodeSet
placement, keys, config files and GPU limits. Keys outside the allow-list are refused with the
file and key; the platform's ``tenant_overrides`` can set them.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest
import yaml
from render_fixtures import REPO, SAMPLE

from ansible_collections.gpufleet.core.plugins.module_utils.errors import ModelError
from ansible_collections.gpufleet.core.plugins.module_utils.model import tenant_values as tv
from ansible_collections.gpufleet.core.plugins.module_utils.model.inventory import load_inventory
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import schema_issues, validate
from ansible_collections.gpufleet.core.plugins.module_utils.render.inputs import cluster_inputs
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants.slurm import slurm_values
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants.vcluster import vcluster_values
from ansible_collections.gpufleet.core.plugins.module_utils.versions import CHARTS

UPSTREAM = REPO.parent.parent / "shared" / "upstream" / "charts"
if not UPSTREAM.is_dir():
    UPSTREAM = __import__("pathlib").Path("/work/shared/upstream/charts")


def _max_value(schema: dict[str, Any]) -> Any:
    """The most a tenant can ask for under ``schema`` (a leaf of an allow-list)."""
    if "maxQuantity" in schema:
        return schema["maxQuantity"]
    if "enum" in schema:
        return schema["enum"][-1]
    if schema.get("type") == "boolean":
        return False
    if schema.get("type") == "integer":
        return schema["maximum"]
    if "anyOf" in schema:  # a slurm.conf option: a word
        return "bf_max_job_test=500,bf_window=4320"
    raise AssertionError(f"no test value for {schema}")


def _nest(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out: Any = value
    for k in reversed(path):
        out = {k: out}
    return out


def _get(d: Any, *path: str) -> Any:
    for k in path:
        d = d.get(k) if isinstance(d, dict) else None
    return d


@pytest.fixture(scope="module")
def base():
    raw = load_inventory(SAMPLE)
    fleet = validate(raw)
    cluster = fleet.clusters["gpu-east"]
    inputs = cluster_inputs(fleet, cluster, None)
    return raw, fleet, cluster, inputs


def _with(fleet, tenant: str, **values: Any):
    t = dataclasses.replace(fleet.tenants[tenant], **values)
    return dataclasses.replace(fleet, tenants={**fleet.tenants, tenant: t})


# what the platform sets in the vcluster values and a tenant's allow-listed key must not change
VCLUSTER_FENCE = [
    ("sync",),
    ("rbac",),
    ("policies",),
    ("networking",),
    ("plugins",),
    ("experimental",),
    ("deploy",),
    ("integrations",),
    ("exportKubeConfig",),
    ("controlPlane", "proxy"),
    ("controlPlane", "statefulSet", "scheduling"),
    ("controlPlane", "statefulSet", "persistence"),
    ("controlPlane", "statefulSet", "image"),
    ("controlPlane", "statefulSet", "security"),
    ("controlPlane", "distro"),
]
SLURM_FENCE = [
    ("nodesets",),
    ("slurmKey",),
    ("jwtKey",),
    ("configFiles",),
    ("partitions",),
    ("accounting",),
    ("clusterName",),
    ("priorityClass",),
    ("vendor",),
    ("controller", "persistence"),
    ("controller", "podSpec"),
    ("loginsets", "main", "service"),
    ("loginsets", "main", "podSpec"),
    ("loginsets", "main", "replicas"),
]


@pytest.mark.parametrize("path", [p for p, _unused in tv.leaves(tv.VCLUSTER)], ids=".".join)
def test_vcluster_allowed_key_keeps_fence(base, path: tuple[str, ...]) -> None:
    raw, fleet, cluster, inputs = base
    leaf = dict(tv.leaves(tv.VCLUSTER))[path]
    value = _max_value(leaf)
    tenant = "research"
    entry = copy.deepcopy(raw)
    entry.data["gpufleet_tenants"][1]["vcluster"] = {"values": _nest(path, value)}
    assert schema_issues(entry) == [], "the allow-listed value must validate"
    before = vcluster_values(fleet, cluster, fleet.tenants[tenant], inputs)
    changed = _with(fleet, tenant, vcluster_values=_nest(path, value))
    after = vcluster_values(changed, cluster, changed.tenants[tenant], inputs)
    assert _get(after, *path) == value
    for fence in VCLUSTER_FENCE:
        assert _get(after, *fence) == _get(before, *fence), fence
    # the fence itself is there: the node selector of the tenant's pools and enforced tolerations
    assert _get(after, "sync", "fromHost", "nodes", "selector", "labels")
    assert _get(after, "sync", "toHost", "pods", "enforceTolerations")
    assert _get(after, "policies", "resourceQuota", "enabled") is True
    assert _get(after, "policies", "resourceQuota", "quota", "requests.nvidia.com/gpu")
    assert "rbac" not in after and "experimental" not in after


@pytest.mark.parametrize("path", [p for p, _unused in tv.leaves(tv.SLURM)], ids=".".join)
def test_slurm_allowed_key_keeps_fence(base, path: tuple[str, ...]) -> None:
    raw, fleet, cluster, inputs = base
    leaf = dict(tv.leaves(tv.SLURM))[path]
    value = _max_value(leaf)
    tenant = "research"
    entry = copy.deepcopy(raw)
    entry.data["gpufleet_tenants"][1]["slurm"]["values"] = _nest(path, value)
    assert schema_issues(entry) == [], "the allow-listed value must validate"
    before, _unused = slurm_values(fleet, cluster, fleet.tenants[tenant], inputs)
    changed = _with(fleet, tenant, slurm_values=_nest(path, value))
    after, _unused = slurm_values(changed, cluster, changed.tenants[tenant], inputs)
    assert _get(after, *path) == value
    for fence in SLURM_FENCE:
        assert _get(after, *fence) == _get(before, *fence), fence
    for key, v in before["controller"]["extraConfMap"].items():  # gpufleet's slurm.conf options stay
        assert after["controller"]["extraConfMap"][key] == v, key


def test_allow_lists_name_only_upstream_keys() -> None:
    """Every allow-listed key exists in the chart's upstream values.yaml (or is a slurm.conf option)."""
    for chart, schema in tv.ALLOW.items():
        up = yaml.safe_load((UPSTREAM / chart / "values.yaml").read_text(encoding="utf-8"))
        for path, _leaf in tv.leaves(schema):
            if path[:2] == ("controller", "extraConfMap"):
                continue
            if path[0] == "loginsets":  # an empty map upstream (the chart documents its keys in comments)
                continue
            if "resources" in path:  # container resources: a Kubernetes map, checked up to the key
                path = path[: path.index("resources") + 1]
            parent = _get(up, *path[:-1])
            assert isinstance(parent, dict) and path[-1] in parent, path


def test_reviewed_versions_are_the_pinned_ones() -> None:
    """Bumping a chart forces a review of its tenant allow-list (update REVIEWED after it)."""
    for chart, version in tv.REVIEWED.items():
        assert CHARTS[chart]["version"] == version, chart


@pytest.mark.parametrize(
    "values",
    [
        {"experimental": {"deploy": {"host": {"manifests": "kind: ClusterRoleBinding"}}}},
        {"sync": {"fromHost": {"nodes": {"selector": {"all": True}}}}},
        {"sync": {"toHost": {"pods": {"enforceTolerations": []}}}},
        {"sync": {"toHost": {"namespaces": {"enabled": True}}}},
        {"rbac": {"clusterRole": {"extraRules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}}},
        {"policies": {"resourceQuota": {"enabled": False}}},
        {"controlPlane": {"statefulSet": {"image": {"repository": "evil/image"}}}},
        {"controlPlane": {"statefulSet": {"scheduling": {"nodeSelector": {}}}}},
        {"controlPlane": {"statefulSet": {"resources": {"limits": {"cpu": "1e9"}}}}},
        {"controlPlane": {"statefulSet": {"resources": {"limits": {"memory": "1Ti"}}}}},
        {"controlPlane": {"coredns": {"deployment": {"replicas": 3.0}}}},
        {"controlPlane": {"coredns": {"deployment": {"replicas": True}}}},
        {"plugins": {"x": {"image": "evil"}}},
        {"telemetry": "off"},
    ],
)
def test_vcluster_outside_allow_list_refused(base, values: dict[str, Any]) -> None:
    raw = copy.deepcopy(base[0])
    raw.data["gpufleet_tenants"][1]["vcluster"] = {"values": values}
    issues = schema_issues(raw)
    assert issues, values
    assert all(i.path.startswith("gpufleet_tenants[1].vcluster.values") for i in issues), issues
    assert all(i.file.endswith("tenants.yml") for i in issues), issues


def test_platform_override_sets_what_a_tenant_may_not(base) -> None:
    raw = copy.deepcopy(base[0])
    size = {"controlPlane": {"statefulSet": {"persistence": {"volumeClaim": {"size": "20Gi"}}}}}
    raw.data["gpufleet_clusters"][0]["tenant_overrides"] = {
        "research": {"reason": "bigger etcd for many jobs", "vcluster": {"values": size}}
    }
    fleet = validate(raw)
    cluster = fleet.clusters["gpu-east"]
    got = vcluster_values(fleet, cluster, fleet.tenants["research"], base[3])
    assert _get(got, "controlPlane", "statefulSet", "persistence", "volumeClaim", "size") == "20Gi"
    assert _get(got, "sync", "fromHost", "nodes", "selector")  # the platform's own keys stay
    # the same in the tenant's own entry is refused
    raw2 = copy.deepcopy(base[0])
    raw2.data["gpufleet_tenants"][1]["vcluster"] = {"values": size}
    with pytest.raises(ModelError, match=r"vcluster\.values\.controlPlane\.statefulSet.*tenant_overrides"):
        validate(raw2)


def test_override_needs_a_reason_and_a_tenant_of_the_cluster(base) -> None:
    raw = copy.deepcopy(base[0])
    raw.data["gpufleet_clusters"][0]["tenant_overrides"] = {"nobody": {"reason": "x"}, "research": {}}
    with pytest.raises(ModelError) as e:
        validate(raw)
    text = str(e.value)
    assert "tenant_overrides.nobody: no tenant 'nobody'" in text
    assert "tenant_overrides.research" in text and "'reason' is required" in text


def test_other_chart_version_refuses_tenant_values(base) -> None:
    raw = copy.deepcopy(base[0])
    raw.data["gpufleet_versions"] = {"vcluster": {"version": "0.99.0"}}
    raw.data["gpufleet_tenants"][1]["vcluster"] = {"values": {"telemetry": {"enabled": False}}}
    with pytest.raises(ModelError, match=r"gpufleet_tenants\[1\]\.vcluster\.values: .*reviewed|0\.36\.1"):
        validate(raw)


def test_role_variable_prefixes_are_the_roles() -> None:
    """model/variables.py refuses every role's variables in the inventory: the list is the roles/ folder."""
    from ansible_collections.gpufleet.core.plugins.module_utils.model.variables import ROLES

    assert sorted(ROLES) == sorted(p.name for p in (REPO / "roles").iterdir() if p.is_dir())
