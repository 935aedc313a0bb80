"""`gpufleet.py review --base REF` on real Git repositories made by `gpufleet.py init`.

A tenant's pull request that edits only its own file passes; one that also changes another tenant's
or a platform file, directly or through a rendered effect, fails and names it; a platform change that
shrinks a Slurm pool passes and names the node moves, the partition and the nodes to drain."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, str(REPO / "scripts" / "gpufleet.py")]
INV = "inventories/prod"
GV = f"{INV}/group_vars/all"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.org",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.org",
    "GIT_CONFIG_GLOBAL": "/dev/null",
}


def run(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(
        list(args), cwd=cwd, capture_output=True, text=True, env={**os.environ, **GIT_ENV}, timeout=300, check=False
    )
    if check and p.returncode != 0:
        raise AssertionError(f"{args} failed ({p.returncode}): {p.stdout}\n{p.stderr}")
    return p


@pytest.fixture(scope="module")
def base_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fleet") / "fleet"
    run(
        REPO,
        *CLI,
        "init",
        str(root),
        "--org",
        "example-org",
        "--tenant",
        "team-a:slurm",
        "--tenant",
        "team-b:kubernetes",
    )
    run(root, "git", "init", "-q", "-b", "main")
    run(root, *CLI, "render", "--inventory", INV)
    run(root, "git", "add", "-A")
    run(root, "git", "commit", "-qm", "fleet")
    return root


@pytest.fixture
def repo(base_repo: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "fleet"
    shutil.copytree(base_repo, dst, symlinks=True)
    run(dst, "git", "checkout", "-qb", "pr")
    return dst


def append(path: str, text: str) -> Callable[[Path], None]:
    def go(root: Path) -> None:
        with (root / path).open("a", encoding="utf-8") as f:
            f.write(text)

    return go


def replace(path: str, old: str, new: str) -> Callable[[Path], None]:
    def go(root: Path) -> None:
        f = root / path
        text = f.read_text(encoding="utf-8")
        assert old in text, (path, old)
        f.write_text(text.replace(old, new), encoding="utf-8")

    return go


def pull_request(
    repo: Path, *edits: Callable[[Path], None], render: bool = True, now: str | None = None
) -> tuple[int, str, str]:
    """Apply the edits, re-render, commit on branch `pr`, review against main: (exit code, Markdown, stderr)."""
    for edit in edits:
        edit(repo)
    if render:
        run(repo, *CLI, "render", "--inventory", INV)
    run(repo, "git", "add", "-A")
    run(repo, "git", "commit", "-qm", "change")
    at = ["--now", now] if now else []
    out = repo.parent / "review.md"  # outside the checkout, as CI writes it
    p = run(repo, *CLI, "review", "--inventory", INV, "--base", "main", "--markdown", str(out), *at, check=False)
    assert p.returncode in (0, 1), p.stderr
    assert out.read_text(encoding="utf-8") == p.stdout
    return p.returncode, p.stdout, p.stderr


TEAM_A = f"{GV}/tenants/team-a.yml"
TEAM_B = f"{GV}/tenants/team-b.yml"


def test_own_file_only_passes(repo: Path) -> None:
    rc, md, _ = pull_request(repo, replace(TEAM_A, "login_replicas: 1", "login_replicas: 2"))
    assert rc == 0, md
    assert md.startswith("## gpufleet review: ✅ passes") and "change: tenant `team-a` only" in md
    assert f"| `{TEAM_A}` | tenant team-a | changed |" in md
    assert "| `gitops/clusters/gpu-1/tenants/team-a/slurm/values.yaml` | tenant team-a | changed |" in md
    assert "No node changes pool." in md


def test_own_file_with_a_report_change_passes(repo: Path) -> None:
    # the tenant's description is in its own REPORT.md, in its rendered tree; the cluster's is untouched
    rc, md, _ = pull_request(repo, replace(TEAM_A, "description: Slurm batch jobs", "description: Big Slurm jobs"))
    assert rc == 0, md
    assert "| `gitops/clusters/gpu-1/tenants/team-a/REPORT.md` | tenant team-a | changed |" in md
    assert "`gitops/clusters/gpu-1/REPORT.md`" not in md and "`gitops/clusters/gpu-1/POOLS.md`" not in md


def test_touching_another_tenants_file_fails_and_names_it(repo: Path) -> None:
    rc, md, _ = pull_request(
        repo,
        replace(TEAM_A, "login_replicas: 1", "login_replicas: 2"),
        replace(TEAM_B, "namespaces: [jobs]", "namespaces: [jobs, x]"),
    )
    assert rc == 1, md
    assert "❌ fails" in md and "a tenant's file changes in a pull request of its own" in md
    assert f"`{TEAM_B}` (tenant team-b)" in md and f"`{TEAM_A}` (tenant team-a)" in md


def test_touching_a_platform_file_fails_and_names_it(repo: Path) -> None:
    rc, md, _ = pull_request(
        repo,
        replace(TEAM_A, "login_replicas: 1", "login_replicas: 2"),
        replace(f"{GV}/clusters.yml", "plugin: tree", "plugin: block"),
    )
    assert rc == 1, md
    assert f"`{GV}/clusters.yml` (platform)" in md and "change: mixed: platform, tenant `team-a`" in md


def test_turning_monitoring_off_stays_in_the_tenants_scope(repo: Path) -> None:
    # the GPU metrics' tenant label comes from the node's tenant label: no shared platform file names
    # the tenant, so turning its monitoring off changes the tenant's own rendered files only
    rc, md, _ = pull_request(repo, append(TEAM_B, "  monitoring: {enabled: false}\n"))
    assert rc == 0, md
    assert "### Shared platform changes (0)" in md and "platform/gpu-operator" not in md


def test_a_slurm_tenant_turning_its_monitoring_off_changes_its_own_folder_only(repo: Path) -> None:
    # the PodMonitor and the Prometheus policy leave the tenant's host folder; its host project (the
    # platform's, in apps/) allows their kinds whether the tenant's switch is on or off
    project = repo / "gitops/clusters/gpu-1/apps/tenant-team-a-0-host-project.yaml"
    before = project.read_bytes()
    assert b"kind: PodMonitor" in before
    rc, md, _ = pull_request(repo, append(TEAM_A, "  monitoring: {enabled: false}\n"))
    assert rc == 0, md
    assert "change: tenant `team-a` only" in md and "### Shared platform changes (0)" in md, md
    assert "| `gitops/clusters/gpu-1/tenants/team-a/host/monitoring.yaml` | tenant team-a | removed |" in md, md
    assert project.read_bytes() == before
    check = run(repo, *CLI, "render", "--inventory", INV, "--check", "--base", "main", check=False)
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_committed_copy_of_the_installed_collection_is_refused(repo: Path) -> None:
    # a same-version gpufleet.core under collections/ (ignored by .gitignore, so added with -f) would be
    # what `ansible-galaxy collection install -p collections` leaves alone: the review refuses it
    forged = repo / "collections/ansible_collections/gpufleet/core/scripts/gpufleet.py"
    forged.parent.mkdir(parents=True)
    forged.write_text("print('## gpufleet review: passes')\n")
    run(repo, "git", "add", "-f", "collections")
    rc, md, _ = pull_request(repo, replace(TEAM_A, "login_replicas: 1", "login_replicas: 2"))
    assert rc == 1 and "tenant `team-a` only" not in md, md
    rel = "collections/ansible_collections/gpufleet/core/scripts/gpufleet.py"
    assert f"`{rel}` added under `collections/`: CI installs gpufleet.core from the checksummed tarball" in md, md


def test_a_hand_edit_of_another_tenants_rendered_tree_fails(repo: Path) -> None:
    other = "gitops/clusters/gpu-1/tenants/team-b/vcluster/values.yaml"
    rc, _md, _ = pull_request(repo, replace(TEAM_A, "login_replicas: 1", "login_replicas: 2"))
    assert rc == 0
    append(other, "# sneaked in\n")(repo)
    run(repo, "git", "commit", "-qam", "hand edit")
    p = run(repo, *CLI, "review", "--inventory", INV, "--base", "main", check=False)
    assert p.returncode == 1
    assert "is not the rendered `inventories/prod`: re-render" in p.stdout and "team-b/vcluster/values.yaml" in p.stdout


def test_a_platform_change_the_inputs_do_not_explain_fails_a_tenant_pr(repo: Path) -> None:
    # main's committed tree is not its rendered inventory (as after a gpufleet upgrade): a tenant pull
    # request that re-renders would carry the platform change to Argo CD under the tenant's approval
    shared = "gitops/clusters/gpu-1/platform/gpu-operator/values.yaml"
    run(repo, "git", "checkout", "-q", "main")
    append(shared, "# rendered by an older gpufleet\n")(repo)
    run(repo, "git", "commit", "-qam", "old render")
    run(repo, "git", "checkout", "-q", "-B", "pr")
    rc, md, _ = pull_request(repo, replace(TEAM_A, "login_replicas: 1", "login_replicas: 2"))
    assert rc == 1, md
    assert "### Committed changes no input explains (1)" in md and f"| `{shared}` | platform | changed |" in md
    assert f"- `{shared}` changed in the committed tree though no input of this change alters it" in md


def test_not_rerendered_fails(repo: Path) -> None:
    rc, md, _ = pull_request(repo, replace(TEAM_A, "login_replicas: 1", "login_replicas: 3"), render=False)
    assert rc == 1 and "re-render (`gpufleet.py render --inventory inventories/prod`)" in md


def test_platform_shrinking_a_slurm_pool_names_moves_partition_and_drain(repo: Path) -> None:
    pools = f"{GV}/pools.yml"
    text = (repo / pools).read_text()
    start = text.index("  - name: team-a")
    cut = text.index("nodes: 6", start)
    (repo / pools).write_text(text[:cut] + "nodes: 4" + text[cut + len("nodes: 6") :])
    rc, md, _ = pull_request(repo)
    assert rc == 0, md
    assert "change: platform." in md
    assert "### Node moves (2)" in md and "| `gpu-1` | `team-a` | `spare` | platform, tenant team-a |" in md
    partition = "| `team-a/team-a` | `gitops/clusters/gpu-1/tenants/team-a/slurm/values.yaml` | nodes: 6 → 4; out: gpu["
    assert "### Slurm partitions (1)" in md and partition in md.split("### Slurm partitions")[1]
    drain = md.split("### Drain before merging")[1]
    assert "Slurm pool `team-a` of tenant `team-a` (partition `team-a`) loses 2 node(s)" in drain
    assert "scontrol update NodeName=gpu[" in drain and 'State=DRAIN Reason="gpufleet: leaving pool team-a"' in drain
    assert "| `inventories/prod/group_vars/all/pools.yml` | platform | changed |" in md
    picture = md.split("#### The fabric of `gpu-1` after the change")[1].split("```")[1]
    assert '<br/>spare<br/>moved from team-a"]:::spare' in picture and "moved" in picture.split(":::spare")[1]


SECRET = "AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Z2hzX3NlY3JldA=="  # what actions/checkout persists


def _persisted_token(repo: Path) -> None:
    with (repo / ".git" / "config").open("a", encoding="utf-8") as f:
        f.write(f'[http "https://github.com/"]\n\textraheader = {SECRET}\n')


def test_the_reviews_output_inside_the_checkout_is_refused(repo: Path) -> None:
    for where in ("review.md", "sub/../review.md", str(repo / "gitops" / "review.md")):
        p = run(repo, *CLI, "review", "--inventory", INV, "--base", "main", "--markdown", where, check=False)
        assert p.returncode == 2 and "inside the Git work tree" in p.stderr and "RUNNER_TEMP" in p.stderr, p.stderr
        assert not (repo / "review.md").exists() and not (repo / "gitops" / "review.md").exists()


def test_the_review_never_writes_through_a_link(repo: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    (tmp_path / "out.md").symlink_to(victim)
    args = ("review", "--inventory", INV, "--base", "main", "--markdown", str(tmp_path / "out.md"))
    p = run(repo, *CLI, *args, check=False)
    assert p.returncode == 2 and "never writes through links" in p.stderr, p.stderr
    assert victim.read_text() == "keep\n"


def test_a_committed_review_file_is_part_of_the_change(repo: Path) -> None:
    rc, md, _ = pull_request(
        repo, replace(TEAM_A, "login_replicas: 1", "login_replicas: 2"), append("review.md", "x\n")
    )
    assert rc == 1 and "tenant `team-a` only" not in md, md
    assert approval_rows(md)["review.md"][:2] == ["added", "platform"]


def test_a_committed_link_is_refused_and_never_read(repo: Path) -> None:
    _persisted_token(repo)
    (repo / "review.md").symlink_to(".git/config")
    (repo / "inventories/prod/group_vars/all/tenants/team-a.yml").unlink()
    (repo / "inventories/prod/group_vars/all/tenants/team-a.yml").symlink_to("../../../../../.git/config")
    rc, md, err = pull_request(repo, render=False)
    assert rc == 1 and "❌ fails" in md, md + err
    assert "`review.md` is a symbolic link in Git" in md
    assert "`inventories/prod/group_vars/all/tenants/team-a.yml` is a symbolic link in Git" in md
    assert approval_rows(md)["review.md"][0] == "added"
    assert "extraheader" not in md + err and SECRET not in md + err


def test_a_reshuffle_of_the_pool_lock_fails(repo: Path) -> None:
    # swap two nodes between the tenants' pools in the lock: the renderer keeps the locked assignment,
    # the tree is current, but nodes move although no pool size changed
    lock = repo / INV / "snapshots/gpu-1/pools.lock.yaml"
    text = lock.read_text()
    a, b = "gpu003: team-a", "gpu009: team-b"
    assert a in text and b in text
    lock.write_text(text.replace(a, "gpu003: team-b").replace(b, "gpu009: team-a"))
    rc, md, _ = pull_request(repo)
    assert rc == 1, md
    assert "cluster `gpu-1`: 2 node(s) change pool but the pool size changes need only 0: a reshuffle" in md
    assert "| `gpu003` | `gpu-1` | `team-a` | `team-b` |" in md


def test_bad_base_exits_2_without_traceback(repo: Path) -> None:
    p = run(repo, *CLI, "review", "--inventory", INV, "--base", "no-such-branch", check=False)
    assert p.returncode == 2 and "no-such-branch" in p.stderr and "Traceback" not in p.stderr


def test_allow_node_moves_comes_with_a_reminder_to_remove_it(repo: Path) -> None:
    entry = "    allow_node_moves:\n      - {nodes: [gpu003], reason: hand a node to team-b}\n    topology:\n"
    rc, md, _ = pull_request(repo, replace(f"{GV}/clusters.yml", "    topology:\n", entry))
    assert rc == 0, md
    assert "Note: cluster `gpu-1` has `allow_node_moves` (gpu003): once the move is merged, remove it" in md


def test_going_back_past_the_slurm_conversion_fails_the_review(repo: Path) -> None:
    pins = "".join(f"  {c}: {{version: 1.1.2}}\n" for c in ("slurm_operator_crds", "slurm_operator", "slurm"))
    rc, md, _ = pull_request(repo, append(f"{GV}/versions.yml", f"gpufleet_versions:\n{pins}"))
    assert rc == 1, md
    assert "REFUSE [slurm-downgrade] Slurm 26.05 -> 25.11" in md and "cannot undo that conversion" in md
    assert "Note: `inventories/prod`: FLAG [chart-downgrade] chart slurm 1.2.1 -> 1.1.2" in md


def approval_rows(md: str) -> dict[str, list[str]]:
    """file -> [change, owner, CODEOWNERS rule, must approve] from the review's approval table."""
    section = md.split("### Who must approve")[1].split("\n### ")[0]
    rows = [r.strip("|").split(" | ") for r in section.splitlines() if r.startswith("| `")]
    return {r[0].strip().strip("`"): [c.strip() for c in r[1:]] for r in rows}


