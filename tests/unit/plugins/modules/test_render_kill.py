"""Kill the CLI with SIGKILL at random points of a render: the tree is always the old one or the new one.

The old tree A is the render of inventory v1; v2 changes every Application (GitOps revision) and
drops a tenant (so files are changed and removed). Renders of v2 over A are killed at random times
spread over the whole run (start-up, parsing, rendering, building the new tree, swapping); after
each kill the tree must equal A or B byte for byte, and a following complete render must give B.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from render_fixtures import REPO, edit_vars, make_big_inventory, tree_state

CLI = [sys.executable, str(REPO / "scripts" / "gpufleet.py"), "render"]
KILLS = 10


def render(inv: Path, out: Path) -> None:
    p = subprocess.run([*CLI, "--inventory", str(inv), "--out", str(out)], capture_output=True, text=True, check=False)
    assert p.returncode == 0, p.stderr


def to_v2(inv: Path) -> None:
    edit_vars(inv, "fleet.yml", lambda d: d["gpufleet_fleet"]["gitops"].update(revision="release-2"))

    def drop_last(d: dict) -> None:
        d["gpufleet_tenants"] = d["gpufleet_tenants"][:-1]

    def drop_pools(d: dict) -> None:
        d["gpufleet_pools"] = [p for p in d["gpufleet_pools"] if not p["name"].startswith("team029")]

    edit_vars(inv, "tenants.yml", drop_last)
    edit_vars(inv, "pools.yml", drop_pools)


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("kill")
    v1 = make_big_inventory(root / "v1", nodes=512, tenants=30, fabric=False)
    v2 = make_big_inventory(root / "v2", nodes=512, tenants=30, fabric=False)
    to_v2(v2)
    out = root / "gitops"
    render(v2, out)
    b = tree_state(out)
    render(v1, out)
    a = tree_state(out)
    assert a != b
    return v1, v2, out, a, b


def test_sigkill_leaves_old_or_new_tree(trees) -> None:
    v1, v2, out, a, b = trees
    t0 = time.monotonic()
    render(v2, out)
    full = time.monotonic() - t0
    assert tree_state(out) == b
    render(v1, out)
    rng = random.Random(20261123)
    outcomes = {"old": 0, "new": 0, "mid-write": 0}
    for i in range(KILLS):
        # spread over the run, denser towards the end where the new tree is built and swapped
        delay = full * (i / KILLS if i % 2 else 0.5 + 0.6 * rng.random())
        proc = subprocess.Popen(
            [*CLI, "--inventory", str(v2), "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if (out.parent / ".gitops.gpufleet-new").exists():
            outcomes["mid-write"] += 1  # killed while the new tree was being built or swapped
        state = tree_state(out)
        assert state in (a, b), f"kill {i} after {delay:.3f}s left a mixed tree"
        if state == b:
            outcomes["new"] += 1
            render(v1, out)  # back to the old tree for the next kill
        else:
            outcomes["old"] += 1
    render(v2, out)
    assert tree_state(out) == b
    leftovers = [p.name for p in out.parent.iterdir() if p.name.startswith(".gitops.gpufleet-")]
    assert leftovers == []
    print(f"full render {full:.2f}s; outcomes of {KILLS} kills: {outcomes}")
    assert outcomes["old"] > 0
