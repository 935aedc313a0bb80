"""The review in the operator's words and for CI: per-tenant changes read from the rendered objects, who
approves under the CODEOWNERS ``init`` writes, the tenants a platform change tells, and the JSON of
``--format json`` against its published schema."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import jsonschema
import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.module_utils.render import tree as render_tree
from ansible_collections.gpufleet.core.plugins.module_utils.review.change import review_change
from ansible_collections.gpufleet.core.plugins.module_utils.review.review_json import render_json
from ansible_collections.gpufleet.core.plugins.module_utils.review.review_markdown import render_markdown
from ansible_collections.gpufleet.core.plugins.module_utils.scaffold import fleet_repo

REPO = Path(__file__).resolve().parents[5]
SCHEMA = json.loads((REPO / "docs/review.schema.json").read_text())
ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.org",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.org",
    "GIT_CONFIG_GLOBAL": "/dev/null",
}


ACCOUNT = "        - {name: vision, fairshare: 1, qos: [normal], default_qos: normal, users: []}\n"
EVAL_ACCOUNT = "        - {name: vision-eval, fairshare: 1, qos: [normal], default_qos: normal, users: []}\n"


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, env=ENV, check=True, capture_output=True)


@pytest.fixture()
def lab(tmp_path: Path) -> Path:
    root = tmp_path / "lab"
    fleet_repo.scaffold(root, fleet_repo.options(root, org="lab", tenants=["vision:slurm", "nlp:slurm"]))
    git(root, "init", "-q", "-b", "main")
    render(root)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    return root


def render(root: Path) -> None:
    result = render_tree.render_inventory(root / "inventories/prod")
    render_tree.write_render(result, root / "gitops")


def review(root: Path, now: datetime | None = None) -> tuple[dict[str, object], str]:
    rv = review_change(root, "main", [root / "inventories/prod"], now=now)
    data = json.loads(render_json(rv))
    jsonschema.validate(data, SCHEMA)
    assert render_json(rv) == render_json(review_change(root, "main", [root / "inventories/prod"], now=now))  # stable
    return data, render_markdown(rv)


def test_a_tenants_change_in_words_approved_by_the_tenant(lab: Path) -> None:
    git(lab, "checkout", "-q", "-b", "vision")
    own = lab / "inventories/prod/group_vars/all/tenants/vision.yml"
    text = own.read_text().replace("login_replicas: 1", "login_replicas: 2").replace(ACCOUNT, ACCOUNT + EVAL_ACCOUNT)
    own.write_text(text.replace("priority: 10", "priority: 20"))
    render(lab)
    git(lab, "add", "-A")
    git(lab, "commit", "-qm", "vision")
    data, md = review(lab)
    assert data["ok"] is True and data["kind"] == "tenant" and data["tenant"] == "vision"
    assert [(c["what"], c["text"]) for c in data["tenant_changes"]] == [  # type: ignore[union-attr]
        ("replicas", "login `main` 1→2"),
        ("budget", "disruption budget `slurm-login` maxUnavailable 0→1"),
        ("qos", "QOS `normal`: Priority 10→20"),
        ("account", "account `vision-eval` added"),
    ]
    assert data["approval"]["covering"] == ["@lab/vision"] and data["notices"] == []  # type: ignore[index]
    assert "#### `vision`\n\n- login `main` 1→2" in md and "One approval from `@lab/vision`" in md


def test_maintenance_tells_the_tenants_and_needs_the_platform_alone(lab: Path) -> None:
    git(lab, "checkout", "-q", "-b", "psu")
    maint = lab / "inventories/prod/group_vars/all/maintenance.yml"
    lock = yaml.safe_load((lab / "inventories/prod/snapshots/gpu-1/pools.lock.yaml").read_text())["nodes"]
    vision = sorted(n for n, p in lock.items() if p == "vision")[:2]
    maint.write_text(
        yaml.safe_dump(
            {"gpufleet_maintenance": [{"name": "psu", "cluster": "gpu-1", "reason": "PSU", "nodes": ",".join(vision)}]}
        )
    )
    render(lab)
    git(lab, "add", "-A")
    git(lab, "commit", "-qm", "psu")
    data, md = review(lab)
    assert data["kind"] == "platform" and data["approval"]["covering"] == ["@lab/platform"]  # type: ignore[index]
    (notice,) = data["notices"]  # type: ignore[misc]
    assert notice["tenant"] == "vision" and notice["handles"] == ["@lab/vision"], notice
    assert "maintenance `psu` (PSU)" in notice["text"] and "once merged and applied" in notice["text"]
    assert "@lab/vision, for your information (no approval needed)" in md


def test_a_hand_written_codeowners_that_would_ask_a_tenant_is_named(lab: Path) -> None:
    co = lab / "CODEOWNERS"
    co.write_text(co.read_text().replace(" @lab/platform\n/inventories", "\n/inventories"))
    git(lab, "commit", "-qam", "tenant trees owned by the tenant alone")
    git(lab, "checkout", "-q", "-b", "grow")
    pools = lab / "inventories/prod/group_vars/all/pools.yml"
    data = yaml.safe_load(pools.read_text())
    next(p for p in data["gpufleet_pools"] if p["name"] == "vision")["size"]["nodes"] += 1
    pools.write_text(yaml.safe_dump(data, sort_keys=False))
    render(lab)
    git(lab, "add", "-A")
    git(lab, "commit", "-qm", "grow")
    data, md = review(lab)
    asks = data["approval"]["asks_tenants"]  # type: ignore[index]
    assert data["approval"]["covering"] == [] and asks, data["approval"]  # type: ignore[index]
    assert all(p.startswith("gitops/clusters/gpu-1/tenants/vision/") for p in asks), asks
    assert "would need a tenant's approval" in md


def test_users_and_accounts_in_words_from_the_rendered_script(lab: Path) -> None:
    """The sacctmgr script of the accounts Job, as the renderer writes it, read back into words."""
    from types import SimpleNamespace

    from ansible_collections.gpufleet.core.plugins.module_utils.review.summary import tenant_changes

    result = render_tree.render_inventory(lab / "inventories/prod")
    path = "clusters/gpu-1/tenants/vision/accounting/accounts.yaml"
    text = result.files[path].decode()
    line = next(x for x in text.splitlines() if "run modify account where name=vision " in x)
    users = line.replace(line.strip(), "resolves ada && run add user ada Account=vision Cluster=vision")
    users += "\n" + users.replace("ada", "bob")
    head_text = text.replace(line, f"{line}\n{users}").replace("Fairshare=1 ", "Fairshare=5 ")
    base = SimpleNamespace(fleet=result.fleet, files=result.files, inputs={})
    head = SimpleNamespace(fleet=result.fleet, files={**result.files, path: head_text.encode()}, inputs={})
    assert [c.text for c in tenant_changes(base, head, "vision")] == [
        "account `vision`: Fairshare 1→5",
        "user `ada` added to account `vision`",
        "user `bob` added to account `vision`",
    ]
    assert [c.text for c in tenant_changes(head, base, "vision")][1:] == [
        "user `ada` removed from account `vision`",
        "user `bob` removed from account `vision`",
    ]


def test_a_slurm_upgrade_tells_each_tenant_its_waves_and_a_new_window_is_said(lab: Path) -> None:
    """A platform change from the 1.1 Slinky charts (Slurm 25.11) to the pinned 1.2 ones, with an update
    window for one tenant: that tenant's window change in words, and each Slurm tenant told which of its
    NodeSets restart in which sync wave; the platform alone approves."""
    gv = lab / "inventories/prod/group_vars/all"
    pins = {c: {"version": "1.1.2"} for c in ("slurm", "slurm_operator", "slurm_operator_crds")}
    (gv / "versions.yml").write_text(yaml.safe_dump({"gpufleet_versions": pins}))
    render(lab)
    git(lab, "add", "-A")
    git(lab, "commit", "-qm", "on the 1.1 charts")
    git(lab, "checkout", "-q", "-b", "upgrade")
    (gv / "versions.yml").unlink()
    window = {"start": "2026-12-06T02:00:00Z", "duration": "2h"}
    (gv / "rollout.yml").write_text(yaml.safe_dump({"gpufleet_rollout": {"tenant_windows": {"vision": window}}}))
    render(lab)
    git(lab, "add", "-A")
    git(lab, "commit", "-qm", "Slurm 26.05, vision in a window")
    data, md = review(lab, now=datetime(2026, 12, 1, tzinfo=UTC))  # the window ahead
    assert data["ok"] and data["kind"] == "platform", data
    assert data["approval"]["covering"] == ["@lab/platform"], data["approval"]  # type: ignore[index]
    changes = [(c["tenant"], c["what"], c["text"]) for c in data["tenant_changes"]]  # type: ignore[union-attr]
    want = ("vision", "window", "update window of the Slurm workers: rolling → 2026-12-06T02:00:00Z for 2h")
    assert want in changes and not [c for c in changes if c[0] == "nlp" and c[1] == "window"], changes
    told = {n["tenant"]: n["text"] for n in data["notices"]}  # type: ignore[union-attr]
    assert sorted(told) == ["nlp", "vision"], told
    for tenant in ("nlp", "vision"):
        assert told[tenant].startswith(f"the Slurm upgrade restarts NodeSets `{tenant}` (wave "), told[tenant]
    assert told["vision"].endswith("down at once, 2026-12-06 02:00 to 2026-12-06 04:00 UTC"), told  # its window
    assert "down at once, rolling" in told["nlp"] and "@lab/nlp, for your information" in md, told


def test_a_pool_that_comes_to_span_another_leaf_is_said(lab: Path) -> None:
    """A scale that gives a tenant's pool a node under another leaf switch: the review says the pool now
    spans more leaf groups, which, and that jobs across them cross the spine."""
    git(lab, "checkout", "-q", "-b", "grow")
    pools = lab / "inventories/prod/group_vars/all/pools.yml"
    data = yaml.safe_load(pools.read_text())
    vision = next(p for p in data["gpufleet_pools"] if p["name"] == "vision")
    vision["size"]["nodes"] += 1  # its leaf has no free node left
    pools.write_text(yaml.safe_dump(data, sort_keys=False))
    render(lab)
    git(lab, "add", "-A")
    git(lab, "commit", "-qm", "grow")
    data, md = review(lab)
    placement = [c["text"] for c in data["tenant_changes"] if c["what"] == "placement"]  # type: ignore[union-attr]
    assert len(placement) == 1 and placement[0].startswith("pool `vision` now spans 2 leaf groups, was 1: "), placement
    assert "cross the spine" in placement[0] and placement[0] in md