def test_every_committed_file_is_listed_with_its_codeowners_rule(repo: Path) -> None:
    # a tenant's change renders files in its own folder only, its manifest included: the tenant's
    # CODEOWNERS entry decides every one of them, the platform's root manifest is untouched
    rc, md, _ = pull_request(repo, replace(TEAM_A, "login_replicas: 1", "login_replicas: 2"))
    assert rc == 0, md
    rows = approval_rows(md)
    committed = run(repo, "git", "diff", "--name-only", "main", "HEAD").stdout.split()
    assert sorted(rows) == sorted(committed) and "review.md" not in rows
    # the tenant tree's line lists the platform beside the tenant: either approves
    tenant_rule = [
        "tenant team-a",
        "`/gitops/clusters/gpu-1/tenants/team-a/` (line 13)",
        "@example-org/team-a or @example-org/platform",
    ]
    assert rows["gitops/clusters/gpu-1/tenants/team-a/.gpufleet-manifest"] == ["changed", *tenant_rule]
    assert rows["gitops/clusters/gpu-1/tenants/team-a/slurm/values.yaml"] == ["changed", *tenant_rule]
    assert rows[TEAM_A] == ["changed", "tenant team-a", f"`/{TEAM_A}` (line 12)", "@example-org/team-a"]
    assert "gitops/.gpufleet-manifest" not in rows
    assert "One approval from `@example-org/team-a` covers every committed file" in md


