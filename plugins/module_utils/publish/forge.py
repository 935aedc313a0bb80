"""Open a pull request (GitHub) or merge request (GitLab) for a pushed branch, or say where to open one.

No client library (PyGithub, python-gitlab): the whole job is one POST (plus one GET to find a
request that is already open), and ``urllib.request`` from the standard library does that with no
new dependency on the controller. Requests follow the documented REST APIs:

- GitHub: ``POST {api}/repos/{owner}/{repo}/pulls`` with ``Authorization: Bearer <token>``,
  ``Accept: application/vnd.github+json``, ``X-GitHub-Api-Version: 2022-11-28`` and JSON
  ``{title, head, base, body}``; 201 → ``html_url``/``number``; 422 when one is already open
  (then ``GET .../pulls?head=<owner>:<branch>&base=<base>&state=open``).
- GitLab: ``POST {api}/api/v4/projects/{url-encoded path}/merge_requests`` with
  ``PRIVATE-TOKEN: <token>`` and JSON ``{source_branch, target_branch, title, description}``;
  201 → ``web_url``/``iid``; 409 when one is already open (then ``GET .../merge_requests?
  source_branch=..&target_branch=..&state=opened``).

The token comes from the environment variable named in ``gpufleet_fleet.gitops.forge.token_env``
(or the module's no_log option). It is sent in a header only and appears in no message, URL or
return value.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import asdict, dataclass
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError

GITHUB_API_VERSION = "2022-11-28"
USER_AGENT = "gpufleet-scale"
_SCP_LIKE = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?P<path>[^/].*)$")


class ForgeError(GpufleetError):
    """The forge API refused or could not be reached (the branch is pushed already)."""


@dataclass(frozen=True)
class ForgeTarget:
    type: str | None  # github | gitlab | None (unknown forge: compare URL only when derivable)
    api_url: str | None  # GitHub: REST root (https://api.github.com); GitLab: instance root
    project: str | None  # owner/repo or group/subgroup/project
    web_url: str | None  # https://host/owner/repo


@dataclass(frozen=True)
class PullRequest:
    url: str | None
    number: int | None
    created: bool
    compare_url: str | None
    forge: str | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_repo_url(repo_url: str) -> tuple[str | None, str | None, str | None]:
    """(scheme, host, path without .git) of an https/ssh/scp-like Git URL; Nones when not a network URL."""
    u = urllib.parse.urlsplit(repo_url)
    if u.scheme in ("http", "https", "ssh", "git") and u.hostname:
        path = u.path.strip("/")
        scheme = u.scheme if u.scheme in ("http", "https") else "https"
    else:
        m = _SCP_LIKE.match(repo_url)
        if not m or "/" in m.group("host"):
            return None, None, None
        scheme, path = "https", m.group("path").strip("/")
        return scheme, m.group("host"), path.removesuffix(".git")
    return scheme, u.hostname, path.removesuffix(".git")


def resolve_target(
    repo_url: str, forge_type: str | None = None, api_url: str | None = None, project: str | None = None
) -> ForgeTarget:
    """Fill forge type, API root, project path and web URL from the configuration and the repo URL."""
    scheme, host, path = parse_repo_url(repo_url)
    kind = forge_type
    if kind is None and host:
        kind = "github" if host == "github.com" else "gitlab" if "gitlab" in host else None
    project = project or path
    web = f"{scheme}://{host}/{project}" if host and project else None
    api = api_url.rstrip("/") if api_url else None
    if api is None and host:
        if kind == "github":
            api = "https://api.github.com" if host == "github.com" else f"{scheme}://{host}/api/v3"
        elif kind == "gitlab":
            api = f"{scheme}://{host}"
    return ForgeTarget(type=kind, api_url=api, project=project, web_url=web)


def compare_url(target: ForgeTarget, head: str, base: str) -> str | None:
    """Where a human opens the pull request for ``head`` by hand."""
    if not target.web_url:
        return None
    q = urllib.parse.quote
    if target.type == "github":
        return f"{target.web_url}/compare/{q(base, safe='/')}...{q(head, safe='/')}?expand=1"
    if target.type == "gitlab":
        query = urllib.parse.urlencode({"merge_request[source_branch]": head, "merge_request[target_branch]": base})
        return f"{target.web_url}/-/merge_requests/new?{query}"
    return None


CREDENTIAL_HEADERS = frozenset({"authorization", "private-token"})
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})


def check_api_url(url: str) -> None:
    """Credentials go only over https; plain http only to a loopback host (local test servers)."""
    u = urllib.parse.urlsplit(url)
    if u.scheme == "https" and u.hostname:
        return
    if u.scheme == "http" and u.hostname in LOOPBACK_HOSTS:
        return
    raise ForgeError(
        f"refusing to send the forge token to {u.scheme}://{u.hostname or ''}: the API URL must be https://"
        " (plain http only for a loopback test server); check gpufleet_fleet.gitops.forge.api_url"
    )


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follow a redirect only to the same origin (scheme, host and port: so never a downgrade to
    http); credentials are unredirected headers, put back only on a same-origin redirect."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        old, new = urllib.parse.urlsplit(req.full_url), urllib.parse.urlsplit(newurl)
        if (old.scheme, old.hostname, old.port) != (new.scheme, new.hostname, new.port):
            raise ForgeError(
                f"the forge API redirected {req.get_method()} {old.scheme}://{old.netloc}{old.path} to another"
                f" origin ({new.scheme}://{new.netloc}); not following it with credentials: set"
                " gpufleet_fleet.gitops.forge.api_url to the final API root"
            )
        new_req = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new_req is not None:  # same origin, same scheme: the credentials may follow
            for k, v in req.unredirected_hdrs.items():
                if k.lower() in CREDENTIAL_HEADERS:
                    new_req.add_unredirected_header(k, v)
        return new_req


_OPENER = urllib.request.build_opener(_SameOriginRedirects)


def _request(method: str, url: str, headers: dict[str, str], payload: dict | None, timeout: float) -> tuple[int, Any]:
    check_api_url(url)
    data = json.dumps(payload, sort_keys=True).encode() if payload is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    for k, v in headers.items():
        if k.lower() in CREDENTIAL_HEADERS:
            req.add_unredirected_header(k, v)  # never copied onto a redirected request
        else:
            req.add_header(k, v)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    req.add_header("User-Agent", USER_AGENT)
    try:
        with _OPENER.open(req, timeout=timeout) as resp:
            body = resp.read()
            status = resp.status
    except urllib.error.HTTPError as exc:
        body = exc.read()
        status = exc.code
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ForgeError(f"cannot reach the forge API at {url}: {reason}") from None
    try:
        parsed = json.loads(body.decode() or "null")
    except (ValueError, UnicodeDecodeError):
        parsed = {"message": body[:200].decode(errors="replace")}
    return status, parsed


def _api_message(data: Any) -> str:
    if isinstance(data, dict):
        parts = []
        msg = data.get("message")
        if isinstance(msg, list):
            parts.extend(map(str, msg))
        elif msg:
            parts.append(str(msg))
        for err in data.get("errors", []) or []:
            parts.append(str(err.get("message", err)) if isinstance(err, dict) else str(err))
        if data.get("error"):
            parts.append(str(data["error"]))
        return "; ".join(parts) or json.dumps(data)[:200]
    return str(data)[:200]


def _github(
    target: ForgeTarget, token: str, head: str, base: str, title: str, body: str, timeout: float
) -> PullRequest:
    owner_repo = target.project or ""
    if owner_repo.count("/") != 1:
        raise ForgeError(
            f"GitHub project must be 'owner/repo', got {owner_repo!r} (gpufleet_fleet.gitops.forge.project)"
        )
    owner, repo = owner_repo.split("/")
    q = urllib.parse.quote
    root = f"{target.api_url}/repos/{q(owner, safe='')}/{q(repo, safe='')}/pulls"
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": GITHUB_API_VERSION,
    }
    status, data = _request("POST", root, headers, {"title": title, "head": head, "base": base, "body": body}, timeout)
    cmp = compare_url(target, head, base)
    if status == 201 and isinstance(data, dict):
        return PullRequest(
            url=data.get("html_url"), number=data.get("number"), created=True, compare_url=cmp, forge="github"
        )
    if status == 422 and "already exists" in _api_message(data):
        query = urllib.parse.urlencode({"head": f"{owner}:{head}", "base": base, "state": "open"})
        st, found = _request("GET", f"{root}?{query}", headers, None, timeout)
        if st == 200 and isinstance(found, list) and found:
            return PullRequest(
                url=found[0].get("html_url"),
                number=found[0].get("number"),
                created=False,
                compare_url=cmp,
                forge="github",
            )
    raise ForgeError(f"GitHub refused the pull request ({status} from POST {root}): {_api_message(data)}")


def _gitlab(
    target: ForgeTarget, token: str, head: str, base: str, title: str, body: str, timeout: float
) -> PullRequest:
    if not target.project:
        raise ForgeError("GitLab project path unknown: set gpufleet_fleet.gitops.forge.project")
    api = target.api_url or ""
    if not api.endswith("/api/v4"):
        api += "/api/v4"
    root = f"{api}/projects/{urllib.parse.quote(target.project, safe='')}/merge_requests"
    headers = {"PRIVATE-TOKEN": token, "Accept": "application/json"}
    payload = {"source_branch": head, "target_branch": base, "title": title, "description": body}
    status, data = _request("POST", root, headers, payload, timeout)
    cmp = compare_url(target, head, base)
    if status == 201 and isinstance(data, dict):
        return PullRequest(
            url=data.get("web_url"), number=data.get("iid"), created=True, compare_url=cmp, forge="gitlab"
        )
    if status == 409:
        query = urllib.parse.urlencode({"source_branch": head, "target_branch": base, "state": "opened"})
        st, found = _request("GET", f"{root}?{query}", headers, None, timeout)
        if st == 200 and isinstance(found, list) and found:
            return PullRequest(
                url=found[0].get("web_url"), number=found[0].get("iid"), created=False, compare_url=cmp, forge="gitlab"
            )
    raise ForgeError(f"GitLab refused the merge request ({status} from POST {root}): {_api_message(data)}")


def open_pull_request(
    target: ForgeTarget,
    head: str,
    base: str,
    title: str,
    body: str,
    token: str | None,
    timeout: float = 30.0,
) -> PullRequest:
    """Open (or find the already open) pull/merge request; without a token, only the compare URL."""
    cmp = compare_url(target, head, base)
    if not token:
        return PullRequest(url=None, number=None, created=False, compare_url=cmp, forge=target.type)
    if target.type == "github":
        return _github(target, token, head, base, title, body, timeout)
    if target.type == "gitlab":
        return _gitlab(target, token, head, base, title, body, timeout)
    raise ForgeError(
        "a forge token is set but the forge type is unknown: set gpufleet_fleet.gitops.forge.type (github or gitlab)"
    )
