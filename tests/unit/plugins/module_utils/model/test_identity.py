"""The tenant directory (identity): grammars, merging with the fleet default, escaping, sssd.conf."""

from __future__ import annotations

import configparser
import ipaddress
from pathlib import Path

import pytest
from render_fixtures import edit_vars, model_errors

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.model import identity as mi
from ansible_collections.gpufleet.core.plugins.module_utils.model.grammar import fullmatch
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants import sssd

REPO = Path(__file__).resolve().parents[5]
SAMPLE = REPO / "inventories" / "sample"


def test_sample_tenants_inherit_the_fleet_directory():
    fleet = load_fleet(SAMPLE)
    pre, res = fleet.tenants["llm-pretrain"].identity, fleet.tenants["research"].identity
    assert pre.login_groups == ("llm-pretrain",)  # default: the group named after the tenant
    assert res.login_groups == ("research", "research-students")
    assert pre.uris == res.uris == ("ldaps://ldap1.example.org", "ldaps://ldap2.example.org")
    assert pre.bind_dn == "cn=sssd-reader,ou=services,dc=example,dc=org" and pre.bind_secret == "slurm-identity-bind"
    assert pre.tls_ca_pem.startswith("-----BEGIN CERTIFICATE-----")
    assert fleet.pools["research-batch"].slurm.allow_groups == ("research",)


def _no_users(d: dict) -> None:
    for t in d["gpufleet_tenants"]:
        for a in ((t.get("slurm") or {}).get("accounting") or {}).get("accounts") or []:
            a["users"] = []


def test_identity_false_means_local_users(inv):
    edit_vars(inv, "tenants.yml", lambda d: d["gpufleet_tenants"][0].update(identity=False))
    # Slurm users without a directory: the accounts Job could resolve none of them (it would exit 3)
    errs = model_errors(inv)
    assert len(errs) == 2 and all("users need a directory" in e for e in errs), errs
    assert any("gpufleet_tenants[0].slurm.accounting.accounts[1].users" in e for e in errs), errs
    edit_vars(inv, "tenants.yml", _no_users)
    assert load_fleet(inv).tenants["llm-pretrain"].identity is None
    (inv / "group_vars" / "all" / "identity.yml").unlink()
    edit_vars(inv, "tenants.yml", lambda d: d["gpufleet_tenants"][1].pop("identity"))
    assert all(t.identity is None for t in load_fleet(inv).tenants.values())  # nothing anywhere: off


def test_no_fleet_default_tenant_must_say_everything(inv):
    (inv / "group_vars" / "all" / "identity.yml").unlink()
    errs = model_errors(inv)  # research names only its login groups
    # and llm-pretrain (no identity of its own) is left without a directory for its users
    assert (
        sum("gpufleet_tenants[0].slurm.accounting.accounts" in e and "users need a directory" in e for e in errs) == 2
    )
    errs = [e for e in errs if "users need a directory" not in e]
    assert len(errs) == 4, errs
    for key in ("type", "domain", "uris", "search_base"):
        assert any(f"gpufleet_tenants[1].identity: {key} is required" in e for e in errs), errs


@pytest.mark.parametrize(
    ("uri", "start_tls", "ok"),
    [
        ("ldaps://ldap.example.org", False, True),
        ("ldaps://ldap.example.org:636/", False, True),
        ("ldap://127.0.0.1:3389", False, True),
        ("ldap://localhost", False, True),
        ("ldap://[::1]:389", False, True),
        ("ldap://ldap.example.org", True, True),
        ("ldap://ldap.example.org", False, False),
        ("ldap://10.1.2.3", False, False),
        ("ldap://127.0.0.1.evil.example", False, False),
        ("ldaps://ldap.example.org", True, False),
        ("ldaps://ldap.example.org:70000", False, False),
    ],
)
def test_uri_rule(uri, start_tls, ok):
    assert fullmatch(mi.URI, uri)
    assert (mi.uri_problem(uri, start_tls) is None) == ok