def test_a_platform_change_lists_locks_and_the_platform_rule(repo: Path) -> None:
    pools = f"{GV}/pools.yml"
    text = (repo / pools).read_text()
    cut = text.index("nodes: 6", text.index("  - name: team-a"))
    (repo / pools).write_text(text[:cut] + "nodes: 4" + text[cut + len("nodes: 6") :])
    rc, md, _ = pull_request(repo)
    assert rc == 0, md
    rows = approval_rows(md)
    lock = f"{INV}/snapshots/gpu-1/pools.lock.yaml"
    assert rows[lock] == ["changed", "platform", "`*` (line 5)", "@example-org/platform"]
    assert rows["gitops/clusters/gpu-1/POOLS.md"][1:] == ["platform", "`*` (line 5)", "@example-org/platform"]
    # it re-renders team-a's tree, whose line lists the platform too: the platform alone approves it all
    assert rows["gitops/clusters/gpu-1/tenants/team-a/slurm/values.yaml"][1] == "tenant team-a"
    assert "One approval from `@example-org/platform` covers every committed file" in md


def test_the_base_codeowners_decides_not_the_pull_requests(repo: Path) -> None:
    # a pull request that gives itself the platform's files still needs the base's approvers
    rc, md, _ = pull_request(
        repo,
        append("CODEOWNERS", "*  @example-org/team-a\n"),
        replace(TEAM_A, "login_replicas: 1", "login_replicas: 2"),
    )
    rows = approval_rows(md)
    assert rows["CODEOWNERS"] == ["changed", "platform", "`/CODEOWNERS` (line 17)", "@example-org/platform"]
    assert rc == 1


