"""`gpufleet.py init`: a fleet repository that validates, one file per tenant, owners, nothing overwritten."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.scaffold import fleet_repo

REPO = Path(__file__).resolve().parents[5]
CLI = REPO / "scripts" / "gpufleet.py"


def test_scaffold_validates_with_one_file_per_tenant(tmp_path: Path) -> None:
    opts = fleet_repo.options(
        tmp_path / "Fleet-X", org="example-org", tenants=["alpha:slurm", "beta:kubernetes:@corp/beta-ops", "gamma"]
    )
    written = fleet_repo.scaffold(tmp_path / "Fleet-X", opts)
    root = tmp_path / "Fleet-X"
    assert {".github/workflows/gpufleet.yml", ".gitlab-ci.yml", ".pre-commit-config.yaml", "CODEOWNERS"} <= set(written)
    assert not [p for p in written if "__" in (root / p).read_text() and "__" not in p], "an unfilled template token"
    fleet = load_fleet(root / "inventories" / "prod")
    assert fleet.name == "fleet-x" and sorted(fleet.tenants) == ["alpha", "beta", "gamma"]
    assert {p.kind for p in fleet.pools.values()} == {"system", "slurm", "kubernetes", "spare"}
    tenant_files = sorted(p.name for p in (root / "inventories/prod/group_vars/all/tenants").iterdir())
    assert tenant_files == ["alpha.yml", "beta.yml", "gamma.yml"]
    owners = [line.split() for line in (root / "CODEOWNERS").read_text().splitlines() if not line.startswith("#")]
    assert owners[0] == ["*", "@example-org/platform"]
    assert ["/inventories/prod/group_vars/all/tenants/beta.yml", "@corp/beta-ops"] in owners
    # the tenant's file is the tenant's alone; its rendered tree the tenant's and the platform's (one line:
    # either approves, so a platform change that re-renders it needs the platform alone)
    assert ["/gitops/clusters/gpu-1/tenants/beta/", "@corp/beta-ops", "@example-org/platform"] in owners
    assert owners[-3:] == [[p, "@example-org/platform"] for p in ("/CODEOWNERS", "/.github/", "/.gitlab-ci.yml")]
    for ci in (".github/workflows/gpufleet.yml", ".gitlab-ci.yml", ".pre-commit-config.yaml"):
        yaml.safe_load((root / ci).read_text())
    assert (root / "requirements.txt").read_text() == (REPO / "requirements.txt").read_text()


def test_scaffold_never_overwrites(tmp_path: Path) -> None:
    (tmp_path / "CODEOWNERS").write_text("* @me\n")
    p = subprocess.run(
        [sys.executable, str(CLI), "init", str(tmp_path), "--org", "acme"], capture_output=True, text=True, check=False
    )
    assert p.returncode == 2 and "already holds CODEOWNERS" in p.stderr and "Traceback" not in p.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == ["CODEOWNERS"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--tenant", "Bad_Name"], "--tenant 'Bad_Name': a lower-case DNS label"),
        (["--tenant", "a:gpu"], "kind 'gpu' is not one of slurm, kubernetes"),
        (["--tenant", "a", "--tenant", "a"], "--tenant 'a': given twice"),
        (["--tenant", "platform"], "not platform, system or spare"),
        (["--tenant", "a:slurm:@bad owner"], "is not @user, @org/team or an e-mail"),
        (["--org", "x/../y"], "--org"),
        (["--org", ""], "--org ORG is required"),
        (["--org", "", "--platform-owner", "@p", "--tenant", "a:slurm:@a"], "without it give --repo-url"),
        (["--repo-url", "github.com/x"], "--repo-url 'github.com/x': the Git URL"),
        # whole strings: a trailing newline passes re.match(...$) but not the model's grammar
        (["--org", "acme\n"], "--org 'acme\\n'"),
        (["--tenant", "vision\n"], "--tenant 'vision\\n': a lower-case DNS label"),
        (["--fleet", "f\n"], "--fleet 'f\\n'"),
        (["--branch", "main\n"], "--branch 'main\\n'"),
        (["--tenant", "a:slurm:a@b#c"], "owner 'a@b#c' is not"),
        (["--tenant", "a:slurm:@org/team\n"], "owner '@org/team\\n' is not"),
        (["--platform-owner", "ops@example"], "--platform-owner 'ops@example' is not"),
        (["--tenant", "a-very-long-tenant-name-past-forty-chars-x"], "a lower-case DNS label"),
    ],
)
def test_bad_options_exit_2_and_write_nothing(tmp_path: Path, args: list[str], needle: str) -> None:
    dest = tmp_path / "new"
    p = subprocess.run(
        [sys.executable, str(CLI), "init", str(dest), "--org", "acme", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    assert p.returncode == 2 and needle in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert not dest.exists()


def test_without_org_every_owner_and_the_url_are_explicit(tmp_path: Path) -> None:
    """No silent @example-org: without --org, init needs every owner and the repository URL."""
    dest = tmp_path / "lab"
    p = subprocess.run([sys.executable, str(CLI), "init", str(dest)], capture_output=True, text=True, check=False)
    assert p.returncode == 2 and "--org ORG is required" in p.stderr and not dest.exists(), p.stderr
    args = ["--platform-owner", "@infra", "--tenant", "a:slurm:@ml", "--repo-url", "ssh://git@git.example/lab.git"]
    p = subprocess.run(
        [sys.executable, str(CLI), "init", str(dest), *args], capture_output=True, text=True, check=False
    )
    assert p.returncode == 0, p.stderr
    assert "example-org" not in "".join(f.read_text() for f in dest.rglob("*") if f.is_file())
    assert "repo_url: ssh://git@git.example/lab.git" in (dest / "inventories/prod/group_vars/all/fleet.yml").read_text()


def test_the_collection_version_is_pinned_exactly_and_one_collections_path(tmp_path: Path) -> None:
    root = tmp_path / "lab"
    fleet_repo.scaffold(root, fleet_repo.options(root, org="acme"))
    version = yaml.safe_load((REPO / "galaxy.yml").read_text())["version"]
    pins = {c["name"]: c["version"] for c in yaml.safe_load((root / "requirements.yml").read_text())["collections"]}
    assert pins["gpufleet.core"] == f"=={version}"
    assert f"gpufleet-core-{version}.tar.gz" in (root / "README.md").read_text()
    # README, ansible.cfg and pre-commit use the one ./collections beside .venv; CI installs outside the
    # checkout (test_ci_templates.py)
    assert "collections_path = ./collections\n" in (root / "ansible.cfg").read_text()
    assert "-p collections" in (root / "README.md").read_text()
    hooks = [h["entry"] for h in yaml.safe_load((root / ".pre-commit-config.yaml").read_text())["repos"][0]["hooks"]]
    assert hooks and all(h.startswith(".venv/bin/python collections/ansible_collections/") for h in hooks)


def test_version_and_help_of_every_command() -> None:
    out = subprocess.run([sys.executable, str(CLI), "--version"], capture_output=True, text=True, check=True).stdout
    assert out == f"gpufleet.core {yaml.safe_load((REPO / 'galaxy.yml').read_text())['version']}\n"
    for cmd in ("init", "validate", "render", "review", "schema"):
        p = subprocess.run([sys.executable, str(CLI), cmd, "--help"], capture_output=True, text=True, check=True)
        usage, description = p.stdout.split("\n\n")[:2]
        assert usage.startswith(f"usage: gpufleet.py {cmd}") and len(description) > 20, p.stdout


def test_inventory_defaults_to_the_one_ansible_cfg_names(tmp_path: Path) -> None:
    root = tmp_path / "lab"
    fleet_repo.scaffold(root, fleet_repo.options(root, org="acme"))
    p = subprocess.run([sys.executable, str(CLI), "validate"], cwd=root, capture_output=True, text=True, check=False)
    assert p.returncode == 0 and p.stdout.startswith("inventories/prod/hosts.yml: fleet 'lab' is valid"), p.stderr
    p = subprocess.run(
        [sys.executable, str(CLI), "validate"], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert p.returncode == 2 and "--inventory DIR is required (no ansible.cfg naming an inventory here)" in p.stderr
