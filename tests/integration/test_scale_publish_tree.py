"""publish_tree (module fleet_publish): a rendered change becomes branch, commit, push and pull request."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale_forge_server import ForgeServer
from scale_gitrepo import INV, Repos, make_fleet_repos

from ansible_collections.gpufleet.core.plugins.module_utils.publish.git import PublishError
from ansible_collections.gpufleet.core.plugins.module_utils.publish.publish_tree import publish_tree
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_inventory, write_render

TOKEN = "ghp-publish-tree-token"
POOLS = Path(INV) / "group_vars" / "all" / "pools.yml"


@pytest.fixture(autouse=True)
def _render_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The renderer's parse cache goes to tmp, not ~/.cache (also for ansible-playbook runs)."""
    monkeypatch.setenv("GPUFLEET_CACHE_DIR", str(tmp_path / "render-cache"))


@pytest.fixture
def repos(tmp_path: Path) -> Repos:
    return make_fleet_repos(tmp_path)


def _edit_and_render(repos: Repos) -> None:
    f = repos.work / POOLS
    f.write_text(f.read_text().replace("nodes: 12", "nodes: 14", 1))  # research-batch, by hand
    write_render(render_inventory(repos.work / INV), repos.work / "gitops")


def test_rendered_change_is_published_as_a_pull_request(repos: Repos) -> None:
    _edit_and_render(repos)
    with ForgeServer(token=TOKEN) as srv:
        res = publish_tree(repos.work / INV, token=TOKEN, forge_api_url=srv.url)
        again = publish_tree(repos.work / INV, branch=res.branch, token=TOKEN, forge_api_url=srv.url)
    assert res.branch and res.branch.startswith("gpufleet/render-") and res.pushed
    assert repos.remote_branches() == sorted(["main", res.branch])
    changed = repos.remote_git("diff", "--name-only", "main", res.branch).split()
    assert sorted(changed) == sorted(p for _s, p in res.files)
    assert POOLS.as_posix() in changed and f"{INV}/snapshots/gpu-east/pools.lock.yaml" in changed
    [lock] = list(res.moves)
    moves = res.moves[lock]
    assert len(moves) == 2 and all(b == "research-batch" for _n, _a, b in moves)
    post = srv.requests[0]
    assert post.path == "/repos/example-org/gpu-fleet/pulls" and post.body["head"] == res.branch
    assert f"### Node moves in `{lock}` (2)" in post.body["body"]
    assert not again.pushed and again.pull_request["created"] is False  # same change: same branch, same PR


def test_branch_name_follows_the_change(repos: Repos, tmp_path: Path) -> None:
    _edit_and_render(repos)
    first = publish_tree(repos.work / INV, check=True)
    assert first.branch and repos.remote_branches() == ["main"]  # check mode: nothing pushed
    assert first.branch == publish_tree(repos.work / INV, check=True).branch
    f = repos.work / POOLS
    f.write_text(f.read_text().replace("nodes: 14", "nodes: 13", 1))
    write_render(render_inventory(repos.work / INV), repos.work / "gitops")
    assert publish_tree(repos.work / INV, check=True).branch != first.branch


def test_nothing_to_publish(repos: Repos) -> None:
    res = publish_tree(repos.work / INV, token=None)
    assert res.files == [] and res.branch is None and not res.changed
    assert repos.remote_branches() == ["main"]


def test_changes_outside_the_published_paths_are_refused(repos: Repos) -> None:
    _edit_and_render(repos)
    (repos.work / "README").write_text("x\n")
    repos.git("add", "README")
    with pytest.raises(PublishError, match=r"only the inventory and the rendered tree are published.*\n\s+A\s+README"):
        publish_tree(repos.work / INV)
    assert repos.remote_branches() == ["main"]


def test_unrendered_inventory_change_is_refused(repos: Repos) -> None:
    f = repos.work / POOLS
    f.write_text(f.read_text().replace("nodes: 12", "nodes: 14", 1))
    with pytest.raises(PublishError, match=r"is not what rendering inventories/sample gives.*render first"):
        publish_tree(repos.work / INV)
    assert repos.remote_branches() == ["main"]
