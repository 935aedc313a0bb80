"""Forge credentials never leave the API origin.

Two real HTTP servers on 127.0.0.1 (different ports = different origins): the "API" answers every
request with a redirect, the "other" records what reaches it. The forge client must refuse a
redirect to the other origin (and send it nothing), follow a same-origin redirect with the token,
and refuse plain-http API URLs except on loopback. (A local server stands in for GitHub/GitLab,
which cannot be reached from here.)
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.publish import forge

TOKEN = "s3cr3t-token-value"


@contextmanager
def server(respond: Any) -> Iterator[tuple[str, list[dict[str, str]]]]:
    seen: list[dict[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _any(self) -> None:
            n = int(self.headers.get("Content-Length") or 0)
            if n:
                self.rfile.read(n)
            seen.append({"path": self.path, "method": self.command, **{k.lower(): v for k, v in self.headers.items()}})
            status, headers, body = respond(self)
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _any

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", seen
    finally:
        srv.shutdown()
        srv.server_close()
        t.join()


def ok(handler: Any) -> tuple[int, dict[str, str], bytes]:
    body = b'{"html_url": "https://x/pr/1", "number": 1, "web_url": "u", "iid": 1}'
    return 201, {"Content-Type": "application/json"}, body


def target(kind: str, api: str) -> forge.ForgeTarget:
    return forge.ForgeTarget(type=kind, api_url=api, project="example-org/gpu-fleet", web_url="https://x/example")


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("kind,header", [("github", "authorization"), ("gitlab", "private-token")])
def test_no_credentials_to_another_origin(code: int, kind: str, header: str) -> None:
    with server(ok) as (other_url, other_seen):
        with server(lambda h: (code, {"Location": f"{other_url}/steal{h.path}"}, b"")) as (api_url, api_seen):
            with pytest.raises(forge.ForgeError, match=r"redirected .* to another origin"):
                forge.open_pull_request(target(kind, api_url), "scale/x", "main", "t", "b", TOKEN, timeout=10)
    assert api_seen and TOKEN in api_seen[0][header]  # the API itself got the token
    assert other_seen == []  # the other origin got nothing at all


def test_same_origin_redirect_keeps_token() -> None:
    def respond(h: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        if h.path.startswith("/moved"):
            return ok(h)
        return 302, {"Location": f"/moved{h.path}"}, b""  # urllib follows 302 for POST (as GET)

    with server(respond) as (api_url, seen):
        pr = forge.open_pull_request(target("github", api_url), "scale/x", "main", "t", "b", TOKEN, timeout=10)
    assert pr.created and pr.number == 1
    assert [s["path"].split("/")[1] for s in seen] == ["repos", "moved"]
    assert all(s.get("authorization") == f"Bearer {TOKEN}" for s in seen)


@pytest.mark.parametrize(
    "url", ["http://api.github.example", "http://10.0.0.1:8080", "ftp://127.0.0.1", "file:///etc/passwd", "//x"]
)
def test_plain_http_refused_except_loopback(url: str) -> None:
    with pytest.raises(forge.ForgeError, match="must be https://"):
        forge.open_pull_request(target("github", url), "scale/x", "main", "t", "b", TOKEN, timeout=1)


@pytest.mark.parametrize("url", ["https://api.github.com", "http://127.0.0.1:1", "http://localhost:1", "http://[::1]:1"])
def test_https_and_loopback_allowed(url: str) -> None:
    forge.check_api_url(url)  # does not raise


def test_token_never_in_error_messages() -> None:
    with server(lambda h: (500, {}, b'{"message": "boom"}')) as (api_url, _seen):
        with pytest.raises(forge.ForgeError) as exc:
            forge.open_pull_request(target("gitlab", api_url), "scale/x", "main", "t", "b", TOKEN, timeout=10)
    assert TOKEN not in str(exc.value)
