"""Who may log in to a tenant's Slurm cluster: the directory (LDAP or Active Directory) behind SSSD.

The fleet names its directory once (``gpufleet_identity``); each tenant inherits it and may override
any key under its own ``identity`` (``identity: false`` turns it off: the chart's local-files SSSD)::

    gpufleet_identity:
      type: ldap                                  # ldap | ad (AD over LDAP: ldap_schema = ad)
      domain: example.org                         # SSSD domain name
      uris: [ldaps://ldap1.example.org, ldaps://ldap2.example.org]
      search_base: dc=example,dc=org
      user_search_base: ou=people,dc=example,dc=org
      group_search_base: ou=groups,dc=example,dc=org
      tls_ca: "-----BEGIN CERTIFICATE-----\n..."    # the directory CA, PEM text (default: system CAs)
      bind: {dn: "cn=sssd,ou=services,dc=example,dc=org", secret: slurm-identity-bind}
    gpufleet_tenants:
      - name: llm-pretrain
        identity:
          login_groups: [llm-pretrain]            # default: a group named after the tenant

Tenants edit the inventory by pull request, so every string has a grammar and nothing is free
text: URIs (``ldaps://``; ``ldap://`` only to a loopback address or with ``start_tls: true``),
distinguished names (RFC 4514, without ``?``, parentheses or ``*``, which would reach SSSD's
``base?scope?filter`` syntax or an LDAP filter), group names (no whitespace, ``,`` or filter
metacharacters). The inventory holds no LDAP filter at all: the renderer builds the filters from
validated group names and DNs and escapes each value again (RFC 4515 for filter values, RFC 4514
for DN values). The bind password never appears here; a key that looks like one is an error.
"""

from __future__ import annotations

import ipaddress
import re
import ssl
from dataclasses import dataclass
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import Issue
from ansible_collections.gpufleet.core.plugins.module_utils.model import special_addresses
from ansible_collections.gpufleet.core.plugins.module_utils.model.grammar import NAMESPACE, pattern

TYPES = ("ldap", "ad")
SCHEMAS = ("rfc2307bis", "rfc2307", "ad")
DEFAULT_BIND_SECRET = "slurm-identity-bind"
# keys that would put a credential into Git; refused with a message saying where it goes instead
PASSWORD_KEYS = ("password", "bind_password", "bindpw", "authtok", "ldap_default_authtok", "secret_value")

_ATTR = r"(?:[A-Za-z][A-Za-z0-9-]{0,62}|[0-9]{1,9}(?:\.[0-9]{1,9}){1,30})"
# one DN value character: printable, not a DN special (RFC 4514) nor a filter metacharacter nor
# SSSD's search-base separator '?'; specials only escaped (\, or \2C)
_VCHAR = r"(?:[^,+\"\\<>;=()*?#\x00-\x1f\x7f\s]|\\[,+\"\\<>;=# ]|\\[0-9A-Fa-f]{2})"
_VALUE = rf"{_VCHAR}(?:(?:{_VCHAR}| )*{_VCHAR})?"
_RDN = rf"{_ATTR}={_VALUE}(?:\+{_ATTR}={_VALUE})*"
DN = rf"^(?=.{{3,1024}}$){_RDN}(?:,{_RDN})*$"
# a group name: what Slurm's AllowGroups and SSSD accept as one word, no filter metacharacters
GROUP = r"^[A-Za-z0-9_][A-Za-z0-9_.@-]{0,63}$"
DOMAIN = r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$"
ATTRIBUTE = r"^[A-Za-z][A-Za-z0-9-]{0,62}$"
SECRET_NAME = NAMESPACE  # a Secret name kept to one RFC 1123 label, the grammar of namespace names
_HOST = r"(?:[A-Za-z0-9](?:[-A-Za-z0-9.]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]{2,45}\])"
URI = rf"^(ldaps?)://({_HOST})(?::([0-9]{{1,5}}))?/?$"
PEM = r"^(-----BEGIN CERTIFICATE-----\n[A-Za-z0-9+/=\n]{16,16384}-----END CERTIFICATE-----\n?)+$"


