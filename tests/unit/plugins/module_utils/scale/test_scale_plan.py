"""Unit tests of the scale plan (moves, partitions, NodeSets, topology, Markdown) and the inventory edit."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.core.plugins.module_utils.pools.moves import Move, node_moves, pool_counts
from ansible_collections.gpufleet.core.plugins.module_utils.scale.inventory_edit import (
    ScaleError,
    plan_size_edit,
    pools_file,
)
from ansible_collections.gpufleet.core.plugins.module_utils.scale.plan import build_plan, file_changes, render_markdown

REPO = Path(__file__).resolve().parents[5]
SAMPLE = REPO / "inventories" / "sample"


# ------------------------------------------------------------------------------ inventory edit


def _changed_lines(a: str, b: str) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def test_edit_changes_only_the_number(inv: Path) -> None:
    edit = plan_size_edit(inv, "pretrain", 36)
    assert edit.file == inv / "group_vars" / "all" / "pools.yml"
    assert (edit.old_unit, edit.old_size, edit.unit, edit.size) == ("nodes", 32, "nodes", 36)
    assert _changed_lines(edit.old_text, edit.new_text) == ["-      nodes: 32", "+      nodes: 36"]
    # byte level: everything but the two digits is identical, comments and quotes included
    assert edit.old_text.replace("nodes: 32", "nodes: 36", 1) == edit.new_text
    assert edit.line == edit.old_text.splitlines().index("      nodes: 32") + 1


def test_edit_of_a_gpu_sized_pool_and_unit_switch(inv: Path) -> None:
    edit = plan_size_edit(inv, "inference", 104)
    assert _changed_lines(edit.old_text, edit.new_text) == ["-      gpus: 96", "+      gpus: 104"]
    switched = plan_size_edit(inv, "inference", 13, unit="nodes")
    assert _changed_lines(switched.old_text, switched.new_text) == ["-      gpus: 96", "+      nodes: 13"]


def test_edit_keeps_flow_style_comments_and_crlf(inv: Path) -> None:
    f = pools_file(inv)
    text = f.read_text().replace("    size:\n      nodes: 12\n", "    size: {nodes: 12}   # batch size, keep\n")
    text = text.replace("\n", "\r\n")
    f.write_bytes(text.encode())
    edit = plan_size_edit(inv, "research-batch", 14)
    assert edit.new_text == text.replace("{nodes: 12}", "{nodes: 14}")


def test_noop_edit(inv: Path) -> None:
    edit = plan_size_edit(inv, "pretrain", 32)
    assert not edit.changed


@pytest.mark.parametrize(
    ("pool", "size", "unit", "message"),
    [
        ("nope", 3, None, r"unknown pool 'nope' \(known: inference, pretrain, research-batch"),
        ("pretrain", -1, None, "size must be 0 or more, got -1"),
        ("pretrain", "7", None, "size must be a whole number"),
        ("pretrain", True, None, "size must be a whole number"),
        ("pretrain", 3, "cpus", "size_unit must be one of nodes, gpus"),
        ("spare", 3, None, r"pools.yml:\d+: gpufleet_pools\[5\]: pool 'spare' has no size"),
    ],
)
def test_bad_requests_are_clear_and_change_nothing(inv: Path, pool, size, unit, message) -> None:
    before = {p: p.read_bytes() for p in inv.rglob("*") if p.is_file()}
    with pytest.raises(ScaleError, match=message):
        plan_size_edit(inv, pool, size, unit)
    assert before == {p: p.read_bytes() for p in inv.rglob("*") if p.is_file()}


def test_templated_size_is_refused(inv: Path) -> None:
    f = pools_file(inv)
    f.write_text(f.read_text().replace("nodes: 32", 'nodes: "{{ pretrain_nodes }}"'))
    with pytest.raises(ScaleError, match=r"pools.yml:\d+: gpufleet_pools\[1\].size.nodes: not a literal whole number"):
        plan_size_edit(inv, "pretrain", 40)


@settings(max_examples=60, deadline=None)
@given(size=st.integers(min_value=0, max_value=10**6), pool=st.sampled_from(["system", "pretrain", "inference"]))
def test_any_size_edit_is_one_line_and_parses_back(size: int, pool: str) -> None:
    edit = plan_size_edit(SAMPLE, pool, size)
    changed = _changed_lines(edit.old_text, edit.new_text)
    assert len(changed) in (0, 2)
    doc = yaml.safe_load(edit.new_text)
    [entry] = [p for p in doc["gpufleet_pools"] if p["name"] == pool]
    assert entry["size"] == {edit.unit: size}
    old = yaml.safe_load(edit.old_text)
    assert [p for p in old["gpufleet_pools"] if p["name"] != pool] == [
        p for p in doc["gpufleet_pools"] if p["name"] != pool
    ]


# ------------------------------------------------------------------------------------- moves


def test_moves_and_counts() -> None:
    old = {"n1": "spare", "n2": "spare", "n3": "pretrain", "n4": "system"}
    new = {"n1": "pretrain", "n2": "spare", "n3": "pretrain", "n4": "system", "n5": "spare"}
    assert node_moves(old, new) == [Move("n1", "spare", "pretrain"), Move("n5", None, "spare")]
    assert pool_counts(old, new) == {"pretrain": (1, 2)}


# ------------------------------------------------------------------------- objects in files

NODESET = """\
apiVersion: slinky.slurm.net/v1beta1
kind: NodeSet
metadata:
  name: pretrain
  namespace: slurm
