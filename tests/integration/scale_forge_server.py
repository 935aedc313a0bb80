"""A small local stand-in for the GitHub and GitLab REST APIs (http.server on 127.0.0.1, in a thread).

The only test double of the scale tests: the real forges cannot be reached from here. It checks
each request against what the APIs document and answers like them; a request that does not match
gets 400/404 with the reason, so the code under test fails loudly.

- GitHub: ``POST /repos/{owner}/{repo}/pulls`` needs ``Authorization: Bearer|token <t>``,
  ``Accept: application/vnd.github+json``, ``X-GitHub-Api-Version``, JSON ``{title, head, base,
  body}``; 201 with ``html_url``/``number``; a second one for the same head → 422 "A pull request
  already exists"; ``GET /repos/{owner}/{repo}/pulls?head=owner:branch&base=..&state=open`` lists.
- GitLab: ``POST /api/v4/projects/{url-encoded path}/merge_requests`` needs ``PRIVATE-TOKEN``,
  JSON ``{source_branch, target_branch, title, description}``; 201 with ``web_url``/``iid``;
  a second one → 409; ``GET ...merge_requests?source_branch=..&target_branch=..&state=opened``.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Recorded:
    method: str
    path: str  # raw path as sent (percent-encoding kept)
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


@dataclass
class ForgeServer:
    token: str
    owner_repo: str = "example-org/gpu-fleet"  # GitHub owner/repo, GitLab project path
    requests: list[Recorded] = field(default_factory=list)
    open_prs: dict[str, dict] = field(default_factory=dict)  # head branch -> PR
    fail_with: int | None = None  # answer every request with this status (error paths)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> ForgeServer:
        srv = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _send(self, status: int, data: Any) -> None:
                raw = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def _record(self) -> Recorded:
                parsed = urllib.parse.urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body: Any = None
                if raw:
                    try:
                        body = json.loads(raw)
                    except ValueError:
                        body = raw.decode(errors="replace")
                rec = Recorded(
                    method=self.command,
                    path=parsed.path,
                    query=urllib.parse.parse_qs(parsed.query),
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
                srv.requests.append(rec)
                return rec

            def do_GET(self) -> None:
                rec = self._record()
                srv._handle(self, rec)

            def do_POST(self) -> None:
                rec = self._record()
                srv._handle(self, rec)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    # ------------------------------------------------------------------ the two APIs

    def _handle(self, h: Any, rec: Recorded) -> None:
        if self.fail_with:
            h._send(self.fail_with, {"message": "Bad credentials"})
            return
        gh = f"/repos/{self.owner_repo}/pulls"
        gl = "/api/v4/projects/" + urllib.parse.quote(self.owner_repo, safe="") + "/merge_requests"
        if rec.path == gh:
            self._github(h, rec)
        elif rec.path == gl:
            self._gitlab(h, rec)
        else:
            h._send(404, {"message": f"Not Found: {rec.path}"})

    def _github(self, h: Any, rec: Recorded) -> None:
        auth = rec.headers.get("authorization", "")
        if auth not in (f"Bearer {self.token}", f"token {self.token}"):
            h._send(401, {"message": "Bad credentials"})
            return
        if rec.headers.get("accept") != "application/vnd.github+json" or not rec.headers.get("x-github-api-version"):
            h._send(400, {"message": "missing Accept: application/vnd.github+json or X-GitHub-Api-Version"})
            return
        owner = self.owner_repo.split("/", maxsplit=1)[0]
        if rec.method == "GET":
            head = rec.query.get("head", [""])[0]
            branch = head.split(":", 1)[1] if ":" in head else head
            found = [pr for b, pr in self.open_prs.items() if b == branch and head.startswith(owner + ":")]
            h._send(200, found)
            return
        body = rec.body
        if not isinstance(body, dict) or set(body) != {"title", "head", "base", "body"}:
            h._send(400, {"message": f"expected JSON {{title, head, base, body}}, got {body!r}"[:300]})
            return
        if not (rec.headers.get("content-type", "").startswith("application/json")):
            h._send(400, {"message": "Content-Type must be application/json"})
            return
        if body["head"] in self.open_prs:
            h._send(
                422,
                {
                    "message": "Validation Failed",
                    "errors": [
                        {
                            "resource": "PullRequest",
                            "code": "custom",
                            "message": f"A pull request already exists for {owner}:{body['head']}.",
                        }
                    ],
                },
            )
            return
        number = len(self.open_prs) + 1
        pr = {
            "number": number,
            "html_url": f"https://github.com/{self.owner_repo}/pull/{number}",
            "head": {"ref": body["head"]},
            "base": {"ref": body["base"]},
            "title": body["title"],
        }
        self.open_prs[body["head"]] = pr
        h._send(201, pr)

    def _gitlab(self, h: Any, rec: Recorded) -> None:
        if rec.headers.get("private-token") != self.token:
            h._send(401, {"message": "401 Unauthorized"})
            return
        if rec.method == "GET":
            src = rec.query.get("source_branch", [""])[0]
            found = [mr for b, mr in self.open_prs.items() if b == src]
            h._send(200, found)
            return
        body = rec.body
        if not isinstance(body, dict) or not {"source_branch", "target_branch", "title"} <= set(body):
            h._send(400, {"error": "source_branch, target_branch, title are missing"})
            return
        if set(body) - {"source_branch", "target_branch", "title", "description"}:
            h._send(400, {"error": f"unexpected keys {sorted(body)}"})
            return
        if body["source_branch"] in self.open_prs:
            iid = self.open_prs[body["source_branch"]]["iid"]
            h._send(409, {"message": [f"Another open merge request already exists for this source branch: !{iid}"]})
            return
        iid = len(self.open_prs) + 1
        mr = {
            "iid": iid,
            "web_url": f"https://gitlab.example.com/{self.owner_repo}/-/merge_requests/{iid}",
            "source_branch": body["source_branch"],
            "target_branch": body["target_branch"],
            "title": body["title"],
        }
        self.open_prs[body["source_branch"]] = mr
        h._send(201, mr)