def test_loopback_is_the_special_address_tables_not_the_python_releases(monkeypatch: pytest.MonkeyPatch) -> None:
    # Python 3.13 counts the IPv4-mapped ::ffff:127.0.0.1 as loopback, earlier releases do not: with the
    # 3.13 answer patched in, the decision stays the table's (model/special_addresses.py)
    monkeypatch.setattr(ipaddress.IPv6Address, "is_loopback", property(lambda _self: True))
    monkeypatch.setattr(ipaddress.IPv4Address, "is_loopback", property(lambda _self: True))
    for uri in ("ldap://[::ffff:127.0.0.1]", "ldap://[::ffff:7f00:1]:389", "ldap://10.0.0.1"):
        assert mi.uri_problem(uri, False) is not None, uri
    for uri in ("ldap://[::1]", "ldap://[0:0:0:0:0:0:0:1]:389", "ldap://127.1.2.3"):
        assert mi.uri_problem(uri, False) is None, uri


@pytest.mark.parametrize(
    "uri", ["ldapi:///var/run/x", "ldaps://h/dc=x??sub?(uid=*)", "ldaps://h\n", "http://h", "ldaps://user@h"]
)
def test_uri_grammar_refuses(uri):
    assert not fullmatch(mi.URI, uri)


@pytest.mark.parametrize(
    ("dn", "ok"),
    [
        ("dc=example,dc=org", True),
        ("cn=Smith\\, John,ou=People,dc=example,dc=org", True),
        ("cn=a b+uid=x,dc=example,dc=org", True),
        ("2.5.4.3=x,dc=org", True),
        ("ou=people,dc=example,dc=org?subtree?(uid=*)", False),
        ("cn=x)(uid=*,dc=org", False),
        ("cn=*,dc=org", False),
        ("cn=x,dc=org\nldap_access_filter = x", False),
        ("dc=org,", False),
        ("cn=a\\\\,dc=org", True),
    ],
)
def test_dn_grammar(dn, ok):
    assert fullmatch(mi.DN, dn) == ok


def test_filter_escaping_rfc4515_examples():
    # RFC 4515 section 4 examples
    assert mi.escape_filter_value("Parens R Us (for all your parenthetical needs)") == (
        "Parens R Us \\28for all your parenthetical needs\\29"
    )
    assert mi.escape_filter_value("*") == "\\2a"
    assert mi.escape_filter_value("C:\\MyFile") == "C:\\5cMyFile"
    assert mi.escape_filter_value("\x00\x00\x00\x04") == "\\00\\00\\00\\04"
    assert mi.escape_filter_value("Lučić") == "Lu\\c4\\8di\\c4\\87"


def test_dn_escaping_rfc4514():
    assert mi.escape_dn_value("Sue, Grabbit and Runn") == "Sue\\, Grabbit and Runn"
    assert mi.escape_dn_value("#x ") == "\\#x\\ "
    assert mi.escape_dn_value('a+b="c"<d>;') == 'a\\+b\\=\\"c\\"\\<d\\>\\;'


def _ident(**kw) -> mi.Identity:
    base = {
        "type": "ldap",
        "domain": "example.org",
        "uris": ("ldaps://ldap.example.org",),
        "search_base": "dc=example,dc=org",
        "login_groups": ("team-a",),
        "group_search_base": "ou=groups,dc=example,dc=org",
    }
    return mi.Identity(**{**base, **kw})


def test_filters_are_built_and_escaped_even_past_the_grammar():
    # the grammar already refuses these names; the renderer escapes anyway (defence in depth)
    evil = _ident(login_groups=("x)(uid=*", "a,b"))
    f = sssd.membership_filter(evil)
    assert f == (
        "(|(memberOf=cn=x\\29\\28uid\\5c=\\2a,ou=groups,dc=example,dc=org)(memberOf=cn=a\\5c,b,ou=groups,dc=example,dc=org))"
    )
    assert f.count("(") == f.count(")") == 3
    ad = sssd.membership_filter(_ident(type="ad", schema="ad"))
    assert ad == "(memberOf:1.2.840.113556.1.4.1941:=cn=team-a,ou=groups,dc=example,dc=org)"


