"""Slurm accounting: the inventory option (defaults, hostile strings, cross references) and what the
renderer makes of it (slurm.conf keys, chart values, MariaDB CR, sacctmgr script, Secrets, report).

That Slurm itself accepts and enforces the result is tests/integration/slurm/test_slurm_accounting.py.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml
from render_fixtures import model_errors

from ansible_collections.gpufleet.core.plugins.module_utils.model.accounting_model import Accounting, build_accounting
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Tenant
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants import accounting as ra

REPO = Path(__file__).resolve().parents[5]
SAMPLE = REPO / "inventories" / "sample"


def set_accounting(inv: Path, spec, tenant: str = "llm-pretrain") -> None:
    f = inv / "group_vars" / "all" / "tenants.yml"
    data = yaml.safe_load(f.read_text())
    for t in data["gpufleet_tenants"]:
        if t["name"] == tenant:
            t.setdefault("slurm", {})["accounting"] = spec
    f.write_text(yaml.safe_dump(data, sort_keys=False))


def tenant(spec) -> Tenant:
    return Tenant(name="llm-pretrain", cluster="c", pools=("p",), accounting=build_accounting(spec))


# ------------------------------------------------------------------ model


def test_defaults_and_sample():
    fleet = load_fleet(SAMPLE)
    assert fleet.tenants["inference"].accounting == Accounting()  # default: on, no accounts
    research = fleet.tenants["research"].accounting
    assert research.enabled and research.database.type == "mariadb-operator"
    assert research.enforce == ("associations", "limits", "qos")
    assert [q.name for q in research.qos] == ["normal", "debug"]
    pre = fleet.tenants["llm-pretrain"].accounting
    assert pre.default_account == "pretrain" and pre.weights["jobsize"] == 500
    assert [a.name for a in pre.accounts] == ["pretrain", "evals"]
    assert build_accounting(False).enabled is False
    assert build_accounting(True) == Accounting()


@pytest.mark.parametrize(
    ("spec", "where"),
    [
        ({"qos": [{"name": "normal x"}]}, "qos.0.name"),
        ({"qos": [{"name": "a=b"}]}, "qos.0.name"),
        ({"qos": [{"name": "a\nPriorityType=priority/basic"}]}, "qos.0.name"),
        ({"qos": [{"name": "ok", "max_wall": "1 day"}]}, "qos.0.max_wall"),
        ({"qos": [{"name": "ok", "max_wall": "10:00\nPriorityType=x"}]}, "qos.0.max_wall"),
        ({"qos": [{"name": "ok", "max_wall": "2-00:00:00,x"}]}, "qos.0.max_wall"),
        ({"qos": [{"name": "ok", "max_tres_per_job": {"gres/gpu=1,cpu": 2}}]}, "qos.0.max_tres_per_job"),
        ({"qos": [{"name": "ok", "max_tres_per_job": {"cpu": "1,node=9"}}]}, "qos.0.max_tres_per_job.cpu"),
        ({"qos": [{"name": "ok", "max_tres_per_job": {"cpu": -5}}]}, "qos.0.max_tres_per_job.cpu"),
        ({"qos": [{"name": "ok", "priority": "high"}]}, "qos.0.priority"),
        ({"accounts": [{"name": "a", "users": ["root;rm -rf /"]}]}, "accounts.0.users.0"),
        ({"accounts": [{"name": "a", "users": ["$(id)"]}]}, "accounts.0.users.0"),
        ({"accounts": [{"name": "A'b"}]}, "accounts.0.name"),
        ({"accounts": [{"name": "a", "fairshare": 0}]}, "accounts.0.fairshare"),
        ({"database": {"type": "external", "host": "db.example; drop"}}, "database.host"),
        ({"database": {"name": "slurm acct"}}, "database.name"),
        ({"database": {"type": "sqlite"}}, "database.type"),
        ({"enforce": ["associations", "everything"]}, "enforce.1"),
        ({"fairshare": {"weights": {"fairshare": -1}}}, "fairshare.weights.fairshare"),
        ({"fairshare": {"decay_half_life": "7 days"}}, "fairshare.decay_half_life"),
        ({"unknown": 1}, "unknown"),
        ("yes", ""),
    ],
)
def test_hostile_values_rejected_with_key_path(inv, spec, where):
    set_accounting(inv, spec)
    errs = model_errors(inv)
    base = "gpufleet_tenants[0].slurm.accounting"
    want = base + "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in where.split(".") if p)
    assert any(want in e and "tenants.yml" in e for e in errs), (want, errs)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"accounts": [{"name": "a", "qos": ["gold"]}]}, "QOS 'gold' is not defined"),
        ({"qos": [{"name": "q"}], "accounts": [{"name": "a", "qos": ["q"], "default_qos": "x"}]}, "default_qos 'x'"),
        ({"accounts": [{"name": "a", "parent": "nobody"}]}, "parent account 'nobody' is not defined"),
        ({"accounts": [{"name": "a", "parent": "b"}, {"name": "b", "parent": "a"}]}, "is its own ancestor"),
        ({"accounts": [{"name": "a"}, {"name": "a"}]}, "account 'a' defined twice"),
        ({"accounts": [{"name": "root"}]}, "account 'root' is Slurm's own"),
        ({"qos": [{"name": "q"}, {"name": "q"}]}, "QOS 'q' defined twice"),
        ({"default_account": "x", "accounts": [{"name": "a"}]}, "default_account 'x' is not defined"),
        ({"database": {"type": "external"}}, "an external database needs a host"),
        ({"database": {"host": "db"}}, "host is only for type: external"),
        ({"enforce": ["limits"]}, "needs 'associations'"),
    ],
)
def test_cross_references(inv, spec, message):
    set_accounting(inv, spec)
    errs = model_errors(inv)
    assert any(message in e for e in errs), errs


def test_published_schema_has_the_option():
    import json

    from ansible_collections.gpufleet.core.plugins.module_utils.model.schema import SCHEMA

    published = json.loads((REPO / "docs" / "fleet.schema.json").read_text())
    assert published == json.loads(json.dumps(SCHEMA))
    tenant_slurm = published["properties"]["gpufleet_tenants"]["items"]["properties"]["slurm"]["properties"]
    assert tenant_slurm["accounting"]["default"] is True


# ------------------------------------------------------------------ render


SPEC = {
    "fairshare": {"weights": {"fairshare": 5000}, "decay_half_life": "14-0"},
    "default_account": "b",
    "qos": [
        {"name": "normal", "priority": 5, "max_wall": "1-00:00:00", "max_tres_per_job": {"gres/gpu": 16}},
        {"name": "big", "grp_tres": {"gres/gpu:h100": 64, "mem": "2T"}, "deny_on_limit": True},
    ],
    "accounts": [
        {"name": "a", "fairshare": 3, "qos": ["normal", "big"], "default_qos": "normal", "users": ["u1", "u2"]},
        {"name": "b", "parent": "a", "users": ["u2"], "max_wall": "12:00:00"},
    ],
}


def test_slurm_conf_keys():
    conf = ra.slurm_conf(build_accounting(SPEC))
    lines = ra.conf_lines(conf)
    assert "PriorityType=priority/multifactor" in lines
    assert "AccountingStorageEnforce=associations,limits,qos" in lines
    assert "PriorityWeightFairshare=5000" in lines and "PriorityWeightQOS=2000" in lines
    assert "PriorityDecayHalfLife=14-0" in lines
    # every TRES a limit names is tracked, or the limit would do nothing
    assert "AccountingStorageTRES=gres/gpu,gres/gpu:h100" in lines
    assert all("\n" not in line and " " not in line for line in lines)


def test_chart_values_reference_secrets_only():
    vals = ra.chart_values(build_accounting(SPEC))
    assert vals["storageConfig"]["passwordKeyRef"] == ra.DB_PASSWORD_SECRET
    assert vals["storageConfig"]["host"] == "slurm-accounting-db.slurm.svc"
    ext = ra.chart_values(build_accounting({"database": {"type": "external", "host": "db.example", "port": 3307}}))
    assert ext["storageConfig"]["host"] == "db.example" and ext["storageConfig"]["port"] == 3307
    assert "password" not in str(vals).replace("passwordKeyRef", "").replace("'password'", "")
    assert ra.secrets(build_accounting({"database": {"type": "external", "host": "h"}})) == [ra.DB_PASSWORD_SECRET]
    assert ra.secrets(build_accounting(False)) == []


def test_mariadb_cr():
    cr = ra.mariadb(build_accounting({"database": {"storage": "64Gi", "storage_class": "local-path"}}))
    assert cr["apiVersion"] == "k8s.mariadb.com/v1alpha1" and cr["kind"] == "MariaDB"
    spec = cr["spec"]
    assert spec["passwordSecretKeyRef"] == {**ra.DB_PASSWORD_SECRET, "generate": False}
    assert spec["rootPasswordSecretKeyRef"] == {**ra.DB_ROOT_SECRET, "generate": False}
    assert spec["storage"] == {"size": "64Gi", "storageClassName": "local-path"}
    assert "innodb_lock_wait_timeout=900" in spec["myCnf"]


def test_sacctmgr_commands():
    cmds = ra.sacctmgr_commands(tenant(SPEC))
    assert cmds[0] == ["add", "cluster", "llm_pretrain"]
    normal = next(c for c in cmds if c[:4] == ["modify", "qos", "where", "name=normal"])
    assert "MaxTRESPerJob=billing=-1,cpu=-1,gres/gpu=16,gres/gpu:h100=-1,mem=-1,node=-1" in normal
    assert "MaxWall=1-00:00:00" in normal and "Priority=5" in normal and "Flags=-1" in normal
    big = next(c for c in cmds if c[:4] == ["modify", "qos", "where", "name=big"])
    assert "Flags=DenyOnLimit" in big and "MaxWall=-1" in big
    assert "GrpTRES=billing=-1,cpu=-1,gres/gpu=-1,gres/gpu:h100=64,mem=2T,node=-1" in big
    mods = [c for c in cmds if c[:4] == ["modify", "account", "where", "name=b"]]
    # the parent alone first (26.05 ignores a whole modify that sets an unchanged Parent), then the rest
    assert mods[0][-1:] == ["Parent=a"] and not any(x.startswith("Parent=") for x in mods[1])
    b = mods[1]
    assert "MaxWall=12:00:00" in b and "DefaultQOS=-1" in b
    assert not any(x.startswith("QOS=") for x in b)  # inherits its parent's
    assert ["add", "user", "u2", "Account=b", "Cluster=llm_pretrain"] in cmds
    # the tenant's default_account wins for a user in several accounts
    assert ["modify", "user", "where", "name=u2", "set", "DefaultAccount=b"] in cmds
    assert ["modify", "user", "where", "name=u1", "set", "DefaultAccount=a"] in cmds
    # accounts come after the QOS they name, parents before children
    order = [c[2] for c in cmds if c[:2] == ["add", "account"]]
    assert order == ["a", "b"]


def test_script_quotes_every_argument_and_is_deterministic():
    script = ra.sacctmgr_script(tenant(SPEC))
    assert script == ra.sacctmgr_script(tenant(SPEC))
    body = [line for line in script.splitlines() if line.startswith(("run ", "resolves "))]
    assert len(body) == len(ra.sacctmgr_commands(tenant(SPEC)))
    for line, cmd in zip(body, ra.sacctmgr_commands(tenant(SPEC)), strict=True):
        words = shlex.split(line)
        if words[0] == "resolves":  # a user command runs only when the user resolves (directory)
            assert words[1] == ra.user_of(cmd) and words[2:4] == ["&&", "run"], line
            words = words[3:]
        assert words[1:] == cmd


def test_job_named_after_script_hash():
    objs = ra.apply_objects(tenant(SPEC))
    cm, job = objs
    assert cm["data"][ra.SCRIPT_KEY] == ra.sacctmgr_script(tenant(SPEC))
    other = ra.apply_objects(tenant({**SPEC, "default_account": "a"}))[1]
    assert job["metadata"]["name"] != other["metadata"]["name"]
    assert job["metadata"]["name"] == ra.apply_objects(tenant(SPEC))[1]["metadata"]["name"]
    vols = {v["name"]: v for v in job["spec"]["template"]["spec"]["volumes"]}
    assert vols["slurm-key"]["projected"]["sources"][0]["secret"]["name"] == "slurm-auth-slurm"


def test_report_lines():
    assert "off" in ra.report_lines(tenant(False))[0]
    lines = ra.report_lines(tenant(SPEC))
    assert "AccountingStorageEnforce `associations,limits,qos`" in lines[0]
    assert "`big`" in lines[1] and "GrpTRES gres/gpu:h100=64,mem=2T" in lines[1]
    assert "`a` (fairshare 3, QOS normal,big, 2 users)" in lines[2]


def test_rendered_tree_accounting_on_and_off(tmp_path):
    from render_fixtures import make_inventory

    from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_inventory

    inv = make_inventory(tmp_path)
    set_accounting(inv, False, tenant="research")
    files = render_inventory(inv).files
    base = "clusters/gpu-east/tenants/"
    on = yaml.safe_load(files[base + "llm-pretrain/slurm/values.yaml"])
    off = yaml.safe_load(files[base + "research/slurm/values.yaml"])
    assert on["accounting"]["enabled"] is True and off["accounting"] == {"enabled": False}
    assert "PriorityType" in on["controller"]["extraConfMap"]
    assert "PriorityType" not in off["controller"]["extraConfMap"]
    assert base + "llm-pretrain/accounting/accounts.yaml" in files
    assert not any(k.startswith(base + "research/accounting") for k in files)
    assert not any(k.startswith(base + "research/mariadb-operator") for k in files)
    vc_on = yaml.safe_load(files[base + "llm-pretrain/vcluster/values.yaml"])
    vc_off = yaml.safe_load(files[base + "research/vcluster/values.yaml"])
    # the database Secrets are written inside the vCluster by the apply step: never synced from the host
    assert "secrets" not in vc_on["sync"]["fromHost"] and "secrets" not in vc_off["sync"]["fromHost"]
    assert any(k.endswith("llm-pretrain/apps/7-accounting.yaml") for k in files)
    assert not any(k.endswith("research/apps/7-accounting.yaml") for k in files)
    off, on = (files[f"clusters/gpu-east/tenants/{t}/REPORT.md"].decode() for t in ("research", "llm-pretrain"))
    assert "Slurm accounting: off" in off and "Slurm accounting: slurmdbd on MariaDB" in on
    # no secret value anywhere: only references
    for rel, data in files.items():
        assert b"StoragePass" not in data, rel
