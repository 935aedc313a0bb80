"""The generated GitHub workflow's own steps, run on a real Git repository made by `gpufleet.py init`:

- the review and the comment step's choice of file, on a pull request that commits `review.md` as a link
  to `.git/config` (where a checkout that persists credentials keeps the job's token). Nothing of
  `.git/config` may leave the job: not in the logs, not in the comment. `gh` is a recording stand-in (the
  forge cannot run here): it writes down its arguments and the body file it would post;
- the install step, on a pull request that commits its own gpufleet.core under `collections/`, its own
  `gpufleet-core.sha256` and its own `requirements.txt`: what gets installed is the tarball the base pins,
  fetched over HTTPS (a local server with a certificate made for the test stands in for the site's
  `GPUFLEET_COLLECTION_URL`), and a tarball whose checksum is not the base's is refused before install.
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
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, str(REPO / "scripts" / "gpufleet.py")]
SECRET = "AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Z2hzX3NlY3JldA=="
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.org",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.org",
    "GIT_CONFIG_GLOBAL": "/dev/null",
}
FAKE_GH = """#!/bin/sh
# records what `gh pr comment ... --body-file F` would post
log="$GH_LOG"
echo "gh $*" >> "$log"
while [ $# -gt 0 ]; do
  if [ "$1" = "--body-file" ]; then echo "--- body ---" >> "$log"; cat "$2" >> "$log"; fi
  shift
done
"""


def sh(
    cwd: Path, *args: str, env: dict[str, str] | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(
        list(args), cwd=cwd, capture_output=True, text=True, env={**os.environ, **GIT_ENV, **(env or {})}, timeout=300
    )
    if check and p.returncode != 0:
        raise AssertionError(f"{args} failed ({p.returncode}): {p.stdout}\n{p.stderr}")
    return p


@pytest.fixture
def pr_with_link(tmp_path: Path) -> Path:
    """A fleet repository cloned as CI clones it, on a pull request that commits review.md -> .git/config,
    with a token in .git/config as actions/checkout leaves it when credentials are persisted."""
    origin = tmp_path / "origin"
    sh(REPO, *CLI, "init", str(origin), "--org", "example-org", "--tenant", "team-a:slurm")
    sh(origin, "git", "init", "-q", "-b", "main")
    sh(origin, *CLI, "render", "--inventory", "inventories/prod")
    sh(origin, "git", "add", "-A")
    sh(origin, "git", "commit", "-qm", "fleet")
    sh(origin, "git", "checkout", "-qb", "pr")
    (origin / "review.md").symlink_to(".git/config")
    sh(origin, "git", "add", "-f", "review.md")
    sh(origin, "git", "commit", "-qm", "a link")
    work = tmp_path / "work"
    sh(tmp_path, "git", "clone", "-q", "--branch", "pr", str(origin), str(work))
    with (work / ".git" / "config").open("a", encoding="utf-8") as f:
        f.write(f'[http "https://github.com/"]\n\textraheader = {SECRET}\n')
    return work


def test_a_committed_link_to_git_config_never_leaves_the_job(pr_with_link: Path, tmp_path: Path) -> None:
    work = pr_with_link
    wf = yaml.safe_load((work / ".github/workflows/gpufleet.yml").read_text())
    (job,) = wf["jobs"].values()
    checkout = next(s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/checkout@"))
    assert checkout["with"]["persist-credentials"] is False
    steps = {s.get("name"): s for s in job["steps"]}
    review, comment = steps["gpufleet: review"], steps["comment"]
    assert "hashFiles" not in str(comment.get("if", "")) and "always()" not in str(comment.get("if", ""))
    bin_dir, runner_temp = tmp_path / "bin", tmp_path / "runner-temp"
    bin_dir.mkdir()
    runner_temp.mkdir()
    (bin_dir / "gh").write_text(FAKE_GH)
    (bin_dir / "gh").chmod(0o755)
    env = {
        **{k: v for k, v in job["env"].items() if "${{" not in v},
        "GPUFLEET_BASE": "origin/main",
        "GPUFLEET": " ".join(CLI),
        "RUNNER_TEMP": str(runner_temp),
        "GH_TOKEN": "not-a-token",
        "PR": "7",
        "GH_LOG": str(tmp_path / "gh.log"),
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
    }
    ran = sh(work, "bash", "-e", "-c", review["run"], env=env, check=False)
    assert ran.returncode == 1, ran.stdout + ran.stderr  # the link fails the review
    assert "`review.md` is a symbolic link in Git" in ran.stdout
    posted = sh(work, "bash", "-e", "-c", comment["run"], env=env)
    log = (tmp_path / "gh.log").read_text()
    assert log.startswith("gh pr comment 7 --body-file ") and "## gpufleet review: ❌ fails" in log
    config = (work / ".git" / "config").read_text()
    leaving = ran.stdout + ran.stderr + posted.stdout + posted.stderr + log
    for line in config.splitlines():  # nothing of .git/config: no token, no remote, no section
        assert line.strip() not in leaving or not line.strip(), line
    assert SECRET not in leaving and "extraheader" not in leaving


@pytest.fixture
def https_mirror(tmp_path: Path) -> Iterator[tuple[Path, str, Path]]:
    """A folder served over HTTPS on 127.0.0.1 (the site's collection URL): (folder, URL, CA file)."""
    served, cert, key = tmp_path / "mirror", tmp_path / "cert.pem", tmp_path / "key.pem"
    served.mkdir()
    sh(tmp_path, "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
       "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert))  # fmt: skip
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served, f"https://127.0.0.1:{server.server_address[1]}/", cert
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def install_script(work: Path, forge: str) -> str:
    """The template's install commands as the runner runs them; they leave ``GPUFLEET=...`` in $GITHUB_ENV
    (GitLab's before_script exports it: the test writes it there the same way)."""
    if forge == "github":
        wf = yaml.safe_load((work / ".github/workflows/gpufleet.yml").read_text())
        (job,) = wf["jobs"].values()
        return next(s["run"] for s in job["steps"] if str(s.get("name", "")).startswith("install gpufleet.core"))
    gl = yaml.safe_load((work / ".gitlab-ci.yml").read_text())
    return "\n".join(gl["default"]["before_script"]) + '\necho "GPUFLEET=$GPUFLEET" >> "$GITHUB_ENV"'


@pytest.mark.parametrize("forge", ["github", "gitlab"])
def test_the_install_step_installs_what_the_base_pins_not_what_the_pr_commits(
    tmp_path: Path, https_mirror: tuple[Path, str, Path], forge: str
) -> None:
    served, url, ca = https_mirror
    galaxy = Path(sys.executable).with_name("ansible-galaxy")
    sh(REPO, str(galaxy), "collection", "build", "--output-path", str(served), str(REPO))
    (tarball,) = served.glob("gpufleet-core-*.tar.gz")
    pin = f"{hashlib.sha256(tarball.read_bytes()).hexdigest()}  {tarball.name}\n"
    origin = tmp_path / "origin"
    sh(REPO, *CLI, "init", str(origin), "--org", "example-org", "--tenant", "team-a:slurm")
    (origin / "gpufleet-core.sha256").write_text(pin)
    sh(origin, "git", "init", "-q", "-b", "main")
    sh(origin, "git", "add", "-A")
    sh(origin, "git", "commit", "-qm", "fleet")
    # the pull request: its own same-version copy of the product, its own pin and its own requirements
    sh(origin, "git", "checkout", "-qb", "pr")
    forged = origin / "collections/ansible_collections/gpufleet/core/scripts/gpufleet.py"
    forged.parent.mkdir(parents=True)
    forged.write_text("print('## gpufleet review: passes')\n")
    (origin / "gpufleet-core.sha256").write_text(f"{'0' * 64}  {tarball.name}\n")
    with (origin / "requirements.txt").open("a", encoding="utf-8") as f:
        f.write("no-such-package-of-the-pull-request==1.0\n")
    sh(origin, "git", "add", "-A")
    sh(origin, "git", "add", "-f", "collections")
    sh(origin, "git", "commit", "-qm", "my own product")
    work = tmp_path / "work"
    sh(tmp_path, "git", "clone", "-q", "--branch", "pr", str(origin), str(work))

    install = install_script(work, forge)
    runner_temp, github_env = tmp_path / "runner-temp", tmp_path / "github-env"
    runner_temp.mkdir()
    env = {
        "GPUFLEET_BASE": "origin/main",
        "GPUFLEET_COLLECTION_URL": url,
        "RUNNER_TEMP": str(runner_temp),
        "TMPDIR": str(runner_temp),  # GitLab's mktemp -d
        "GITHUB_ENV": str(github_env),
        "CURL_CA_BUNDLE": str(ca),
        "PIP_NO_INDEX": "1",  # the base's requirements are this venv's: nothing to fetch, nothing fetched
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }
    ran = sh(work, "bash", "-e", "-c", install, env=env, check=False)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "no-such-package" not in ran.stdout + ran.stderr
    (line,) = github_env.read_text().splitlines()
    installed = Path(line.removeprefix("GPUFLEET=python "))
    assert installed.is_relative_to(runner_temp) and installed.name == "gpufleet.py", line
    with tarfile.open(tarball) as tar:
        shipped = tar.extractfile("scripts/gpufleet.py")
        assert shipped is not None and installed.read_bytes() == shipped.read()
    version = yaml.safe_load((REPO / "galaxy.yml").read_text())["version"]
    assert sh(work, sys.executable, str(installed), "--version").stdout == f"gpufleet.core {version}\n"

    # a tarball that is not the one the base pins never gets installed
    tarball.write_bytes(tarball.read_bytes() + b"\0")
    github_env.unlink()
    for left in runner_temp.iterdir():  # a fresh runner
        shutil.rmtree(left)
    ran = sh(work, "bash", "-e", "-c", install, env=env, check=False)
    assert ran.returncode != 0 and "FAILED" in ran.stdout + ran.stderr, ran.stdout + ran.stderr
    assert not list(runner_temp.glob("*/collections")) and not github_env.exists()
