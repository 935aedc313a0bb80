"""Groups for the integration lane's two workers (scripts/test.sh: ``pytest -n 2 --dist loadgroup``).

The integration tests mostly wait on real daemons, so two run at once. A group runs on one worker,
one test after another; each test's group is what it shares with others:

* a directory whose conftest starts one component for the whole session (the Argo CD bed, the
  kube control plane, the vCluster): the directory, so it is started once;
* a test module that uses this machine's identity setup (``directory.py`` rewrites
  ``/etc/nsswitch.conf``, ``/etc/sssd``, ``/var/lib/sss`` and PAM; ``worker_ssh.py`` starts sshd with
  PAM files in ``/etc/pam.d``): one group for all of them, since two at once would overwrite each
  other's files;
* any other module: the module, so its module-scoped fixtures are made once.

Without ``-n`` (a plain ``pytest``) the marks change nothing.
"""

from __future__ import annotations

import types
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SESSION_DIRS = frozenset({"argocd", "kube", "vcluster"})
SYSTEM_IDENTITY_MODULES = frozenset({"directory", "worker_ssh"})


def uses_system_identity(module: types.ModuleType) -> bool:
    for value in vars(module).values():
        name = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", None)
        if name in SYSTEM_IDENTITY_MODULES:
            return True
    return False


def group_of(item: pytest.Item) -> str:
    path = Path(str(item.path)).resolve()
    rel = path.relative_to(HERE)
    if len(rel.parts) > 1 and rel.parts[0] in SESSION_DIRS:
        return rel.parts[0]
    module = getattr(item, "module", None)
    if module is not None and uses_system_identity(module):
        return "system-identity"
    return rel.as_posix()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.path)).resolve().is_relative_to(HERE):
            item.add_marker(pytest.mark.xdist_group(group_of(item)))
