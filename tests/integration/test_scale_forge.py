"""publish_forge against a local HTTP server that checks the requests GitHub and GitLab document."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale_forge_server import ForgeServer

from ansible_collections.gpufleet.core.plugins.module_utils.publish.forge import (
    GITHUB_API_VERSION,
    ForgeError,
    compare_url,
    open_pull_request,
    parse_repo_url,
    resolve_target,
)

TOKEN = "ghp_s3cr3t-token-value-never-logged"
BODY = "## Scale pool `pretrain`\n\n| node | from | to |\n| --- | --- | --- |\n| `n01` | `spare` | `pretrain` |\n"


def test_github_pull_request_is_created_with_the_documented_request() -> None:
    with ForgeServer(token=TOKEN) as srv:
        target = resolve_target(
            "https://github.com/example-org/gpu-fleet.git", "github", api_url=srv.url, project="example-org/gpu-fleet"
        )
        pr = open_pull_request(target, "scale/pretrain-36", "main", "scale pretrain to 36 nodes", BODY, TOKEN)
    assert pr.created and pr.number == 1
    assert pr.url == "https://github.com/example-org/gpu-fleet/pull/1"
    assert pr.compare_url == "https://github.com/example-org/gpu-fleet/compare/main...scale/pretrain-36?expand=1"
    [req] = srv.requests
    assert req.method == "POST" and req.path == "/repos/example-org/gpu-fleet/pulls"
    assert req.headers["authorization"] == f"Bearer {TOKEN}"
    assert req.headers["accept"] == "application/vnd.github+json"
    assert req.headers["x-github-api-version"] == GITHUB_API_VERSION
    assert req.body == {
        "title": "scale pretrain to 36 nodes",
        "head": "scale/pretrain-36",
        "base": "main",
        "body": BODY,
    }
    assert TOKEN not in repr(pr.as_dict())


def test_github_second_run_finds_the_open_pull_request() -> None:
    with ForgeServer(token=TOKEN) as srv:
        target = resolve_target("https://github.com/example-org/gpu-fleet.git", api_url=srv.url)
        first = open_pull_request(target, "scale/pretrain-36", "main", "t", BODY, TOKEN)
        again = open_pull_request(target, "scale/pretrain-36", "main", "t", BODY, TOKEN)
    assert first.created and not again.created
    assert again.url == first.url and again.number == first.number
    assert [r.method for r in srv.requests] == ["POST", "POST", "GET"]
    get = srv.requests[-1]
    assert get.query == {"head": ["example-org:scale/pretrain-36"], "base": ["main"], "state": ["open"]}


def test_gitlab_merge_request_is_created_with_the_documented_request() -> None:
    with ForgeServer(token=TOKEN, owner_repo="research/platform/gpu-fleet") as srv:
        target = resolve_target(
            "git@gitlab.example.com:research/platform/gpu-fleet.git", "gitlab", api_url=srv.url, project=None
        )
        assert target.project == "research/platform/gpu-fleet"
        mr = open_pull_request(target, "scale/inference-104gpus", "main", "scale inference", BODY, TOKEN)
        again = open_pull_request(target, "scale/inference-104gpus", "main", "scale inference", BODY, TOKEN)
    assert mr.created and mr.number == 1 and mr.url.endswith("/-/merge_requests/1")
    assert not again.created and again.url == mr.url
    post = srv.requests[0]
    assert post.method == "POST"
    assert post.path == "/api/v4/projects/research%2Fplatform%2Fgpu-fleet/merge_requests"
    assert post.headers["private-token"] == TOKEN
    assert "authorization" not in post.headers
    assert post.body == {
        "source_branch": "scale/inference-104gpus",
        "target_branch": "main",
        "title": "scale inference",
        "description": BODY,
    }
    assert mr.compare_url == (
        "https://gitlab.example.com/research/platform/gpu-fleet/-/merge_requests/new?"
        "merge_request%5Bsource_branch%5D=scale%2Finference-104gpus&merge_request%5Btarget_branch%5D=main"
    )


def test_gitlab_api_url_may_already_end_in_api_v4() -> None:
    with ForgeServer(token=TOKEN) as srv:
        target = resolve_target(
            "https://gitlab.example.com/example-org/gpu-fleet", "gitlab", api_url=srv.url + "/api/v4"
        )
        mr = open_pull_request(target, "scale/x-1", "main", "t", "b", TOKEN)
    assert mr.created


def test_without_a_token_nothing_is_sent_and_the_compare_url_is_returned() -> None:
    with ForgeServer(token=TOKEN) as srv:
        target = resolve_target("https://github.com/example-org/gpu-fleet.git", api_url=srv.url)
        pr = open_pull_request(target, "scale/pretrain-36", "main", "t", BODY, token=None)
    assert srv.requests == []
    assert pr.url is None and not pr.created
    assert pr.compare_url == "https://github.com/example-org/gpu-fleet/compare/main...scale/pretrain-36?expand=1"


@pytest.mark.parametrize("forge", ["github", "gitlab"])
def test_refused_request_is_a_clear_error_without_the_token(forge: str) -> None:
    with ForgeServer(token="the-right-token") as srv:
        target = resolve_target("https://github.com/example-org/gpu-fleet.git", forge, api_url=srv.url)
        with pytest.raises(ForgeError) as err:
            open_pull_request(target, "scale/pretrain-36", "main", "t", BODY, TOKEN)
    msg = str(err.value)
    assert "401" in msg and ("Bad credentials" in msg or "Unauthorized" in msg)
    assert TOKEN not in msg


def test_unreachable_forge_is_a_clear_error() -> None:
    with ForgeServer(token=TOKEN) as srv:
        url = srv.url
    target = resolve_target("https://github.com/example-org/gpu-fleet.git", api_url=url)
    with pytest.raises(ForgeError, match="cannot reach the forge API"):
        open_pull_request(target, "scale/pretrain-36", "main", "t", BODY, TOKEN, timeout=5)


def test_repo_url_forms() -> None:
    assert parse_repo_url("https://github.com/a/b.git") == ("https", "github.com", "a/b")
    assert parse_repo_url("git@github.com:a/b.git") == ("https", "github.com", "a/b")
    assert parse_repo_url("ssh://git@gitlab.example.com:2222/g/s/p.git") == ("https", "gitlab.example.com", "g/s/p")
    assert parse_repo_url("/srv/git/fleet.git") == (None, None, None)
    t = resolve_target("https://ghe.example.com/org/repo.git", "github")
    assert t.api_url == "https://ghe.example.com/api/v3"
    assert compare_url(resolve_target("/srv/git/fleet.git"), "b", "main") is None
