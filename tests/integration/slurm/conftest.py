"""Fixture ``slurm_cluster``: start real Slurm clusters (harness.py) and always tear them down.

    def test_x(slurm_cluster):
        c = slurm_cluster(conf_text, topology=topo_text, gres=gres_text, gpu_devices=8)
        c.sbatch("-N", "2", "--switches=1")
        assert c.ctld_problems() == []

The factory may be called several times in one test; every cluster started is stopped in the
finalizer, also when the test fails. Needs root (slurmd), the Slurm build (tools/build-slurm.sh,
run by scripts/setup.sh) and Debian's munge; without them the tests skip outside CI and fail in CI
(require_tool from tests/conftest.py). A build of another Slurm version fails every test. The run's
summary names the Slurm the tests ran (``scontrol --version`` and the build's prefix).
"""

from __future__ import annotations

import sys

import pytest
from gpufleet_testlib.slurm_build import SlurmBuildError, check_version, slurm_prefix
from harness import SlurmCluster, require_slurm


@pytest.fixture
def slurm_cluster(tmp_path, request):
    require_slurm()
    started: list[SlurmCluster] = []

    def make(conf: str, topology: str | None = None, gres: str | None = None, start: bool = True, **kw):
        c = SlurmCluster(tmp_path / f"cluster{len(started)}", conf, topology=topology, gres=gres, **kw)
        started.append(c)
        if start:
            c.start()
        return c

    yield make
    failed = getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed
    for c in started:
        if failed:
            sys.stderr.write(f"\n--- slurmctld log of {c.workdir} (tail)\n{c.tail('slurmctld', 60)}\n")
        c.stop()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    rep = yield
    setattr(item, f"rep_{rep.when}", rep)
    return rep


def pytest_terminal_summary(terminalreporter):
    try:
        said = f"{check_version()} ({slurm_prefix()})"
    except SlurmBuildError as e:
        said = f"not usable: {e}"
    terminalreporter.write_line(f"Slurm under test: scontrol --version -> {said}")
