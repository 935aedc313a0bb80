"""publish_git against real Git repositories: a working tree and a bare remote in tmp."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale_gitrepo import Repos, git, make_repos, require_tool

from ansible_collections.gpufleet.core.plugins.module_utils.publish.git import (
    PublishError,
    branch_name,
    commit_and_push,
    dirty_entries,
    open_repo,
    preflight,
)


@pytest.fixture
def repos(tmp_path: Path) -> Repos:
    require_tool("git", "scale publishes through the git command line")
    return make_repos(tmp_path)


def _change(repos: Repos) -> None:
    (repos.work / "inv").mkdir(exist_ok=True)
    (repos.work / "inv" / "pools.yml").write_text("size: 36\n")
    (repos.work / "README").unlink()


def test_branch_commit_push_land_in_the_bare_remote(repos: Repos) -> None:
    g = open_repo(repos.work / "README")
    pre = preflight(g, "origin", "main", ["inv", "README"])
    _change(repos)
    res = commit_and_push(g, pre, "scale/pretrain-36", ["inv", "README"], "scale pretrain\n\nbody line")
    assert res.pushed and res.created_commit
    assert res.files == ["README", "inv/pools.yml"]
    assert repos.remote_branches() == ["main", "scale/pretrain-36"]
    assert repos.remote_git("rev-parse", "scale/pretrain-36").strip() == res.commit
    assert repos.remote_git("log", "-1", "--format=%B", "scale/pretrain-36").strip() == "scale pretrain\n\nbody line"
    names = repos.remote_git("diff", "--name-status", "main", "scale/pretrain-36").split("\n")
    assert [n for n in names if n] == ["D\tREADME", "A\tinv/pools.yml"]
    assert repos.git("status", "--porcelain") == ""
    assert g.current_branch() == "scale/pretrain-36"


def test_rerun_on_the_branch_pushes_nothing(repos: Repos) -> None:
    g = open_repo(repos.work)
    pre = preflight(g, "origin", "main", ["inv"])
    _change(repos)
    first = commit_and_push(g, pre, "scale/pretrain-36", ["inv", "README"], "m")
    pre2 = preflight(g, "origin", "main", ["inv"], allow_branch="scale/pretrain-36")
    again = commit_and_push(g, pre2, "scale/pretrain-36", ["inv", "README"], "m")
    assert not again.pushed and not again.created_commit and again.commit == first.commit


def test_dirty_tree_is_refused(repos: Repos) -> None:
    (repos.work / "README").write_text("local edit\n")
    g = open_repo(repos.work)
    with pytest.raises(PublishError, match=r"uncommitted changes.*\n\s+M README"):
        preflight(g, "origin", "main", ["inv"])
    assert repos.remote_branches() == ["main"]


def test_untracked_file_under_a_published_path_is_refused_elsewhere_ignored(repos: Repos) -> None:
    (repos.work / "notes.txt").write_text("scratch\n")
    g = open_repo(repos.work)
    assert dirty_entries(g, ["inv"]) == []
    (repos.work / "inv").mkdir()
    (repos.work / "inv" / "stray.yml").write_text("x: 1\n")
    assert dirty_entries(g, ["inv"]) == ["?? inv/stray.yml"]
    with pytest.raises(PublishError, match="uncommitted changes"):
        preflight(g, "origin", "main", ["inv"])


def test_moved_remote_is_refused_and_nothing_pushed(repos: Repos, tmp_path: Path) -> None:
    other = repos.clone_elsewhere(tmp_path / "other")
    (other / "OTHER").write_text("someone merged something\n")
    git(other, "add", "OTHER")
    git(other, "commit", "--quiet", "-m", "other change")
    git(other, "push", "--quiet", "origin", "main")
    g = open_repo(repos.work)
    with pytest.raises(PublishError, match=r"the remote moved: origin/main has 1 commit"):
        preflight(g, "origin", "main", ["inv"])
    assert repos.remote_branches() == ["main"]


def test_local_unpushed_commit_is_refused(repos: Repos) -> None:
    (repos.work / "LOCAL").write_text("x\n")
    repos.git("add", "LOCAL")
    repos.git("commit", "--quiet", "-m", "local only")
    with pytest.raises(PublishError, match=r"1 commit\(s\) that are not on origin/main"):
        preflight(open_repo(repos.work), "origin", "main", ["inv"])


def test_unknown_remote_is_refused(repos: Repos) -> None:
    with pytest.raises(PublishError, match=r"git remote 'upstream' is not configured.*known remotes: origin"):
        preflight(open_repo(repos.work), "upstream", "main", ["inv"])


def test_existing_remote_branch_with_other_content_is_refused(repos: Repos, tmp_path: Path) -> None:
    other = repos.clone_elsewhere(tmp_path / "other")
    git(other, "switch", "--quiet", "-c", "scale/pretrain-36")
    (other / "SOMETHING").write_text("else\n")
    git(other, "add", "SOMETHING")
    git(other, "commit", "--quiet", "-m", "other")
    git(other, "push", "--quiet", "origin", "scale/pretrain-36")
    before = repos.remote_git("rev-parse", "scale/pretrain-36")
    g = open_repo(repos.work)
    pre = preflight(g, "origin", "main", ["inv"])
    _change(repos)
    with pytest.raises(PublishError, match="already exists on origin with other content"):
        commit_and_push(g, pre, "scale/pretrain-36", ["inv", "README"], "m")
    assert repos.remote_git("rev-parse", "scale/pretrain-36") == before


def test_not_a_repository(tmp_path: Path) -> None:
    require_tool("git")
    with pytest.raises(PublishError, match="not inside a Git working tree"):
        open_repo(tmp_path)


def test_branch_names_are_deterministic() -> None:
    assert branch_name("pretrain", 36) == "scale/pretrain-36"
    assert branch_name("inference", 104, "gpus") == "scale/inference-104gpus"
    assert branch_name("we ird/name", 3) == "scale/we-ird-name-3"
