"""The Controller, Accounting, RestApi, NodeSet and LoginSet objects (and the sssd.conf Secret) the
Slinky ``slurm`` chart v1.2.1 makes from a tenant's rendered values
(gitops/clusters/<c>/tenants/<t>/slurm/values.yaml), for the tests that run the real operator. The
chart's templates cannot run here (the chart is not in ../shared and is not served by the Go module
proxy), so this follows them (helm/slurm/templates of slurm-operator v1.2.1) by hand, field by field,
for the parts these tests use, with the chart's own defaults (../shared/upstream/charts/slurm/values.yaml)
under the tenant's values as Helm merges them:

* names: release ``slurm`` in namespace ``slurm`` (the tenant's Argo CD app), so the Controller and
  RestApi are ``slurm`` and each NodeSet is ``slurm-worker-<key>``;
* Controller: ``clusterName``, ``slurmKeyRef``/``jwtKeyRef`` from ``slurmKey``/``jwtKey.secretRef``,
  ``accountingRef`` when accounting is on, ``extraConf`` as ``Key=v1,v2`` lines, the pod template's
  metadata and spec (priorityClassName from ``priorityClass``);
* Accounting (when on): the key refs, ``extraConf``, the ``slurmdbd`` container, the pod template,
  ``storageConfig`` (database host, user, password Secret) and ``service``;
* RestApi: ``controllerRef``, ``replicas``, the pod template;
* NodeSet: ``nodesetDefaults`` under the tenant's entry; ``scalingMode``, ``replicas``,
  ``partition``, ``updateStrategy``, the ``slurmd`` container (resources, volumeMounts), the pod
  template with the pool's nodeSelector, tolerations and volumes, ``hostname: <key>-``, the flags
  ``ordinalPadding``/``pinToNode``/``workloadDisruptionProtection``/``pruneSlurmNodeRecords``/
  ``oversubscribeNode``, ``extraConf`` (``--conf`` for slurmd) from ``extraConfMap``, and ``ssh`` with
  the ``sssdConfRef`` the chart adds when ``ssh.enabled``;
* LoginSet: ``loginsetDefaults`` under the tenant's entry, named ``slurm-login-<key>``;
  ``extraSshdConfig``, ``sssdConfRef``, ``rootSshAuthorizedKeys``, ``replicas``, ``strategy``, the
  ``login`` and ``initconf`` containers, the pod template and ``service``;
* the sssd Secret ``slurm-sssd-conf`` (key ``sssd.conf``) holding ``sssd.conf`` as the values give it,
  made when an enabled LoginSet or a NodeSet with ``ssh.enabled`` exists and ``sssd.secretRef`` names
  no Secret of its own.

Left out (no bearing on what the operator does here): container images' digests and the chart's
``app.kubernetes.io``/``helm.sh`` labels.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
CHART_VALUES = REPO.parent / "shared" / "upstream" / "charts" / "slurm" / "values.yaml"
API = "slinky.slurm.net/v1beta1"
RELEASE = "slurm"
NAMESPACE = "slurm"


def _merge(base: dict, over: dict) -> dict:
    """Helm's values merge: maps merge key by key, everything else is replaced."""
    out = copy.deepcopy(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else copy.deepcopy(v)
    return out


def chart_values(rendered: Path) -> dict[str, Any]:
    return _merge(yaml.safe_load(CHART_VALUES.read_text()), yaml.safe_load(rendered.read_text()))


def _to_list(conf_map: dict[str, Any]) -> list[str]:
    """The chart's ``slurm._toList``: ``Key=v1,v2`` per key with a value, in key order."""
    out = []
    for k in sorted(conf_map):
        v = conf_map[k]
        if v:
            out.append(f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}")
    return out


def _image(img: dict[str, Any]) -> str:
    return f"{img['repository']}:{img['tag']}"


def _container(c: dict[str, Any], pull: str) -> dict[str, Any]:
    out = {k: copy.deepcopy(v) for k, v in c.items() if k != "image"}
    out["image"] = _image(c["image"])
    out["imagePullPolicy"] = c.get("imagePullPolicy") or pull
    return out


def _template(metadata: dict, pod_spec: dict, values: dict) -> dict[str, Any]:
    spec = copy.deepcopy(pod_spec or {})
    spec["imagePullSecrets"] = list(spec.get("imagePullSecrets") or []) + list(values.get("imagePullSecrets") or [])
    pc = values["priorityClass"]
    spec["priorityClassName"] = spec.get("priorityClassName") or (pc.get("name") if pc.get("enabled") else "")
    return {"metadata": copy.deepcopy(metadata or {}), "spec": spec}


def _meta(name: str, metadata: dict | None) -> dict[str, Any]:
    out = {"name": name, "namespace": NAMESPACE}
    out.update({k: v for k, v in (metadata or {}).items() if k in ("labels", "annotations")})
    return out


def controller(values: dict[str, Any]) -> dict[str, Any]:
    c = values["controller"]
    spec: dict[str, Any] = {}
    if values["accounting"].get("enabled"):
        spec["accountingRef"] = {"name": RELEASE}
    spec["slurmKeyRef"] = dict(values["slurmKey"]["secretRef"])
    spec["jwtKeyRef"] = dict(values["jwtKey"]["secretRef"])
    spec["clusterName"] = values["clusterName"]
    extra = c.get("extraConf") or "\n".join(_to_list(c.get("extraConfMap") or {}))
    if extra:
        spec["extraConf"] = extra
    pull = values["imagePullPolicy"]
    spec["slurmctld"] = _container(c["slurmctld"], pull)
    spec["inplaceReconfigure"] = c["inplaceReconfigure"]
    spec["reconfigure"] = _container(c["reconfigure"], pull)
    spec["logfile"] = _container(c["logfile"], pull)
    spec["template"] = _template(c.get("metadata"), c.get("podSpec"), values)
    if c.get("persistence"):
        # the chart's toYaml-set-storageClassName: a null storageClassName is left out
        spec["persistence"] = {k: v for k, v in c["persistence"].items() if not (k == "storageClassName" and v is None)}
    for key in ("service", "metrics"):
        if c.get(key):
            spec[key] = copy.deepcopy(c[key])
    return {"apiVersion": API, "kind": "Controller", "metadata": _meta(RELEASE, c.get("metadata")), "spec": spec}


def accounting(values: dict[str, Any]) -> dict[str, Any]:
    a = values["accounting"]
    spec: dict[str, Any] = {
        "slurmKeyRef": dict(values["slurmKey"]["secretRef"]),
        "jwtKeyRef": dict(values["jwtKey"]["secretRef"]),
    }
    extra = a.get("extraConf") or "\n".join(_to_list(a.get("extraConfMap") or {}))
    if extra:
        spec["extraConf"] = extra
    spec["slurmdbd"] = _container(a["slurmdbd"], values["imagePullPolicy"])
    spec["template"] = _template(a.get("metadata"), a.get("podSpec"), values)
    for key in ("storageConfig", "service"):
        if a.get(key):
            spec[key] = copy.deepcopy(a[key])
    return {"apiVersion": API, "kind": "Accounting", "metadata": _meta(RELEASE, a.get("metadata")), "spec": spec}


def restapi(values: dict[str, Any]) -> dict[str, Any]:
    r = values["restapi"]
    spec = {
        "controllerRef": {"name": RELEASE},
        "replicas": r["replicas"],
        "slurmrestd": _container(r["slurmrestd"], values["imagePullPolicy"]),
        "template": _template(r.get("metadata"), r.get("podSpec"), values),
    }
    return {"apiVersion": API, "kind": "RestApi", "metadata": _meta(RELEASE, r.get("metadata")), "spec": spec}


def nodeset(values: dict[str, Any], key: str) -> dict[str, Any]:
    n = _merge(values.get("nodesetDefaults") or {}, values["nodesets"][key])
    pod_spec = dict(n.get("podSpec") or {}, hostname=f"{key}-")
    spec: dict[str, Any] = {"controllerRef": {"name": RELEASE}}
    extra = n.get("extraConf") or " ".join(_to_list(n.get("extraConfMap") or {}))
    if extra:
        spec["extraConf"] = extra
    if n.get("partition"):
        part = {"enabled": n["partition"]["enabled"]}
        conf = n["partition"].get("config") or " ".join(_to_list(n["partition"].get("configMap") or {}))
        if conf:
            part["config"] = conf
        spec["partition"] = part
    spec.update(scalingMode=n["scalingMode"], replicas=n["replicas"])
    spec["slurmd"] = _container(n["slurmd"], values["imagePullPolicy"])
    if (n.get("ssh") or {}).get("enabled"):
        spec["ssh"] = dict(copy.deepcopy(n["ssh"]), sssdConfRef=sssd_ref(values))
    spec["logfile"] = _container(n["logfile"], values["imagePullPolicy"])
    spec["template"] = _template(n.get("metadata"), pod_spec, values)
    if n.get("updateStrategy"):
        spec["updateStrategy"] = copy.deepcopy(n["updateStrategy"])
    for flag in ("ordinalPadding", "pinToNode", "workloadDisruptionProtection", "pruneSlurmNodeRecords",
                 "oversubscribeNode"):  # fmt: skip
        spec[flag] = n[flag]
    name = f"{RELEASE}-worker-{key}"
    return {"apiVersion": API, "kind": "NodeSet", "metadata": _meta(name, n.get("metadata")), "spec": spec}


def sssd_ref(values: dict[str, Any]) -> dict[str, str]:
    """The chart's ``slurm.sssdConf.name``/``.key``: ``sssd.secretRef`` or the Secret it makes."""
    ref = values["sssd"].get("secretRef") or {}
    return {"name": ref.get("name") or f"{RELEASE}-sssd-conf", "key": ref.get("key") or "sssd.conf"}


def sssd_secret(values: dict[str, Any]) -> list[dict[str, Any]]:
    """The chart's sssd.conf Secret (none when ``sssd.secretRef`` names one or nothing needs it)."""
    logins = [_merge(values.get("loginsetDefaults") or {}, v) for v in (values.get("loginsets") or {}).values()]
    nodesets = [_merge(values.get("nodesetDefaults") or {}, v) for v in (values.get("nodesets") or {}).values()]
    needed = any(x.get("enabled") for x in logins) or any(
        n.get("enabled") and (n.get("ssh") or {}).get("enabled") for n in nodesets
    )
    if not needed or (values["sssd"].get("secretRef") or {}).get("name"):
        return []
    ref = sssd_ref(values)
    return [{"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": _meta(ref["name"], None),
             "stringData": {ref["key"]: values["sssd"]["conf"]}}]  # fmt: skip


def loginset(values: dict[str, Any], key: str) -> dict[str, Any]:
    n = _merge(values.get("loginsetDefaults") or {}, values["loginsets"][key])
    spec: dict[str, Any] = {"controllerRef": {"name": RELEASE}}
    if n.get("extraSshdConfig"):
        spec["extraSshdConfig"] = n["extraSshdConfig"]
    spec["sssdConfRef"] = sssd_ref(values)
    if n.get("rootSshAuthorizedKeys"):
        spec["rootSshAuthorizedKeys"] = n["rootSshAuthorizedKeys"]
    spec["replicas"] = n["replicas"]
    if n.get("strategy"):
        spec["strategy"] = copy.deepcopy(n["strategy"])
    spec["login"] = _container(n["login"], values["imagePullPolicy"])
    spec["template"] = _template(n.get("metadata"), n.get("podSpec"), values)
    spec["initconf"] = _container(n["initconf"], values["imagePullPolicy"])
    if n.get("service"):
        spec["service"] = copy.deepcopy(n["service"])
    name = f"{RELEASE}-login-{key}"
    return {"apiVersion": API, "kind": "LoginSet", "metadata": _meta(name, n.get("metadata")), "spec": spec}


def chart_objects(values: dict[str, Any]) -> list[dict[str, Any]]:
    """Every object above that the chart makes from ``values`` (chart defaults merged in): the
    Controller, the Accounting when on, the RestApi, each enabled NodeSet and LoginSet, the sssd
    Secret."""
    out = [controller(values)]
    if values["accounting"].get("enabled"):
        out.append(accounting(values))
    out.append(restapi(values))
    for key, entry in sorted((values.get("nodesets") or {}).items()):
        if _merge(values.get("nodesetDefaults") or {}, entry).get("enabled"):
            out.append(nodeset(values, key))
    for key, entry in sorted((values.get("loginsets") or {}).items()):
        if _merge(values.get("loginsetDefaults") or {}, entry).get("enabled"):
            out.append(loginset(values, key))
    return out + sssd_secret(values)
