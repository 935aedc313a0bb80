"""Scaling as a pull request, end to end: a real Git work tree and bare remote on disk, the real
renderer, the pool lock, the CI check, real ansible-playbook, and a local forge API double.

The work tree holds a copy of the sample inventory (with its snapshots; generated with the
project's fabric generator when the sample has none yet) and of the rendered gitops/ tree.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from playbook_runner import playbook_env, run_playbook
from scale_forge_server import ForgeServer
from scale_gitrepo import INV, REPO, Repos, git, make_fleet_repos

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.publish.git import PublishError
from ansible_collections.gpufleet.core.plugins.module_utils.scale.check import check_scale_change
from ansible_collections.gpufleet.core.plugins.module_utils.scale.run import scale

POOLS = f"{INV}/group_vars/all/pools.yml"
LOCK = f"{INV}/snapshots/gpu-east/pools.lock.yaml"
TOKEN = "glpat-e2e-secret-token-do-not-log"


def _repos(tmp_path: Path, forge: dict | None = None) -> Repos:
    return make_fleet_repos(tmp_path, forge)


@pytest.fixture(autouse=True)
def _render_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The renderer's parse cache goes to tmp, not ~/.cache (also for ansible-playbook runs)."""
    monkeypatch.setenv("GPUFLEET_CACHE_DIR", str(tmp_path / "render-cache"))


@pytest.fixture
def repos(tmp_path: Path) -> Repos:
    return _repos(tmp_path)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


def _lock_at(repos: Repos, rev: str) -> dict[str, str]:
    return yaml.safe_load(repos.remote_git("show", f"{rev}:{LOCK}"))["nodes"]


def _changed_lines(repos: Repos, a: str, b: str, path: str) -> list[str]:
    diff = repos.remote_git("diff", "--unified=0", a, b, "--", path)
    return [ln for ln in diff.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]


def _status(repos: Repos) -> list[str]:
    """``git status`` lines, untracked files included: nothing may be left behind."""
    return repos.git("status", "--porcelain", "--untracked-files=all").splitlines()


# ---------------------------------------------------------------------------------- publish


def test_scale_publishes_branch_commit_push_and_pull_request(repos: Repos) -> None:
    with ForgeServer(token=TOKEN) as srv:
        res = scale(repos.work / INV, "pretrain", 36, publish=True, token=TOKEN, forge_api_url=srv.url)
    plan = res.plan
    assert res.branch == "scale/pretrain-36" and res.pushed and res.changed
    assert repos.remote_branches() == ["main", "scale/pretrain-36"]
    assert repos.remote_git("rev-parse", "scale/pretrain-36").strip() == res.commit
    assert _status(repos) == []

    # the inventory diff is only the changed number
    assert _changed_lines(repos, "main", "scale/pretrain-36", POOLS) == ["-      nodes: 32", "+      nodes: 36"]
    # the pool lock moves exactly 4 node assignments, all into pretrain
    old, new = _lock_at(repos, "main"), _lock_at(repos, "scale/pretrain-36")
    moved = {n for n in set(old) | set(new) if old.get(n) != new.get(n)}
    assert len(moved) == 4 == plan.required_moves == len(plan.moves)
    assert all(new[n] == "pretrain" for n in moved)
    assert sum(p == "pretrain" for p in new.values()) == 36
    assert {m.node for m in plan.moves} == moved
    # the gitops/ diff is what the plan says
    names = repos.remote_git("diff", "--name-status", "main", "scale/pretrain-36").splitlines()
    changed = {ln.split("\t", 1)[1]: ln.split("\t", 1)[0] for ln in names}
    assert set(changed) == set(plan.files)
    assert {p for p, s in changed.items() if s == "M"} == set(plan.changed)
    assert any(t.file.endswith("/topology.conf") for t in plan.topology)
    [part] = plan.partitions
    assert part.name == "llm-pretrain/pretrain" and part.fields[0] == ("nodes", "32", "36")
    assert part.file == "gitops/clusters/gpu-east/tenants/llm-pretrain/slurm/values.yaml"  # not the pool lock
    assert res.diffs() and not [d for d in res.diffs() if d["before_header"].endswith(".gpufleet-manifest")]
    assert [n.name for n in plan.nodesets] == ["llm-pretrain/pretrain"]
    # commit message carries the plan summary
    msg = repos.remote_git("log", "-1", "--format=%B", "scale/pretrain-36")
    assert msg.startswith("scale(pretrain): 32 nodes -> 36 nodes\n\n" + plan.summary())
    # the pull request: documented GitHub request, body = the plan's Markdown tables
    [req] = srv.requests
    assert req.path == "/repos/example-org/gpu-fleet/pulls"
    assert req.body["head"] == "scale/pretrain-36" and req.body["base"] == "main"
    assert req.body["body"] == plan.markdown()
    assert "| node | from pool | to pool |" in req.body["body"]
    assert res.pull_request["url"] == "https://github.com/example-org/gpu-fleet/pull/1"
    assert TOKEN not in repr(res.as_dict())

    # the CI check passes on the branch
    report = check_scale_change(repos.work, "origin/main", [INV])
    assert report.ok, report.text()
    assert report.clusters[0].moved == 4 == report.clusters[0].required

    # running it again changes nothing and finds the open pull request
    with ForgeServer(token=TOKEN) as srv2:
        srv2.open_prs["scale/pretrain-36"] = {
            "number": 1,
            "html_url": "https://github.com/example-org/gpu-fleet/pull/1",
        }
        again = scale(repos.work / INV, "pretrain", 36, publish=True, token=TOKEN, forge_api_url=srv2.url)
    assert not again.changed and not again.pushed and again.commit == res.commit
    assert again.pull_request["created"] is False and again.pull_request["number"] == 1