_DN = pattern(DN, "LDAP distinguished name (RFC 4514; no '?', '(', ')', '*', '#' or control characters)")
_GROUPS = {
    "type": "array",
    "items": pattern(GROUP, "group name: letters, digits, '_', '.', '@', '-' (no spaces, ',' or filter characters)"),
    "uniqueItems": True,
    "maxItems": 32,
}
# what a tenant may set (everything optional: merged over gpufleet_identity)
PROPERTIES: dict[str, Any] = {
    "type": {"enum": list(TYPES), "description": "ldap (OpenLDAP, 389-DS, ...) or ad (Active Directory over LDAP)"},
    "domain": pattern(DOMAIN, "SSSD domain name (DNS-style, lower case)"),
    "uris": {
        "type": "array",
        "minItems": 1,
        "maxItems": 8,
        "uniqueItems": True,
        "items": pattern(URI, "ldaps://host[:port] (ldap:// only to loopback or with start_tls: true)"),
    },
    "start_tls": {
        "type": "boolean",
        "default": False,
        "description": "StartTLS on ldap:// URIs (required off loopback)",
    },
    "schema": {"enum": list(SCHEMAS), "description": "ldap_schema (default rfc2307bis; ad for type ad)"},
    "search_base": _DN,
    "user_search_base": _DN,
    "group_search_base": _DN,
    "tls_ca": {
        "type": "string",
        "pattern": PEM,
        "maxLength": 65536,
        "description": "the directory's CA certificates (PEM text; default: the images' system CAs)",
    },
    "bind": {
        "type": "object",
        "additionalProperties": False,
        "required": ["dn"],
        "description": "the account SSSD binds as; its password only in the Secret (written by the apply step)",
        "properties": {
            "dn": _DN,
            "secret": pattern(
                SECRET_NAME,
                "Secret (inside the vCluster, namespace slurm) holding the bind password",
                default=DEFAULT_BIND_SECRET,
            ),
        },
    },
    "login_groups": {
        **_GROUPS,
        "minItems": 1,
        "description": "groups whose members may log in (access filter); default [<tenant name>]",
    },
    "lockout_policy_dn": {
        **_DN,
        "description": "type ldap: the directory's password policy entry (OpenLDAP ppolicy, pwdLockout TRUE);"
        " with it, accounts locked by the policy (pwdAccountLockedTime) are refused",
    },
    "ssh_keys": {"type": "boolean", "default": True, "description": "SSH public keys from the directory"},
    "ssh_key_attribute": pattern(ATTRIBUTE, "attribute holding SSH public keys", default="sshPublicKey"),
}
FLEET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "the directory every tenant's login and worker nodes use (SSSD); tenants may override keys",
    "properties": {k: v for k, v in PROPERTIES.items() if k != "login_groups"},
}
TENANT_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "boolean", "const": False},
        {"type": "object", "additionalProperties": False, "properties": PROPERTIES},
    ],
    "description": "false: no directory (local users only); a mapping: keys over gpufleet_identity",
}
POOL_GROUPS = {**_GROUPS, "minItems": 1, "description": "AllowGroups: only members of these groups may use it"}


@dataclass(frozen=True)
class Identity:
    type: str
    domain: str
    uris: tuple[str, ...]
    search_base: str
    login_groups: tuple[str, ...]
    start_tls: bool = False
    schema: str = "rfc2307bis"
    user_search_base: str | None = None
    group_search_base: str | None = None
    tls_ca_pem: str | None = None  # the directory's CA certificates (PEM)
    bind_dn: str | None = None
    bind_secret: str = DEFAULT_BIND_SECRET
    ssh_keys: bool = True
    ssh_key_attribute: str = "sshPublicKey"
    lockout_policy_dn: str | None = None


def merged_spec(fleet_default: Any, tenant_spec: Any) -> dict[str, Any] | None:
    """The identity of a tenant as written: its own keys over the fleet default; None when off."""
    if tenant_spec is False:
        return None
    base = dict(fleet_default) if isinstance(fleet_default, dict) else {}
    own = tenant_spec if isinstance(tenant_spec, dict) else {}
    if not base and not own:
        return None
    return {**base, **own}


