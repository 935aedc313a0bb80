"""Render behaviour: deterministic bytes, idempotent, minimal and atomic writes, ownership, the CLI."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from render_fixtures import REPO, edit_vars, make_inventory, render_to, tree_state

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.render import writer as tree_writer
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import (
    render_inventory,
    run,
)

CLI = [sys.executable, str(REPO / "scripts" / "gpufleet.py")]


@pytest.fixture
def inv(tmp_path: Path) -> Path:
    return make_inventory(tmp_path)


def test_same_inputs_same_bytes_anywhere(tmp_path: Path) -> None:
    a = render_inventory(make_inventory(tmp_path / "a"))
    b = render_inventory(make_inventory(tmp_path / "b"))
    assert a.files == b.files
    assert render_inventory(make_inventory(tmp_path / "c")).files == a.files
    for rel, data in a.files.items():  # no paths of the machine, no timestamps
        assert str(tmp_path) not in data.decode(), rel
        assert b"\r" not in data, rel


def test_second_render_writes_nothing(inv: Path, tmp_path: Path) -> None:
    out = tmp_path / "gitops"
    _unused, first = render_to(inv, out)
    assert first.plan.added and first.changed
    before = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in out.rglob("*") if p.is_file()}
    _unused, second = render_to(inv, out)
    assert not second.changed
    assert second.plan.added == second.plan.changed == second.plan.removed == []
    assert second.plan.unchanged == len(first.plan.added)
    after = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in out.rglob("*") if p.is_file()}
    assert after == before


def test_only_changed_files_are_rewritten(inv: Path, tmp_path: Path) -> None:
    out = tmp_path / "gitops"
    render_to(inv, out)
    inodes = {p.relative_to(out).as_posix(): p.stat().st_ino for p in out.rglob("*") if p.is_file()}

    def shrink(d: dict) -> None:
        for p in d["gpufleet_pools"]:
            if p["name"] == "research-batch":
                p["size"]["nodes"] = 10

    edit_vars(inv, "pools.yml", shrink)
    _unused, rep = render_to(inv, out)
    changed = set(rep.plan.changed)
    assert "clusters/gpu-east/tenants/research/slurm/values.yaml" in changed
    assert "clusters/gpu-east/POOLS.md" in changed
    assert not rep.plan.added and not rep.plan.removed
    for rel, ino in inodes.items():
        if rel in changed or rel in rep.plan.manifests:
            continue
        assert (out / rel).stat().st_ino == ino, f"{rel} was rewritten although unchanged"
    assert rep.locks_changed  # the pool lock moved two nodes back to spare


def test_dropped_files_removed_unowned_files_kept(inv: Path, tmp_path: Path) -> None:
    out = tmp_path / "gitops"
    render_to(inv, out)
    (out / "NOTES.md").write_text("mine\n")  # outside the cluster folders: left alone

    def drop_tenant(d: dict) -> None:
        d["gpufleet_tenants"] = [t for t in d["gpufleet_tenants"] if t["name"] != "research"]

    def drop_pools(d: dict) -> None:
        d["gpufleet_pools"] = [p for p in d["gpufleet_pools"] if not p["name"].startswith("research")]

    edit_vars(inv, "tenants.yml", drop_tenant)
    edit_vars(inv, "pools.yml", drop_pools)
    _unused, rep = render_to(inv, out)
    assert any(r.startswith("clusters/gpu-east/tenants/research/") for r in rep.plan.removed)
    assert "clusters/gpu-east/tenants/research/apps/6-slurm.yaml" in rep.plan.removed
    assert "clusters/gpu-east/tenants/research/.gpufleet-manifest" in rep.plan.manifests
    assert (out / "NOTES.md").read_text() == "mine\n"
    assert not (out / "clusters/gpu-east/tenants/research").exists()
    owned = tree_writer.read_manifest(out)
    assert "NOTES.md" not in owned and not any("research" in p for p in owned)


@pytest.mark.parametrize(
    "extra",
    [
        "clusters/gpu-east/tenants/research/host/zz-admin.yaml",  # a tenant folder Argo CD syncs whole
        "clusters/gpu-east/tenants/research/apps/9-extra.yaml",  # an extra Application
        "clusters/gpu-east/apps/zz-extra.yaml",  # the platform's folder
        "clusters/gpu-east/tenants/research/.gpufleet-manifest.bak",
        "clusters/gone/apps/x.yaml",  # a cluster the fleet does not have
    ],
)
def test_a_file_the_render_did_not_write_is_refused(inv: Path, tmp_path: Path, extra: str) -> None:
    out = tmp_path / "gitops"
    render_to(inv, out)
    (out / extra).parent.mkdir(parents=True, exist_ok=True)
    (out / extra).write_text("kind: ClusterRoleBinding\n")
    before = tree_state(out)
    for check in (True, False):
        with pytest.raises(tree_writer.TreeError, match=re.escape(str(out / extra))):
            tree_writer.plan(out, render_inventory(inv).files) if check else render_to(inv, out)
    assert tree_state(out) == before  # refused, nothing written, and the file is never kept silently


def test_a_tenant_manifest_listing_a_foreign_file_does_not_keep_it(inv: Path, tmp_path: Path) -> None:
    out = tmp_path / "gitops"
    render_to(inv, out)
    folder = out / "clusters/gpu-east/tenants/research"
    (folder / "host/zz.yaml").write_text("kind: ClusterRoleBinding\n")
    with open(folder / tree_writer.MANIFEST, "a") as fh:
        fh.write(f"{hashlib.sha256(b'kind: ClusterRoleBinding' + bytes([10])).hexdigest()}  host/zz.yaml\n")
    plan = tree_writer.plan(out, render_inventory(inv).files)
    assert plan.removed == ["clusters/gpu-east/tenants/research/host/zz.yaml"] and plan.changes
    render_to(inv, out)
    assert not (folder / "host/zz.yaml").exists()


@pytest.mark.parametrize(
    ("manifest", "line", "msg"),
    [
        (".gpufleet-manifest", "manifest  clusters/gpu-east/apps/.gpufleet-manifest", "not a tenant folder"),
        (".gpufleet-manifest", "manifest  clusters/x/tenants/t/.gpufleet-manifest", "manifest is missing"),
        ("clusters/gpu-east/tenants/research/.gpufleet-manifest", f"{'0' * 64}  ../../apps/x.yaml", "bad path"),
        ("clusters/gpu-east/tenants/research/.gpufleet-manifest", "manifest  x/.gpufleet-manifest", "corrupt"),
    ],
)
def test_tampered_manifests_are_refused(inv: Path, tmp_path: Path, manifest: str, line: str, msg: str) -> None:
    out = tmp_path / "gitops"
    render_to(inv, out)
    with open(out / manifest, "a") as fh:
        fh.write(line + "\n")
    with pytest.raises(tree_writer.TreeError, match=msg):
        tree_writer.plan(out, render_inventory(inv).files)


def test_refuses_to_overwrite_unowned_file(inv: Path, tmp_path: Path) -> None:
    out = tmp_path / "gitops"
    out.mkdir()
    (out / "README.md").write_text("hand written\n")
    with pytest.raises(tree_writer.TreeError, match="not owned"):
        render_to(inv, out)
    assert tree_state(out) == {"README.md": b"hand written\n"}


def test_check_mode_writes_nothing_and_plans(inv: Path, tmp_path: Path) -> None:
    out = tmp_path / "gitops"
    res = run(inv, out, check=True, diff=True)
    assert res["changed"] and res["files_added"] and not out.exists()
    assert not (inv / "snapshots" / "gpu-east" / "pools.lock.yaml").exists()
    assert {d["after_header"] for d in res["diff"]} >= {f"{out}/{f}" for f in res["files_added"]}
    res2 = run(inv, out)
    assert res2["changed"] and res2["files_added"] == res["files_added"]
    res3 = run(inv, out, check=True, diff=True)
    assert not res3["changed"] and res3["diff"] == [] and res3["files_unchanged"] == len(res["files_added"])


def test_recover_after_interrupted_fallback_swap(tmp_path: Path) -> None:
    out = tmp_path / "gitops"
    tree_writer.write(out, {"a.yaml": b"old\n"})
    # state left by a kill between the two renames of the non-exchange fallback
    os.rename(out, tmp_path / ".gitops.gpufleet-old")
    (tmp_path / ".gitops.gpufleet-new").mkdir()
    (tmp_path / ".gitops.gpufleet-new" / "half").write_text("x")
    tree_writer.recover(out)
    assert tree_state(out)["a.yaml"] == b"old\n"
    assert not (tmp_path / ".gitops.gpufleet-new").exists()
    plan = tree_writer.write(out, {"a.yaml": b"new\n"})
    assert plan.changed == ["a.yaml"] and (out / "a.yaml").read_bytes() == b"new\n"


def test_bad_paths_rejected(tmp_path: Path) -> None:
    for bad in ("../x", "/abs", "a/../b", ".gpufleet-manifest", ""):
        with pytest.raises(tree_writer.TreeError):
            tree_writer.plan(tmp_path, {bad: b""})


# ------------------------------------------------------------------ CLI


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=cwd, timeout=120, check=False)


def test_cli_render_and_check(inv: Path, tmp_path: Path) -> None:
    out = tmp_path / "gitops"
    p = cli("render", "--inventory", str(inv), "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert cli("render", "--inventory", str(inv), "--out", str(out), "--check").returncode == 0
    (out / "clusters" / "gpu-east" / "REPORT.md").write_text("edited by hand\n")
    (out / "clusters" / "gpu-east" / "apps" / "10-cilium.yaml").unlink()
    p = cli("render", "--inventory", str(inv), "--out", str(out), "--check")
    assert p.returncode == 1
    assert "changed: clusters/gpu-east/REPORT.md" in p.stderr
    assert "added: clusters/gpu-east/apps/10-cilium.yaml" in p.stderr
    assert (out / "clusters" / "gpu-east" / "REPORT.md").read_text() == "edited by hand\n"  # --check wrote nothing


def test_cli_a_cached_current_tree_still_refuses_a_foreign_file(inv: Path, tmp_path: Path) -> None:
    out = tmp_path / "gitops"
    env_cache = {"GPUFLEET_CACHE_DIR": str(tmp_path / "cache")}
    for _round in range(2):  # the second render is the no-change fast path: the cache says the tree is current
        p = subprocess.run(
            [*CLI, "render", "--inventory", str(inv), "--out", str(out)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={**os.environ, **env_cache},
        )
        assert p.returncode == 0, p.stderr
    assert any((tmp_path / "cache").rglob("*")), "the cache was not used"
    extra = out / "clusters" / "gpu-east" / "tenants" / "research" / "host" / "zz-admin.yaml"
    extra.write_text("kind: ClusterRoleBinding\n")
    for args in ((), ("--check",)):
        p = subprocess.run(
            [*CLI, "render", "--inventory", str(inv), "--out", str(out), *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={**os.environ, **env_cache},
        )
        assert p.returncode == 2 and str(extra) in p.stderr, (args, p.stdout, p.stderr)
    assert extra.read_text() == "kind: ClusterRoleBinding\n"


def test_cli_schema_matches_docs() -> None:
    p = cli("schema")
    assert p.returncode == 0
    from ansible_collections.gpufleet.core.plugins.module_utils.model.schema import SCHEMA

    assert p.stdout == json.dumps(SCHEMA, indent=2, sort_keys=True) + "\n"
    assert p.stdout == (REPO / "docs" / "fleet.schema.json").read_text(encoding="utf-8")


BAD_INPUTS = {
    "yaml": ("group_vars/all/pools.yml", lambda t: t + "\n  - {bad: [\n", "pools.yml"),
    "schema": ("group_vars/all/pools.yml", lambda t: t.replace("nodes: 32", "nodes: thirty-two"), "pools.yml:"),
    "reference": ("group_vars/all/tenants.yml", lambda t: t.replace("pools: [pretrain]", "pools: [nope]"), "nope"),
    "pool too big": ("group_vars/all/pools.yml", lambda t: t.replace("nodes: 32", "nodes: 320"), "pretrain"),
    "nodes snapshot": ("snapshots/gpu-east/nodes.yaml", lambda t: "kind: List\nitems: [{kind: Pod}]\n", "nodes.yaml"),
    "nodes yaml": ("snapshots/gpu-east/nodes.yaml", lambda t: "items: [\n", "nodes.yaml"),
    "fabric": ("snapshots/gpu-east/fabric.ibnetdiscover", lambda t: "garbage\n", "fabric"),
    "lock": ("snapshots/gpu-east/pools.lock.yaml", lambda t: "cluster: [\n", "pools.lock.yaml"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_cli_bad_input_exit_2_nothing_written(case: str, inv: Path, tmp_path: Path) -> None:
    out = tmp_path / "gitops"
    assert cli("render", "--inventory", str(inv), "--out", str(out)).returncode == 0
    (out / "NOTES.md").write_text("mine\n")
    state = tree_state(out)
    rel, edit, needle = BAD_INPUTS[case]
    f = inv / rel
    f.write_text(edit(f.read_text(encoding="utf-8") if f.exists() else ""), encoding="utf-8")
    lock = (inv / "snapshots/gpu-east/pools.lock.yaml").read_bytes()
    p = cli("render", "--inventory", str(inv), "--out", str(out))
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert "Traceback" not in p.stderr
    assert p.stderr.startswith("gpufleet: error:") and needle in p.stderr, p.stderr
    assert tree_state(out) == state
    assert (inv / "snapshots/gpu-east/pools.lock.yaml").read_bytes() == lock


def test_cli_missing_snapshot(inv: Path, tmp_path: Path) -> None:
    shutil.rmtree(inv / "snapshots")
    p = cli("render", "--inventory", str(inv), "--out", str(tmp_path / "o"))
    assert p.returncode == 2 and "nodes.yaml" in p.stderr and "discover" in p.stderr
    assert not (tmp_path / "o").exists()


def test_no_change_fast_path_is_safe(inv: Path, tmp_path: Path) -> None:
    from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_and_write

    out = tmp_path / "gitops"
    _fleet, _out, res, rep = render_and_write(inv, out)
    assert res is not None and rep.locks_changed  # first render: writes the lock, no cache yet
    _fleet, _out, res, rep = render_and_write(inv, out)
    assert res is not None and not rep.changed  # full render confirms; cache recorded
    _fleet, _out, res, rep = render_and_write(inv, out)
    assert res is None and not rep.changed and rep.plan.unchanged > 50  # fast path: nothing rendered
    (out / "clusters/gpu-east/REPORT.md").write_text("tampered\n")
    _fleet, _out, res, rep = render_and_write(inv, out, check=True)
    assert res is not None and rep.plan.changed == ["clusters/gpu-east/REPORT.md"]
    _fleet, _out, res, rep = render_and_write(inv, out)
    assert rep.plan.changed == ["clusters/gpu-east/REPORT.md"]
    edit_vars(inv, "fleet.yml", lambda d: d["gpufleet_fleet"]["gitops"].update(revision="v2"))
    _fleet, _out, res, rep = render_and_write(inv, out)
    assert res is not None and rep.plan.changed  # inputs changed: rendered again
    snap = inv / "snapshots/gpu-east/nodes.yaml"
    nodes = yaml.safe_load(snap.read_text(encoding="utf-8"))
    nodes["items"] = [n for n in nodes["items"] if n["metadata"]["name"] != "gpu064"]  # a spare node leaves
    snap.write_text(yaml.safe_dump(nodes), encoding="utf-8")
    # it is still cabled: its fabric host now matches no node, an error unless explicitly allowed
    with pytest.raises(GpufleetError, match="'gpu064'"):
        render_and_write(inv, out)
    edit_vars(inv, "clusters.yml", lambda d: d["gpufleet_clusters"][0]["fabric"].update(allow_unmatched_hosts=True))
    _fleet, _out, res, rep = render_and_write(inv, out)
    assert res is not None and "clusters/gpu-east/POOLS.md" in rep.plan.changed


@pytest.mark.parametrize("link", ["file", "dir"])
def test_the_no_change_fast_path_refuses_links_as_the_full_render_does(inv: Path, tmp_path: Path, link: str) -> None:
    from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_and_write

    out = tmp_path / "gitops"
    for _run in range(3):  # the third render takes the no-change fast path
        _fleet, _out, res, _rep = render_and_write(inv, out)
    assert res is None
    outside = tmp_path / "outside"
    outside.mkdir()
    host = out / "clusters/gpu-east/tenants/research/host"
    if link == "file":  # an owned file replaced by a link to an identical copy outside the tree
        owned = sorted(p for p in host.iterdir() if p.is_file())[0]
        (outside / owned.name).write_bytes(owned.read_bytes())
        owned.unlink()
        owned.symlink_to(outside / owned.name)
        bad = owned
    else:  # a directory link into host/
        (outside / "zz-admin.yaml").write_text("kind: ClusterRoleBinding\n")
        bad = host / "extra"
        bad.symlink_to(outside)
    for check in (False, True):
        with pytest.raises(GpufleetError, match=re.escape(str(bad)) + ".*symbolic link"):
            render_and_write(inv, out, check=check)
    assert bad.is_symlink()


def test_parse_cache_gives_the_same_bytes(inv: Path, tmp_path: Path) -> None:
    from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
    from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_fleet

    fleet = load_fleet(inv)
    cache = tmp_path / "cache"
    plain = render_fleet(fleet).files
    miss = render_fleet(fleet, cache).files
    assert sorted(p.name.split("-")[0] for p in (cache / "gpu-east").iterdir()) == ["nodes", "topology"]
    hit = render_fleet(fleet, cache).files
    assert plain == miss == hit
    for f in (cache / "gpu-east").iterdir():  # a corrupt cache entry is ignored, not trusted
        f.write_text("{not json")
    assert render_fleet(fleet, cache).files == plain


def test_a_cluster_server_at_a_tenants_vcluster_is_refused_for_that_cause(inv: Path) -> None:
    from ansible_collections.gpufleet.core.plugins.module_utils.render.values import vcluster_server

    edit_vars(inv, "clusters.yml", lambda d: d["gpufleet_clusters"][0].update(server=vcluster_server("research")))
    with pytest.raises(GpufleetError) as err:
        render_inventory(inv)
    assert "vCluster URL https://research." in str(err.value) and "is a cluster's API server" in str(err.value)
    assert "two host directory apps" not in str(err.value)
