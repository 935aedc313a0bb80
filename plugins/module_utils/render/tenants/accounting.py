"""Slurm accounting of one tenant: slurm.conf fair-share settings, the slurm chart's ``accounting``
values, the MariaDB (mariadb-operator CR) and the accounts/QOS applied with ``sacctmgr``.

Why each piece looks the way it does is in docs/adr/slurm-accounting.md. In short:

* slurmdbd comes from the Slinky slurm chart (``accounting.enabled``); the database password only
  by ``accounting.storageConfig.passwordKeyRef`` (a Secret the tenant role creates on the host, synced
  into the vCluster). Nothing secret is rendered.
* The database is a ``k8s.mariadb.com/v1alpha1`` MariaDB CR of mariadb-operator inside the tenant's
  vCluster (the way Slinky documents), or an external server (``database.type: external``).
* Accounts, users and QOS are a generated, idempotent ``sacctmgr`` shell script in a ConfigMap, run
  by a Job named after the script's hash (a changed inventory is a new Job; an unchanged one is in
  sync). The same script is what the integration test runs against a real slurmdbd.

Every value placed here was validated by the schema (model/accounting_model.py): names and times cannot
carry whitespace, ``=``, ``,``, quotes or newlines; the script still quotes each argument.
"""

from __future__ import annotations

import hashlib
import shlex
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.model.accounting_model import Accounting, Qos
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Cluster, Tenant
from ansible_collections.gpufleet.core.plugins.module_utils.render.apps import SKIP_DRY_RUN, App
from ansible_collections.gpufleet.core.plugins.module_utils.render.platform.storage import state_storage_class
from ansible_collections.gpufleet.core.plugins.module_utils.render.shared_names import SLURM_NAMESPACE
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants import slurm_ready, sssd

DB_PASSWORD_SECRET = {"name": "slurm-accounting-db", "key": "password"}
DB_ROOT_SECRET = {"name": "slurm-accounting-db-root", "key": "password"}
MARIADB_NAME = "slurm-accounting-db"
MARIADB_API = "k8s.mariadb.com/v1alpha1"
MARIADB_OPERATOR_NS = "mariadb-operator"  # inside the tenant's vCluster
SCRIPT_CONFIGMAP = "slurm-accounts"
SCRIPT_KEY = "accounts.sh"
# The controller Service of the slurm chart (release "slurm") and slurmctld's port.
CONTROLLER_SERVICE = f"slurm-controller.{SLURM_NAMESPACE}:6817"
# TRES every limit may name; unset ones are reset to -1 so a limit removed from the inventory is
# removed from Slurm too.
BASE_TRES = ("billing", "cpu", "gres/gpu", "mem", "node")
# slurmdbd's documented InnoDB advice (Slurm accounting.html): big buffer pool, long lock timeout.
MY_CNF = (
    "[mariadb]\n"
    "bind-address=*\n"
    "default_storage_engine=InnoDB\n"
    "binlog_format=row\n"
    "innodb_default_row_format=dynamic\n"
    "innodb_autoinc_lock_mode=2\n"
    "innodb_buffer_pool_size=1024M\n"
    "innodb_log_file_size=64M\n"
    "innodb_lock_wait_timeout=900\n"
    "max_allowed_packet=256M\n"
)
_WEIGHT_KEYS = {
    "age": "PriorityWeightAge",
    "assoc": "PriorityWeightAssoc",
    "fairshare": "PriorityWeightFairshare",
    "jobsize": "PriorityWeightJobSize",
    "partition": "PriorityWeightPartition",
    "qos": "PriorityWeightQOS",
}


def slurm_cluster_name(tenant: Tenant) -> str:
    """Slurm ClusterName of the tenant (what the slurm chart's ``clusterName`` is set to)."""
    return tenant.name.replace("-", "_")


def enabled(tenant: Tenant) -> bool:
    return tenant.accounting.enabled


# ------------------------------------------------------------------ slurm.conf / values


