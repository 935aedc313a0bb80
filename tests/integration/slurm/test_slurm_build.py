"""The Slurm the tests run is the project's build of the version the fleet deploys, whole.

tools/build-slurm.sh builds it (scripts/setup.sh runs it); gpufleet_testlib/slurm_build.py finds it.
Every daemon and command reports the pinned version, the version is the one of the Slurm images the
fleet deploys (versions.IMAGES), the features configure could have dropped silently are there, and
the version check itself fails on another Slurm.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gpufleet_testlib import slurm_build
from gpufleet_testlib.slurm_build import (
    SlurmBuildError,
    check_version,
    slurm_prefix,
    slurm_tool,
    version_of,
    wanted_version,
)
from harness import require_slurm

from ansible_collections.gpufleet.core.plugins.module_utils import versions

pytestmark = pytest.mark.slurm

DAEMONS = ("slurmctld", "slurmd", "slurmdbd", "slurmrestd")
COMMANDS = ("scontrol", "sacctmgr", "sbatch", "srun", "sinfo", "squeue", "sacct", "scancel", "sshare")


def test_every_daemon_and_command_is_the_pinned_version():
    require_slurm()
    want = f"slurm {wanted_version()}"
    assert check_version() == want
    for name in DAEMONS:
        assert version_of(slurm_tool(name), "-V") == want, name
    for name in COMMANDS:
        assert version_of(slurm_tool(name)) == want, name


def test_build_is_the_series_the_fleet_deploys():
    # the Slinky images are tagged <major.minor>-<os>; the build is a release of that series
    series = versions.IMAGES["slurm"].split("-", 1)[0]
    assert wanted_version().startswith(f"{series}."), (wanted_version(), versions.IMAGES["slurm"])


def test_features_production_needs_are_built():
    require_slurm()
    prefix = slurm_prefix()
    plugins = {p.name for p in (prefix / "lib" / "slurm").glob("*.so")}
    for plugin in (
        "auth_slurm.so",  # the Slinky chart's AuthType=auth/slurm (slurm.key)
        "auth_jwt.so",  # AuthAltTypes=auth/jwt: the operator's tokens
        "rest_auth_jwt.so",  # slurmrestd -a rest_auth/jwt
        "openapi_slurmctld.so",
        "accounting_storage_mysql.so",  # slurmdbd on MariaDB
        "topology_block.so",
        "topology_tree.so",
        "serializer_yaml.so",  # topology.yaml
        "data_parser_v0_0_44.so",  # the REST API version slurm-client v1.2.1 speaks
        "cgroup_v2.so",
        "task_cgroup.so",
        "gpu_nvidia.so",  # gres.conf AutoDetect=nvidia
    ):
        assert plugin in plugins, plugin
    assert (prefix / "lib" / "security" / "pam_slurm_adopt.so").is_file()


def test_version_check_fails_on_another_slurm(tmp_path, monkeypatch):
    fake = tmp_path / "scontrol"
    fake.write_text("#!/bin/sh\necho 'slurm 22.05.8'\n")
    fake.chmod(0o755)
    monkeypatch.setattr(slurm_build, "slurm_tool", lambda name: str(fake))
    slurm_build.check_version.cache_clear()
    try:
        with pytest.raises(SlurmBuildError, match=r"said 'slurm 22\.05\.8', want 'slurm \d"):
            slurm_build.check_version()
    finally:
        slurm_build.check_version.cache_clear()


def test_build_link_points_into_the_per_user_cache():
    require_slurm()
    link = Path(slurm_build.LINK)
    assert link.is_symlink()
    stamp = (slurm_prefix() / ".stamp").read_text()
    assert stamp.startswith(f"slurm {wanted_version()} sha256="), stamp