def build_identity(spec: dict[str, Any] | None, tenant: str) -> Identity | None:
    """The typed identity from a merged, valid spec (see ``identity_issues``)."""
    if spec is None:
        return None
    bind = spec.get("bind") or {}
    kind = spec["type"]
    return Identity(
        type=kind,
        domain=spec["domain"],
        uris=tuple(spec["uris"]),
        search_base=spec["search_base"],
        login_groups=tuple(spec.get("login_groups") or (tenant,)),
        start_tls=spec.get("start_tls", False),
        schema=spec.get("schema", "ad" if kind == "ad" else "rfc2307bis"),
        user_search_base=spec.get("user_search_base"),
        group_search_base=spec.get("group_search_base"),
        tls_ca_pem=spec.get("tls_ca"),
        bind_dn=bind.get("dn"),
        bind_secret=bind.get("secret", DEFAULT_BIND_SECRET),
        ssh_keys=spec.get("ssh_keys", True),
        ssh_key_attribute=spec.get("ssh_key_attribute", "sshPublicKey"),
        lockout_policy_dn=spec.get("lockout_policy_dn"),
    )


# ------------------------------------------------------------------ checks


def _loopback(host: str) -> bool:
    h = host.strip("[]")
    if h.lower() == "localhost":
        return True
    try:
        return special_addresses.is_loopback(ipaddress.ip_address(h))
    except ValueError:
        return False


def uri_problem(uri: Any, start_tls: bool) -> str | None:
    """Why ``uri`` may not be used (None when it may): plain ldap:// off loopback needs StartTLS."""
    if not isinstance(uri, str):
        return None  # the schema says why
    m = re.match(URI, uri)
    if not m or "\n" in uri:
        return None
    scheme, host, port = m.group(1), m.group(2), m.group(3)
    if port is not None and not 1 <= int(port) <= 65535:
        return f"{uri!r}: port {port} is not a TCP port"
    if host.startswith("["):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return f"{uri!r}: {host} is not an IPv6 address"
    if scheme == "ldap" and not start_tls and not _loopback(host):
        return (
            f"{uri!r}: plain ldap:// to a remote host sends the bind password and user data in clear;"
            " use ldaps:// or set start_tls: true"
        )
    if scheme == "ldaps" and start_tls:
        return f"{uri!r}: start_tls is for ldap:// URIs; ldaps:// is TLS already"
    return None


def pem_problem(text: str) -> str | None:
    """Why ``text`` is not a bundle of PEM CA certificates (None when it is)."""
    blocks = re.findall(r"-----BEGIN CERTIFICATE-----\n[A-Za-z0-9+/=\n]+-----END CERTIFICATE-----\n?", text)
    if not blocks or "".join(blocks).strip() != text.strip():
        return "not a PEM bundle of certificates (only BEGIN/END CERTIFICATE blocks)"
    try:
        ssl.create_default_context(cadata=text)
    except (ssl.SSLError, ValueError) as exc:
        return f"not valid certificates: {exc}"
    return None


def _users_without_directory(raw: Any, ti: int, t: dict) -> list[Issue]:
    """Slurm users of a tenant without a directory: the accounts Job adds a user only once ``id`` resolves
    it, which without SSSD it never does (the Job would exit 3 after the merge)."""
    accounting = (t.get("slurm") or {}).get("accounting") if isinstance(t.get("slurm"), dict) else None
    accounts = accounting.get("accounts") if isinstance(accounting, dict) else None
    out = []
    for ai, a in enumerate(accounts if isinstance(accounts, list) else []):
        if isinstance(a, dict) and a.get("users"):
            out.append(
                raw.issue(
                    ("gpufleet_tenants", ti, "slurm", "accounting", "accounts", ai, "users"),
                    "users need a directory: with no `identity` (the tenant's or gpufleet_identity) SSSD resolves"
                    " none of them and the accounts Job would fail after the merge; configure identity, or list"
                    " no users",
                )
            )
    return out