def tres_universe(acct: Accounting) -> list[str]:
    """Every TRES a limit of this tenant may name: the base set plus any the inventory uses."""
    keys = set(BASE_TRES)
    for item in (*acct.qos, *acct.accounts):
        for m in (
            getattr(item, "max_tres_per_job", {}),
            getattr(item, "max_tres_per_user", {}),
            getattr(item, "grp_tres", {}),
        ):
            keys.update(m)
    return sorted(keys)


def slurm_conf(acct: Accounting) -> dict[str, Any]:
    """slurm.conf keys (controller ``extraConfMap``) for fair share and limit enforcement."""
    conf: dict[str, Any] = {
        "PriorityType": "priority/multifactor",
        "PriorityDecayHalfLife": acct.decay_half_life,
        "PriorityMaxAge": acct.max_age,
        "PriorityFavorSmall": "YES" if acct.favor_small else "NO",
    }
    for k, key in sorted(_WEIGHT_KEYS.items(), key=lambda kv: kv[1]):
        conf[key] = acct.weights[k]
    conf["AccountingStorageEnforce"] = list(acct.enforce)
    # GPUs and the rest of the TRES the limits name must be tracked, or limits on them do nothing
    conf["AccountingStorageTRES"] = [t for t in tres_universe(acct) if t not in ("billing", "cpu", "mem", "node")]
    return conf


def conf_lines(conf_map: dict[str, Any]) -> list[str]:
    """``extraConfMap`` as slurm.conf lines, the way the Slinky chart writes them (lists joined by ,)."""
    out = []
    for k, v in conf_map.items():
        val = ",".join(str(x) for x in v) if isinstance(v, list) else str(v)
        out.append(f"{k}={val}")
    return out


def chart_values(acct: Accounting) -> dict[str, Any]:
    """The slurm chart's ``accounting`` block (keys of the upstream values.yaml only)."""
    db = acct.database
    host = db.host if db.type == "external" else f"{MARIADB_NAME}.{SLURM_NAMESPACE}.svc"
    return {
        "enabled": True,
        "storageConfig": {
            "host": host,
            "port": db.port,
            "database": db.name,
            "username": db.user,
            "passwordKeyRef": dict(DB_PASSWORD_SECRET),
        },
    }


def secrets(acct: Accounting) -> list[dict[str, str]]:
    """Secrets the apply step provides on the host (``vc-<tenant>``), synced into ``slurm/``."""
    if not acct.enabled:
        return []
    if acct.database.type == "external":
        return [dict(DB_PASSWORD_SECRET)]
    return [dict(DB_PASSWORD_SECRET), dict(DB_ROOT_SECRET)]


def mariadb(acct: Accounting, default_class: str | None = None) -> dict[str, Any]:
    """The MariaDB CR; InnoDB on the tenant's ``storage_class``, else the cluster's databases class
    (render/platform/storage.py: never NFS implicitly)."""
    db = acct.database
    storage: dict[str, Any] = {"size": db.storage}
    if db.storage_class or default_class:
        storage["storageClassName"] = db.storage_class or default_class
    return {
        "apiVersion": MARIADB_API,
        "kind": "MariaDB",
        "metadata": {"name": MARIADB_NAME, "namespace": SLURM_NAMESPACE},
        "spec": {
            "rootPasswordSecretKeyRef": {**DB_ROOT_SECRET, "generate": False},
            "username": db.user,
            "passwordSecretKeyRef": {**DB_PASSWORD_SECRET, "generate": False},
            "database": db.name,
            "port": db.port,
            "storage": storage,
            "myCnf": MY_CNF,
        },
    }


# ------------------------------------------------------------------ sacctmgr


def _tres(limits: dict[str, Any], universe: list[str]) -> str:
    return ",".join(f"{k}={limits[k] if k in limits else -1}" for k in universe)


