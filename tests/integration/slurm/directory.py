"""A real directory and a real SSSD for the identity tests: Debian's ``slapd`` on loopback, ``sssd``.

``Slapd(workdir)``: a CA and a server certificate (openssl, SAN ``localhost``/``127.0.0.1``), a
``cn=config`` made with ``slapadd -n 0`` in the work dir (core, cosine, nis, inetorgperson, the
openssh-lpk ``sshPublicKey`` schema, an mdb database for ``dc=example,dc=org``, the ``memberof``
overlay so users carry ``memberOf`` of their posixGroups), ``slapd -d 0`` in the foreground listening
on ``ldaps://127.0.0.1:<free port>`` and a private ``ldapi://`` socket, then the entries added over
LDAP (``ldapadd``) so the overlay maintains ``memberOf``. Anonymous reads are refused: only the bind
account (``cn=sssd-reader,ou=services,...``) reads, so SSSD works only with the bind password.

``SystemSssd(conf, snippet, ca)``: SSSD and NSS are system-wide (the NSS module talks to the sssd of
``/var/lib/sss/pipes``). It saves ``/etc/nsswitch.conf``, ``/etc/sssd`` and ``/var/lib/sss``,
installs the given files where the pods have them (``/etc/sssd/sssd.conf``,
``/etc/sssd/conf.d/90-gpufleet-bind.conf``, the CA at the rendered path), sets ``passwd``/``group``
to ``files sss``, adds a PAM service ``gpufleet-identity-test`` (``account required pam_sss.so``),
runs ``sssd -i`` in its own session and, on ``stop()``, kills that session and puts every saved
file back exactly (contents and modes), deleting what it added.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from daemons import Daemon

from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants import sssd as rs

SUFFIX = "dc=example,dc=org"
POLICY = f"cn=default,ou=policies,{SUFFIX}"  # the ppolicy entry (pwdLockout TRUE), as the sample names it
ADMIN = f"cn=admin,{SUFFIX}"
READER = f"cn=sssd-reader,ou=services,{SUFFIX}"
TOOLS = ("slapd", "slapadd", "ldapadd", "ldapsearch", "openssl", "sssd", "sss_ssh_authorizedkeys", "sssctl", "getent")
PAM_SERVICE = "gpufleet-identity-test"
SAVED = (Path("/etc/nsswitch.conf"), Path("/etc/sssd"), Path("/var/lib/sss"), Path("/etc/pam.d") / PAM_SERVICE)


def require_identity_tools() -> None:
    import pytest
    from lead_conftest import lead_conftest

    lead = lead_conftest()
    for tool in TOOLS:
        lead.require_tool(tool, "Debian packages slapd ldap-utils sssd sssd-ldap sssd-tools libnss-sss libpam-sss")
    if os.geteuid() != 0:
        msg = "sssd and NSS are system-wide: the identity tests need root"
        if lead.IN_CI:
            pytest.fail(msg, pytrace=False)
        pytest.skip(msg)


@dataclass
class User:
    name: str
    uid: int
    groups: list[str]
    ssh_key: str | None = None
    locked: bool = False  # pwdAccountLockedTime 000001010000Z (locked by the administrator, ppolicy)
    expired: bool = False  # shadowExpire 1 (1970-01-02)


@dataclass
class Group:
    name: str
    gid: int
    members: list[str] = field(default_factory=list)


OPENSSH_LPK = """dn: cn=openssh-lpk,cn=schema,cn=config
objectClass: olcSchemaConfig
cn: openssh-lpk
olcAttributeTypes: ( 1.3.6.1.4.1.24552.500.1.1.1.13 NAME 'sshPublicKey' DESC 'OpenSSH public key'
  EQUALITY octetStringMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.40 )
olcObjectClasses: ( 1.3.6.1.4.1.24552.500.1.1.2.0 NAME 'ldapPublicKey' SUP top AUXILIARY
  DESC 'OpenSSH LPK objectclass' MAY ( sshPublicKey $ uid ) )