@pytest.mark.parametrize(
    "extra",
    [
        "gitops/clusters/gpu-1/tenants/team-a/host/zz-admin.yaml",
        "gitops/clusters/gpu-1/tenants/team-a/apps/9-extra.yaml",
        "gitops/clusters/gpu-1/tenants/team-b/host/zz-admin.yaml",
        "gitops/clusters/gpu-1/apps/zz-extra.yaml",
    ],
)
def test_an_unrendered_file_in_a_rendered_folder_is_refused(repo: Path, extra: str) -> None:
    admin = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: zz}\n"
    (repo / extra).write_text(admin)
    run(repo, "git", "add", "-A")
    run(repo, "git", "commit", "-qm", "extra")
    for args in (
        ("review", "--inventory", INV, "--base", "main"),
        ("render", "--inventory", INV, "--check"),
        ("render", "--inventory", INV, "--check", "--base", "main"),
        ("render", "--inventory", INV),
    ):
        p = run(repo, *CLI, *args, check=False)
        assert p.returncode == 2 and extra in p.stderr and "Traceback" not in p.stderr, (args, p.stdout, p.stderr)
        assert "not written by the render" in p.stderr
    assert (repo / extra).read_text() == admin
    assert run(repo, "git", "status", "--porcelain").stdout == ""  # nothing written anywhere