def _qos_settings(q: Qos, universe: list[str]) -> list[str]:
    return [
        f"Priority={q.priority if q.priority is not None else 0}",
        f"MaxWall={q.max_wall or -1}",
        f"MaxTRESPerJob={_tres(q.max_tres_per_job, universe)}",
        f"MaxTRESPerUser={_tres(q.max_tres_per_user, universe)}",
        f"GrpTRES={_tres(q.grp_tres, universe)}",
        f"MaxJobsPerUser={q.max_jobs_per_user if q.max_jobs_per_user is not None else -1}",
        f"MaxSubmitJobsPerUser={q.max_submit_jobs_per_user if q.max_submit_jobs_per_user is not None else -1}",
        "Flags=DenyOnLimit" if q.deny_on_limit else "Flags=-1",
    ]


def sacctmgr_commands(tenant: Tenant) -> list[list[str]]:
    """The sacctmgr commands (argv after ``sacctmgr -i``) that make Slurm hold the inventory's
    accounts, users and QOS. Adds and updates; never deletes (an account may still own jobs)."""
    acct = tenant.accounting
    universe = tres_universe(acct)
    cluster = slurm_cluster_name(tenant)
    cmds: list[list[str]] = [["add", "cluster", cluster]]
    for q in acct.qos:
        cmds.append(["add", "qos", q.name])
        cmds.append(["modify", "qos", "where", f"name={q.name}", "set", *_qos_settings(q, universe)])
    for a in acct.accounts:
        cmds.append(
            ["add", "account", a.name, f"Cluster={cluster}", f"Parent={a.parent}", f"Organization={tenant.name}"]
        )
        # the parent in a command of its own: 26.05 turns a modify that sets an unchanged Parent
        # into "Nothing modified" for every other value of that command
        where = ["modify", "account", "where", f"name={a.name}", f"cluster={cluster}", "set"]
        cmds.append([*where, f"Parent={a.parent}"])
        settings = [
            f"Fairshare={a.fairshare}",
            f"GrpTRES={_tres(a.grp_tres, universe)}",
            f"MaxTRESPerJob={_tres(a.max_tres_per_job, universe)}",
            f"MaxWall={a.max_wall or -1}",
        ]
        if a.qos:
            settings.append(f"QOS={','.join(a.qos)}")
        settings.append(f"DefaultQOS={a.default_qos or -1}")
        cmds.append([*where, *settings])
    defaults: dict[str, str] = {}
    for a in acct.accounts:
        for u in a.users:
            cmds.append(["add", "user", u, f"Account={a.name}", f"Cluster={cluster}"])
            if u not in defaults or a.name == acct.default_account:
                defaults[u] = a.name
    for u, a_name in sorted(defaults.items()):
        cmds.append(["modify", "user", "where", f"name={u}", "set", f"DefaultAccount={a_name}"])
    return cmds


SCRIPT_HEAD = """#!/bin/sh
# Slurm accounts, users and QOS of tenant {tenant} (cluster {cluster}), rendered by gpufleet from
# the inventory; do not edit, re-render instead. Idempotent: adds what is missing and sets every
# limit (unset ones to -1); removes nothing. Needs sacctmgr with a working slurm.conf.
set -eu
SACCTMGR="${{SACCTMGR:-sacctmgr}}"
run() {{
  if out=$("$SACCTMGR" -i "$@" 2>&1); then
    printf '%s\\n' "$out"
    return 0
  fi
  case "$out" in
    # already there: 22.05 and 26.05 word it differently (26.05 exits 1 on an existing user
    # association: "Request didn't affect anything"; the script adds accounts before users)
    *"Nothing new added"*|*"Nothing modified"*|*"already exists"*|*"Already existing"*|*"didn't affect anything"*)
      printf '%s\\n' "$out" ;;
    *) printf 'sacctmgr %s: %s\\n' "$*" "$out" >&2; return 1 ;;
  esac
}}
missing=""
resolves() {{
  if id -u -- "$1" >/dev/null 2>&1; then return 0; fi
  case " $missing " in *" $1 "*) ;; *) missing="$missing $1" ;; esac
  return 1
}}
"""


SCRIPT_TAIL = """if [ -n "$missing" ]; then
  printf 'users that do not resolve (getent/id) and were NOT added to Slurm:%s\\n' "$missing" >&2
  exit 3
fi
"""