def test_sssd_conf_is_ini_and_holds_no_password():
    conf = sssd.sssd_conf("t", _ident(bind_dn="cn=reader,dc=example,dc=org", tls_ca_pem="PEM"))
    cp = configparser.ConfigParser(interpolation=None)
    cp.read_string(conf)
    dom = cp["domain/example.org"]
    assert cp["sssd"]["services"] == "nss, pam, ssh"
    assert dom["ldap_uri"] == "ldaps://ldap.example.org"
    assert dom["ldap_tls_reqcert"] == "demand"
    assert dom["ldap_tls_cacert"] == f"{sssd.CA_DIR}/{sssd.CA_KEY}"
    assert dom["ldap_access_filter"] == "(memberOf=cn=team-a,ou=groups,dc=example,dc=org)"
    assert dom["ldap_user_search_base"] == "dc=example,dc=org?subtree?(memberOf=cn=team-a,ou=groups,dc=example,dc=org)"
    assert dom["override_homedir"] == "/home/%u"
    assert "ldap_default_authtok" not in dom and dom["ldap_default_authtok_type"] == "password"
    no_keys = configparser.ConfigParser(interpolation=None)
    no_keys.read_string(sssd.sssd_conf("t", _ident(ssh_keys=False)))
    assert "ssh" not in no_keys and no_keys["sssd"]["services"] == "nss, pam"
    assert "ldap_user_ssh_public_key" not in no_keys["domain/example.org"]


def test_bind_snippet_refuses_what_would_break_out():
    assert (
        sssd.bind_snippet("example.org", "s3cr3t pass") == "[domain/example.org]\nldap_default_authtok = s3cr3t pass\n"
    )
    for bad in ("", "a\nldap_access_filter = (uid=*)", " lead", "trail ", "a\rb", "x" * 1025):
        with pytest.raises(GpufleetError):
            sssd.bind_snippet("example.org", bad)
    with pytest.raises(GpufleetError):
        sssd.bind_snippet("example.org]\n[sssd", "pw")


def test_rendered_values_mount_the_secret_and_enable_worker_sssd():
    values = {"loginsets": {"main": {"login": {}}}, "nodesets": {"p": {"slurmd": {}, "podSpec": {}}}}
    sssd.add_to_values("t", _ident(bind_dn="cn=r,dc=example,dc=org"), values)
    login = values["loginsets"]["main"]
    assert "AuthorizedKeysCommand /usr/bin/sss_ssh_authorizedkeys" in login["extraSshdConfig"]
    mount = next(m for m in login["login"]["volumeMounts"] if m["mountPath"] == sssd.BIND_SNIPPET)
    vol = next(v for v in login["podSpec"]["volumes"] if v["name"] == mount["name"])
    assert vol["projected"]["defaultMode"] == 0o600
    assert vol["projected"]["sources"][0]["secret"]["name"] == "slurm-identity-bind"
    assert values["nodesets"]["p"]["ssh"]["enabled"] is True
    assert values["sssd"]["conf"].startswith("# sssd.conf of tenant t")


def test_allow_accounts_must_exist_and_need_accounting(inv):
    def acct(d):
        p = next(p for p in d["gpufleet_pools"] if p["name"] == "research-debug")
        p["slurm"]["allow_accounts"] = ["research", "nosuch"]

    edit_vars(inv, "pools.yml", acct)
    errs = model_errors(inv)
    assert len(errs) == 1 and "allow_accounts[1]: account 'nosuch' is not defined" in errs[0], errs
    edit_vars(inv, "tenants.yml", lambda d: d["gpufleet_tenants"][1]["slurm"].update(accounting=False))
    errs = model_errors(inv)
    assert any("accounting off: AllowAccounts needs accounts" in e for e in errs), errs
