"""`gpufleet.py validate` runs the render's pool checks (capacity, gpu_product) and names every problem at
once: each pool that cannot be filled, with the pools holding the nodes it could have had; a tenant that
writes a pool's `size:` into its own file is pointed at pools.yml."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ansible_collections.gpufleet.core.plugins.module_utils.scaffold import fleet_repo

REPO = Path(__file__).resolve().parents[5]
CLI = REPO / "scripts" / "gpufleet.py"
POOLS = "inventories/prod/group_vars/all/pools.yml"


def lab(tmp_path: Path) -> Path:
    root = tmp_path / "lab"
    opts = fleet_repo.options(root, org="acme", tenants=["vision:slurm", "speech:slurm", "serving:kubernetes"])
    fleet_repo.scaffold(root, opts)
    return root


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(CLI), *args], cwd=root, capture_output=True, text=True, check=False)


def edit(root: Path, rel: str, old: str, new: str, count: int = 1) -> None:
    f = root / rel
    text = f.read_text()
    assert text.count(old) >= count, (rel, old)
    f.write_text(text.replace(old, new, count))


def test_validate_fails_where_render_fails_and_names_every_pool(tmp_path: Path) -> None:
    root = lab(tmp_path)
    assert cli(root, "validate").returncode == 0
    edit(root, POOLS, "nodes: 6", "nodes: 12", 2)  # vision and speech: 2 + 12 + 12 + 4 > 24 nodes
    v = cli(root, "validate")
    assert v.returncode == 2 and "Traceback" not in v.stderr, v.stderr
    assert "pools cannot be filled" in v.stderr
    problems = [ln.strip(" -") for ln in v.stderr.splitlines() if "pools.yml:" in ln]
    assert len(problems) == 2 and all("needs" in p for p in problems), v.stderr
    assert "held by pool(s)" in v.stderr and "system (2 nodes)" in v.stderr
    r = cli(root, "render")
    assert r.returncode == 2 and not (root / "gitops").exists()
    assert sorted(ln.strip(" -") for ln in r.stderr.splitlines() if "pools.yml:" in ln) == sorted(problems)


def test_a_gpu_product_no_node_has_is_named_by_validate(tmp_path: Path) -> None:
    root = lab(tmp_path)
    edit(root, POOLS, "gpu_product: NVIDIA-H100-80GB-HBM3", "gpu_product: NVIDIA-B200")
    v = cli(root, "validate")
    assert v.returncode == 2, v.stdout
    assert "no node of the snapshot has gpu_product 'NVIDIA-B200' (there: NVIDIA-H100-80GB-HBM3 (24))" in v.stderr


def test_a_tenant_writing_size_is_pointed_at_pools_yml(tmp_path: Path) -> None:
    root = lab(tmp_path)
    with (root / "inventories/prod/group_vars/all/tenants/vision.yml").open("a") as f:
        f.write("  size:\n    nodes: 8\n")
    v = cli(root, "validate")
    assert v.returncode == 2 and "tenants/vision.yml:" in v.stderr and "unknown key(s) 'size'" in v.stderr
    assert "pools are the platform's: ask the platform to change gpufleet_pools in group_vars/all/pools.yml" in v.stderr
    assert "(the tenant's pools: vision)" in v.stderr
