"""The generated CI templates run nothing the pull request commits and leak nothing to it.

- GitHub: the workflow is clean under zizmor (``--offline``, persona ``auditor``): actions pinned to
  commits, no persisted checkout credentials, least permissions, one run per ref at a time;
- both templates install gpufleet.core from the tarball whose sha256 the BASE pins, with ``--force``,
  outside the checkout, with the base's requirements.txt; never ``-p collections`` of the checkout;
- the review writes its Markdown outside the checkout; GitHub comments only from that file;
- GitLab: the runner keeps the job token out of ``.git/config``; no secret variable is named.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.module_utils.scaffold import fleet_repo

INSTALL = [
    'git show "$GPUFLEET_BASE:gpufleet-core.sha256"',
    'git show "$GPUFLEET_BASE:requirements.txt"',
    "sha256sum --check --strict SHA256SUMS",
    'ansible-galaxy collection install --force --no-deps -p "$dest/collections" "$dest/$tarball"',
]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ci") / "lab"
    fleet_repo.scaffold(root, fleet_repo.options(root, org="acme"))
    return root


def zizmor() -> str:
    found = shutil.which("zizmor") or str(Path(sys.executable).with_name("zizmor"))
    if not Path(found).is_file():
        pytest.fail("zizmor is not installed (requirements-test.txt pins it; scripts/setup.sh installs it)")
    return found


def test_the_github_workflow_is_clean_under_zizmor(fleet: Path) -> None:
    wf = fleet / ".github/workflows/gpufleet.yml"
    p = subprocess.run(
        [zizmor(), "--offline", "--persona", "auditor", "--no-progress", str(wf)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert p.returncode == 0 and "No findings" in p.stdout + p.stderr, p.stdout + p.stderr


def test_zizmor_sees_what_it_is_run_for(fleet: Path, tmp_path: Path) -> None:
    # the audit can fail: the same workflow with a tag instead of a commit and persisted credentials
    bad = tmp_path / ".github/workflows/gpufleet.yml"
    bad.parent.mkdir(parents=True)
    text = (fleet / ".github/workflows/gpufleet.yml").read_text()
    text = re.sub(r"actions/checkout@[0-9a-f]{40}", "actions/checkout@v4", text).replace(
        "persist-credentials: false", "persist-credentials: true"
    )
    bad.write_text(text)
    p = subprocess.run(
        [zizmor(), "--offline", "--persona", "auditor", "--no-progress", str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert p.returncode != 0 and "unpinned-uses" in p.stdout and "artipacked" in p.stdout, p.stdout


def test_github_checks_out_without_credentials_and_installs_what_the_base_pins(fleet: Path) -> None:
    wf = yaml.safe_load((fleet / ".github/workflows/gpufleet.yml").read_text())
    assert wf["permissions"] == {} and "concurrency" in wf
    (job,) = wf["jobs"].values()
    assert job["permissions"] == {"contents": "read", "pull-requests": "write"}
    uses = [s["uses"] for s in job["steps"] if "uses" in s]
    assert uses and all(re.fullmatch(r"[\w-]+/[\w-]+@[0-9a-f]{40}", u) for u in uses), uses
    checkout = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["persist-credentials"] is False
    run = "\n".join(s.get("run", "") for s in job["steps"])
    for line in INSTALL:
        assert line in run, line
    assert "-p collections" not in run and "requirements.yml" not in run and "pip install -r requirements" not in run
    steps = {s.get("name"): s for s in job["steps"]}
    assert '--markdown "$RUNNER_TEMP/gpufleet-review.md"' in steps["gpufleet: review"]["run"]
    comment = steps["comment"]
    assert "always()" not in comment["if"] and "hashFiles" not in comment["if"]
    assert '--body-file "$review"' in comment["run"] and 'review="$RUNNER_TEMP/gpufleet-review.md"' in comment["run"]


def test_gitlab_keeps_the_token_out_of_the_workspace_and_installs_what_the_base_pins(fleet: Path) -> None:
    gl = yaml.safe_load((fleet / ".gitlab-ci.yml").read_text())
    assert gl["variables"]["FF_GIT_URLS_WITHOUT_TOKENS"] == "true"
    text = (fleet / ".gitlab-ci.yml").read_text()
    assert "CI_JOB_TOKEN" not in text and "-p collections" not in text and "requirements.yml" not in text
    before = "\n".join(gl["default"]["before_script"])
    for line in INSTALL:
        assert line in before, line
    review = "\n".join(gl["gpufleet-review"]["script"])
    assert '--markdown "$out/review.md"' in review and "rm -rf gpufleet-review && mkdir gpufleet-review\n" in review
    assert gl["gpufleet-review"]["artifacts"]["paths"] == ["gpufleet-review/review.md"]
