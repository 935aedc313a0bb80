"""The generated GitHub workflow's own steps, run on a real Git repository made by `gpufleet.py init`:
the review and the comment step's choice of file, on a pull request that commits `review.md` as a link to
`.git/config` (where a checkout that persists credentials keeps the job's token). Nothing of
`.git/config` may leave the job: not in the logs, not in the comment. `gh` is a recording stand-in (the
forge cannot run here): it writes down its arguments and the body file it would post."""

from __future__ import annotations

import os
import subprocess
import sys
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
