"""Controller libraries the core needs (PyYAML, jsonschema, ruamel.yaml), imported with a guard.

The pattern of kubernetes.core (``HAS_YAML``): each file imports its library in ``try/except
ImportError`` and, when it is missing, binds the name to :func:`missing`, so importing the file
always works (ansible-test's import test, a managed host without the library) and the first use
raises :class:`MissingLibraryError` naming the library and how to install it.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError


class MissingLibraryError(GpufleetError):
    """A Python library the controller needs is not installed."""


class _NeverRaised(Exception):
    """Stands in for a missing library's exception classes in ``except`` clauses: matches nothing."""


class _Missing:
    def __init__(self, module: str, package: str):
        self._module = module
        self._package = package

    def _fail(self) -> MissingLibraryError:
        return MissingLibraryError(
            f"the Python library {self._module!r} is required on the Ansible controller and is not installed "
            f"for this interpreter: pip install {self._package}"
        )

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name.endswith("Error"):
            return _NeverRaised
        raise self._fail()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise self._fail()


def missing(module: str, package: str) -> Any:
    """A stand-in for ``module`` whose every use raises :class:`MissingLibraryError`."""
    return _Missing(module, package)


def available(module: Any) -> bool:
    """Whether ``module`` is the library itself and not the :func:`missing` stand-in."""
    return not isinstance(module, _Missing)
