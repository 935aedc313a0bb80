"""vCluster kubeconfig Secret -> Argo CD cluster Secret (pure transformation)."""

from __future__ import annotations

import base64
import json

import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.module_utils.argocd.cluster_secret import (
    SECRET_TYPE_LABEL,
    ClusterSecretError,
    cluster_secret,
    describe,
)

CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n").decode()
CERT = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nCLIENT\n-----END CERTIFICATE-----\n").decode()
KEY = base64.b64encode(b"-----BEGIN EC PRIVATE KEY-----\nKEY\n-----END EC PRIVATE KEY-----\n").decode()


def b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


def vc_data(**extra: str) -> dict[str, str]:
    """The .data of the Secret vCluster 0.36 exports (values base64; PEM keys hold base64 PEM)."""
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "vc", "cluster": {"server": "https://localhost:8443", "certificate-authority-data": CA}}],
        "users": [{"name": "vc", "user": {"client-certificate-data": CERT, "client-key-data": KEY}}],
        "contexts": [{"name": "vc", "context": {"cluster": "vc", "user": "vc"}}],
        "current-context": "vc",
    }
    data = {
        "config": b64(yaml.safe_dump(kubeconfig)),
        "certificate-authority": b64(base64.b64decode(CA).decode()),
        "client-certificate": b64(base64.b64decode(CERT).decode()),
        "client-key": b64(base64.b64decode(KEY).decode()),
    }
    data.update(extra)
    return data


def decoded(secret: dict) -> dict[str, str]:
    return {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}


def test_secret_shape_server_and_labels():
    s = cluster_secret(
        vc_data(),
        name="research",
        namespace="vc-research",
        project="research",
        labels={"gpufleet.io/tenant": "research"},
    )
    assert s["kind"] == "Secret" and s["metadata"]["namespace"] == "argocd"
    assert s["metadata"]["name"] == "cluster-research"
    assert s["metadata"]["labels"] == {SECRET_TYPE_LABEL: "cluster", "gpufleet.io/tenant": "research"}
    d = decoded(s)
    assert d["server"] == "https://research.vc-research:443"  # not .svc: the vCluster cert has no such SAN
    assert d["name"] == "research" and d["project"] == "research"
    tls = json.loads(d["config"])["tlsClientConfig"]
    # Argo CD wants base64 PEM: the vCluster Secret's data values already are, so they pass through
    assert base64.b64decode(tls["caData"]).startswith(b"-----BEGIN CERTIFICATE-----")
    assert tls["caData"] == vc_data()["certificate-authority"]
    assert tls["certData"] == vc_data()["client-certificate"] and tls["keyData"] == vc_data()["client-key"]
    assert "bearerToken" not in json.loads(d["config"])


def test_kubeconfig_only_secret_is_enough():
    data = {"config": vc_data()["config"]}
    tls = json.loads(decoded(cluster_secret(data, name="a", namespace="vc-a"))["config"])["tlsClientConfig"]
    assert tls == {"caData": CA, "certData": CERT, "keyData": KEY}


def test_token_when_no_client_certificate():
    data = {"certificate-authority": vc_data()["certificate-authority"], "token": b64("tok-123\n")}
    cfg = json.loads(decoded(cluster_secret(data, name="a", namespace="vc-a"))["config"])
    assert cfg["bearerToken"] == "tok-123"
    assert set(cfg["tlsClientConfig"]) == {"caData"}


def test_deterministic_and_no_project_key_when_unscoped():
    a = cluster_secret(vc_data(), name="a", namespace="vc-a")
    b = cluster_secret(dict(reversed(list(vc_data().items()))), name="a", namespace="vc-a")
    assert a == b
    assert "project" not in a["data"]


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({}, "no data"),
        ({"client-certificate": "x"}, "not valid base64"),
        ({"token": b64("t")}, "no certificate authority"),
        ({"certificate-authority": b64("ca")}, "no client credentials"),
        ({"config": b64("- not\n- a mapping\n")}, "not a kubeconfig mapping"),
    ],
)
def test_bad_secret_names_the_key_not_the_value(data, needle):
    with pytest.raises(ClusterSecretError) as exc:
        cluster_secret(data, name="a", namespace="vc-a")
    assert needle in str(exc.value)
    for v in data.values():
        assert v not in str(exc.value) or len(v) < 4


def test_bad_names_rejected():
    with pytest.raises(ClusterSecretError, match="vCluster name 'Bad_Name'"):
        cluster_secret(vc_data(), name="Bad_Name", namespace="vc-a")


def test_describe_has_no_credentials():
    s = cluster_secret(vc_data(), name="a", namespace="vc-a", project="a")
    info = describe(s)
    assert info["auth"] == "client-certificate" and info["server"] == "https://a.vc-a:443"
    text = json.dumps(info)
    assert CA not in text and KEY not in text and CERT not in text
