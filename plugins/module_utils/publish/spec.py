"""Argument spec of the publish options shared by fleet_publish and fleet_scale.

Documented once in the doc fragment ``gpufleet.core.publish`` (plugins/doc_fragments/publish.py).
"""

from __future__ import annotations

from typing import Any


def publish_argument_spec() -> dict[str, dict[str, Any]]:
    """A fresh copy of the publish options (remote, base, forge API URL and token, open the request)."""
    return {
        "remote": {"type": "str"},
        "base": {"type": "str"},
        "forge_api_url": {"type": "str"},
        "forge_token": {"type": "str", "no_log": True},
        "open_pull_request": {"type": "bool", "default": True},
    }
