"""The tenant directory as rendered, against a real slapd and a real sssd.

The sample inventory (every default feature on) is rendered by the real renderer, with the fleet's
``gpufleet_identity`` pointed at the test's slapd: its URI (``ldaps://127.0.0.1:<port>``) and CA are
what the test's inventory says, not substitutions. From the rendered tree, not from text written
here, the test takes each tenant's ``sssd.conf`` (slurm values ``sssd.conf``), the CA (the
``slurm-identity-ca`` ConfigMap of the tenant's objects) and the paths the login pods mount them at
(the loginset's ``volumeMounts``). The bind Secret's content is what the tenant role writes
(``gpufleet.core.sssd_bind_snippet``, i.e. ``render.tenants.sssd.bind_snippet``); the password exists only
in this test's memory and the slapd entry.

slapd refuses anonymous reads, so every lookup below also proves the bind snippet is read. Two
tenants: ``llm-pretrain`` (login group ``llm-pretrain``: alice, bob) and ``research`` (``research``:
dave). A user of the other tenant neither resolves nor passes the access filter (PAM account check
through pam_sss); alice's SSH key comes back from ``sss_ssh_authorizedkeys``.
"""

from __future__ import annotations

import secrets

import pytest
import yaml
from directory import (
    ALICE_KEY,
    GROUPS,
    USERS,
    Slapd,
    SystemSssd,
    pam_account,
    render_identity,
    require_identity_tools,
    sh,
    sssd_files,
    wait_resolves,
)

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def directory(tmp_path_factory):
    require_identity_tools()
    password = secrets.token_urlsafe(18)
    slapd = Slapd(tmp_path_factory.mktemp("slapd"), USERS, GROUPS, reader_password=password)
    try:
        slapd.start()
        yield slapd, password
    finally:
        slapd.stop()


def test_rendered_sssd_resolves_tenant_users_only(directory, tmp_path):
    slapd, password = directory
    # the directory itself: nothing for anonymous clients, everything for the bind account
    assert "uid=alice" not in slapd.search("(uid=alice)").stdout
    found = slapd.search("(uid=alice)", "memberOf", bind=("cn=sssd-reader,ou=services,dc=example,dc=org", password))
    assert found.returncode == 0 and "memberOf: cn=pretrain-gpu,ou=groups,dc=example,dc=org" in found.stdout, found

    tenants = render_identity(tmp_path / "render", slapd)
    conf = tenants["llm-pretrain"]["values"]["sssd"]["conf"]
    assert f"ldap_uri = {slapd.uri}\n" in conf and "ldap_default_authtok =" not in conf
    assert password not in yaml.safe_dump(tenants)  # the password is nowhere in the rendered tree

    # the rendered access filter, asked of the directory itself: it selects alice, not dave
    access = next(ln.split(" = ", 1)[1] for ln in conf.splitlines() if ln.startswith("ldap_access_filter = "))
    reader = ("cn=sssd-reader,ou=services,dc=example,dc=org", password)
    assert "uid: alice" in slapd.search(f"(&(uid=alice){access})", "uid", bind=reader).stdout
    assert slapd.search(f"(&(uid=dave){access})", "uid", bind=reader).stdout.strip() == ""
    assert "uid: dave" in slapd.search("(uid=dave)", "uid", bind=reader).stdout  # dave exists, the filter drops him

    node = SystemSssd(tmp_path / "pretrain", sssd_files(tenants["llm-pretrain"], password))
    try:
        node.start()
        alice = wait_resolves("alice")
        assert alice.stdout.strip() == "alice:*:20001:30001:alice:/home/alice:/bin/sh", (alice, node.log()[-3000:])
        ident = sh("id", "alice").stdout
        assert "uid=20001(alice)" in ident and "30002(pretrain-gpu)" in ident and "30001(llm-pretrain)" in ident, ident
        assert sh("getent", "passwd", "bob").returncode == 0
        # the other tenant's user: not in this tenant's login group, so unknown here and refused
        assert sh("getent", "passwd", "dave").returncode == 2
        assert sh("id", "dave").returncode != 0
        assert "pam_acct_mgmt: Success" in pam_account("alice"), pam_account("alice")
        assert "pam_acct_mgmt: Success" not in pam_account("dave")
        keys = sh("sss_ssh_authorizedkeys", "alice")
        assert keys.returncode == 0 and keys.stdout.strip() == ALICE_KEY, keys
        assert sh("sss_ssh_authorizedkeys", "dave").stdout.strip() == ""
    finally:
        node.stop()
    assert node.restored(), "nsswitch.conf, /etc/sssd or /var/lib/sss not restored"
    assert sh("getent", "passwd", "alice").returncode == 2  # NSS is back as it was

    # the research tenant's configuration, same directory: dave in, alice out
    node = SystemSssd(tmp_path / "research", sssd_files(tenants["research"], password))
    try:
        node.start()
        assert wait_resolves("dave").stdout.startswith("dave:*:20004:30003:"), node.log()[-3000:]
        assert sh("getent", "passwd", "alice").returncode == 2
        assert "pam_acct_mgmt: Success" in pam_account("dave")
        assert "pam_acct_mgmt: Success" not in pam_account("alice")
    finally:
        node.stop()
    assert node.restored()


def test_without_the_bind_secret_nothing_resolves(directory, tmp_path):
    """The rendered sssd.conf alone (no bind snippet: the Secret not written) cannot read the directory."""
    slapd, _password = directory
    tenants = render_identity(tmp_path / "render", slapd)
    node = SystemSssd(tmp_path / "node", sssd_files(tenants["llm-pretrain"], None))
    try:
        node.start()
        assert wait_resolves("alice", timeout=8).returncode == 2
    finally:
        node.stop()
    assert node.restored()