def user_of(cmd: list[str]) -> str | None:
    """The user a sacctmgr command adds or modifies (None for accounts, QOS, the cluster)."""
    if cmd[:2] == ["add", "user"]:
        return cmd[2]
    if cmd[:3] == ["modify", "user", "where"] and cmd[3].startswith("name="):
        return cmd[3][len("name=") :]
    return None


def sacctmgr_script(tenant: Tenant) -> str:
    """The script of the accounts Job. A user is added only when it resolves on the node (through
    SSSD, the tenant's directory); the others are listed and the script fails (exit 3) after adding
    everything else: a user that is not in the directory is reported, never silently added."""
    head = SCRIPT_HEAD.format(tenant=tenant.name, cluster=slurm_cluster_name(tenant))
    body = []
    for cmd in sacctmgr_commands(tenant):
        line = "run " + " ".join(shlex.quote(a) for a in cmd)
        user = user_of(cmd)
        body.append(f"resolves {shlex.quote(user)} && {line}\n" if user is not None else line + "\n")
    return head + "".join(body) + SCRIPT_TAIL


def apply_objects(tenant: Tenant, image: str | None = None) -> list[dict[str, Any]]:
    """ConfigMap with the sacctmgr script and the Job that runs it (named after the script hash)."""
    script = sacctmgr_script(tenant)
    digest = hashlib.sha256(script.encode()).hexdigest()[:10]
    # The Job is the readiness gate: the pinned slurm-operator writes no status on a Controller or an
    # Accounting, so it waits until the daemons answer (render/tenants/slurm_ready.py): sackd fetches
    # slurm.conf from slurmctld (configless, with the cluster's auth key), then ``scontrol ping`` and
    # ``sacctmgr ping`` (each exits 0 only once a slurmctld / a slurmdbd answered).
    runner = (
        slurm_ready.WAIT_FOR
        + f"sackd --conf-server {CONTROLLER_SERVICE}\n"
        + "wait_for 'slurm.conf from slurmctld (sackd)' test -s /run/slurm/conf/slurm.conf\n"
        + "export SLURM_CONF=/run/slurm/conf/slurm.conf\n"
        + "wait_for slurmctld scontrol ping\n"
        + "wait_for slurmdbd sacctmgr ping\n"
        + sssd.job_runner_prefix(tenant.identity)
        + f"sh /gpufleet/{SCRIPT_KEY}\n"
    )
    id_vols, id_mounts = sssd.job_volumes(tenant.identity)
    labels = {"app.kubernetes.io/managed-by": "gpufleet", "gpufleet.io/tenant": tenant.name}
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": SCRIPT_CONFIGMAP, "namespace": SLURM_NAMESPACE, "labels": labels},
            "data": {SCRIPT_KEY: script},
        },
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": f"slurm-accounts-{digest}",
                "namespace": SLURM_NAMESPACE,
                "labels": labels,
                "annotations": {
                    "gpufleet.io/script-sha256": digest,
                    slurm_ready.WAITS_FOR: "slurmctld (scontrol ping) and slurmdbd (sacctmgr ping)",
                },
            },
            "spec": {
                "backoffLimit": 20,
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "sacctmgr",
                                "image": image or slurm_ready.login_image(),
                                "command": ["/bin/sh", "-c", runner],
                                "volumeMounts": [
                                    {"name": "script", "mountPath": "/gpufleet", "readOnly": True},
                                    {"name": "slurm-key", "mountPath": "/etc/slurm/slurm.key", "subPath": "slurm.key"},
                                    *id_mounts,
                                ],
                            }
                        ],
                        "volumes": [
                            {"name": "script", "configMap": {"name": SCRIPT_CONFIGMAP}},
                            {
                                "name": "slurm-key",
                                "projected": {
                                    "defaultMode": 0o600,
                                    "sources": [
                                        {
                                            "secret": {
                                                "name": "slurm-auth-slurm",
                                                "items": [{"key": "slurm.key", "path": "slurm.key"}],
                                            }
                                        }
                                    ],
                                },
                            },
                            *id_vols,
                        ],
                    },
                },
            },
        },
    ]


