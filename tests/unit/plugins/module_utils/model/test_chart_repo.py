"""Chart repositories and mirrors: https anywhere, plain http only to a loopback mirror (with or
without a path: the Argo CD test bed serves its Helm repository at ``http://127.0.0.1:<port>``), OCI
paths without a scheme; nothing that widens AppProject ``sourceRepos``."""

from __future__ import annotations

import re

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.model.schema import _CHART_REPO

ACCEPTED = [
    "https://charts.loft.sh",
    "https://helm.cilium.io/",
    "https://raw.githubusercontent.com/kubernetes-csi/csi-driver-nfs/master/charts",
    "ghcr.io/slinkyproject/charts",
    "http://127.0.0.1:40365",
    "http://localhost:8080/charts",
    "http://[::1]/",
]
REFUSED = [
    "http://charts.example.com",  # plain http off the machine
    "http://127.0.0.1.evil.example",  # loopback as a prefix of another name
    "http://localhost@evil.example",
    "*",
    "https://github.com/*",
    "oci://ghcr.io/x",
    "https://charts.example.com/a b",
]


@pytest.mark.parametrize("url", ACCEPTED)
def test_accepted(url: str) -> None:
    assert re.match(_CHART_REPO, url)


@pytest.mark.parametrize("url", REFUSED)
def test_refused(url: str) -> None:
    assert not re.match(_CHART_REPO, url)
