"""Open the pull/merge request of a pushed branch for a fleet (``fleet_publish`` and ``fleet_scale``).

The forge, its API and the token variable come from the fleet's ``gitops`` settings; without a
token only the compare URL is known. A failure after the push says what was pushed and where to
open the request by hand; running again does not push twice.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Fleet
from ansible_collections.gpufleet.core.plugins.module_utils.publish.forge import (
    ForgeError,
    PullRequest,
    compare_url,
    open_pull_request,
    resolve_target,
)


@dataclass
class Opened:
    request: PullRequest
    message: str  # a human note for the module's ``messages``


def open_fleet_pull_request(
    fleet: Fleet,
    branch: str,
    base: str,
    title: str,
    body: str,
    *,
    remote: str,
    commit: str | None = None,
    token: str | None = None,
    forge_api_url: str | None = None,
    error: type[GpufleetError] = GpufleetError,
) -> Opened:
    """Open (or find) the request ``branch`` -> ``base``; ``error`` is raised when the forge refuses."""
    forge = fleet.gitops.forge
    target = resolve_target(
        fleet.gitops.repo_url, forge.type, api_url=forge_api_url or forge.api_url, project=forge.project
    )
    tok = token if token is not None else os.environ.get(forge.token_env) or None
    try:
        pr = open_pull_request(target, branch, base, title, body, tok)
    except ForgeError as exc:
        pushed = f"{branch} to {remote}" + (f" ({commit[:12]})" if commit else "")
        raise error(
            f"pushed {pushed}, but opening the pull request failed: {exc}. "
            f"Open it at {compare_url(target, branch, base) or 'your forge'}, or run again (the push is not repeated)"
        ) from None
    if pr.url:
        note = f"{'opened' if pr.created else 'already open'}: {pr.url}"
    elif pr.compare_url:
        note = f"no forge token in ${forge.token_env}: open the pull request at {pr.compare_url}"
    else:
        note = f"pushed {branch} to {remote}; open the pull request on your forge"
    return Opened(pr, note)
