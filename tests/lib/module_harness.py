"""Run a gpufleet module's ``main()`` in-process, as Ansible's own module unit tests do.

``patch_module_args`` (ansible.module_utils.testing) hands the arguments to ``AnsibleModule``;
``exit_json`` and ``fail_json`` raise instead of exiting, so the test gets the module's result dict.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any
from unittest import mock

from ansible.module_utils import _internal, basic
from ansible.module_utils.common import warnings as ansible_warnings
from ansible.module_utils.testing import patch_module_args

PACKAGE = "ansible_collections.gpufleet.core.plugins.modules."


class AnsibleExitJson(Exception):
    """The module called exit_json."""


class AnsibleFailJson(Exception):
    """The module called fail_json."""


def _exit_json(self: basic.AnsibleModule, **kwargs: Any) -> None:
    kwargs.setdefault("changed", False)
    raise AnsibleExitJson(kwargs)


def _fail_json(self: basic.AnsibleModule, msg: str = "", **kwargs: Any) -> None:
    raise AnsibleFailJson({"failed": True, "msg": msg, **kwargs})


def run_module(name: str, args: dict[str, Any], check: bool = False, diff: bool = False) -> dict[str, Any]:
    """The result of module ``name`` (``failed: True`` from fail_json) and its ``warnings``."""
    module = importlib.import_module(PACKAGE + name)
    ansible_warnings._global_warnings.clear()
    with (
        patch_module_args({**args, "_ansible_check_mode": check, "_ansible_diff": diff}),
        mock.patch.object(basic.AnsibleModule, "exit_json", _exit_json),
        mock.patch.object(basic.AnsibleModule, "fail_json", _fail_json),
        # once any test imported controller code, module warnings would go to the controller's Display
        # (printed, not returned): a module process never has the controller loaded
        mock.patch.object(_internal, "is_controller", False),
    ):
        try:
            module.main()
        except (AnsibleExitJson, AnsibleFailJson) as done:
            result = done.args[0]
            result["warnings"] = list(ansible_warnings.get_warning_messages())
            return result
    raise AssertionError(f"{name} returned without exit_json or fail_json")


def hide_library(monkeypatch: Any, name: str) -> None:
    """Make ``import name`` fail in this process, as on a host without the library."""
    for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, name, None)
