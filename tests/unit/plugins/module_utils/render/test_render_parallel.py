"""A fleet of several clusters renders the same bytes whatever the number of worker processes and the
order its clusters come in (render/parallel.py), releases each cluster's inputs when asked, and
raises the sequential render's error when a cluster fails in a worker."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from render_fixtures import make_big_inventory

from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.render import parallel
from ansible_collections.gpufleet.core.plugins.module_utils.render import tree as rt
from ansible_collections.gpufleet.core.plugins.module_utils.render.inputs import RenderInputError


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory):
    inv = make_big_inventory(tmp_path_factory.mktemp("fleet"), nodes=64, tenants=4, fabric=True, clusters=3)
    return load_fleet(inv)


def _reversed(fleet):
    """The clusters (and tenants) in the other order; the pools keep theirs: a pool's place in the
    inventory decides where its nodes go on a first render, it is an input."""
    return replace(
        fleet, clusters=dict(reversed(fleet.clusters.items())), tenants=dict(reversed(fleet.tenants.items()))
    )


def test_generated_fleet_has_clusters_of_their_own(fleet) -> None:
    assert sorted(fleet.clusters) == ["gpu-00", "gpu-01", "gpu-02"]
    snaps = {c.name: c.fabric_input.read_bytes() for c in fleet.clusters.values()}
    assert len(set(snaps.values())) == 3, "each cluster has a fabric of its own"
    assert {t.cluster for t in fleet.tenants.values()} == set(fleet.clusters)


def test_same_bytes_whatever_the_workers_and_the_order(fleet) -> None:
    one = rt.render_fleet(fleet, keep_inputs=False, workers=1)
    assert len({f.split("/")[1] for f in one.files if f.startswith("clusters/")}) == 3
    for f, workers in ((fleet, 3), (_reversed(fleet), 2), (_reversed(fleet), 1)):
        other = rt.render_fleet(f, keep_inputs=False, workers=workers)
        assert list(other.files) == list(one.files)
        assert other.files == one.files
        assert other.locks == one.locks
        assert other.summary == one.summary
    kept = rt.render_fleet(fleet)  # the review's render: in this process, inputs kept
    assert kept.files == one.files
    assert sorted(kept.inputs) == sorted(fleet.clusters)
    assert one.inputs == {}


def test_workers_are_forked_processes(fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    pids: list[int] = []
    part = rt._cluster_part

    def spy(*a, **kw):
        pids.append(os.getpid())
        return part(*a, **kw)

    monkeypatch.setattr(rt, "_cluster_part", spy)
    rt.render_fleet(fleet, keep_inputs=False, workers=1)
    assert set(pids) == {os.getpid()}
    pids.clear()
    # the forked workers' calls are not seen here; only the parent's re-render of a failure would be
    rt.render_fleet(fleet, keep_inputs=False, workers=2)
    assert pids == []


def test_worker_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(parallel.WORKERS_ENV, raising=False)
    assert parallel.worker_count(1) == 1
    assert parallel.worker_count(20, 4) == 4
    assert parallel.worker_count(3, 8) == 3
    assert parallel.worker_count(50) == min(50, parallel.cores())
    monkeypatch.setenv(parallel.WORKERS_ENV, "1")
    assert parallel.worker_count(20) == 1
    monkeypatch.setenv(parallel.WORKERS_ENV, "junk")
    assert parallel.worker_count(20) == min(20, parallel.cores())


def test_a_failing_cluster_raises_the_sequential_error(fleet, tmp_path: Path) -> None:
    """Two clusters lose their nodes snapshot: the error names the first in name order, with its own
    type, with and without workers."""
    clusters = dict(fleet.clusters)
    for name in ("gpu-01", "gpu-02"):
        clusters[name] = replace(clusters[name], nodes_snapshot=tmp_path / f"{name}-gone.json")
    broken = replace(fleet, clusters=clusters)
    for workers in (1, 3):
        with pytest.raises(RenderInputError, match=r"gpu-01-gone\.json"):
            rt.render_fleet(broken, keep_inputs=False, workers=workers)
