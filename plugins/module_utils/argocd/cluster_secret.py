"""Translate a vCluster's exported kubeconfig Secret into an Argo CD declarative cluster Secret.

vCluster writes ``vc-<name>`` in its namespace with the keys ``config`` (a kubeconfig),
``certificate-authority``, ``client-certificate``, ``client-key`` and ``token``; the values of
``.data`` are base64, and the PEM keys hold base64 PEM, which is what Argo CD's
``tlsClientConfig.caData/certData/keyData`` expect. Argo CD wants a Secret labelled
``argocd.argoproj.io/secret-type: cluster`` with ``name``, ``server``, ``config`` (JSON) and
optionally ``project`` (Argo CD, Declarative Setup, "Clusters":
https://argo-cd.readthedocs.io/en/stable/operator-manual/declarative-setup/#clusters; vCluster,
``exportKubeConfig``: https://www.vcluster.com/docs/vcluster/configure/vcluster-yaml/export-kube-config).

Pure functions on plain dicts. Error messages name the key that is missing, never a credential.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.deps import missing
from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError

try:
    import yaml
except ImportError:  # importing works without it; the first use raises a clear error
    yaml = missing("yaml", "PyYAML")

SECRET_TYPE_LABEL = "argocd.argoproj.io/secret-type"
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


class ClusterSecretError(GpufleetError):
    """The vCluster Secret or the registration parameters cannot make an Argo CD cluster Secret."""


def _b64decode(value: str, key: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError, TypeError) as exc:
        raise ClusterSecretError(f"vCluster Secret key {key!r} is not valid base64") from exc


def _b64(text: str | bytes) -> str:
    raw = text.encode() if isinstance(text, str) else text
    return base64.b64encode(raw).decode("ascii")


def _from_kubeconfig(data: dict[str, str]) -> dict[str, str]:
    """caData/certData/keyData/bearerToken from the ``config`` kubeconfig (current context)."""
    if "config" not in data:
        return {}
    try:
        kcfg = yaml.safe_load(_b64decode(data["config"], "config")) or {}
    except yaml.YAMLError as exc:
        raise ClusterSecretError("vCluster Secret key 'config' is not a YAML kubeconfig") from exc
    if not isinstance(kcfg, dict):
        raise ClusterSecretError("vCluster Secret key 'config' is not a kubeconfig mapping")
    contexts = {c.get("name"): c.get("context", {}) for c in kcfg.get("contexts") or []}
    ctx = contexts.get(kcfg.get("current-context")) or next(iter(contexts.values()), {})
    clusters = {c.get("name"): c.get("cluster", {}) for c in kcfg.get("clusters") or []}
    users = {u.get("name"): u.get("user", {}) for u in kcfg.get("users") or []}
    cluster = clusters.get(ctx.get("cluster")) or next(iter(clusters.values()), {})
    user = users.get(ctx.get("user")) or next(iter(users.values()), {})
    out = {
        "caData": cluster.get("certificate-authority-data"),
        "certData": user.get("client-certificate-data"),
        "keyData": user.get("client-key-data"),
        "bearerToken": user.get("token"),
    }
    return {k: v for k, v in out.items() if v}


def credentials(data: dict[str, str]) -> dict[str, str]:
    """Credentials from the ``.data`` of a vCluster kubeconfig Secret (explicit keys win over config)."""
    if not isinstance(data, dict) or not data:
        raise ClusterSecretError("the vCluster kubeconfig Secret has no data (is the vCluster up yet?)")
    creds = _from_kubeconfig(data)
    for key, field in (
        ("certificate-authority", "caData"),
        ("client-certificate", "certData"),
        ("client-key", "keyData"),
    ):
        if data.get(key):
            _b64decode(data[key], key)
            creds[field] = data[key]  # already base64 PEM: Argo CD's format
    if data.get("token"):
        creds["bearerToken"] = _b64decode(data["token"], "token").decode("utf-8", "replace").strip()
    if "caData" not in creds:
        raise ClusterSecretError(
            "the vCluster kubeconfig Secret has no certificate authority "
            "(neither key 'certificate-authority' nor certificate-authority-data in 'config')"
        )
    if not (("certData" in creds and "keyData" in creds) or "bearerToken" in creds):
        raise ClusterSecretError(
            "the vCluster kubeconfig Secret has no client credentials "
            "(needs 'client-certificate' and 'client-key', or 'token')"
        )
    return creds


def default_secret_name(name: str) -> str:
    """Name of the Argo CD cluster Secret of vCluster ``name`` (in the Argo CD namespace)."""
    return f"cluster-{name}"


def _check_name(value: str, what: str) -> None:
    if not isinstance(value, str) or not _DNS_LABEL.match(value):
        raise ClusterSecretError(f"{what} {value!r} is not a valid DNS label (lowercase letters, digits, '-')")


def cluster_secret(
    data: dict[str, str],
    *,
    name: str,
    namespace: str,
    project: str | None = None,
    argocd_namespace: str = "argocd",
    secret_name: str | None = None,
    cluster_name: str | None = None,
    server: str | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The Argo CD cluster Secret manifest for vCluster ``name`` in ``namespace``.

    ``server`` defaults to ``https://<name>.<namespace>:443``: the vCluster serving certificate
    covers ``<name>.<namespace>`` but not ``<name>.<namespace>.svc``. Client certificate and key
    win over a token when both are present. Values are in ``data`` (base64), so re-applying the
    same credentials is a no-op.
    """
    _check_name(name, "vCluster name")
    _check_name(namespace, "vCluster namespace")
    _check_name(argocd_namespace, "Argo CD namespace")
    creds = credentials(data)
    tls: dict[str, Any] = {"caData": creds["caData"]}
    config: dict[str, Any] = {"tlsClientConfig": tls}
    if "certData" in creds and "keyData" in creds:
        tls["certData"] = creds["certData"]
        tls["keyData"] = creds["keyData"]
    else:
        config["bearerToken"] = creds["bearerToken"]
    string_data = {
        "name": cluster_name or name,
        "server": server or f"https://{name}.{namespace}:443",
        "config": json.dumps(config, sort_keys=True, separators=(",", ":")),
    }
    if project:
        string_data["project"] = project
    meta_labels = dict(sorted((labels or {}).items()))
    meta_labels[SECRET_TYPE_LABEL] = "cluster"
    metadata: dict[str, Any] = {
        "name": secret_name or default_secret_name(name),
        "namespace": argocd_namespace,
        "labels": dict(sorted(meta_labels.items())),
    }
    if annotations:
        metadata["annotations"] = dict(sorted(annotations.items()))
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": metadata,
        "data": {k: _b64(v) for k, v in sorted(string_data.items())},
    }


def describe(secret: dict[str, Any]) -> dict[str, Any]:
    """What may be shown about a cluster Secret: metadata, server, project, auth kind; no credentials."""
    data = secret.get("data", {})
    plain = {k: base64.b64decode(data[k]).decode() for k in ("name", "server", "project") if k in data}
    config = json.loads(base64.b64decode(data.get("config", "e30=")))
    auth = "client-certificate" if "certData" in config.get("tlsClientConfig", {}) else "bearer-token"
    return {
        "secret_name": secret["metadata"]["name"],
        "namespace": secret["metadata"]["namespace"],
        "labels": secret["metadata"].get("labels", {}),
        "auth": auth,
        **plain,
    }