def test_removed_and_changed_rendered_files_are_listed_and_fail(repo: Path) -> None:
    gone = "gitops/clusters/gpu-1/tenants/team-a/vcluster/values.yaml"
    (repo / gone).unlink()
    append("gitops/clusters/gpu-1/tenants/team-a/slurm/values.yaml", "# hand edit\n")(repo)
    rc, md, _ = pull_request(repo, render=False)
    assert rc == 1 and "is not the rendered `inventories/prod`" in md
    rows = approval_rows(md)
    assert rows[gone][:2] == ["removed", "tenant team-a"]
    assert rows["gitops/clusters/gpu-1/tenants/team-a/slurm/values.yaml"][:2] == ["changed", "tenant team-a"]


def test_a_driver_chart_bump_shows_the_upgrade_plan(repo: Path) -> None:
    rc, md, _ = pull_request(
        repo, append(f"{GV}/versions.yml", "gpufleet_versions:\n  gpu_operator: {version: v26.8.0}\n")
    )
    assert rc == 0, md
    plan = md[md.index("### Upgrade plan") :]
    assert "GPU Operator: gpu-operator v26.7.0 -> v26.8.0." in plan
    assert "its slurmd pod (`app.kubernetes.io/name=slurmd`) is evicted once its jobs ended" in plan
    assert "| tenant | nodes | GPUs |" in plan


