"""slurmrestd of the Slurm build with JWT auth, as the Slinky operator's slurm-client uses it.

The operator (v1.2.1) talks to slurmctld only through slurmrestd, with slurm-client v1.2.1: it builds
one client per REST API version the client ships (v0.0.42 to v0.0.45) and calls v0.0.44 for
everything it does (nodes: list, get, update with state/reason/comment; jobs; reservations). Its
token is an HS256 JWT for user ``slurm`` signed with the cluster's JWT key (the Controller's
``jwtKeyRef`` Secret), sent as ``X-SLURM-USER-TOKEN``.

Here: slurmctld (SlurmUser=slurm, as the chart runs it) with ``AuthAltTypes=auth/jwt``, two slurmd,
and slurmrestd as the RestApi pod runs it (user nobody, ``SLURM_JWT=daemon``). The tests show those
paths answer with a token from ``scontrol token`` and with one minted the operator's way, that a node
update through the API drains and resumes the real node, and that no token, a malformed one, one
signed with another key and an expired one are refused.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import shutil
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from gpufleet_testlib.slurm_build import usable_by_every_user
from harness import SlurmCluster, require_slurm

# the REST API versions slurm-client v1.2.1 has a client for; the operator calls v0.0.44
CLIENT_VERSIONS = ("v0.0.42", "v0.0.43", "v0.0.44", "v0.0.45")
OPERATOR_VERSION = "v0.0.44"
NODES = ("slinky-0", "slinky-1")
CONF = "\n".join(
    [
        "NodeName=slinky-[0-1] CPUs=2 RealMemory=1000 State=UNKNOWN",
        "PartitionName=all Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
    ]
)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def mint_token(key: bytes, username: str = "slurm", lifetime: int = 900, now: float | None = None) -> str:
    """An HS256 JWT with the claims the operator's token package sets (iat, exp, sun)."""
    now = time.time() if now is None else now
    head = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = _b64(json.dumps({"iat": int(now), "exp": int(now) + lifetime, "sun": username}).encode())
    sig = _b64(hmac.new(key, f"{head}.{body}".encode(), hashlib.sha256).digest())
    return f"{head}.{body}.{sig}"


def call(base: str, path: str, token: str | None, body: dict | None = None) -> tuple[int, dict]:
    req = urllib.request.Request(base + path, method="POST" if body is not None else "GET")
    if token is not None:
        req.add_header("X-SLURM-USER-NAME", "slurm")
        req.add_header("X-SLURM-USER-TOKEN", token)
    if body is not None:
        req.add_header("Content-Type", "application/json")
        req.data = json.dumps(body).encode()
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw or b"{}")
        except ValueError:
            return e.code, {"raw": raw.decode(errors="replace")}


@pytest.fixture(scope="module")
def restd():
    """One cluster and slurmrestd for the module (slurm.conf and the build reachable by nobody)."""
    require_slurm()
    work = Path(tempfile.mkdtemp(prefix="gf-restd-", dir="/tmp"))
    work.chmod(0o755)
    reachable = usable_by_every_user()
    reachable.__enter__()
    cluster = SlurmCluster(work / "cluster", CONF, jwt=True, slurm_user="slurm")
    try:
        cluster.start()
        base = cluster.start_slurmrestd()
        yield cluster, base
    finally:
        cluster.stop()
        reachable.__exit__(None, None, None)
        shutil.rmtree(work, ignore_errors=True)


@pytest.mark.parametrize("version", CLIENT_VERSIONS)
def test_every_client_api_version_answers(restd, version):
    cluster, base = restd
    status, doc = call(base, f"/slurm/{version}/ping", cluster.token())
    assert status == 200, (status, doc)
    assert doc["errors"] == [], doc
    assert doc["pings"][0]["responding"] is True, doc


def test_operator_calls_answer_with_a_token_minted_the_operator_way(restd):
    cluster, base = restd
    token = mint_token(cluster.jwt_key_path.read_bytes())
    v = OPERATOR_VERSION
    status, doc = call(base, f"/slurm/{v}/nodes", token)
    assert status == 200, doc
    assert sorted(n["name"] for n in doc["nodes"]) == list(NODES)
    status, doc = call(base, f"/slurm/{v}/node/{NODES[0]}", token)
    assert status == 200 and doc["nodes"][0]["name"] == NODES[0], doc
    for path in ("jobs", "reservations", "partitions"):
        status, doc = call(base, f"/slurm/{v}/{path}", token)
        assert status == 200 and doc["errors"] == [], (path, doc)


def test_node_update_drains_and_resumes_the_real_node(restd):
    """The update syncCordon sends (state DRAIN + reason, then UNDRAIN), seen by scontrol."""
    cluster, base = restd
    token = mint_token(cluster.jwt_key_path.read_bytes())
    node, url = NODES[1], f"/slurm/{OPERATOR_VERSION}/node/{NODES[1]}"
    job = cluster.sbatch("-w", node, wrap="sleep 4")
    cluster.wait_job(job)
    reason = "slurm-operator: Node (k8s-1) was cordoned"
    status, doc = call(base, url, token, {"state": ["DRAIN"], "reason": reason})
    assert status == 200, doc
    shown = cluster.scontrol("show", "node", node)
    assert "DRAIN" in shown and f"Reason={reason}" in shown, shown
    cluster.wait_job(job, ("COMPLETED",), timeout=30)
    cluster._wait(lambda: "State=IDLE+DRAIN" in cluster.scontrol("show", "node", node), 20, f"{node} drained")
    status, doc = call(base, url, token, {"state": ["UNDRAIN"], "reason": ""})
    assert status == 200, doc
    cluster.wait_idle([node], 20)


def test_requests_without_a_valid_token_are_refused(restd):
    """No token: slurmrestd itself answers 401. A token it cannot vouch for goes on to slurmctld
    (``SLURM_JWT=daemon``: slurmrestd holds no key), whose auth/jwt refuses it: 511 and no data."""
    cluster, base = restd
    key = cluster.jwt_key_path.read_bytes()
    path = f"/slurm/{OPERATOR_VERSION}/nodes"
    status, doc = call(base, path, None)
    assert status == 401 and "nodes" not in doc, (status, doc)
    bad = {
        "malformed": "not-a-jwt",
        "other key": mint_token(b"x" * 32),
        "expired": mint_token(key, now=time.time() - 3600, lifetime=60),
    }
    for what, token in bad.items():
        status, doc = call(base, path, token)
        errors = [e.get("error") for e in doc.get("errors", [])]
        assert (status, errors, doc.get("nodes")) == (511, ["Protocol authentication error"], None), (what, doc)
    # and a write with such a token never changes the node
    status, _doc = call(base, f"/slurm/{OPERATOR_VERSION}/node/{NODES[0]}", bad["other key"], {"state": ["DRAIN"]})
    assert status == 511
    assert "DRAIN" not in cluster.scontrol("show", "node", NODES[0])