def identity_issues(raw: Any) -> list[Issue]:
    """Checks of ``gpufleet_identity`` and every tenant's ``identity`` (merged) beyond the schema."""
    d = raw.data
    issues: list[Issue] = []
    fleet_default = d.get("gpufleet_identity")
    fleet_path: tuple = ("gpufleet_identity",)
    issues += _password_keys(raw, fleet_path, fleet_default)
    tenants = d.get("gpufleet_tenants") if isinstance(d.get("gpufleet_tenants"), list) else []
    for ti, t in enumerate(tenants):
        if not isinstance(t, dict):
            continue
        own = t.get("identity")
        tpath: tuple = ("gpufleet_tenants", ti, "identity")
        issues += _password_keys(raw, tpath, own)
        spec = merged_spec(fleet_default, own)
        if spec is None:
            issues += _users_without_directory(raw, ti, t)
            continue

        def where(key: str, tpath: tuple = tpath, own: Any = own) -> tuple:
            return (*tpath, key) if isinstance(own, dict) and key in own else (*fleet_path, key)

        for key in ("type", "domain", "uris", "search_base"):
            if key not in spec:
                issues.append(
                    raw.issue(
                        tpath if "identity" in t else fleet_path, f"{key} is required (here or in gpufleet_identity)"
                    )
                )
        start_tls = spec.get("start_tls", False) is True
        uris = spec.get("uris") if isinstance(spec.get("uris"), list) else []
        for ui, u in enumerate(uris):
            why = uri_problem(u, start_tls)
            if why:
                issues.append(raw.issue((*where("uris"), ui), why))
        kind = spec.get("type")
        schema = spec.get("schema")
        if kind == "ad" and schema not in (None, "ad"):
            issues.append(raw.issue(where("schema"), f"type ad uses schema ad, not {schema!r}"))
        if kind == "ldap" and schema == "ad":
            issues.append(raw.issue(where("schema"), "schema ad is for type: ad"))
        if kind == "ad" and spec.get("lockout_policy_dn"):
            msg = "type ad: disabled and expired accounts come from userAccountControl/accountExpires"
            issues.append(raw.issue(where("lockout_policy_dn"), msg + " (no ppolicy entry)"))
        if spec.get("ssh_key_attribute") and spec.get("ssh_keys") is False:
            issues.append(raw.issue(where("ssh_key_attribute"), "ssh_keys is false: the attribute is not read"))
        if "login_groups" not in spec and isinstance(t.get("name"), str) and not re.match(GROUP, t["name"]):
            issues.append(raw.issue(tpath, "login_groups is required (the tenant name is not a group name)"))
        ca = spec.get("tls_ca")
        if isinstance(ca, str) and re.match(PEM.replace("$", r"\Z"), ca):
            why = pem_problem(ca)
            if why:
                issues.append(raw.issue(where("tls_ca"), why))
    return issues


def _password_keys(raw: Any, path: tuple, spec: Any) -> list[Issue]:
    out = []
    for sub, obj in ((path, spec), ((*path, "bind"), spec.get("bind") if isinstance(spec, dict) else None)):
        if not isinstance(obj, dict):
            continue
        for k in obj:
            if isinstance(k, str) and k.lower() in PASSWORD_KEYS:
                out.append(
                    raw.issue(
                        (*sub, k),
                        "a bind password must never be in the inventory (it is committed to Git): give it to the"
                        " apply step as tenant_identity_bind_password (Ansible Vault); it is written only into"
                        " the Secret named by bind.secret inside the tenant's vCluster",
                    )
                )
    return out


# ------------------------------------------------------------------ LDAP escaping (used by the renderer)


def escape_filter_value(value: str) -> str:
    """RFC 4515 assertion value: ``*``, ``(``, ``)``, ``\\`` and NUL as ``\\XX`` (and any non-ASCII)."""
    out = []
    for ch in value:
        if ch in "*()\\\x00" or ord(ch) > 0x7E or ord(ch) < 0x20:
            out.extend(f"\\{b:02x}" for b in ch.encode("utf-8"))
        else:
            out.append(ch)
    return "".join(out)


def escape_dn_value(value: str) -> str:
    """RFC 4514 attribute value: specials backslash-escaped, leading '#'/space and trailing space too."""
    out = []
    for i, ch in enumerate(value):
        if ch in ',+"\\<>;=' or (ch == "#" and i == 0) or (ch == " " and i in (0, len(value) - 1)):
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ch == "\x7f":
            out.append(f"\\{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out)