def test_a_change_behind_an_ended_update_window_fails(repo: Path) -> None:
    """Setting a window that has already ended (judged at --now) changes team-a's NodeSets to a schedule that
    never comes: the review refuses it and names the file, key and what to do."""
    window = "gpufleet_rollout:\n  window: {start: '2026-12-05T02:00:00Z', duration: 4h}\n"
    rc, md, _ = pull_request(repo, append(f"{GV}/rollout.yml", window), now="2026-12-07T00:00:00Z")
    assert rc == 1, md
    assert f"- {GV}/rollout.yml:2: gpufleet_rollout.window: the update window 2026-12-05 02:00 to 2026-12-05" in md
    assert "this change alters the slurm values of team-a" in md



def test_a_window_set_after_its_start_fails(repo: Path) -> None:
    """Setting a window that is already open (judged at --now) reaches team-a's NodeSets after its start, when
    the Slinky operator makes no reservation for it (and Slurm refuses FORCE_START on a one-off one): the
    review refuses it and names the file, key and why; set before the start, the same window passes."""
    window = "gpufleet_rollout:\n  window: {start: '2026-12-05T02:00:00Z', duration: 4h}\n"
    rc, md, _ = pull_request(repo, append(f"{GV}/rollout.yml", window), now="2026-12-05T03:00:00Z")
    assert rc == 1, md
    assert f"- {GV}/rollout.yml:2: gpufleet_rollout.window: the update window 2026-12-05 02:00 to 2026-12-05" in md
    assert "opened before 2026-12-05 03:00 UTC" in md and "this change sets it for team-a" in md
    early = run(repo, *CLI, "review", "--inventory", INV, "--base", "main", "--now", "2026-12-05T01:00:00Z",
                check=False)  # fmt: skip
    assert early.returncode == 0 and "opened before" not in early.stdout, early.stdout

