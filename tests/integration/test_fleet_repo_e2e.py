"""A platform team's own fleet repository, end to end, from the built collection only, as the README says.

Build the tarball (``ansible-galaxy collection build``); in a fresh venv made from the shipped
``requirements.txt`` (PyPI; no Galaxy), install it ``--no-deps`` into the new repository's
``collections/``, the one path ``ansible.cfg``, the pre-commit hooks and CI use; scaffold the
repository *in place* with the installed CLI (a directory outside the project holding only
``collections/``), and the same again through ``ansible-playbook gpufleet.core.init`` from a directory
that is no repository; render it with the CLI and with the installed playbook; commit. Then run the
commands of the CI templates and of the pre-commit hooks, read from the scaffolded files (GitHub Actions
steps named ``gpufleet: ...``, GitLab CI jobs named ``gpufleet-...``), on a tenant's pull request that
passes, on one that reaches another tenant and fails, and on a hand-edited pool lock, which the
templates' own ``render --check --base`` refuses; and validate both templates against their published
schemas (SchemaStore's, as check-jsonschema vendors them).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.ansible
GIT_ID = {
    "GIT_AUTHOR_NAME": "ci",
    "GIT_AUTHOR_EMAIL": "ci@example.org",
    "GIT_COMMITTER_NAME": "ci",
    "GIT_COMMITTER_EMAIL": "ci@example.org",
    "GIT_CONFIG_GLOBAL": "/dev/null",
}
# the schema checker of the last step, pinned; installed into the test's venv from PyPI
CHECK_JSONSCHEMA = "check-jsonschema==0.39.0"


ACCOUNT = "        - {name: vision, fairshare: 1, qos: [normal], default_qos: normal, users: []}\n"
EVAL_ACCOUNT = "        - {name: vision-eval, fairshare: 1, qos: [normal], default_qos: normal, users: []}\n"


def sh(cmd: list[str] | str, cwd: Path, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(
        cmd if isinstance(cmd, list) else ["bash", "-euo", "pipefail", "-c", cmd],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if check and p.returncode != 0:
        raise AssertionError(f"{cmd!r} failed ({p.returncode}) in {cwd}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


@pytest.fixture(scope="module")
def world() -> Iterator[dict[str, object]]:
    # outside the project checkout (and outside its git work tree)
    tmp = Path(tempfile.mkdtemp(prefix="gpufleet-fleetrepo-", dir="/tmp"))
    assert not str(tmp).startswith(str(REPO))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "VIRTUAL_ENV", "PYTHON", "GIT_"))}
    env.update(
        GIT_ID,
        PATH="/usr/local/bin:/usr/bin:/bin",  # no venv on PATH: nothing is activated
        ANSIBLE_HOME=str(tmp / "ansible-home"),
        HOME=os.environ.get("HOME", str(tmp)),  # the pip cache
    )
    # the README's set-up, in the new repository's directory: .venv/ and collections/ inside it
    fleet = tmp / "acme-fleet"
    venv = fleet / ".venv"
    sh([str(Path(sys.base_prefix) / "bin" / "python3"), "-m", "venv", str(venv)], tmp, env)
    pip = [str(venv / "bin/pip"), "install", "-q", "--disable-pip-version-check"]
    sh([*pip, "-r", str(REPO / "requirements.txt")], tmp, env)
    dist = tmp / "dist"
    sh([str(venv / "bin/ansible-galaxy"), "collection", "build", "--output-path", str(dist), str(REPO)], tmp, env)
    (tarball,) = dist.glob("gpufleet-core-*.tar.gz")
    galaxy = [str(venv / "bin/ansible-galaxy"), "collection", "install", "--no-deps", "-p", "collections"]
    sh([*galaxy, str(tarball)], fleet, env)
    installed = fleet / "collections/ansible_collections/gpufleet/core"
    assert (installed / "MANIFEST.json").is_file() and not installed.is_symlink()
    yield {
        "tmp": tmp,
        "env": env,
        "venv": venv,
        "fleet": fleet,
        "installed": installed,
        "pip": pip,
        "tarball": tarball,
        "kubernetes_core": vendored_kubernetes_core(dist),
    }
    shutil.rmtree(tmp, ignore_errors=True)


def vendored_kubernetes_core(dist: Path) -> Path:
    """The kubernetes.core release tarball a fleet repository vendors for an install without Galaxy: the
    collection as the pinned ``ansible`` package of the test toolchain ships it, packed the way
    ``ansible-galaxy collection build`` packs it (MANIFEST.json and FILES.json first, then the files
    FILES.json lists; the Python package leaves out a few, such as ``.github/``, so FILES.json and its
    checksum in MANIFEST.json are trimmed to what is there)."""
    import hashlib
    import io
    import tarfile

    import ansible_collections.kubernetes.core as kcore

    src = Path(kcore.__path__[0])
    manifest = json.loads((src / "MANIFEST.json").read_text())
    listing = json.loads((src / "FILES.json").read_text())
    listing["files"] = [f for f in listing["files"] if (src / f["name"]).exists()]
    files_json = json.dumps(listing, indent=4).encode()
    manifest["file_manifest_file"]["chksum_sha256"] = hashlib.sha256(files_json).hexdigest()
    version = manifest["collection_info"]["version"]
    out = dist / f"kubernetes-core-{version}.tar.gz"
    with tarfile.open(out, "w:gz") as tar:
        for name, data in (("MANIFEST.json", json.dumps(manifest, indent=4).encode()), ("FILES.json", files_json)):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
        for f in listing["files"]:
            if f["name"] != ".":
                tar.add(src / f["name"], arcname=f["name"], recursive=False)
    return out


def codeowners_of(codeowners: Path, path: str) -> tuple[str, ...]:
    """The owners CODEOWNERS gives ``path`` (the last matching line wins; any one of them approves), for
    the patterns init writes: ``*``, an anchored file, an anchored folder."""
    owners: tuple[str, ...] = ()
    for line in codeowners.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        pattern, *who = line.split()
        p = "/" + path
        if pattern == "*" or p == pattern or (pattern.endswith("/") and p.startswith(pattern)):
            owners = tuple(who)
    return owners


def _ci_commands(fleet: Path, env: dict[str, str]) -> tuple[list[str], dict[str, str], list[str], dict[str, str]]:
    """The check commands of the two CI templates and the environment each runs them in, for a pull
    request (GitHub) or merge request (GitLab) against main."""
    gh = yaml.safe_load((fleet / ".github/workflows/gpufleet.yml").read_text())
    assert set(gh[True]) == {"pull_request", "push"}  # YAML 1.1 reads the key `on` as True
    (job,) = gh["jobs"].values()
    gh_steps = [s["run"] for s in job["steps"] if str(s.get("name", "")).startswith("gpufleet:")]
    assert not [s for s in job["steps"] if str(s.get("name", "")).startswith("gpufleet:") and "if" in s]
    assert len(gh_steps) == 3 and "--check --base" in gh_steps[1] and " review " in gh_steps[2]
    # GPUFLEET_BASE is an expression: the pull request's base branch, else the commit before the push
    assert "format('origin/{0}', github.base_ref)" in job["env"]["GPUFLEET_BASE"]
    assert "github.event.before" in job["env"]["GPUFLEET_BASE"]
    # the install step (the tarball the base pins, into $RUNNER_TEMP) needs the forge: here the tarball
    # installed into collections/ stands in for it, and RUNNER_TEMP is a folder outside the checkout
    installed = "python collections/ansible_collections/gpufleet/core/scripts/gpufleet.py"
    runner_temp = fleet.parent / "runner-temp"
    runner_temp.mkdir(exist_ok=True)
    gh_env = {**env, **job["env"], "GPUFLEET_BASE": "origin/main", "GPUFLEET": installed}
    gh_env["RUNNER_TEMP"] = str(runner_temp)
    gl = yaml.safe_load((fleet / ".gitlab-ci.yml").read_text())
    gl_jobs = {name: j for name, j in gl.items() if name.startswith("gpufleet-")}
    # one pipeline per merge request: no job has rules of its own, the workflow decides (a merge request
    # pipeline; never a branch pipeline while the branch has an open merge request; the default branch)
    assert not [j for j in gl_jobs.values() if "rules" in j or "only" in j or "except" in j]
    mr, branch_with_mr, default = gl["workflow"]["rules"]
    assert mr["if"] == '$CI_PIPELINE_SOURCE == "merge_request_event"' and "when" not in mr
    assert branch_with_mr == {"if": "$CI_COMMIT_BRANCH && $CI_OPEN_MERGE_REQUESTS", "when": "never"}
    assert default["if"] == "$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH"
    assert mr["variables"]["GPUFLEET_BASE"] == "origin/$CI_MERGE_REQUEST_TARGET_BRANCH_NAME"
    gl_env = {**env, **gl["variables"], "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main", "GPUFLEET_BASE": "origin/main"}
    gl_env["GPUFLEET"] = installed
    gl_scripts = [line for j in gl_jobs.values() for line in j["script"]]
    assert any("--check --base" in line for line in gl_scripts) and any(" review " in line for line in gl_scripts)
    return gh_steps, gh_env, gl_scripts, gl_env


def test_fleet_repository_from_the_built_collection(world: dict[str, object]) -> None:
    env: dict[str, str] = world["env"]  # type: ignore[assignment]
    fleet: Path = world["fleet"]  # type: ignore[assignment]
    venv: Path = world["venv"]  # type: ignore[assignment]
    installed: Path = world["installed"]  # type: ignore[assignment]
    tmp: Path = world["tmp"]  # type: ignore[assignment]
    cli = [str(venv / "bin/python"), str(installed / "scripts/gpufleet.py")]
    version = yaml.safe_load((REPO / "galaxy.yml").read_text())["version"]
    assert sh([*cli, "--version"], fleet, env).stdout == f"gpufleet.core {version}\n"

    # a lab of three tenants, scaffolded in place beside .venv/ and collections/
    tenants = ["--tenant", "vision:slurm", "--tenant", "speech:slurm", "--tenant", "serving:kubernetes"]
    out = sh([*cli, "init", ".", "--org", "acme", *tenants], fleet, env)
    assert "fleet repository 'acme-fleet'" in out.stdout
    pins = {c["name"]: c["version"] for c in yaml.safe_load((fleet / "requirements.yml").read_text())["collections"]}
    assert pins["gpufleet.core"] == f"=={version}"
    sh("git init -q -b main && git add -A && git commit -qm 'gpufleet init'", fleet, env)
    tracked = sh(["git", "ls-files"], fleet, env).stdout.split()
    assert "CODEOWNERS" in tracked and not [f for f in tracked if f.startswith(("collections/", ".venv/"))]

    # the same scaffold through Ansible, from a directory that is no repository (no ansible.cfg there)
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    play_env = {**env, "ANSIBLE_COLLECTIONS_PATH": str(fleet / "collections")}
    init = [
        str(venv / "bin/ansible-playbook"),
        "gpufleet.core.init",
        "-e",
        f"dest={elsewhere / 'lab'}",
        "-e",
        "org=acme",
    ]
    p = sh(init, elsewhere, play_env)
    assert "changed=1" in p.stdout and (elsewhere / "lab/CODEOWNERS").is_file(), p.stdout[-2000:]

    # render with the installed CLI (the inventory from ansible.cfg), then with the installed playbook
    sh([*cli, "render"], fleet, env)
    assert (fleet / "gitops/clusters/gpu-1/tenants/vision/slurm/topology.conf").is_file()
    for inventory in ([], ["-i", "inventories/prod"]):  # the folder too: snapshots are not inventory
        inv = sh([str(venv / "bin/ansible-inventory"), *inventory, "--list"], fleet, env)
        assert "WARNING" not in inv.stderr and "vendid" not in inv.stdout, inv.stderr
        assert sorted(yaml.safe_load(inv.stdout)["_meta"]["hostvars"]) == ["localhost"]
    play = sh([str(venv / "bin/ansible-playbook"), "gpufleet.core.render"], fleet, env)
    assert "changed=0" in play.stdout and "failed=0" in play.stdout, play.stdout[-2000:]
    (fleet / "gpufleet-core.tar.gz").write_bytes(b"a stray file, never added")  # untracked: not the change
    sh("git add gitops inventories && git commit -qm render && git clone -q --bare . ../origin.git", fleet, env)
    sh("git remote add origin ../origin.git && git fetch -q origin", fleet, env)

    gh_steps, gh_env, gl_scripts, gl_env = _ci_commands(fleet, env)
    ci_path = {"PATH": f"{venv / 'bin'}:{env['PATH']}"}  # CI's python is the one requirements.txt went into
    gh_env.update(ci_path)
    gl_env.update(ci_path)
    hooks = [
        h["entry"] for r in yaml.safe_load((fleet / ".pre-commit-config.yaml").read_text())["repos"] for h in r["hooks"]
    ]

    def ci() -> list[subprocess.CompletedProcess[str]]:
        results = [sh(cmd, fleet, gh_env, check=False) for cmd in gh_steps]
        results += [sh(cmd, fleet, gl_env, check=False) for cmd in gl_scripts]
        return results + [sh(cmd, fleet, env, check=False) for cmd in hooks]  # no venv on PATH

    # a tenant's pull request that edits only its own file: every check passes
    sh("git checkout -q -b vision-replicas", fleet, env)
    own = fleet / "inventories/prod/group_vars/all/tenants/vision.yml"
    own.write_text(
        own.read_text().replace("login_replicas: 1", "login_replicas: 2").replace("Slurm batch", "Slurm training")
    )
    sh([*cli, "render"], fleet, env)
    sh("git add -A inventories gitops && git commit -qm 'vision: two login nodes'", fleet, env)
    results = ci()
    assert [r.returncode for r in results] == [0] * len(results), [r.stdout[-1500:] + r.stderr[-1500:] for r in results]
    review = (fleet.parent / "runner-temp" / "gpufleet-review.md").read_text()
    assert "## gpufleet review: ✅ passes" in review and "change: tenant `vision` only" in review
    # every file the tenant's pull request changes is the tenant's by CODEOWNERS, its reports and its
    # part of the render manifest included: the tenant's entry alone approves it
    changed = sh(["git", "diff", "--name-only", "main...HEAD"], fleet, env).stdout.split()
    assert "gitops/clusters/gpu-1/tenants/vision/REPORT.md" in changed, changed
    outside = [p for p in changed if "@acme/vision" not in codeowners_of(fleet / "CODEOWNERS", p)]
    assert outside == [], outside
    assert "gitops/clusters/gpu-1/tenants/vision/.gpufleet-manifest" in changed, changed
    assert "gpufleet-core.tar.gz" not in review

    # the same tenant also edits another tenant's file: the review step fails and names the file
    other = fleet / "inventories/prod/group_vars/all/tenants/serving.yml"
    other.write_text(other.read_text().replace("namespaces: [jobs]", "namespaces: [jobs, vision-extra]"))
    sh([*cli, "render"], fleet, env)
    sh("git add -A inventories gitops && git commit -qm 'vision: and a namespace at serving'", fleet, env)
    p = sh(gh_steps[2], fleet, gh_env, check=False)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "inventories/prod/group_vars/all/tenants/serving.yml` (tenant serving)" in p.stdout
    assert "❌ fails" in (fleet.parent / "runner-temp" / "gpufleet-review.md").read_text()

    # a hand-edited pool lock (two tenants' nodes swapped), committed: the templates' own render check
    # refuses it (the lock is read from the base), and the review lists the lock as a changed input
    sh("git checkout -q main && git checkout -q -b swap-nodes", fleet, env)
    lock = fleet / "inventories/prod/snapshots/gpu-1/pools.lock.yaml"
    text = lock.read_text()
    a, b = "gpu003: vision", "gpu009: speech"
    assert a in text and b in text, text[:600]
    lock.write_text(text.replace(a, "gpu003: speech").replace(b, "gpu009: vision"))
    sh([*cli, "render"], fleet, env)  # renders the edited lock's assignment: the tree matches it
    sh("git add -A inventories gitops && git commit -qm 'swap two nodes'", fleet, env)
    for cmd, cmd_env in ((gh_steps[1], gh_env), *((c, gl_env) for c in gl_scripts if "--check --base" in c)):
        p = sh(cmd, fleet, cmd_env, check=False)
        assert p.returncode != 0 and "pools.lock.yaml" in p.stderr and "edited by hand" in p.stderr, p.stderr
    assert sh(cmd.replace(' --base "$GPUFLEET_BASE"', ""), fleet, gl_env, check=False).returncode == 0  # without
    p = sh(gh_steps[2], fleet, gh_env, check=False)
    assert (
        p.returncode == 1 and "| `inventories/prod/snapshots/gpu-1/pools.lock.yaml` | platform | changed |" in p.stdout
    )

    # both templates against their schemas (GitHub workflow and GitLab CI, from SchemaStore)
    sh([*world["pip"], CHECK_JSONSCHEMA], tmp, env)  # type: ignore[list-item]
    checker = str(venv / "bin/check-jsonschema")
    for schema, path in (
        ("vendor.github-workflows", ".github/workflows/gpufleet.yml"),
        ("vendor.gitlab-ci", ".gitlab-ci.yml"),
    ):
        p = sh([checker, "--builtin-schema", schema, path], fleet, env, check=False)
        assert p.returncode == 0 and "ok -- validation done" in p.stdout, p.stdout + p.stderr


def _review(cli: list[str], fleet: Path, env: dict[str, str]) -> tuple[str, dict[str, object]]:
    """The review of the checked-out branch against main, as Markdown and as JSON (CI annotations)."""
    md = sh([*cli, "review", "--base", "main"], fleet, env, check=False)
    js = sh([*cli, "review", "--base", "main", "--format", "json"], fleet, env, check=False)
    assert md.returncode == js.returncode, (md.stdout, js.stdout)
    return md.stdout, json.loads(js.stdout)


def _commit(fleet: Path, env: dict[str, str], message: str) -> None:
    sh(["git", "add", "-A", "inventories", "gitops"], fleet, env)
    sh(["git", "commit", "-qm", message], fleet, env)


def _lab(world: dict[str, object]) -> tuple[Path, list[str], dict[str, str]]:
    """A university lab's fleet repository: init with three tenants, both collections installed into its
    collections/ from the vendored tarballs with --offline by its README's own line (no Galaxy;
    kubernetes.core for apply), rendered and committed on main."""
    env: dict[str, str] = world["env"]  # type: ignore[assignment]
    venv: Path = world["venv"]  # type: ignore[assignment]
    installed: Path = world["installed"]  # type: ignore[assignment]
    tmp: Path = world["tmp"]  # type: ignore[assignment]
    lab = tmp / "lab"
    cli = [str(venv / "bin/python"), str(installed / "scripts/gpufleet.py")]
    tenants = ["--tenant", "vision:slurm", "--tenant", "nlp:slurm", "--tenant", "serving:kubernetes"]
    sh([*cli, "init", str(lab), "--org", "lab", *tenants], tmp, env)
    # the install line of the new repository's README, run as written: its venv in .venv/, the two
    # tarballs in vendor/
    (lab / "vendor").mkdir()
    for tarball in (world["tarball"], world["kubernetes_core"]):
        shutil.copy(tarball, lab / "vendor")  # type: ignore[arg-type]
    (lab / ".venv").symlink_to(venv)
    (line,) = [x for x in (lab / "README.md").read_text().splitlines() if "collection install --offline" in x]
    sh(line, lab, env)
    (lab / ".venv").unlink()  # a link: its .gitignore entry (/.venv/) matches only a folder
    for name in ("gpufleet/core", "kubernetes/core"):
        assert (lab / "collections/ansible_collections" / name / "MANIFEST.json").is_file(), name
    cli = [str(venv / "bin/python"), str(lab / "collections/ansible_collections/gpufleet/core/scripts/gpufleet.py")]
    sh("git init -q -b main && git add -A && git commit -qm 'gpufleet init'", lab, env)
    sh([*cli, "render"], lab, env)
    _commit(lab, env, "render")
    return lab, cli, env


def test_a_labs_walk_from_its_own_repository(world: dict[str, object]) -> None:
    """The new user's walk: a tenant pull request, maintenance, an upgrade and its revert, and apply
    against the local control plane, all from the lab's own repository."""
    lab, cli, env = _lab(world)
    codeowners = lab / "CODEOWNERS"

    # the tenant's pull request: its own approval covers it, and the review says what changes in words
    sh("git checkout -q -b vision-more", lab, env)
    own = lab / "inventories/prod/group_vars/all/tenants/vision.yml"
    text = own.read_text().replace("login_replicas: 1", "login_replicas: 2").replace(ACCOUNT, ACCOUNT + EVAL_ACCOUNT)
    own.write_text(text)
    sh([*cli, "render"], lab, env)
    _commit(lab, env, "vision: two login nodes, an eval account")
    md, js = _review(cli, lab, env)
    assert js["ok"] is True and js["kind"] == "tenant" and js["tenant"] == "vision", js
    words = {(c["tenant"], c["text"]) for c in js["tenant_changes"]}  # type: ignore[union-attr]
    assert {("vision", "login `main` 1→2"), ("vision", "account `vision-eval` added")} <= words, words
    assert "- login `main` 1→2" in md
    assert js["approval"]["covering"] == ["@lab/vision"], js["approval"]  # type: ignore[index]
    changed = sh(["git", "diff", "--name-only", "main...HEAD"], lab, env).stdout.split()
    assert [p for p in changed if "@lab/vision" not in codeowners_of(codeowners, p)] == []
    assert codeowners_of(codeowners, "inventories/prod/group_vars/all/tenants/vision.yml") == ("@lab/vision",)
    sh("git checkout -q main && git merge -q --ff-only vision-more", lab, env)

    # maintenance of nodes of two tenants: the platform alone approves; each tenant is told, not asked
    sh("git checkout -q -b psu-swap", lab, env)
    sh(
        [
            *cli,
            "maintenance",
            "start",
            "--name",
            "psu-swap",
            "--cluster",
            "gpu-1",
            "--nodes",
            "gpu[005-010]",
            "--reason",
            "PSU swap",
            "--start",
            "2026-12-05T06:00:00Z",
            "--duration",
            "4h",
        ],
        lab,
        env,
    )
    _commit(lab, env, "maintenance psu-swap")
    md, js = _review(cli, lab, env)
    assert js["ok"] is True and js["kind"] == "platform", js
    assert js["approval"]["covering"] == ["@lab/platform"], js["approval"]  # type: ignore[index]
    told = {n["tenant"]: n for n in js["notices"]}  # type: ignore[union-attr]
    assert sorted(told) == ["nlp", "vision"], told
    assert told["vision"]["handles"] == ["@lab/vision"] and "`gpu[005-008]`" in told["vision"]["text"]
    assert "`gpu[009-010]`" in told["nlp"]["text"]
    assert "@lab/vision, for your information (no approval needed)" in md
    sh("git checkout -q main && git merge -q --ff-only psu-swap", lab, env)
    listed = sh([*cli, "maintenance", "list", "--now", "2026-12-05T07:00:00Z"], lab, env).stdout
    assert "| `psu-swap` | `gpu-1` | `gpu[005-010]` (6) | PSU swap | 2026-12-05T06:00:00Z for 4h | due |" in listed

    # a scale that re-renders a tenant's tree (a node joins its pool): the platform alone approves it,
    # as the tenant's rendered tree lists the platform beside the tenant
    sh("git checkout -q -b vision-grows", lab, env)
    pools = lab / "inventories/prod/group_vars/all/pools.yml"
    data = yaml.safe_load(pools.read_text())
    next(p for p in data["gpufleet_pools"] if p["name"] == "vision")["size"]["nodes"] += 1
    pools.write_text(yaml.safe_dump(data, sort_keys=False))
    sh([*cli, "render"], lab, env)
    _commit(lab, env, "vision: one node more")
    md, js = _review(cli, lab, env)
    assert js["ok"] is True and js["kind"] == "platform", js
    reached = [a["path"] for a in js["approvals"] if a["owner"] == "tenant vision"]  # type: ignore[union-attr]
    assert "gitops/clusters/gpu-1/tenants/vision/slurm/values.yaml" in reached, reached
    assert js["approval"]["covering"] == ["@lab/platform"], js["approval"]  # type: ignore[index]
    assert "One approval from `@lab/platform` covers every committed file" in md
    # the node it gets sits under another leaf: the review says the pool now spans two
    placement = [c["text"] for c in js["tenant_changes"] if c["what"] == "placement"]  # type: ignore[union-attr]
    assert len(placement) == 1 and placement[0].startswith("pool `vision` now spans 2 leaf groups, was 1"), placement
    sh("git checkout -q main && git merge -q --ff-only vision-grows", lab, env)

    # a GPU driver upgrade: every tenant is told how many of its nodes drain at once; its revert
    # renders main's tree byte for byte
    before = sh(["git", "rev-parse", "HEAD:gitops"], lab, env).stdout
    sh("git checkout -q -b driver-upgrade", lab, env)
    clusters = lab / "inventories/prod/group_vars/all/clusters.yml"
    data = yaml.safe_load(clusters.read_text())
    data["gpufleet_clusters"][0]["components"]["gpu_operator"] = {"values": {"driver": {"version": "580.95.05"}}}
    clusters.write_text(yaml.safe_dump(data, sort_keys=False))
    sh([*cli, "render"], lab, env)
    _commit(lab, env, "driver upgrade")
    md, js = _review(cli, lab, env)
    assert js["kind"] == "platform" and js["approval"]["covering"] == ["@lab/platform"], js  # type: ignore[index]
    told = {n["tenant"]: n["text"] for n in js["notices"]}  # type: ignore[union-attr]
    assert sorted(told) == ["nlp", "serving", "vision"], told
    assert "the GPU driver upgrade of `gpu-1` drains at most 1 of 7 node(s) at once" in told["vision"]
    sh("git revert --no-edit HEAD", lab, env)
    sh([*cli, "render", "--check"], lab, env)  # the reverted inputs render the committed tree
    assert sh(["git", "rev-parse", "HEAD:gitops"], lab, env).stdout == before
    sh("git checkout -q main", lab, env)

    # a new leaf of 8 nodes by command, and the pool that grows onto it: the scaling pull request
    sh("git checkout -q -b leaf-4", lab, env)
    add = [*cli, "hardware", "add", "--cluster", "gpu-1", "--nodes", "gpu[025-032]", "--leaf", "leaf-4"]
    p = sh([*add, "--parent", "spine-1"], lab, env)
    assert "8 node(s) gpu[025-032] added under leaf-4" in p.stdout, p.stdout
    data = yaml.safe_load(pools.read_text())
    next(p for p in data["gpufleet_pools"] if p["name"] == "nlp")["size"]["nodes"] += 8
    pools.write_text(yaml.safe_dump(data, sort_keys=False))
    sh([*cli, "render"], lab, env)
    _commit(lab, env, "leaf-4: 8 nodes for nlp")
    md, js = _review(cli, lab, env)
    assert js["ok"] is True and js["approval"]["covering"] == ["@lab/platform"], js  # type: ignore[index]
    # every new node gets a pool (nlp, or spare for the one a spare node's move frees up), 8 join nlp
    moved = {m["node"]: (m["from"], m["to"]) for m in js["moves"]}  # type: ignore[union-attr]
    new_nodes = [f"gpu{i:03d}" for i in range(25, 33)]
    assert all(moved.get(n, ("?",))[0] is None for n in new_nodes), moved
    assert sum(to == "nlp" for _, to in moved.values()) == 8, moved
    sh("git checkout -q main && git merge -q --ff-only leaf-4", lab, env)

    _apply_from_the_repository(lab, env, world["venv"])  # type: ignore[arg-type]


