"""Where the Slurm the tests run lives: the build of tools/build-slurm.sh, linked as ``.build/slurm``.

Every Slurm test runs the daemons and commands of that one build (the version the fleet deploys),
never whatever Slurm the host has on ``PATH``: the tools are called by absolute path and
:func:`slurm_env` puts the build first on ``PATH`` for the scripts and commands started with it
(sbatch wrappers, the rendered accounts script, prolog/health-check wrappers).

The version is read from tools/build-slurm.sh (its ``SLURM_VERSION=`` line) so there is one place
to change it; :func:`check_version` compares it with what ``scontrol --version`` of the build says.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
BUILD_SCRIPT = REPO / "tools" / "build-slurm.sh"
LINK = REPO / ".build" / "slurm"

__all__ = [
    "SlurmBuildError",
    "check_version",
    "require_slurm_build",
    "slurm_env",
    "slurm_prefix",
    "slurm_tool",
    "usable_by_every_user",
    "version_of",
    "wanted_version",
]


class SlurmBuildError(RuntimeError):
    """The Slurm build is missing, incomplete or not the pinned version."""


@cache
def wanted_version() -> str:
    """The Slurm version tools/build-slurm.sh builds (``26.05.3``)."""
    m = re.search(r"^SLURM_VERSION=([0-9][0-9.]*)$", BUILD_SCRIPT.read_text(), re.M)
    if not m:
        raise SlurmBuildError(f"{BUILD_SCRIPT}: no SLURM_VERSION= line")
    return m.group(1)


def slurm_prefix() -> Path:
    """The installed prefix of the build (bin/, sbin/, lib/slurm/, lib/security/pam_slurm_adopt.so)."""
    if not (LINK / "sbin" / "slurmctld").exists():
        raise SlurmBuildError(f"no Slurm build at {LINK}; run scripts/setup.sh (tools/build-slurm.sh)")
    return LINK.resolve()


def slurm_tool(name: str) -> str:
    """Absolute path of a Slurm command or daemon of the build (``scontrol``, ``slurmctld``, ...)."""
    prefix = slurm_prefix()
    for sub in ("bin", "sbin"):
        path = prefix / sub / name
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    raise SlurmBuildError(f"{name} is not part of the Slurm build in {prefix}")


def slurm_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) with the build's bin/ and sbin/ first on PATH."""
    env = dict(os.environ if base is None else base)
    prefix = slurm_prefix()
    env["PATH"] = os.pathsep.join([str(prefix / "bin"), str(prefix / "sbin"), env.get("PATH", os.defpath)])
    return env


@contextlib.contextmanager
def usable_by_every_user() -> Iterator[None]:
    """Let other users (a test's directory users running sbatch) reach the build: the per-user
    cache lives under the home of whoever built it (``/root`` is 0700). Adds only the search bit
    (``o+x``, no listing) to the directories above the prefix that lack it, restores them after."""
    changed = []
    for d in [slurm_prefix(), *slurm_prefix().parents]:
        mode = d.stat().st_mode
        if not mode & stat.S_IXOTH:
            changed.append((d, mode))
            d.chmod(stat.S_IMODE(mode) | stat.S_IXOTH)
    try:
        yield
    finally:
        for d, mode in changed:
            d.chmod(stat.S_IMODE(mode))


@cache
def minimal_conf() -> Path:
    """A slurm.conf (and slurmdbd.conf beside it) just complete enough for ``--version``/``-V``: the
    26.05 commands read their configuration before they print anything."""
    d = Path(tempfile.mkdtemp(prefix="gf-slurm-version-"))
    (d / "slurm.conf").write_text("ClusterName=version\nSlurmctldHost=localhost\n")
    dbd = d / "slurmdbd.conf"
    dbd.touch(0o600)
    dbd.write_text("DbdHost=localhost\nStorageType=accounting_storage/mysql\n")
    return d / "slurm.conf"


def version_of(path: str, flag: str = "--version") -> str:
    """What a command or daemon of the build says its version is (``slurm 26.05.3``)."""
    env = dict(os.environ, SLURM_CONF=str(minimal_conf()))
    r = subprocess.run([path, flag], capture_output=True, text=True, timeout=30, check=False, env=env)
    return r.stdout.strip() if r.returncode == 0 else f"exit {r.returncode}: {r.stderr.strip()[-300:]}"


@cache
def check_version() -> str:
    """``scontrol --version`` of the build, e.g. ``slurm 26.05.3``; raises unless it is the pinned one."""
    said = version_of(slurm_tool("scontrol"))
    if said != f"slurm {wanted_version()}":
        raise SlurmBuildError(f"{slurm_tool('scontrol')} --version said {said!r}, want 'slurm {wanted_version()}'")
    return said


def require_slurm_build(*tools: str) -> dict[str, str]:
    """For a test: ``{tool: path}`` of the build. A missing build skips the test outside CI and fails
    it in CI (``CI=true``), like require_tool in tests/conftest.py; another version always fails it."""
    import pytest

    try:
        paths = {t: slurm_tool(t) for t in tools}
    except SlurmBuildError as e:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(str(e), pytrace=False)
        pytest.skip(str(e))
    try:
        check_version()
    except SlurmBuildError as e:
        pytest.fail(str(e), pytrace=False)
    return paths
