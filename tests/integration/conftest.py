"""How the integration lane's two workers share the tests (scripts/test.sh: ``pytest -n 2 --dist loadscope``).

The integration tests mostly wait on real daemons, so two run at once. The scheduler below hands
out whole groups: a group runs on one worker, one test after another, in collection order. A
test's group is what it shares with other tests:

* a directory whose conftest starts one component for the whole session (the Argo CD bed, the
  kube control plane, the vCluster): the directory, so it is started once;
* the test modules that use this machine's identity setup (``directory.py`` rewrites
  ``/etc/nsswitch.conf``, ``/etc/sssd``, ``/var/lib/sss`` and PAM; ``worker_ssh.py`` starts sshd with
  PAM files in ``/etc/pam.d``): one group, since two at once would overwrite each other's files.
  They are named in ``SYSTEM_IDENTITY_FILES``; collection fails on a module that uses them and is
  not named there;
* any other module: the module, so its module-scoped fixtures are made once.

The groups are read from node ids on the controller, which does not collect; xdist's own
``--dist loadgroup`` marks do not reach pytest 9's node ids, so a scheduler of our own
(``pytest_xdist_make_scheduler``) applies them. Without ``-n`` nothing here changes a run.
"""

from __future__ import annotations

import types
from pathlib import PurePosixPath
from typing import Any

import pytest

PREFIX = PurePosixPath("tests/integration")
SESSION_DIRS = frozenset({"argocd", "kube", "vcluster"})
SYSTEM_IDENTITY_MODULES = frozenset({"directory", "worker_ssh"})
SYSTEM_IDENTITY_FILES = frozenset(
    {
        "slurm/test_identity_account_state.py",
        "slurm/test_identity_sssd.py",
        "slurm/test_slurm_identity.py",
        "slurm/test_worker_ssh.py",
    }
)


def group_of(nodeid: str) -> str:
    path = PurePosixPath(nodeid.split("::", 1)[0])
    rel = path.relative_to(PREFIX) if path.is_relative_to(PREFIX) else path
    if len(rel.parts) > 1 and rel.parts[0] in SESSION_DIRS:
        return rel.parts[0]
    if rel.as_posix() in SYSTEM_IDENTITY_FILES:
        return "system-identity"
    return rel.as_posix()


def uses_system_identity(module: types.ModuleType) -> bool:
    for value in vars(module).values():
        name = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", None)
        if name in SYSTEM_IDENTITY_MODULES:
            return True
    return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    seen: set[str] = set()
    for item in items:
        module = getattr(item, "module", None)
        if module is None or module.__name__ in seen:
            continue
        seen.add(module.__name__)
        rel = PurePosixPath(item.nodeid.split("::", 1)[0])
        if not rel.is_relative_to(PREFIX) or not uses_system_identity(module):
            continue
        if rel.relative_to(PREFIX).as_posix() not in SYSTEM_IDENTITY_FILES:
            raise pytest.UsageError(
                f"{rel} uses this machine's identity setup (directory.py / worker_ssh.py): "
                f"add it to SYSTEM_IDENTITY_FILES in {PREFIX}/conftest.py"
            )


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    from xdist.scheduler import LoadScopeScheduling  # only here: a run without xdist never asks

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    return GroupScheduling(config, log)