def report_lines(tenant: Tenant) -> list[str]:
    """REPORT.md bullet lines of the tenant's accounting state."""
    acct = tenant.accounting
    if not acct.enabled:
        return ["- Slurm accounting: off (no slurmdbd; no fair share, no accounts or QOS)."]
    db = acct.database
    where = (
        f"external MariaDB/MySQL `{db.host}:{db.port}`"
        if db.type == "external"
        else f"MariaDB `{SLURM_NAMESPACE}/{MARIADB_NAME}` (mariadb-operator, {db.storage})"
    )
    weights = ", ".join(f"{k} {v}" for k, v in sorted(acct.weights.items()) if v)
    lines = [
        f"- Slurm accounting: slurmdbd on {where}, database `{db.name}` as `{db.user}`; "
        f"fair share `priority/multifactor` (weights {weights or 'none'}, half-life {acct.decay_half_life}), "
        f"AccountingStorageEnforce `{','.join(acct.enforce)}`.",
    ]
    if acct.qos:
        lines.append(
            "- QOS: "
            + "; ".join(
                f"`{q.name}` ("
                + ", ".join(
                    x
                    for x in (
                        f"priority {q.priority}" if q.priority is not None else "",
                        f"MaxWall {q.max_wall}" if q.max_wall else "",
                        f"MaxTRESPerJob {_tres(q.max_tres_per_job, sorted(q.max_tres_per_job))}"
                        if q.max_tres_per_job
                        else "",
                        f"GrpTRES {_tres(q.grp_tres, sorted(q.grp_tres))}" if q.grp_tres else "",
                    )
                    if x
                )
                + ")"
                for q in acct.qos
            )
            + "."
        )
    if acct.accounts:
        lines.append(
            "- Accounts: "
            + "; ".join(
                f"`{a.name}` (fairshare {a.fairshare}"
                + (f", QOS {','.join(a.qos)}" if a.qos else "")
                + (f", {len(a.users)} users" if a.users else "")
                + ")"
                for a in acct.accounts
            )
            + f"; applied by Job `{SLURM_NAMESPACE}/slurm-accounts-<hash>` (sacctmgr)."
        )
    return lines


# ------------------------------------------------------------------ Applications


def app_rows(cluster: Cluster, tenant: Tenant, image: str | None = None) -> list[App]:
    """Inside the tenant's vCluster: mariadb-operator (CRDs + controller) and the MariaDB CR when the
    database is in-cluster, then the sacctmgr Job once the Slurm cluster is up (children of the
    tenant's root app, rows of render/apps.py)."""
    acct = tenant.accounting
    if not acct.enabled:
        return []
    rows = []
    if acct.database.type == "mariadb-operator":
        db = {"mariadb.yaml": [mariadb(acct, state_storage_class(cluster))]}
        rows += [
            # CRDs: no resources finalizer (deleting the app must not delete every MariaDB); not kept
            # past the tenant (removing the tenant removes the app with its vCluster). Empty values:
            # the operator chart leaves CRDs to the -crds chart by default.
            App(
                "3-mariadb-operator-crds.yaml",
                "mariadb-operator-crds",
                "tenant-crds",
                MARIADB_OPERATOR_NS,
                chart="mariadb_operator_crds",
                values={},
                keep=True,
                keep_app=False,
            ),
            App(
                "4-mariadb-operator.yaml",
                "mariadb-operator",
                "tenant-operators",
                MARIADB_OPERATOR_NS,
                chart="mariadb_operator",
                values={},
            ),
            App(
                "5-accounting-db.yaml",
                "accounting-db",
                "tenant-objects",
                SLURM_NAMESPACE,
                manifests=db,
                create_namespace=False,
                sync_options=(SKIP_DRY_RUN,),
            ),
        ]
    accounts = {"accounts.yaml": apply_objects(tenant, image)}
    rows.append(
        App(
            "7-accounting.yaml",
            "accounting",
            "tenant-accounting",
            SLURM_NAMESPACE,
            manifests=accounts,
            create_namespace=False,
        )
    )
    return rows
