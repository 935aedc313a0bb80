"""The install step of both generated CI templates, run as written: no Galaxy, the gpufleet.core tarball
the BASE pins in ``gpufleet-core.sha256``, fetched from ``GPUFLEET_COLLECTION_URL`` over HTTPS, checked,
installed outside the checkout; then the templates' own checks run with what it installed.

The forge's download location is a local HTTPS server (127.0.0.1, a certificate made for the test and
trusted through ``CURL_CA_BUNDLE``) serving the tarball ``ansible-galaxy collection build`` makes of
this checkout. The Python requirements come from the test's venv (``PIP_NO_INDEX``: pip finds them
installed and fetches nothing). A tarball that is not the pinned one fails the step, nothing installed.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import os
import shutil
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, str(REPO / "scripts" / "gpufleet.py")]
BIN = Path(sys.executable).parent
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.org",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.org",
    "GIT_CONFIG_GLOBAL": "/dev/null",
}
RUNNER_SHELL = ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c"]  # how both runners run a script
pytestmark = pytest.mark.ansible


def sh(cmd: list[str] | str, cwd: Path, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(
        cmd if isinstance(cmd, list) else [*RUNNER_SHELL, cmd],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if check and p.returncode != 0:
        raise AssertionError(f"{cmd!r} failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Path]]:
    """(URL, folder it serves, CA bundle): this checkout's collection tarball over HTTPS on 127.0.0.1."""
    tmp = tmp_path_factory.mktemp("forge")
    dist = tmp / "dist"
    env = {**os.environ, "ANSIBLE_HOME": str(tmp / "ansible-home")}
    sh([str(BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(dist), str(REPO)], tmp, env)
    cert, key = tmp / "cert.pem", tmp / "key.pem"
    openssl = shutil.which("openssl") or pytest.fail("openssl is needed to make the test server's certificate")
    req = [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
    sh([*req, "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)], tmp, env)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(dist))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}/", dist, cert
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def fleet(tmp_path: Path, served: tuple[str, Path, Path]) -> tuple[Path, dict[str, str]]:
    """A fleet repository made by ``init``, rendered, its base pinning the served tarball; the job's env."""
    url, dist, cert = served
    root = tmp_path / "fleet"
    env = {**os.environ, **GIT_ENV}
    sh([*CLI, "init", str(root), "--org", "acme", "--tenant", "vision:slurm"], tmp_path, env)
    sh("git init -q -b main", root, env)
    sh([*CLI, "render", "--inventory", "inventories/prod"], root, env)
    (tarball,) = dist.glob("gpufleet-core-*.tar.gz")
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
    (root / "gpufleet-core.sha256").write_text(f"{digest}  {tarball.name}\n")  # as sha256sum writes it
    sh("git add -A && git commit -qm fleet", root, env)
    job = {k: v for k, v in env.items() if not k.startswith(("VIRTUAL_ENV", "ANSIBLE_", "PYTHON"))}
    job.update(
        PATH=f"{BIN}{os.pathsep}/usr/local/bin:/usr/bin:/bin",  # the runner's python: requirements.txt went in
        PIP_NO_INDEX="1",
        CURL_CA_BUNDLE=str(cert),
        GPUFLEET_COLLECTION_URL=url,
        GPUFLEET_BASE="main",
        ANSIBLE_HOME=str(tmp_path / "ansible-home"),
    )
    return root, job


def _installed(dest: Path) -> Path:
    return dest / "collections/ansible_collections/gpufleet/core"


def test_github_install_step_then_the_checks(
    fleet: tuple[Path, dict[str, str]], served: tuple[str, Path, Path], tmp_path: Path
) -> None:
    root, env = fleet
    (job,) = yaml.safe_load((root / ".github/workflows/gpufleet.yml").read_text())["jobs"].values()
    steps = {s.get("name"): s for s in job["steps"]}
    github_env = tmp_path / "github-env"
    env = {**env, "INVENTORY": job["env"]["INVENTORY"], "RUNNER_TEMP": str(tmp_path / "runner")}
    env["GITHUB_ENV"] = str(github_env)
    (tmp_path / "runner").mkdir()
    sh(steps["install gpufleet.core as the base pins it"]["run"], root, env)
    installed = _installed(tmp_path / "runner/gpufleet")
    assert (installed / "MANIFEST.json").is_file() and not (root / "collections").exists()
    name, _, value = github_env.read_text().strip().partition("=")
    assert name == "GPUFLEET" and str(installed / "scripts/gpufleet.py") in value, value
    env["GPUFLEET"] = value
    for check in ("gpufleet: validate", "gpufleet: render --check --base"):
        p = sh(steps[check]["run"], root, env)
        assert "Traceback" not in p.stderr, p.stderr

    # a tarball at the URL that is not the one the base pins: the step fails, nothing is installed
    (tarball,) = served[1].glob("gpufleet-core-*.tar.gz")
    original = tarball.read_bytes()
    try:
        tarball.write_bytes(original + b"\0")
        p = sh(steps["install gpufleet.core as the base pins it"]["run"], root, env, check=False)
        assert p.returncode != 0 and "FAILED" in p.stdout + p.stderr, p.stdout + p.stderr
        assert not _installed(tmp_path / "runner/gpufleet").exists()  # the step starts from an empty folder
    finally:
        tarball.write_bytes(original)


def test_gitlab_before_script_then_the_checks(fleet: tuple[Path, dict[str, str]]) -> None:
    root, env = fleet
    gl = yaml.safe_load((root / ".gitlab-ci.yml").read_text())
    env = {**env, **gl["variables"]}
    # GitLab runs before_script and script in one shell; here the merge request's target is not fetched
    # (the base is a local branch)
    script = [*gl["default"]["before_script"], 'echo "GPUFLEET=$GPUFLEET"', *gl["gpufleet-check"]["script"]]
    p = sh("\n".join(script), root, env)
    line = next(x for x in p.stdout.splitlines() if x.startswith("GPUFLEET="))
    installed = Path(line.split()[1]).parents[1]
    assert (installed / "MANIFEST.json").is_file() and not str(installed).startswith(str(root)), installed
    assert not (root / "collections").exists()