def test_forge_failure_after_push_is_clear_and_a_rerun_opens_the_request(repos: Repos) -> None:
    with ForgeServer(token="the-right-one") as srv:
        with pytest.raises(GpufleetError) as err:
            scale(repos.work / INV, "pretrain", 36, publish=True, token=TOKEN, forge_api_url=srv.url)
        msg = str(err.value)
        assert "pushed scale/pretrain-36 to origin" in msg and "401" in msg and TOKEN not in msg
        assert "https://github.com/example-org/gpu-fleet/compare/main...scale/pretrain-36?expand=1" in msg
        assert repos.remote_branches() == ["main", "scale/pretrain-36"]
        pushed = repos.remote_git("rev-parse", "scale/pretrain-36")
        again = scale(repos.work / INV, "pretrain", 36, publish=True, token="the-right-one", forge_api_url=srv.url)
    assert not again.pushed and again.pull_request["created"] and again.changed
    assert repos.remote_git("rev-parse", "scale/pretrain-36") == pushed


def test_gpu_sized_pool_without_token_prints_the_compare_url(repos: Repos) -> None:
    with ForgeServer(token=TOKEN) as srv:
        res = scale(repos.work / INV, "inference", 104, publish=True, token=None, forge_api_url=srv.url)
    assert srv.requests == []  # no token: no API call
    assert res.branch == "scale/inference-104gpus"
    assert res.pull_request["compare_url"] == (
        "https://github.com/example-org/gpu-fleet/compare/main...scale/inference-104gpus?expand=1"
    )
    assert any(res.pull_request["compare_url"] in m for m in res.messages)
    assert _changed_lines(repos, "main", res.branch, POOLS) == ["-      gpus: 96", "+      gpus: 104"]
    old, new = _lock_at(repos, "main"), _lock_at(repos, res.branch)
    moved = [n for n in set(old) | set(new) if old.get(n) != new.get(n)]
    assert len(moved) == 1 == res.plan.required_moves  # 8 more GPUs = one 8-GPU node
    assert sum(p == "inference" for p in new.values()) == 13


def test_shrinking_moves_exactly_k_nodes_to_spare(repos: Repos) -> None:
    res = scale(repos.work / INV, "research-batch", 9, publish=True, token=None)
    old, new = _lock_at(repos, "main"), _lock_at(repos, res.branch)
    moved = sorted(n for n in set(old) | set(new) if old.get(n) != new.get(n))
    assert len(moved) == 3 and all(old[n] == "research-batch" and new[n] == "spare" for n in moved)
    assert [(c.name, c.fields[0]) for c in res.plan.partitions] == [("research/batch", ("nodes", "12", "9"))]
    assert check_scale_change(repos.work, "origin/main", [INV]).ok


