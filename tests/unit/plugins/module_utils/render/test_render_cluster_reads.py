"""What one cluster's rendered files read (the contract review/incremental.py relies on to leave a
cluster alone): the fleet-wide settings, that cluster's model, tenants and pools, and its snapshots and
pool lock; nothing of another cluster. And the key the review compares holds all of it: every field of
the fleet model that is not split by cluster counts for every cluster (deny by default)."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import pytest
from render_fixtures import make_big_inventory, only_cluster

from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Fleet
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.render import tree as rt
from ansible_collections.gpufleet.core.plugins.module_utils.review import incremental


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Fleet:
    inv = make_big_inventory(tmp_path_factory.mktemp("fleet"), nodes=64, tenants=3, fabric=True, clusters=3)
    return load_fleet(inv)


@pytest.fixture(scope="module")
def whole(fleet: Fleet) -> rt.RenderResult:
    return rt.render_fleet(fleet, keep_inputs=False, workers=1)


def _of(files: dict[str, bytes], name: str) -> dict[str, bytes]:
    return {k: v for k, v in files.items() if k.startswith(f"clusters/{name}/")}


@pytest.mark.parametrize("name", ["gpu-00", "gpu-01", "gpu-02"])
def test_a_cluster_reads_nothing_of_the_others(fleet: Fleet, whole: rt.RenderResult, name: str) -> None:
    alone = rt.render_fleet(only_cluster(fleet, name), keep_inputs=False, workers=1)
    assert _of(alone.files, name) == _of(whole.files, name)
    assert len(_of(whole.files, name)) > 50
    assert alone.summary[name] == whole.summary[name]
    assert alone.locks == {p: b for p, b in whole.locks.items() if p.parent.name == name}
    # the render of some clusters of the whole fleet: their files, and no fleet-wide file
    some = rt.render_fleet(fleet, keep_inputs=False, workers=1, clusters={name})
    assert some.files == _of(whole.files, name)


def test_the_key_ignores_the_other_clusters(fleet: Fleet) -> None:
    key = incremental.cluster_key(fleet, "gpu-01")
    assert incremental.cluster_key(only_cluster(fleet, "gpu-01"), "gpu-01") == key
    other = next(t for t in fleet.tenants.values() if t.cluster == "gpu-02")
    changed = replace(fleet, tenants={**fleet.tenants, other.name: replace(other, namespaces=("x",))})
    assert incremental.cluster_key(changed, "gpu-01") == key
    assert incremental.cluster_key(changed, "gpu-02") != incremental.cluster_key(fleet, "gpu-02")


def test_the_key_holds_the_clusters_own_model(fleet: Fleet) -> None:
    key = incremental.cluster_key(fleet, "gpu-01")
    tenant = next(t for t in fleet.tenants.values() if t.cluster == "gpu-01")
    pool = next(p for p in fleet.pools.values() if p.cluster == "gpu-01")
    cluster = fleet.clusters["gpu-01"]
    for other in (
        replace(fleet, tenants={**fleet.tenants, tenant.name: replace(tenant, namespaces=("x",))}),
        replace(fleet, pools={**fleet.pools, pool.name: replace(pool, size_nodes=(pool.size_nodes or 0) + 8)}),
        replace(fleet, clusters={**fleet.clusters, "gpu-01": replace(cluster, server="https://elsewhere:6443")}),
        # a pool's place among the cluster's pools is an input (a first render places nodes by it)
        replace(fleet, pools=dict(reversed(fleet.pools.items()))),
    ):
        assert incremental.cluster_key(other, "gpu-01") != key


def test_every_fleet_field_not_split_by_cluster_counts_for_every_cluster(fleet: Fleet) -> None:
    """Deny by default: a field added to the fleet model is fleet-wide unless it is declared split by
    cluster (and the render's contract test above then covers it)."""
    names = [f.name for f in dataclasses.fields(Fleet) if f.compare]
    assert set(incremental.SCOPED) | set(incremental.NOT_INPUTS) <= set(names)
    wide = [n for n in names if n not in incremental.SCOPED + incremental.NOT_INPUTS]
    assert {"name", "gitops", "versions", "chart_mirrors", "maintenance", "rollout", "image_mirror"} <= set(wide)
    for field in wide:
        other = replace(fleet, **{field: object()})
        for c in fleet.clusters:
            assert incremental.cluster_key(other, c) != incremental.cluster_key(fleet, c), field
    moved = replace(fleet, inventory_dir=fleet.inventory_dir.parent / "elsewhere")
    moved = replace(moved, clusters={n: _moved(c, fleet, moved) for n, c in fleet.clusters.items()})
    assert incremental.cluster_key(moved, "gpu-01") == incremental.cluster_key(fleet, "gpu-01")


def _moved(cluster, fleet: Fleet, moved: Fleet):
    """The cluster's paths as they are in a copy of the inventory elsewhere (the review's base)."""

    def to(p):
        return moved.inventory_dir / p.relative_to(fleet.inventory_dir) if p is not None else None

    return replace(
        cluster, nodes_snapshot=to(cluster.nodes_snapshot), fabric=replace(cluster.fabric, path=to(cluster.fabric.path))
    )
