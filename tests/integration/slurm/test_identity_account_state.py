"""Who a tenant's nodes let in, for each way a directory stores membership, and locked/expired accounts.

Real slapd (both layouts) and real sssd, with the sssd.conf the renderer writes for the sample fleet
(its ``lockout_policy_dn`` is the test directory's ppolicy entry):

* rfc2307bis: groups carry DN-valued ``member`` (the memberof overlay mirrors it on the users);
* rfc2307: groups carry ``memberUid`` names only, no ``memberOf`` anywhere.

Users of tenant llm-pretrain's login group: alice (active), mallory (locked by the password policy:
``pwdAccountLockedTime``), eve (``shadowExpire`` in 1970); dave belongs to the other tenant. The
PAM account check (pam_sss through ``sssctl user-checks``) lets alice in and refuses the others.
Each rendered sssd.conf, and an AD one, passes ``sssctl config-check``.
"""

from __future__ import annotations

import secrets
import subprocess
from pathlib import Path

import pytest
from directory import (
    GROUPS,
    Group,
    Slapd,
    SystemSssd,
    User,
    pam_account,
    render_identity,
    require_identity_tools,
    sh,
    sssd_files,
    wait_resolves,
)

from ansible_collections.gpufleet.core.plugins.module_utils.model.identity import Identity
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants import sssd as rs

pytestmark = pytest.mark.slurm

USERS = [
    User("alice", 20001, ["llm-pretrain"]),
    User("mallory", 20005, ["llm-pretrain"], locked=True),
    User("eve", 20006, ["llm-pretrain"], expired=True),
    User("dave", 20004, ["research"]),
]
MEMBERS = [
    Group("llm-pretrain", 30001, ["alice", "mallory", "eve"]),
    *[g for g in GROUPS if g.name not in ("llm-pretrain", "pretrain-gpu")],
]


def _schema(value: str):
    def edit(d):
        d["gpufleet_identity"]["schema"] = value

    return edit


def _admitted(name: str) -> bool:
    return "pam_acct_mgmt: Success" in pam_account(name)


@pytest.mark.parametrize("schema", ["rfc2307bis", "rfc2307"])
def test_members_in_locked_and_expired_out(tmp_path: Path, schema: str) -> None:
    require_identity_tools()
    password = secrets.token_urlsafe(18)
    slapd = Slapd(tmp_path / "slapd", USERS, MEMBERS, reader_password=password, schema=schema)
    try:
        slapd.start()
        reader = ("cn=sssd-reader,ou=services,dc=example,dc=org", password)
        got = slapd.search("(uid=alice)", "memberOf", bind=reader).stdout
        assert ("memberOf:" in got) == (schema == "rfc2307bis"), got  # the layout is what it says
        tenants = render_identity(tmp_path / "render", slapd, edit_identity=_schema(schema))
        conf = tenants["llm-pretrain"]["values"]["sssd"]["conf"]
        assert f"ldap_schema = {schema}\n" in conf
        node = SystemSssd(tmp_path / "node", sssd_files(tenants["llm-pretrain"], password))
        try:
            node.start()
            check = sh("sssctl", "config-check")
            assert check.returncode == 0 and "Issues identified by validators: 0\n" in check.stdout, check
            assert wait_resolves("alice").returncode == 0, node.log()[-3000:]
            assert _admitted("alice"), (pam_account("alice"), node.log()[-3000:])
            assert not _admitted("mallory"), pam_account("mallory")  # locked by the password policy
            assert not _admitted("dave")  # the other tenant's user
            if schema == "rfc2307bis":
                assert not _admitted("eve"), pam_account("eve")  # shadowExpire in the past
        finally:
            node.stop()
        assert node.restored()
    finally:
        slapd.stop()


def test_ad_conf_checks_account_state(tmp_path: Path) -> None:
    """AD: disabled (userAccountControl) and expired (accountExpires) accounts are refused by the
    ``ad`` expire policy; sssctl accepts the file (no AD here to log in against)."""
    require_identity_tools()
    ident = Identity(
        type="ad",
        domain="corp.example.com",
        uris=("ldaps://dc1.corp.example.com",),
        search_base="dc=corp,dc=example,dc=com",
        login_groups=("gpu-users",),
        schema="ad",
        bind_dn="cn=svc,dc=corp,dc=example,dc=com",
    )
    conf = rs.sssd_conf("t", ident)
    assert "ldap_account_expire_policy = ad\n" in conf and "ldap_access_order = filter, expire\n" in conf
    assert "memberOf:1.2.840.113556.1.4.1941:=" in conf
    f = tmp_path / "sssd.conf"
    f.write_text(conf)
    f.chmod(0o600)
    (tmp_path / "conf.d").mkdir()
    check = subprocess.run(["sssctl", "config-check", "-c", str(f)], capture_output=True, text=True, check=False)
    assert check.returncode == 0 and "Issues identified by validators: 0\n" in check.stdout, check