# ---------------------------------------------------------------------------- without publish


def test_local_scale_and_check_mode(repos: Repos) -> None:
    before = _snapshot(repos.work)
    planned = scale(repos.work / INV, "pretrain", 34, check=True)
    assert _snapshot(repos.work) == before and planned.written == []
    assert len(planned.plan.moves) == 2
    done = scale(repos.work / INV, "pretrain", 34)
    assert done.plan.as_dict() == planned.plan.as_dict()
    status = {ln[3:] for ln in _status(repos)}
    assert status == set(done.plan.files)
    diff = repos.git("diff", "--unified=0", "--", POOLS).splitlines()
    assert [ln for ln in diff if ln[:1] in "+-" and not ln.startswith(("+++", "---"))] == [
        "-      nodes: 32",
        "+      nodes: 34",
    ]
    again = scale(repos.work / INV, "pretrain", 34)
    assert not again.changed and again.plan.files == []


# --------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("pool", "size", "message"),
    [
        ("no-such-pool", 4, r"unknown pool 'no-such-pool' \(known: inference, pretrain, research-batch"),
        ("pretrain", -3, "size must be 0 or more, got -3"),
        ("pretrain", 500, r"cannot scale pool 'pretrain' to 500 nodes: .*gpufleet_pools\[1\]\.size"),
        ("inference", 4000, r"cannot scale pool 'inference' to 4000 gpus"),
        ("spare", 3, "has no size"),
    ],
)
def test_bad_input_changes_and_pushes_nothing(repos: Repos, pool: str, size: int, message: str) -> None:
    before = _snapshot(repos.work)
    with pytest.raises(GpufleetError, match=message):
        scale(repos.work / INV, pool, size, publish=True, token=TOKEN, forge_api_url="http://127.0.0.1:9")
    assert _snapshot(repos.work) == before
    assert repos.remote_branches() == ["main"]
    assert _status(repos) == []


def test_dirty_tree_is_refused(repos: Repos) -> None:
    f = repos.work / INV / "group_vars" / "all" / "tenants.yml"
    f.write_text(f.read_text() + "# local edit\n")
    before = _snapshot(repos.work)
    with pytest.raises(PublishError, match=r"uncommitted changes.*\n\s+M inventories/sample/group_vars/all/tenants"):
        scale(repos.work / INV, "pretrain", 36, publish=True)
    assert _snapshot(repos.work) == before and repos.remote_branches() == ["main"]


def test_moved_remote_is_refused(repos: Repos, tmp_path: Path) -> None:
    other = repos.clone_elsewhere(tmp_path / "other")
    (other / "NOTES.md").write_text("merged meanwhile\n")
    git(other, "add", "NOTES.md")
    git(other, "commit", "--quiet", "-m", "meanwhile")
    git(other, "push", "--quiet", "origin", "main")
    before = _snapshot(repos.work)
    with pytest.raises(PublishError, match=r"the remote moved: origin/main has 1 commit"):
        scale(repos.work / INV, "pretrain", 36, publish=True)
    assert _snapshot(repos.work) == before and repos.remote_branches() == ["main"]


def test_stale_gitops_is_refused(repos: Repos) -> None:
    f = repos.work / "gitops" / "clusters" / "gpu-east" / "REPORT.md"
    f.write_bytes(f.read_bytes() + b"hand edit\n")
    repos.git("commit", "--quiet", "-am", "hand edit of a rendered file")
    repos.git("push", "--quiet", "origin", "main")
    before = _snapshot(repos.work)
    with pytest.raises(GpufleetError, match=r"(?s)gitops is not current with the inventory.*REPORT.md \(differs\)"):
        scale(repos.work / INV, "pretrain", 36, publish=True)
    assert _snapshot(repos.work) == before and repos.remote_branches() == ["main"]


