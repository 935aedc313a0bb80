"""A tenant's directory in its Slurm cluster: sssd.conf, the bind password snippet, SSH keys, mounts.

The Slinky ``slurm`` chart runs SSSD in the login pods and, with ``nodesets.<n>.ssh.enabled``, in
the slurmd containers (pam_slurm_adopt), both from the cluster-wide ``sssd`` value (the chart turns
``sssd.conf`` into the Secret ``slurm-sssd-conf``). gpufleet renders that ``sssd.conf`` from the
tenant's ``identity`` (model/identity.py). It holds no secret:

* the bind password is a separate SSSD snippet, ``/etc/sssd/conf.d/90-gpufleet-bind.conf``
  (``[domain/<d>]`` + ``ldap_default_authtok``), mounted read-only (0600) from the Secret
  ``identity.bind_secret`` that the apply step (tenant role) writes inside the vCluster, like the
  Slurm keys and the accounting database password. SSSD merges ``conf.d`` snippets over sssd.conf;
* the directory's CA (``tls_ca``) is a ConfigMap beside the Slurm cluster, mounted at
  ``/etc/sssd/gpufleet-ca``; ``ldap_tls_reqcert = demand`` always;
* the access filter and the user search filter are built here from validated group names, each DN
  value escaped per RFC 4514 and each filter value per RFC 4515: the inventory holds no filter text.
  Users outside ``login_groups`` neither resolve (NSS) nor pass the access check (PAM);
* SSH public keys come from the directory: ``sss_ssh_authorizedkeys`` is the login sshd's
  ``AuthorizedKeysCommand``; homes are ``/home/<user>`` on the tenant's shared home volume.
"""

from __future__ import annotations

import re
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.model.identity import (
    Identity,
    escape_dn_value,
    escape_filter_value,
)
from ansible_collections.gpufleet.core.plugins.module_utils.render.shared_names import SLURM_NAMESPACE

# the Secret the slurm chart (release "slurm") makes from the ``sssd.conf`` value
SSSD_CONF_SECRET = {"name": "slurm-sssd-conf", "key": "sssd.conf"}
BIND_KEY = "bind.conf"  # key of the bind Secret: a complete SSSD snippet
BIND_SNIPPET = "/etc/sssd/conf.d/90-gpufleet-bind.conf"
CA_CONFIGMAP = "slurm-identity-ca"
CA_KEY = "ca.pem"
CA_DIR = "/etc/sssd/gpufleet-ca"
HOME_PATTERN = "/home/%u"  # the tenant's shared home (slurm-home PVC) is mounted at /home
# nested group membership in Active Directory (LDAP_MATCHING_RULE_IN_CHAIN)
AD_IN_CHAIN = "1.2.840.113556.1.4.1941"
SSHD_CONFIG = "AuthorizedKeysCommand /usr/bin/sss_ssh_authorizedkeys\nAuthorizedKeysCommandUser nobody\n"
_BIND_VOLUME = "sssd-bind"
_CA_VOLUME = "sssd-ca"


def group_dn(identity: Identity, group: str) -> str:
    base = identity.group_search_base or identity.search_base
    return f"cn={escape_dn_value(group)},{base}"


def by_member_of(identity: Identity) -> bool:
    """Whether the directory lists a user's groups on the user (``memberOf``): AD and rfc2307bis
    (DN-valued ``member``, which the OpenLDAP memberof overlay and 389-DS mirror as ``memberOf``).
    rfc2307 keeps members as ``memberUid`` names on the group only, which no user filter can test."""
    return identity.schema != "rfc2307"


def membership_filter(identity: Identity) -> str:
    """``(memberOf=<dn>)`` for each login group, OR-ed; nested membership on AD."""
    attr = f"memberOf:{AD_IN_CHAIN}:" if identity.type == "ad" else "memberOf"
    parts = [f"({attr}={escape_filter_value(group_dn(identity, g))})" for g in identity.login_groups]
    return parts[0] if len(parts) == 1 else "(|" + "".join(parts) + ")"