_ALPHA_OVERRIDE = (
    "    tenant_overrides:\n"
    "      team-a:\n"
    "        reason: Workload API trial\n"
    "        vcluster:\n"
    "          values:\n"
    "            controlPlane: {distro: {k8s: {apiServer: {extraArgs: ['--feature-gates=GenericWorkload=true']}}}}\n"
)


def test_an_alpha_feature_gate_is_refused_unless_allowed_and_then_named(repo: Path) -> None:
    replace(f"{GV}/clusters.yml", "    topology:\n", _ALPHA_OVERRIDE + "    topology:\n")(repo)
    p = run(repo, *CLI, "review", "--inventory", INV, "--base", "main", check=False)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert "feature gate GenericWorkload is ALPHA at Kubernetes 1.36" in p.stderr
    allow = "    allow_alpha_feature_gates:\n      - {gate: GenericWorkload, reason: gang scheduling trial}\n"
    rc, md, _ = pull_request(repo, replace(f"{GV}/clusters.yml", "    topology:\n", allow + "    topology:\n"))
    assert rc == 0, md
    assert "runs with ALPHA feature gate `GenericWorkload` (Kubernetes 1.36)" in md
    assert "allowed by the platform: gang scheduling trial" in md


def _gitlink(repo: Path, path: str) -> None:
    head = run(repo, "git", "rev-parse", "HEAD").stdout.strip()
    run(repo, "git", "update-index", "--add", "--cacheinfo", f"160000,{head},{path}")
    (repo / path).mkdir(parents=True, exist_ok=True)  # what a checkout makes of it: an empty directory


@pytest.mark.parametrize(
    "entry",
    [
        "gitops/clusters/gpu-1/tenants/team-a/host/sub",  # a submodule in the tenant's own folder
        "gitops/clusters/gpu-1/tenants/team-a/host/link.yaml",  # a link in Git, a file in a checkout
        ".gitmodules",
        "docs/.GitModules",
    ],
)
def test_entries_a_checkout_hides_are_refused_by_review_and_render(repo: Path, entry: str) -> None:
    own = "gitops/clusters/gpu-1/tenants/team-a/host"
    if entry.endswith("/sub"):
        _gitlink(repo, entry)
    elif entry.endswith("link.yaml"):
        (repo / entry).symlink_to("../../../../../../inventories/prod/group_vars/all/fleet.yml")
    else:
        (repo / entry).parent.mkdir(exist_ok=True)
        (repo / entry).write_text('[submodule "x"]\n\tpath = x\n\turl = ../x.git\n')
    run(repo, "git", "add", "-A")
    run(repo, "git", "commit", "-qm", "entry")
    assert (repo / own).is_dir()
    review = run(repo, *CLI, "review", "--inventory", INV, "--base", "main", check=False)
    assert review.returncode == 1 and f"`{entry}` is " in review.stdout, review.stdout + review.stderr
    assert "tenant `team-a` only" not in review.stdout
    for args in (("--check",), ("--check", "--base", "main"), ("--fail-on-change",)):
        p = run(repo, *CLI, "render", "--inventory", INV, *args, check=False)
        if entry.endswith("link.yaml"):  # the tree on disk holds the link: the walk refuses it first
            assert p.returncode == 2 and entry in p.stderr and "symbolic link" in p.stderr, (args, p.stderr)
        else:
            assert p.returncode == 2 and f"`{entry}` is " in p.stderr, (args, p.stdout, p.stderr)


def test_a_file_in_the_gitops_tree_the_render_does_not_write_is_the_platforms(repo: Path) -> None:
    rc, md, _ = pull_request(
        repo, replace(TEAM_A, "login_replicas: 1", "login_replicas: 2"), append("gitops/.gitattributes", "* -diff\n")
    )
    assert rc == 1 and "tenant `team-a` only" not in md, md
    assert "| `gitops/.gitattributes` | platform | added |" in md
    assert approval_rows(md)["gitops/.gitattributes"][:2] == ["added", "platform"]
