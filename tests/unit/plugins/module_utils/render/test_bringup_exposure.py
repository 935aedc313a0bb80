"""Ingress as an explicit inventory option, and the quota/storage values that
follow from it, rendered; hostile ``expose`` values are refused naming file and key.

Fails before the fix: ``expose`` was not in the schema, the network policy admitted nothing from
outside the tenant, the login Service stayed the chart's open LoadBalancer, and the quota kept the
chart's ``requests.storage: 100Gi`` / ``services.nodeports: 0``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from render_fixtures import make_inventory

from ansible_collections.gpufleet.core.plugins.module_utils.errors import ModelError
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet

C = "clusters/gpu-east"


def edit_tenant(inv: Path, name: str, **changes) -> None:
    path = inv / "group_vars" / "all" / "tenants.yml"
    data = yaml.safe_load(path.read_text())
    for t in data["gpufleet_tenants"]:
        if t["name"] == name:
            t.update(changes)
            for k, v in list(t.items()):
                if v is None:
                    del t[k]
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def policy(files, t: str) -> dict:
    return yaml.safe_load(files[f"{C}/tenants/{t}/host/network-policy.yaml"])


def outside_rules(files, t: str) -> list[dict]:
    return [
        r
        for r in policy(files, t)["spec"]["ingress"]
        if "fromCIDRSet" in r or ("fromEntities" in r and r["fromEntities"] != ["host"])
    ]


def test_default_is_closed(files) -> None:
    assert outside_rules(files, "llm-pretrain") == []
    slurm = yaml.safe_load(files[f"{C}/tenants/llm-pretrain/slurm/values.yaml"])
    assert slurm["loginsets"]["main"]["service"]["spec"] == {"type": "ClusterIP"}
    quota = yaml.safe_load(files[f"{C}/tenants/llm-pretrain/vcluster/values.yaml"])["policies"]["resourceQuota"][
        "quota"
    ]
    assert quota["services.loadbalancers"] == 0 and quota["services.nodeports"] == 0


def test_login_exposed_from_the_listed_networks_only(files) -> None:
    (rule,) = outside_rules(files, "research")
    assert rule["fromCIDRSet"] == [{"cidr": "10.20.0.0/16"}]
    assert rule["toPorts"] == [{"ports": [{"port": "22", "protocol": "TCP"}]}]
    spec = yaml.safe_load(files[f"{C}/tenants/research/slurm/values.yaml"])["loginsets"]["main"]["service"]["spec"]
    assert spec == {
        "type": "LoadBalancer",
        "loadBalancerSourceRanges": ["10.20.0.0/16"],
        "externalTrafficPolicy": "Local",
    }
    quota = yaml.safe_load(files[f"{C}/tenants/research/vcluster/values.yaml"])["policies"]["resourceQuota"]["quota"]
    assert (quota["services.loadbalancers"], quota["services.nodeports"]) == (1, 1)
    assert quota["requests.storage"] == "20505Gi"  # 20Ti home + 5Gi vCluster + 4Gi slurmctld + 16Gi MariaDB


def test_inference_ports(files) -> None:
    (rule,) = outside_rules(files, "inference")
    assert [c["cidr"] for c in rule["fromCIDRSet"]] == ["10.20.0.0/16", "192.0.2.0/24"]
    assert rule["toPorts"][0]["ports"] == [{"port": "8000", "protocol": "TCP"}]
    quota = yaml.safe_load(files[f"{C}/tenants/inference/vcluster/values.yaml"])["policies"]["resourceQuota"]["quota"]
    assert quota["requests.storage"] == "5Gi" and quota["services.nodeports"] == 1


@pytest.mark.parametrize(
    ("tenant", "expose", "key", "message"),
    [
        ("research", {"login": "loadbalancer"}, "expose.from_cidrs", "required"),
        ("research", {"login": "loadbalancer", "from_cidrs": ["10.20.0.1/16"]}, "from_cidrs[0]", "host bits"),
        ("research", {"login": "loadbalancer", "from_cidrs": ["10.20.0.0"]}, "from_cidrs[0]", "CIDR"),
        ("research", {"login": "loadbalancer", "from_cidrs": [" 10.0.0.0/8"]}, "from_cidrs[0]", "CIDR"),
        ("research", {"login": "loadbalancer", "from_cidrs": ["10.0.0.0/33"]}, "from_cidrs[0]", "valid"),
        ("research", {"login": "loadbalancer", "from_cidrs": ["2001:DB8::/32"]}, "from_cidrs[0]", "canonically"),
        ("research", {"login": "loadbalancer", "from_cidrs": ["10.0.0.0/8; rm -rf /"]}, "from_cidrs[0]", ""),
        ("research", {"login": "ssh", "from_cidrs": ["10.0.0.0/8"]}, "expose.login", ""),
        ("research", {"inference": [8000], "from_cidrs": ["10.0.0.0/8"]}, "expose.inference", "Kubernetes pool"),
        ("inference", {"login": "loadbalancer", "from_cidrs": ["10.0.0.0/8"]}, "expose.login", "Slurm pool"),
        ("inference", {"inference": [0], "from_cidrs": ["10.0.0.0/8"]}, "expose.inference[0]", ""),
        ("inference", {"inference": [70000], "from_cidrs": ["10.0.0.0/8"]}, "expose.inference[0]", ""),
        ("inference", {"inference": ["8000"], "from_cidrs": ["10.0.0.0/8"]}, "expose.inference[0]", ""),
        ("inference", {"inference": [True], "from_cidrs": ["10.0.0.0/8"]}, "expose.inference[0]", ""),
        ("inference", {"inference": [8000, 8000], "from_cidrs": ["10.0.0.0/8"]}, "expose.inference", ""),
        ("inference", {"inference": [8000], "from_cidrs": ["10.0.0.0/8"], "world": True}, "expose", ""),
    ],
)
def test_hostile_expose_is_refused(tmp_path, tenant, expose, key, message) -> None:
    inv = make_inventory(tmp_path)
    edit_tenant(inv, tenant, expose=expose)
    with pytest.raises(ModelError) as err:
        load_fleet(inv)
    text = str(err.value)
    assert "tenants.yml" in text and "gpufleet_tenants[" in text and key in text and message in text, text