def access(identity: Identity) -> list[tuple[str, str]]:
    """Who passes PAM's account check: members of the login groups whose account is not disabled,
    expired or locked.

    rfc2307bis/AD: the LDAP access provider with the memberOf filter, then the account state
    (``expire``: AD userAccountControl disabled bit and accountExpires, or LDAP ``shadowExpire``;
    ``ppolicy``: OpenLDAP's ``pwdAccountLockedTime`` when ``lockout_policy_dn`` names the policy).
    rfc2307: SSSD's simple provider, which resolves the login groups' ``memberUid`` itself; it checks
    no account state, so a locked account (with ``lockout_policy_dn``) is kept from resolving."""
    i = identity
    if not by_member_of(i):
        return [("access_provider", "simple"), ("simple_allow_groups", ", ".join(i.login_groups))]
    order = ["filter", "expire"]
    out = [("access_provider", "ldap")]
    if i.type == "ad":
        out.append(("ldap_account_expire_policy", "ad"))
    else:
        out.append(("ldap_account_expire_policy", "shadow"))
        if i.lockout_policy_dn:
            order.append("ppolicy")
            out.append(("ldap_pwdlockout_dn", i.lockout_policy_dn))
    return [*out, ("ldap_access_order", ", ".join(order)), ("ldap_access_filter", membership_filter(i))]


def user_filter(identity: Identity) -> str | None:
    """The NSS user search filter: login group members only (memberOf); on rfc2307 every user
    resolves (access still decides), except accounts the password policy locked."""
    if by_member_of(identity):
        return membership_filter(identity)
    return "(!(pwdAccountLockedTime=*))" if identity.lockout_policy_dn else None


def sssd_conf(tenant: str, identity: Identity) -> str:
    """The tenant's sssd.conf (no secret in it; see the module docstring)."""
    i = identity
    filt = user_filter(i)
    user_base = i.user_search_base or i.search_base
    services = ["nss", "pam"] + (["ssh"] if i.ssh_keys else [])
    rules = access(i)
    dom: list[tuple[str, str]] = [
        ("id_provider", "ldap"),
        ("auth_provider", "ldap"),
        rules[0],
        ("chpass_provider", "none"),
        ("ldap_uri", ", ".join(i.uris)),
        ("ldap_schema", i.schema),
        ("ldap_search_base", i.search_base),
        # only members of the login groups resolve on this tenant's nodes (rfc2307: see user_filter)
        ("ldap_user_search_base", f"{user_base}?subtree?{filt}" if filt else user_base),
    ]
    if i.group_search_base:
        dom.append(("ldap_group_search_base", i.group_search_base))
    dom += [
        ("ldap_id_use_start_tls", "true" if i.start_tls else "false"),
        ("ldap_tls_reqcert", "demand"),
    ]
    if i.tls_ca_pem:
        dom.append(("ldap_tls_cacert", f"{CA_DIR}/{CA_KEY}"))
    if i.bind_dn:
        dom += [("ldap_default_bind_dn", i.bind_dn), ("ldap_default_authtok_type", "password")]
    dom += [*rules[1:], ("ldap_referrals", "false")]
    if i.type == "ad":
        dom += [("ldap_id_mapping", "false"), ("ldap_user_principal", "userPrincipalName")]
    if i.ssh_keys:
        dom.append(("ldap_user_ssh_public_key", i.ssh_key_attribute))
    dom += [
        ("override_homedir", HOME_PATTERN),
        ("cache_credentials", "false"),
        ("enumerate", "false"),
    ]
    lines = [
        f"# sssd.conf of tenant {tenant}, rendered by gpufleet from the inventory (identity); do not edit.",
        f"# The bind password is not here: {BIND_SNIPPET} from Secret {i.bind_secret}."
        if i.bind_dn
        else "# Anonymous bind (no bind account).",
        "[sssd]",
        "config_file_version = 2",
        f"services = {', '.join(services)}",
        f"domains = {i.domain}",
        "",
        "[nss]",
        "filter_users = root, slurm",
        "filter_groups = root, slurm",
        "",
        "[pam]",
        "",
    ]
    if i.ssh_keys:
        lines += ["[ssh]", ""]
    lines.append(f"[domain/{i.domain}]")
    lines += [f"{k} = {v}" for k, v in dom]
    text = "\n".join(lines) + "\n"
    if any(ord(c) < 0x20 and c != "\n" for c in text):  # grammars make this impossible; fail closed
        raise GpufleetError(f"gpufleet_tenants[{tenant}].identity: control character in the rendered sssd.conf")
    return text


