"""One file per tenant (group_vars/all/tenants/<t>.yml): the renderer folds them into gpufleet_tenants,
the sample split that way renders byte for byte the committed gitops/, and the layout is fenced."""

from __future__ import annotations

import filecmp
import shutil
from pathlib import Path

import pytest
import yaml
from render_fixtures import model_errors
from tenant_split import split_tenants

from ansible_collections.gpufleet.core.plugins.module_utils.model.inventory import load_inventory

REPO = Path(__file__).resolve().parents[5]
SAMPLE = REPO / "inventories" / "sample"


@pytest.fixture
def inv(tmp_path: Path) -> Path:
    dst = tmp_path / "inv"
    shutil.copytree(SAMPLE, dst)
    return dst


def _same_tree(a: Path, b: Path) -> list[str]:
    cmp = filecmp.dircmp(a, b)
    out = [str(a / n) for n in cmp.left_only + cmp.right_only + cmp.diff_files + cmp.funny_files]
    for sub in cmp.common_dirs:
        out += _same_tree(a / sub, b / sub)
    return out


@pytest.mark.parametrize("keep_in_list", [0, 1])
def test_sample_split_per_tenant_renders_the_committed_tree(inv: Path, tmp_path: Path, keep_in_list: int) -> None:
    from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_inventory, write_render

    names = split_tenants(inv, keep_in_list)
    assert [t["name"] for t in load_inventory(inv).data["gpufleet_tenants"]] == names[:keep_in_list] + sorted(
        names[keep_in_list:]
    )
    out = tmp_path / "gitops"
    write_render(render_inventory(inv), out)
    filecmp.clear_cache()
    assert _same_tree(out, REPO / "gitops") == []


def test_errors_point_into_the_tenant_file(inv: Path) -> None:
    split_tenants(inv)
    f = inv / "group_vars" / "all" / "tenants" / "research.yml"
    f.write_text(f.read_text().replace("- research-debug", "- research-huge"))
    (err,) = [e for e in model_errors(inv) if "research-huge" in e]
    # the key as the tenant wrote it: its own variable, not its place in the folded list
    assert err.startswith(f"{f}:7: gpufleet_tenant_research.pools[1]"), err


def test_a_typo_in_a_tenants_file_is_named_there(inv: Path) -> None:
    """A misspelt key (what a tenant's pull request most often gets wrong): the file, line and key as the
    tenant wrote them, never its place in the folded list (``gpufleet_tenants[N]``)."""
    split_tenants(inv)
    f = inv / "group_vars" / "all" / "tenants" / "research.yml"
    lines = f.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("description:"))
    lines[at] = lines[at].replace("description:", "descripton:")
    f.write_text("\n".join(lines) + "\n")
    errs = model_errors(inv)
    (err,) = [e for e in errs if "descripton" in e]
    assert err.startswith(f"{f}:{at + 1}: gpufleet_tenant_research.descripton: unknown key"), err
    assert not [e for e in errs if "gpufleet_tenants[" in e], errs


@pytest.mark.parametrize(
    ("path", "text", "needle"),
    [
        # a tenant's file steering the platform's plays (controller code execution)
        ("tenants/research.yml", "ansible_connection: local\n", "ansible_connection: a tenant's file may define only"),
        ("tenants/research.yml", "gpufleet_pools: []\n", "gpufleet_pools: a tenant's file may define only"),
        # a tenant's file defining another tenant
        ("tenants/evil.yml", "gpufleet_tenant_research: {name: research}\n", "may define only gpufleet_tenant_evil"),
        (
            "tenants/evil.yml",
            "gpufleet_tenant_evil: {name: research, cluster: gpu-east, pools: [pretrain]}\n",
            "gpufleet_tenant_evil.name: must be 'evil'",
        ),
        # a per-tenant variable outside the tenants folder (no owner of its own)
        ("zz.yml", "gpufleet_tenant_zz: {name: zz}\n", "belongs in its tenant's own file"),
        ("tenants/sub/x.yml", "gpufleet_tenant_x: {name: x}\n", "one <tenant>.yml per tenant"),
        ("tenants/Bad.yml", "gpufleet_tenant_Bad: {name: Bad}\n", "one <tenant>.yml per tenant"),
        ("tenants/empty.yml", "other: 1\n", "defines no gpufleet_tenant_empty"),
    ],
)
def test_layout_is_fenced(inv: Path, path: str, text: str, needle: str) -> None:
    split_tenants(inv)
    f = inv / "group_vars" / "all" / path
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(f.read_text() + text if f.exists() else text)
    errs = model_errors(inv)
    assert any(err.startswith(str(f)) and needle in err for err in errs), errs


def test_a_tenant_in_the_list_and_in_a_file_is_a_duplicate(inv: Path) -> None:
    split_tenants(inv, keep_in_list=1)  # llm-pretrain stays in the list; define it in a file too
    (inv / "group_vars" / "all" / "tenants" / "llm-pretrain.yml").write_text(
        yaml.safe_dump({"gpufleet_tenant_llm_pretrain": load_inventory(inv).data["gpufleet_tenants"][0]})
    )
    errs = model_errors(inv)
    assert any("llm-pretrain.yml" in e and "llm-pretrain" in e for e in errs), errs