def _apply_from_the_repository(lab: Path, env: dict[str, str], venv: Path) -> None:
    """``ansible-playbook gpufleet.core.site -e gpufleet_apply=true`` from the lab's repository against the
    local control plane: the root Application and the node pools come from the repository's gitops/ (not
    from the installed collection's folder, which holds none)."""
    sys.path.insert(0, str(REPO / "tests/integration/kube"))
    from controlplane import LocalControlPlane, require_control_plane_tools, shared_test_helpers

    require_control_plane_tools()
    crd = shared_test_helpers().require_path(
        REPO.parent / "shared/upstream/crds/argocd/application-crd.yaml", "Argo CD's Application CRD"
    )
    plane = LocalControlPlane()
    try:
        plane.start(lab.parent / "kube")
        plane.apply_crds([crd])
        plane.create_namespace("argocd")
        nodes = plane.create_nodes_from_snapshot(lab / "inventories/prod/snapshots/gpu-1/nodes.yaml")
        extra = {
            "gpufleet_apply": True,
            "gpufleet_kubeconfig": str(plane.kubeconfig),
            "gpufleet_discover_live": False,
            "gpufleet_register_tenants": False,  # no vCluster runs here
            "gpufleet_apply_status": False,  # no Argo CD controller runs here
        }
        play = sh([str(venv / "bin/ansible-playbook"), "gpufleet.core.site", "-e", json.dumps(extra)], lab, env, False)
        assert play.returncode == 0 and "failed=0" in play.stdout, play.stdout[-4000:] + play.stderr[-2000:]
        app = plane.get_json("application", "gpu-1-root", "-n", "argocd")
        want = yaml.safe_load_all((lab / "gitops/clusters/gpu-1/root-app.yaml").read_text())
        assert app["spec"]["source"] == next(d for d in want if d)["spec"]["source"]
        lock = yaml.safe_load((lab / "inventories/prod/snapshots/gpu-1/pools.lock.yaml").read_text())["nodes"]
        labelled = {
            n["metadata"]["name"]: n["metadata"]["labels"].get("node-restriction.kubernetes.io/gpufleet-pool")
            for n in plane.get_json("nodes")["items"]
            if n["metadata"]["name"] in nodes
        }
        assert {n: p for n, p in labelled.items() if n in lock} == lock
    finally:
        plane.stop()