def bind_snippet(domain: str, password: str) -> str:
    """The SSSD snippet the bind Secret holds (written by the apply step, never rendered to Git)."""
    if not isinstance(password, str) or not password or len(password) > 1024:
        raise GpufleetError("the directory bind password must be a non-empty string of at most 1024 characters")
    if any(ord(c) < 0x20 or c == "\x7f" for c in password) or password != password.strip():
        raise GpufleetError("the directory bind password must not contain control characters or edge spaces")
    if not re.match(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$", domain or ""):
        raise GpufleetError(f"not an SSSD domain name: {domain!r}")
    return f"[domain/{domain}]\nldap_default_authtok = {password}\n"


def ca_configmap(identity: Identity) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CA_CONFIGMAP, "namespace": SLURM_NAMESPACE},
        "data": {CA_KEY: identity.tls_ca_pem},
    }


def _secret_volume(name: str, secret: str, key: str, path: str) -> dict[str, Any]:
    """A 0600 projected Secret volume (SSSD refuses config files other users can read)."""
    return {
        "name": name,
        "projected": {
            "defaultMode": 0o600,
            "sources": [{"secret": {"name": secret, "items": [{"key": key, "path": path}]}}],
        },
    }


def volumes(identity: Identity) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(pod volumes, container mounts) of the bind snippet and the CA."""
    vols: list[dict[str, Any]] = []
    mounts: list[dict[str, Any]] = []
    if identity.bind_dn:
        vols.append(_secret_volume(_BIND_VOLUME, identity.bind_secret, BIND_KEY, BIND_KEY))
        mounts.append({"name": _BIND_VOLUME, "mountPath": BIND_SNIPPET, "subPath": BIND_KEY, "readOnly": True})
    if identity.tls_ca_pem:
        vols.append({"name": _CA_VOLUME, "configMap": {"name": CA_CONFIGMAP}})
        mounts.append({"name": _CA_VOLUME, "mountPath": CA_DIR, "readOnly": True})
    return vols, mounts


def add_to_values(tenant: str, identity: Identity, values: dict[str, Any]) -> dict[str, Any]:
    """The sssd.conf, login sshd and worker SSH/SSSD settings in the slurm chart values (in place)."""
    values["sssd"] = {"conf": sssd_conf(tenant, identity)}
    vols, mounts = volumes(identity)
    sshd = SSHD_CONFIG if identity.ssh_keys else None
    for login in (values.get("loginsets") or {}).values():
        if sshd:
            login["extraSshdConfig"] = sshd
        login.setdefault("login", {}).setdefault("volumeMounts", []).extend(mounts)
        login.setdefault("podSpec", {}).setdefault("volumes", []).extend(vols)
    for ns in values["nodesets"].values():
        ns["ssh"] = {"enabled": True, **({"extraSshdConfig": sshd} if sshd else {})}
        ns.setdefault("slurmd", {}).setdefault("volumeMounts", []).extend(mounts)
        ns.setdefault("podSpec", {}).setdefault("volumes", []).extend(vols)
    return values


def job_runner_prefix(identity: Identity | None) -> str:
    """Shell lines that start SSSD in the accounts Job, so ``id <user>`` asks the directory."""
    if identity is None:
        return ""
    return "sssd -D\nfor i in $(seq 1 30); do [ -S /var/lib/sss/pipes/nss ] && break; sleep 1; done\n"


def job_volumes(identity: Identity | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(volumes, mounts) of the accounts Job: sssd.conf (0600), the bind snippet and the CA."""
    if identity is None:
        return [], []
    vols, mounts = volumes(identity)
    vols = [_secret_volume("sssd-conf", SSSD_CONF_SECRET["name"], SSSD_CONF_SECRET["key"], "sssd.conf"), *vols]
    mounts = [
        {"name": "sssd-conf", "mountPath": "/etc/sssd/sssd.conf", "subPath": "sssd.conf", "readOnly": True},
        *mounts,
    ]
    return vols, mounts


def report_lines(identity: Identity | None) -> list[str]:
    if identity is None:
        return ["- Identity: local users only (no directory; `identity` off)."]
    how = "StartTLS" if identity.start_tls else "TLS"
    return [
        f"- Identity: SSSD domain `{identity.domain}` ({identity.type}, {how}, {', '.join(identity.uris)}); "
        f"login for members of {', '.join(f'`{g}`' for g in identity.login_groups)}; "
        + ("SSH keys from the directory; " if identity.ssh_keys else "")
        + (f"bind as `{identity.bind_dn}` (password in Secret `{identity.bind_secret}`)." if identity.bind_dn
           else "anonymous bind.")
    ]  # fmt: skip