"""


def _run(argv: list[str], **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({r.returncode}): {r.stdout[-2000:]}{r.stderr[-2000:]}")
    return r


class Slapd:
    def __init__(
        self, workdir: Path, users: list[User], groups: list[Group], reader_password: str, schema: str = "rfc2307bis"
    ):
        """``schema``: rfc2307bis keeps DN-valued ``member`` (and ``memberUid``) on groups, mirrored as the
        users' ``memberOf``; rfc2307 keeps ``memberUid`` only and runs no memberof overlay."""
        self.schema = schema
        self.workdir = Path(workdir)
        self.users = users
        self.groups = groups
        self.reader_password = reader_password
        self.admin_password = os.urandom(12).hex()
        self.proc: Daemon | None = None
        self._sockdir = Path(tempfile.mkdtemp(prefix="gf-ldap-", dir="/tmp"))
        self.port = 0

    @property
    def uri(self) -> str:
        return f"ldaps://127.0.0.1:{self.port}"

    @property
    def ldapi(self) -> str:
        return "ldapi://" + str(self._sockdir / "ldapi").replace("/", "%2F")

    def _certs(self) -> None:
        wd = self.workdir
        _run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
              "-keyout", str(wd / "ca.key"), "-out", str(wd / "ca.pem"), "-days", "2",
              "-subj", "/O=gpufleet test/CN=test directory CA"])  # fmt: skip
        _run(["openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
              "-keyout", str(wd / "server.key"), "-out", str(wd / "server.csr"), "-subj", "/CN=localhost"])  # fmt: skip
        (wd / "san.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
        _run(["openssl", "x509", "-req", "-in", str(wd / "server.csr"), "-CA", str(wd / "ca.pem"),
              "-CAkey", str(wd / "ca.key"), "-CAcreateserial", "-out", str(wd / "server.pem"), "-days", "2",
              "-extfile", str(wd / "san.ext")])  # fmt: skip
        (wd / "server.key").chmod(0o600)

    @property
    def ca_pem(self) -> str:
        return (self.workdir / "ca.pem").read_text()

    def _config_ldif(self) -> str:
        wd = self.workdir
        return f"""dn: cn=config
objectClass: olcGlobal
cn: config
olcPidFile: {self._sockdir / "slapd.pid"}
olcTLSCACertificateFile: {wd / "ca.pem"}
olcTLSCertificateFile: {wd / "server.pem"}
olcTLSCertificateKeyFile: {wd / "server.key"}

dn: cn=module{{0}},cn=config
objectClass: olcModuleList
cn: module{{0}}
olcModulePath: /usr/lib/ldap
olcModuleLoad: back_mdb
olcModuleLoad: memberof
olcModuleLoad: ppolicy

dn: cn=schema,cn=config
objectClass: olcSchemaConfig
cn: schema

include: file:///etc/ldap/schema/core.ldif

include: file:///etc/ldap/schema/cosine.ldif

include: file:///etc/ldap/schema/nis.ldif

include: file:///etc/ldap/schema/inetorgperson.ldif

{OPENSSH_LPK}
dn: olcDatabase={{-1}}frontend,cn=config
objectClass: olcDatabaseConfig
objectClass: olcFrontendConfig
olcDatabase: {{-1}}frontend

dn: olcDatabase={{0}}config,cn=config
objectClass: olcDatabaseConfig
olcDatabase: {{0}}config
olcAccess: {{0}}to * by * none

dn: olcDatabase={{1}}mdb,cn=config
objectClass: olcDatabaseConfig
objectClass: olcMdbConfig
olcDatabase: {{1}}mdb
olcDbDirectory: {wd / "data"}
olcDbMaxSize: 67108864
olcSuffix: {SUFFIX}
olcRootDN: {ADMIN}
olcRootPW: {self.admin_password}
olcAccess: {{0}}to attrs=userPassword by anonymous auth by * none
olcAccess: {{1}}to * by dn.exact="{READER}" read by * none
olcDbIndex: objectClass eq
olcDbIndex: uid,memberUid eq
olcDbIndex: member,memberOf eq

dn: olcOverlay={{0}}ppolicy,olcDatabase={{1}}mdb,cn=config
objectClass: olcOverlayConfig
objectClass: olcPPolicyConfig
olcOverlay: {{0}}ppolicy
olcPPolicyDefault: {POLICY}
""" + (
            ""
            if self.schema == "rfc2307"
            else """
dn: olcOverlay={1}memberof,olcDatabase={1}mdb,cn=config
objectClass: olcOverlayConfig
objectClass: olcMemberOf
olcOverlay: {1}memberof
olcMemberOfGroupOC: posixGroup
olcMemberOfMemberAD: member
olcMemberOfMemberOfAD: memberOf
olcMemberOfRefInt: FALSE
"""
        )

    def _data_ldif(self) -> str:
        out = [
            f"dn: {SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: Example\n",
            f"dn: ou=people,{SUFFIX}\nobjectClass: organizationalUnit\nou: people\n",
            f"dn: ou=groups,{SUFFIX}\nobjectClass: organizationalUnit\nou: groups\n",
            f"dn: ou=services,{SUFFIX}\nobjectClass: organizationalUnit\nou: services\n",
            f"dn: ou=policies,{SUFFIX}\nobjectClass: organizationalUnit\nou: policies\n",
            f"dn: {POLICY}\nobjectClass: applicationProcess\nobjectClass: pwdPolicy\ncn: default\n"
            "pwdAttribute: userPassword\npwdLockout: TRUE\n",
            f"dn: {READER}\nobjectClass: organizationalRole\nobjectClass: simpleSecurityObject\ncn: sssd-reader\n"
            f"userPassword: {self.reader_password}\n",
        ]
        primary = {g.name: g.gid for g in self.groups}
        for u in self.users:
            lines = [
                f"dn: uid={u.name},ou=people,{SUFFIX}",
                "objectClass: inetOrgPerson",
                "objectClass: posixAccount",
                "objectClass: ldapPublicKey",
                f"uid: {u.name}",
                f"cn: {u.name}",
                f"sn: {u.name}",
                f"uidNumber: {u.uid}",
                f"gidNumber: {primary[u.groups[0]]}",
                f"homeDirectory: /nonexistent/{u.name}",
                "loginShell: /bin/sh",
            ]
            if u.ssh_key:
                lines.append(f"sshPublicKey: {u.ssh_key}")
            if u.expired:
                lines += ["objectClass: shadowAccount", "shadowExpire: 1"]
            out.append("\n".join(lines) + "\n")
        for g in self.groups:
            lines = [
                f"dn: cn={g.name},ou=groups,{SUFFIX}",
                "objectClass: posixGroup",
                f"cn: {g.name}",
                f"gidNumber: {g.gid}",
            ]
            if self.schema != "rfc2307":  # posixGroup (nis, structural) + member (rfc2307bis)
                lines.insert(2, "objectClass: extensibleObject")
            for m in g.members:
                lines.append(f"memberUid: {m}")
                if self.schema != "rfc2307":
                    lines.append(f"member: uid={m},ou=people,{SUFFIX}")
            out.append("\n".join(lines) + "\n")
        return "\n".join(out)

    def start(self, timeout: float = 30) -> Slapd:
        from harness import free_ports

        wd = self.workdir
        wd.mkdir(parents=True, exist_ok=True)
        (wd / "slapd.d").mkdir()
        (wd / "data").mkdir()
        self._certs()
        (wd / "config.ldif").write_text(self._config_ldif())
        _run(["slapadd", "-n", "0", "-F", str(wd / "slapd.d"), "-l", str(wd / "config.ldif")])
        self.port = free_ports(1)[0]
        self.proc = Daemon(
            ["slapd", "-d", "0", "-F", wd / "slapd.d", "-h", f"ldaps://127.0.0.1:{self.port}/ {self.ldapi}"],
            wd / "slapd.log",
        )
        end = time.monotonic() + timeout
        while not (self._sockdir / "ldapi").exists():
            if self.proc.poll() is not None or time.monotonic() > end:
                raise RuntimeError(f"slapd did not start:\n{(wd / 'slapd.log').read_text(errors='replace')[-3000:]}")
            time.sleep(0.1)
        # the socket appears before slapd accepts on it: wait until a query answers
        while subprocess.run(["ldapsearch", "-x", "-H", self.ldapi, "-b", "", "-s", "base"], capture_output=True,
                             timeout=30, check=False).returncode != 0:  # fmt: skip
            if self.proc.poll() is not None or time.monotonic() > end:
                raise RuntimeError(f"slapd does not answer:\n{(wd / 'slapd.log').read_text(errors='replace')[-3000:]}")
            time.sleep(0.2)
        (wd / "data.ldif").write_text(self._data_ldif())
        _run(["ldapadd", "-x", "-H", self.ldapi, "-D", ADMIN, "-w", self.admin_password, "-f", str(wd / "data.ldif")])
        locks = [
            f"dn: uid={u.name},ou=people,{SUFFIX}\nchangetype: modify\nadd: pwdAccountLockedTime\n"
            "pwdAccountLockedTime: 000001010000Z\n"
            for u in self.users
            if u.locked
        ]
        if locks:  # an operational attribute: set by the administrator after the entry exists
            (wd / "locks.ldif").write_text("\n".join(locks))
            _run(["ldapmodify", "-x", "-H", self.ldapi, "-D", ADMIN, "-w", self.admin_password, "-f",
                  str(wd / "locks.ldif")])  # fmt: skip
        return self

    def search(self, *args: str, bind: tuple[str, str] | None = None) -> subprocess.CompletedProcess:
        """ldapsearch over ldaps:// checking the server against our CA (as SSSD does)."""
        auth = ["-D", bind[0], "-w", bind[1]] if bind else []
        env = dict(os.environ, LDAPTLS_CACERT=str(self.workdir / "ca.pem"), LDAPTLS_REQCERT="demand")
        return subprocess.run(
            ["ldapsearch", "-x", "-LLL", "-H", self.uri, *auth, "-b", SUFFIX, *args],
            capture_output=True, text=True, timeout=30, check=False, env=env,
        )  # fmt: skip

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop(grace=10)
        self.proc = None
        shutil.rmtree(self._sockdir, ignore_errors=True)


def _snapshot(paths) -> dict[str, tuple]:
    """Every file/dir/link under ``paths``: type, mode, owner and content (to prove the restore)."""
    out: dict[str, tuple] = {}
    for top in paths:
        if not top.exists() and not top.is_symlink():
            out[str(top)] = ("absent",)
            continue
        items = [top] + (sorted(top.rglob("*")) if top.is_dir() and not top.is_symlink() else [])
        for p in items:
            st = p.lstat()
            if p.is_symlink():
                out[str(p)] = ("link", os.readlink(p))
            elif p.is_file():
                out[str(p)] = ("file", st.st_mode, st.st_uid, st.st_gid, p.read_bytes())
            else:
                out[str(p)] = ("dir", st.st_mode, st.st_uid, st.st_gid)
    return out


class SystemSssd:
    def __init__(self, workdir: Path, files: dict[str, str]):
        """``files``: absolute path -> content, written with mode 0600 (sssd.conf, the bind snippet, the CA)."""
        self.workdir = Path(workdir)
        self.files = files
        self.proc: Daemon | None = None
        self._backup = self.workdir / "saved"
        self.before: dict[str, tuple] = {}

    def start(self, timeout: float = 30) -> SystemSssd:
        self.before = _snapshot(SAVED)
        self._backup.mkdir(parents=True)
        for i, p in enumerate(SAVED):
            if p.exists():
                dst = self._backup / str(i)
                if p.is_dir():
                    shutil.copytree(p, dst, symlinks=True)
                else:
                    shutil.copy2(p, dst)
        try:
            self._install()
            self.proc = Daemon(["sssd", "-i", "--logger=stderr", "-d", "3"], self.workdir / "sssd.log")
            end = time.monotonic() + timeout
            while not Path("/var/lib/sss/pipes/nss").exists():
                if self.proc.poll() is not None or time.monotonic() > end:
                    raise RuntimeError(f"sssd did not start:\n{self.log()[-4000:]}")
                time.sleep(0.2)
        except BaseException:
            self.stop()
            raise
        return self

    def _install(self) -> None:
        ns = Path("/etc/nsswitch.conf")
        lines = ns.read_text().splitlines() if ns.exists() else []
        keep = [ln for ln in lines if ln.split(":", 1)[0].strip() not in ("passwd", "group")]
        ns.write_text("\n".join(["passwd: files sss", "group: files sss", *keep]) + "\n")
        for sub in ("db", "mc"):  # no cache from an earlier run
            d = Path("/var/lib/sss") / sub
            if d.is_dir():
                for f in d.iterdir():
                    if f.is_file():
                        f.unlink()
        for path, text in self.files.items():
            p = Path(path)
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
            p.chmod(0o600)
        (Path("/etc/pam.d") / PAM_SERVICE).write_text("auth required pam_sss.so\naccount required pam_sss.so\n")

    def log(self) -> str:
        p = self.workdir / "sssd.log"
        return p.read_text(errors="replace") if p.exists() else ""

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop(grace=10)
            self.proc.kill()  # sssd's responders/providers are in its session; make sure none is left
            self.proc = None
        if not self.before:
            return
        for i, p in enumerate(SAVED):
            saved = self._backup / str(i)
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            elif p.exists() or p.is_symlink():
                p.unlink()
            if saved.is_dir():
                shutil.copytree(saved, p, symlinks=True)
            elif saved.exists():
                shutil.copy2(saved, p)
        for path, entry in self.before.items():  # owners are not kept by copytree
            if entry[0] in ("file", "dir"):
                os.chown(path, entry[2], entry[3], follow_symlinks=False)
                os.chmod(path, entry[1] & 0o7777)

    def restored(self) -> bool:
        return _snapshot(SAVED) == self.before


# ---------------------------------------------------------------------- the tests' directory and rendering

ALICE_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGZ1bGx5LXJlbmRlcmVkLWtleS1mb3ItYWxpY2UtdGVzdA alice@lab"
USERS = [
    User("alice", 20001, ["llm-pretrain", "pretrain-gpu"], ALICE_KEY),
    User("bob", 20002, ["llm-pretrain"]),
    User("dave", 20004, ["research"]),
]
GROUPS = [
    Group("llm-pretrain", 30001, ["alice", "bob"]),
    Group("pretrain-gpu", 30002, ["alice"]),
    Group("research", 30003, ["dave"]),
]


def render_identity(root, slapd: Slapd, edit_tenants=None, edit_pools=None, edit_identity=None) -> dict[str, dict]:
    """Render the sample fleet with its directory at ``slapd``; per tenant the files SSSD reads."""
    import render_fixtures as fx  # tests/lib

    inv = fx.make_inventory(root)

    def point(d):
        i = d["gpufleet_identity"]
        i.update(uris=[slapd.uri], tls_ca=slapd.ca_pem)
        i["bind"]["dn"] = "cn=sssd-reader,ou=services,dc=example,dc=org"

    fx.edit_vars(inv, "identity.yml", point)
    if edit_identity:
        fx.edit_vars(inv, "identity.yml", edit_identity)
    if edit_tenants:
        fx.edit_vars(inv, "tenants.yml", edit_tenants)
    if edit_pools:
        fx.edit_vars(inv, "pools.yml", edit_pools)
    out = root / "gitops"
    fx.render_to(inv, out)
    tenants = {}
    for t in ("llm-pretrain", "research"):
        base = out / "clusters" / "gpu-east" / "tenants" / t
        values = yaml.safe_load((base / "slurm" / "values.yaml").read_text())
        objects = [o for o in yaml.safe_load_all((base / "objects" / "objects.yaml").read_text()) if o]
        tenants[t] = {
            "values": values,
            "objects": objects,
            "script": next(
                o
                for o in yaml.safe_load_all((base / "accounting" / "accounts.yaml").read_text())
                if o["kind"] == "ConfigMap"
            )["data"]["accounts.sh"],
        }
    return tenants


def sssd_files(tenant: dict, password: str | None) -> dict[str, str]:
    """Path -> content of what a login pod of the tenant has: everything from the rendered values."""
    values = tenant["values"]
    login = values["loginsets"]["main"]
    vols = {v["name"]: v for v in login["podSpec"]["volumes"]}
    files = {"/etc/sssd/sssd.conf": values["sssd"]["conf"]}
    domain = next(
        line.split("=", 1)[1].strip() for line in values["sssd"]["conf"].splitlines() if line.startswith("domains")
    )
    for m in login["login"]["volumeMounts"]:
        vol = vols[m["name"]]
        if "projected" in vol and password is not None:  # the bind Secret, as the tenant role writes it
            assert vol["projected"]["defaultMode"] == 0o600
            files[m["mountPath"]] = rs.bind_snippet(domain, password)
        elif "configMap" in vol and vol["configMap"]["name"] == rs.CA_CONFIGMAP:
            cm = next(
                o for o in tenant["objects"] if o["kind"] == "ConfigMap" and o["metadata"]["name"] == rs.CA_CONFIGMAP
            )
            for key, text in cm["data"].items():
                files[f"{m['mountPath']}/{key}"] = text
    return files


def sh(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=60, check=False)


def wait_resolves(name: str, timeout: float = 30) -> subprocess.CompletedProcess:
    end = time.monotonic() + timeout
    while True:
        r = sh("getent", "passwd", name)
        if r.returncode == 0 or time.monotonic() > end:
            return r
        time.sleep(0.5)


def pam_account(name: str) -> str:
    r = sh("sssctl", "user-checks", "-a", "acct", "-s", "gpufleet-identity-test", name)
    return r.stdout + r.stderr