spec:
  replicas: {n}
  template:
    spec:
      nodeSelector:
        node-restriction.kubernetes.io/gpufleet-pool: pretrain
"""

VALUES = """\
nodesets:
  pretrain:
    replicas: {n}
    partition:
      enabled: false
partitions:
  pretrain:
    enabled: true
    nodesets: [pretrain]
    configMap:
      MaxTime: {t}
  debug:
    enabled: true
    nodesets: [debug]
configFiles:
  topology.conf: |
    SwitchName=leaf1 Nodes={nodes}
"""

APP = """\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {{name: slurm-research}}
spec:
  source:
    helm:
      values: |
        nodesets:
          batch:
            replicas: {n}
"""

SLURM_CONF = """\
kind: ConfigMap
apiVersion: v1
metadata: {{name: slurm}}
data:
  slurm.conf: |
    NodeName=n[1-4] CPUs=8
    PartitionName=batch Nodes={nodes} Default=YES MaxTime=INFINITE
    PartitionName=debug Nodes=n4 MaxTime=02:00:00
"""


def _b(text: str) -> bytes:
    return text.encode()


def test_nodeset_object_change() -> None:
    parts, nsets, topo = file_changes("a.yaml", _b(NODESET.format(n=32)), _b(NODESET.format(n=36)))
    assert parts == [] and topo == []
    [c] = nsets
    assert (c.name, c.change, c.fields) == ("slurm/pretrain", "changed", (("replicas", "32", "36"),))


def test_chart_values_nodesets_partitions_and_topology_key() -> None:
    old = _b(VALUES.format(n=32, t="7-00:00:00", nodes="n[1-32]"))
    new = _b(VALUES.format(n=36, t="7-00:00:00", nodes="n[1-36]"))
    parts, nsets, topo = file_changes("gitops/x/values.yaml", old, new)
    assert parts == []
    assert [(c.name, c.fields) for c in nsets] == [("pretrain", (("replicas", "32", "36"),))]
    assert [(c.name, c.change) for c in topo] == [("topology.conf", "changed")]
    parts, nsets, topo = file_changes("v.yaml", old, _b(VALUES.format(n=32, t="1-00:00:00", nodes="n[1-32]")))
    assert [(c.name, c.fields) for c in parts] == [("pretrain", (("configMap.MaxTime", "7-00:00:00", "1-00:00:00"),))]


def test_values_embedded_in_an_application_string() -> None:
    _parts, nsets, _topo = file_changes("app.yaml", _b(APP.format(n=12)), _b(APP.format(n=10)))
    assert [(c.name, c.fields) for c in nsets] == [("batch", (("replicas", "12", "10"),))]


def test_slurm_conf_partition_lines() -> None:
    parts, _nsets, _topo = file_changes(
        "cm.yaml", _b(SLURM_CONF.format(nodes="n[1-3]")), _b(SLURM_CONF.format(nodes="n[1-2]"))
    )
    [c] = parts
    assert c.name == "batch" and c.fields == (("Nodes", "n[1-3]", "n[1-2]"),)


def test_topology_file_added_changed_removed() -> None:
    parts, nsets, topo = file_changes(
        "gitops/c/slurm/topology.conf", b"SwitchName=a Nodes=n1\n", b"SwitchName=a Nodes=n2\n"
    )
    assert parts == nsets == []
    assert [(c.name, c.change, c.fields) for c in topo] == [("topology.conf", "changed", (("lines", "-1", "+1"),))]
    parts, nsets, topo = file_changes("gitops/c/slurm/topology.yaml", None, b"- topology: x\n")
    assert parts == nsets == []
    assert [c.change for c in topo] == ["added"]
    _parts, _nsets, topo = file_changes("gitops/c/slurm/topology.conf", b"x\n", None)
    assert [c.change for c in topo] == ["removed"]


def test_identical_or_binary_files_give_nothing() -> None:
    assert file_changes("a.yaml", _b(NODESET.format(n=1)), _b(NODESET.format(n=1))) == ([], [], [])
    assert file_changes("blob.bin", b"\xff\xfe\x00", b"\xff\xfe\x01") == ([], [], [])


# ------------------------------------------------------------------------------- plan + markdown


def _plan():
    old = {f"n{i:02d}": "spare" for i in range(1, 9)} | {"n09": "pretrain", "n10": "pretrain"}
    new = dict(old) | {"n01": "pretrain", "n02": "pretrain"}
    before = {
        "gitops/gpu-east/tenants/llm/nodeset.yaml": _b(NODESET.format(n=2)),
        "gitops/gpu-east/slurm/topology.conf": b"SwitchName=a Nodes=n[09-10]\n",
        "gitops/gpu-east/old.yaml": b"a: 1\n",
    }
    after = {
        "gitops/gpu-east/tenants/llm/nodeset.yaml": _b(NODESET.format(n=4)),
        "gitops/gpu-east/slurm/topology.conf": b"SwitchName=a Nodes=n[01-02,09-10]\n",
        "gitops/gpu-east/new|odd.yaml": b"b: 2\n",
    }
    return build_plan(
        pool="pretrain",
        cluster="gpu-east",
        old_unit="nodes",
        old_size=2,
        unit="nodes",
        size=4,
        old_assignment=old,
        new_assignment=new,
        files_before=before,
        files_after=after,
        inventory_file="inventories/sample/group_vars/all/pools.yml",
        inventory_line=14,
    )


def test_plan_data() -> None:
    plan = _plan()
    d = plan.as_dict()
    assert d["moves"] == [
        {"node": "n01", "from": "spare", "to": "pretrain"},
        {"node": "n02", "from": "spare", "to": "pretrain"},
    ]
    assert d["required_moves"] == 2 == len(plan.moves)
    assert d["pool_nodes"] == {"pretrain": {"before": 2, "after": 4}, "spare": {"before": 8, "after": 6}}
    assert d["files"] == {
        "added": ["gitops/gpu-east/new|odd.yaml"],
        "changed": ["gitops/gpu-east/slurm/topology.conf", "gitops/gpu-east/tenants/llm/nodeset.yaml"],
        "removed": ["gitops/gpu-east/old.yaml"],
    }
    assert [n["name"] for n in d["nodesets"]] == ["slurm/pretrain"]
    assert [t["file"] for t in d["topology"]] == ["gitops/gpu-east/slurm/topology.conf"]
    assert plan.summary() == "scale pretrain: 2 nodes → 4 nodes; 2 nodes move (2 spare → pretrain); 4 files change"


def test_markdown_tables_are_deterministic_and_escaped() -> None:
    md = render_markdown(_plan())
    assert md == render_markdown(_plan())
    assert md.startswith("## Scale pool `pretrain` (gpu-east): 2 nodes → 4 nodes\n")
    assert "| node | from pool | to pool |\n| --- | --- | --- |\n| `n01` | `spare` | `pretrain` |\n" in md
    assert "| `pretrain` | 2 | 4 | +2 |" in md and "| `spare` | 8 | 6 | -2 |" in md
    assert "| `slurm/pretrain` | `gitops/gpu-east/tenants/llm/nodeset.yaml` | replicas: 2 → 4 |" in md
    assert "| `gitops/gpu-east/new\\|odd.yaml` | added |" in md
    assert "### Slurm partitions (0)\n\nNo change." in md
    assert "`inventories/sample/group_vars/all/pools.yml:14`" in md
    # every table row has as many cells as its header
    for block in md.split("\n\n"):
        rows = [r for r in block.splitlines() if r.startswith("| ")]
        if rows:
            widths = {len(r.replace("\\|", "").split(" | ")) for r in rows}
            assert len(widths) == 1, block


def _nodes_plan(pool: str, old: dict, new: dict, old_size: int, size: int, **more):
    """The plan of resizing ``pool`` (in nodes) on cluster ``c`` from assignment ``old`` to ``new``; no files."""
    return build_plan(
        pool=pool,
        cluster="c",
        old_unit="nodes",
        old_size=old_size,
        unit="nodes",
        size=size,
        old_assignment=old,
        new_assignment=new,
        files_before={},
        files_after={},
        **more,
    )


def test_markdown_caps_long_move_lists() -> None:
    old = {f"n{i:04d}": "spare" for i in range(500)}
    new = {n: "pretrain" for n in old}
    plan = _nodes_plan("pretrain", old, new, 0, 500)
    md = render_markdown(plan, max_moves=10)
    assert "… and 490 more" in md and md.count("| `n0") == 10


def test_slurm_membership_is_listed_as_partition_and_nodeset_change() -> None:
    old = {"n01": "batch", "n02": "batch", "n03": "spare", "n04": "spare", "n05": "debug"}
    new = old | {"n03": "batch", "n04": "batch"}
    plan = _nodes_plan(
        "batch",
        old,
        new,
        2,
        4,
        slurm_pools={"batch": ("research/batch", "research/batch"), "debug": ("research/debug", "research/debug")},
        lock_file="inv/snapshots/c/pools.lock.yaml",
        pool_files={"batch": "gitops/clusters/c/tenants/research/slurm/values.yaml"},
    )
    values = "gitops/clusters/c/tenants/research/slurm/values.yaml"
    assert [(c.name, c.file, c.summary()) for c in plan.partitions] == [
        ("research/batch", values, "nodes: 2 → 4; in: n[03-04]")
    ]
    assert [c.name for c in plan.nodesets] == ["research/batch"]  # debug did not change
    assert f"| `research/batch` | `{values}` | nodes: 2 → 4; in: n[03-04] |" in plan.markdown()
