"""Fuzzed mutations of the sample inventory and fabric (hypothesis): fail closed or render.

Each example copies the sample repository (inventory, committed gitops/, an ``outside`` canary
directory), applies one random mutation and renders in-process (``render_and_write``, what the
CLI and the module call). The property, for every example:

* the render either succeeds, or raises a GpufleetError (what the CLI turns into exit 2) whose
  message names a file of the inventory (never an uncaught exception = a traceback);
* when it fails, nothing changed on disk (the whole copy is snapshotted with lstat before/after);
* the outside directory is never touched.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

hypothesis = pytest.importorskip("hypothesis")
from hostile_cases import FABRIC, GV, INV, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from render_fixtures import REPO

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_and_write

HOSTILE = [
    "",
    " ",
    "\n",
    "x\n",
    "a b",
    "a=b",
    "../x",
    "/etc/passwd",
    "default",
    "kube-system",
    "gpu-east-platform",
    "UNLIMITED",
    "1-00:00:00 Hidden=YES",
    "a" * 300,
    "é",
    "\x00",
    "{{ lookup('env','HOME') }}",
    "*",
    "gpu[001-999]",
    "-1",
]
VALUES = st.one_of(
    st.sampled_from(HOSTILE),
    st.sampled_from([1.0, 2.5, float("inf"), float("nan"), 1e308, 10**30]),
    st.text(max_size=20),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.booleans(),
    st.none(),
    st.lists(st.sampled_from(HOSTILE), max_size=3),
    st.dictionaries(st.sampled_from(HOSTILE), st.sampled_from(HOSTILE), max_size=2),
)
FILES = sorted(p.name for p in (REPO / GV).glob("*.yml"))


def paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += paths(v, (*prefix, i))
    return out


def setat(node: Any, path: tuple, value: Any) -> None:
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value


def fresh() -> Path:
    root = Path(tempfile.mkdtemp(prefix="gpufleet-fuzz-"))
    repo = root / "repo"
    shutil.copytree(REPO / INV, repo / INV)
    shutil.copytree(REPO / "gitops", repo / "gitops")
    (repo / ".git").mkdir()
    (repo / "outside").mkdir()
    (repo / "outside" / "canary").write_text("x")
    return root


def check(root: Path) -> str:
    repo = root / "repo"
    before = snapshot(root)
    try:
        render_and_write(repo / INV)
    except GpufleetError as exc:
        msg = str(exc)
        assert "Traceback" not in msg
        assert str(repo / INV) in msg or "inventories/sample" in msg or "gitops" in msg, msg
        assert snapshot(root) == before, f"failed render changed files: {msg}"
        return "error"
    finally:
        assert (repo / "outside" / "canary").read_text() == "x"
    return "ok"


SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@SETTINGS
@given(data=st.data())
def test_fuzz_inventory_value(data: st.DataObject) -> None:
    fname = data.draw(st.sampled_from(FILES))
    root = fresh()
    try:
        p = root / "repo" / GV / fname
        doc = yaml.safe_load(p.read_text())
        path = data.draw(st.sampled_from(paths(doc)))
        setat(doc, path, data.draw(VALUES))
        p.write_text(yaml.safe_dump(doc, allow_unicode=True))
        check(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@SETTINGS
@given(data=st.data())
def test_fuzz_inventory_text(data: st.DataObject) -> None:
    """Raw text edits: YAML syntax, anchors, tags, duplicate keys, encodings."""
    fname = data.draw(st.sampled_from(FILES))
    root = fresh()
    try:
        p = root / "repo" / GV / fname
        raw = p.read_bytes()
        pos = data.draw(st.integers(0, len(raw)))
        insert = data.draw(
            st.one_of(
                st.sampled_from([b"&a ", b"*a", b"!vault ", b"!!python/object ", b"\n  ", b": ", b"\xff", b"- "]),
                st.binary(max_size=8),
            )
        )
        cut = data.draw(st.integers(0, 8))
        p.write_bytes(raw[:pos] + insert + raw[pos + cut :])
        check(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@SETTINGS
@given(data=st.data())
def test_fuzz_fabric(data: st.DataObject) -> None:
    root = fresh()
    try:
        p = root / "repo" / FABRIC
        lines = p.read_bytes().split(b"\n")
        for _step in range(data.draw(st.integers(1, 3))):
            i = data.draw(st.integers(0, len(lines) - 1))
            op = data.draw(st.sampled_from(["delete", "duplicate", "char", "truncate", "garbage"]))
            if op == "delete":
                del lines[i]
            elif op == "duplicate":
                lines.insert(i, lines[i])
            elif op == "char" and lines[i]:
                j = data.draw(st.integers(0, len(lines[i]) - 1))
                c = data.draw(st.sampled_from([b" ", b"=", b",", b"[", b'"', b"\xe9", b"\x00", b"#", b"0", b"Z"]))
                lines[i] = lines[i][:j] + c + lines[i][j + 1 :]
            elif op == "truncate":
                lines = lines[:i]
            else:
                lines.insert(i, data.draw(st.binary(max_size=30)))
            if not lines:
                break
        p.write_bytes(b"\n".join(lines))
        check(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


# keys a tenant's chart values fuzzer draws from: allow-listed names and the fence's own
VALUE_KEYS = [
    "controlPlane", "statefulSet", "resources", "limits", "requests", "cpu", "memory", "coredns",
    "deployment", "replicas", "telemetry", "enabled", "logging", "encoding", "sync", "fromHost", "toHost",
    "nodes", "selector", "pods", "enforceTolerations", "rbac", "clusterRole", "policies", "resourceQuota",
    "experimental", "deploy", "host", "manifests", "plugins", "controller", "extraConfMap", "SchedulerParameters",
    "configFiles", "nodesets", "loginsets", "main", "login", "image", "scheduling", "nodeSelector",
]  # fmt: skip
LEAVES = st.one_of(
    st.sampled_from(["1", "8", "16Gi", "17Gi", "1e3", "json", "x y", "bf_window=60", "*", ""]),
    st.integers(-5, 2**31),
    st.booleans(),
    st.floats(allow_nan=True),
    st.none(),
)
TREES = st.recursive(
    LEAVES,
    lambda kids: st.dictionaries(st.sampled_from(VALUE_KEYS), kids, max_size=3),
    max_leaves=8,
)
FENCE = ("sync", "rbac", "policies", "experimental", "plugins", "networking", "exportKubeConfig")


@SETTINGS
@given(
    chart=st.sampled_from(["vcluster", "slurm"]), values=st.dictionaries(st.sampled_from(VALUE_KEYS), TREES, max_size=3)
)
def test_fuzz_tenant_values_keep_the_fence(chart: str, values: dict) -> None:
    """Random chart values in a tenant's entry: refused naming the key, or rendered with the
    platform's fence (sync, RBAC, policies, ...) exactly as committed."""
    root = fresh()
    try:
        p = root / "repo" / GV / "tenants.yml"
        doc = yaml.safe_load(p.read_text())
        doc["gpufleet_tenants"][1].setdefault(chart, {})["values"] = values
        p.write_text(yaml.safe_dump(doc, allow_unicode=True))
        if check(root) == "ok":
            rel = "clusters/gpu-east/tenants/research/vcluster/values.yaml"
            got = yaml.safe_load((root / "repo" / "gitops" / rel).read_text())
            want = yaml.safe_load((REPO / "gitops" / rel).read_text())
            for key in FENCE:
                assert got.get(key) == want.get(key), key
    finally:
        shutil.rmtree(root, ignore_errors=True)


@SETTINGS
@given(
    field=st.sampled_from(["cpu: '224'", "memory: 2113363548Ki", "nvidia.com/gpu: '8'"]),
    value=st.sampled_from(
        [".inf", ".nan", "'\u00b2'", "'1e99999'", "9" * 5000, "[1, 2]", "{a: b}", "-1", "'0x10'", "1.5", "''"]
    ),
)
def test_fuzz_nodes_snapshot_numbers(field: str, value: str) -> None:
    root = fresh()
    try:
        p = root / "repo" / INV / "snapshots/gpu-east/nodes.yaml"
        key = field.split(":")[0]
        p.write_text(p.read_text().replace(field, f"{key}: {value}", 1))
        check(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
