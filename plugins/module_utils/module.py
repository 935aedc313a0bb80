"""Ansible module plumbing shared by every gpufleet module, as kubernetes.core's ``AnsibleK8SModule``.

The only file of ``module_utils/`` that imports Ansible (docs/adr/code-shape.md, "One module
skeleton"): the core stays importable and testable without Ansible, and the modules stay thin.

- :class:`GpufleetModule` checks the Python libraries a module needs in one place, by importing
  them (a missing one fails with ``missing_required_lib`` and the import traceback), and runs the
  module's task: a :class:`GpufleetError` or an ``OSError`` becomes ``fail_json`` with its message,
  ``warnings`` in the result become Ansible warnings.
- The option specs several modules share are defined once here, next to their doc fragments in
  ``plugins/doc_fragments/`` (``common.inventory``, ``common.gitops``, ``common.kube``, ``publish``).
"""

from __future__ import annotations

import importlib
import traceback
from collections.abc import Callable, Iterable
from typing import Any, NoReturn

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError

# import name -> what to pip install
LIBRARIES = {
    "yaml": "PyYAML",
    "jsonschema": "jsonschema",
    "ruamel.yaml": "ruamel.yaml",
    "kubernetes": "kubernetes",
}


def inventory_spec(required: bool = True, aliases: Iterable[str] = ()) -> dict[str, dict[str, Any]]:
    """``inventory_dir`` (doc fragment ``gpufleet.core.inventory``)."""
    spec: dict[str, Any] = {"type": "path", "required": required}
    if aliases:
        spec["aliases"] = list(aliases)
    return {"inventory_dir": spec}


def gitops_spec(aliases: Iterable[str] = ()) -> dict[str, dict[str, Any]]:
    """``gitops_dir`` (doc fragment ``gpufleet.core.gitops``); default: ``model.paths.default_out``."""
    spec: dict[str, Any] = {"type": "path"}
    if aliases:
        spec["aliases"] = list(aliases)
    return {"gitops_dir": spec}


def fabric_spec() -> dict[str, dict[str, Any]]:
    """Where slurm_topology and fabric_facts read the fabric besides ibnetdiscover, and which nodes."""
    return {
        "fabric": {"type": "path"},
        "nodes_snapshot": {"type": "path"},
        "nodes": {"type": "list", "elements": "str"},
        "node_name_map": {"type": "dict", "aliases": ["node_map"]},
        "exclude": {"type": "list", "elements": "str"},
    }


def kube_spec() -> dict[str, dict[str, Any]]:
    """``kubeconfig`` and ``context`` (doc fragment ``gpufleet.core.kube``), for ``kubeclient.api_client``."""
    return {"kubeconfig": {"type": "path"}, "context": {"type": "str"}}


def publish_spec() -> dict[str, dict[str, Any]]:
    """The publish options of fleet_publish and fleet_scale (doc fragment ``gpufleet.core.publish``)."""
    return {
        "remote": {"type": "str"},
        "base": {"type": "str"},
        "forge_api_url": {"type": "str"},
        "forge_token": {"type": "str", "no_log": True},
        "open_pull_request": {"type": "bool", "default": True},
    }


def publish_args(params: dict[str, Any]) -> dict[str, Any]:
    """The publish options as the core's keyword arguments (``publish.request.open_fleet_pull_request``)."""
    return {
        "remote": params["remote"],
        "base": params["base"],
        "token": params["forge_token"],
        "forge_api_url": params["forge_api_url"],
        "open_pr": params["open_pull_request"],
    }


def _import_error(name: str) -> str | None:
    """The traceback of importing ``name``, or None when it imports."""
    try:
        importlib.import_module(name)
    except ImportError:
        return traceback.format_exc()
    return None


class GpufleetModule(AnsibleModule):
    """An ``AnsibleModule`` with check mode on, the requirements checked and the task run safely."""

    def __init__(self, argument_spec: dict[str, Any], requirements: Iterable[str] = (), **kwargs: Any) -> None:
        kwargs.setdefault("supports_check_mode", True)
        super().__init__(argument_spec=argument_spec, **kwargs)
        self.requirements = tuple(requirements)
        self.check_requirements()

    def check_requirements(self) -> None:
        """Fail when a library of ``requirements`` does not import (the one place the modules check)."""
        errors = {name: err for name in self.requirements if (err := _import_error(name)) is not None}
        if errors:
            names = " and ".join(LIBRARIES.get(n, n) for n in errors)
            self.fail_json(msg=missing_required_lib(names), exception="\n".join(errors.values()))

    @property
    def diff_mode(self) -> bool:
        return bool(self._diff)

    def run(self, task: Callable[[GpufleetModule], dict[str, Any]]) -> NoReturn:
        """``exit_json`` with what ``task(self)`` returns; a GpufleetError or OSError fails the task with
        its message (the core's messages name the file and key; no traceback reaches the user)."""
        try:
            result = task(self)
        except GpufleetError as exc:
            self.fail_json(msg=str(exc))
        except OSError as exc:
            self.fail_json(msg=str(exc))
        for warning in result.pop("warnings", None) or []:
            self.warn(warning)
        self.exit_json(**result)