def test_ci_check_fails_on_a_reshuffle(repos: Repos) -> None:
    scale(repos.work / INV, "pretrain", 33, publish=True, token=None)
    lock = repos.work / LOCK
    doc = yaml.safe_load(lock.read_text())
    nodes = doc["nodes"]
    a = next(n for n, p in sorted(nodes.items()) if p == "system")
    b = next(n for n, p in sorted(nodes.items()) if p == "research-debug")
    nodes[a], nodes[b] = nodes[b], nodes[a]  # swap two nodes nobody asked to move
    lock.write_text("# edited by hand\n" + yaml.safe_dump(doc, sort_keys=True))
    repos.git("commit", "--quiet", "-am", "reshuffle")  # not re-rendered: stale too, and the moves are wrong
    report = check_scale_change(repos.work, "origin/main", [INV])
    assert not report.ok
    assert "3 node(s) change pool but the size changes (pretrain 32 nodes -> 33 nodes) need only 1" in report.text()
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "check_scale_pr.py"), "--base", "origin/main"],
        cwd=repos.work,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1 and "FAIL:" in proc.stdout
    bad = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "check_scale_pr.py"), "--base", "no-such-rev"],
        cwd=repos.work,
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2 and "no-such-rev" in bad.stderr


# ----------------------------------------------------------------------- real ansible-playbook


def _playbook(repos: Repos, *extra: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """playbooks/scale.yml on the fleet repository's inventory, as a user runs it there (no forge token
    but ``env``'s)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("GPUFLEET_FORGE")}
    run_env = playbook_env(base, user=True, ANSIBLE_HOME=str(repos.work.parent / "ansible-home"), **(env or {}))
    play = REPO / "playbooks" / "scale.yml"
    return run_playbook(repos.work / INV, play, *extra, env=run_env, ok=None, cwd=repos.work)


@pytest.mark.ansible
def test_playbook_scale_publishes_a_gitlab_merge_request(tmp_path: Path) -> None:
    with ForgeServer(token=TOKEN, owner_repo="research/gpu-fleet") as srv:
        repos = _repos(tmp_path, forge={"type": "gitlab", "api_url": srv.url, "project": "research/gpu-fleet"})
        proc = _playbook(
            repos,
            "-e",
            "pool=pretrain",
            "-e",
            "size=35",
            "-e",
            "publish=true",
            env={"GPUFLEET_FORGE_TOKEN": TOKEN},
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert TOKEN not in proc.stdout + proc.stderr
        assert "| `pretrain` | 32 | 35 | +3 |" in proc.stdout
        [post] = [r for r in srv.requests if r.method == "POST"]
        assert post.path == "/api/v4/projects/research%2Fgpu-fleet/merge_requests"
        assert post.headers["private-token"] == TOKEN
        assert post.body["source_branch"] == "scale/pretrain-35" and post.body["target_branch"] == "main"
        assert post.body["description"].startswith("## Scale pool `pretrain` (gpu-east): 32 nodes → 35 nodes")
        assert repos.remote_branches() == ["main", "scale/pretrain-35"]
        assert _changed_lines(repos, "main", "scale/pretrain-35", POOLS) == ["-      nodes: 32", "+      nodes: 35"]

        again = _playbook(
            repos, "-e", "pool=pretrain", "-e", "size=35", "-e", "publish=true", env={"GPUFLEET_FORGE_TOKEN": TOKEN}
        )
        assert again.returncode == 0, again.stdout + again.stderr
        assert "changed=0" in again.stdout
        assert len([r for r in srv.requests if r.method == "POST"]) == 2  # second POST -> 409 -> found


@pytest.mark.ansible
def test_playbook_bad_input_fails_clearly(repos: Repos) -> None:
    before = _snapshot(repos.work)
    neg = _playbook(repos, "-e", "pool=pretrain", "-e", "size=-2")
    assert neg.returncode != 0 and "size must be 0 or more, got -2" in neg.stdout
    usage = _playbook(repos, "-e", "pool=pretrain", "-e", "size=lots")
    assert usage.returncode != 0 and "usage: ansible-playbook" in usage.stdout
    assert "Traceback" not in neg.stdout + usage.stdout
    assert _snapshot(repos.work) == before
