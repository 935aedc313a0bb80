# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter plugins' one error path: a core error (``GpufleetError``, whose message names the bad input)
becomes an ``AnsibleFilterError`` that starts with the filter's name."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError

_F = TypeVar("_F", bound=Callable[..., Any])


def core_errors(name: str) -> Callable[[_F], _F]:
    """Decorate filter ``name``: ``GpufleetError`` -> ``AnsibleFilterError("<name>: <message>")``."""

    def decorate(fn: _F) -> _F:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except GpufleetError as exc:
                raise AnsibleFilterError(f"{name}: {exc}") from exc

        return run  # type: ignore[return-value]

    return decorate
