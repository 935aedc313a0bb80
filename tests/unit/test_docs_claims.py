"""What the docs say about defaults and tenant routes matches what the product does.

Each test reads the product's behaviour (the rendered tree, the validator, the renderer) and then the
doc sentences that describe it; a doc that promises the opposite fails.
"""

from __future__ import annotations

import copy
import re

import pytest
import yaml
from render_fixtures import REPO, SAMPLE

from ansible_collections.gpufleet.core.plugins.module_utils.errors import ModelError
from ansible_collections.gpufleet.core.plugins.module_utils.model.inventory import load_inventory
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import validate
from ansible_collections.gpufleet.core.plugins.module_utils.render.inputs import cluster_inputs
from ansible_collections.gpufleet.core.plugins.module_utils.render.tenants.slurm import slurm_values

DOCS = [*sorted((REPO / "docs").rglob("*.md")), REPO / "docs" / "fleet.schema.json", REPO / "README.md"]


def test_no_doc_calls_the_nfs_class_the_default() -> None:
    sc = yaml.safe_load((REPO / "gitops/clusters/gpu-east/platform/storage-class/gpufleet-nfs.yaml").read_text())
    assert sc["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"] == "false"
    wrong = []
    for doc in DOCS:
        for n, line in enumerate(doc.read_text().splitlines(), 1):
            about_nfs = re.search(r"gpufleet-nfs|NFS", line)
            says_default = re.search(r"\bdefault (StorageClass|class)\b", line)
            if about_nfs and says_default and not re.search(r"\b(not|no longer|never)\b", line):
                wrong.append(f"{doc.relative_to(REPO)}:{n}: {line.strip()}")
    assert not wrong, wrong


def test_docs_name_the_route_that_can_set_sssd() -> None:
    raw = load_inventory(SAMPLE)
    ti = next(i for i, t in enumerate(raw.data["gpufleet_tenants"]) if isinstance(t.get("slurm"), dict))
    name = raw.data["gpufleet_tenants"][ti]["name"]
    tenant_route = copy.deepcopy(raw)
    tenant_route.data["gpufleet_tenants"][ti]["slurm"]["values"] = {"sssd": {"conf": "x"}}
    with pytest.raises(ModelError, match=r"slurm\.values\.sssd.*tenant_overrides"):
        validate(tenant_route)
    platform_route = copy.deepcopy(raw)
    platform_route.data["gpufleet_clusters"][0]["tenant_overrides"] = {
        name: {"reason": "Kerberos", "slurm": {"values": {"sssd": {"conf": "[sssd]\n"}}}}
    }
    fleet = validate(platform_route)
    cluster = fleet.clusters[raw.data["gpufleet_clusters"][0]["name"]]
    got, _files = slurm_values(fleet, cluster, fleet.tenants[name], cluster_inputs(fleet, cluster, None))
    assert got["sssd"]["conf"] == "[sssd]\n"
    text = " ".join((REPO / "docs" / "identity.md").read_text().split())
    said = [s for s in re.split(r"(?<=\.) ", text) if "the whole `sssd` value" in s]
    assert said, "identity.md says how to replace the sssd value"
    for s in said:
        assert "tenant_overrides" in s, s
        assert not re.search(r"(replace|set)[^.]*through the tenant's `slurm\.values`", s), s


def test_every_offline_install_line_is_the_one_a_new_repository_runs() -> None:
    """The install without Galaxy is written the same everywhere (README, docs, the scaffold's README that
    tests/integration/test_fleet_repo_e2e.py runs as written): the gpufleet.core tarball and kubernetes.core's
    (apply needs it), from vendor/, ``--offline`` into the repository's collections/."""
    want = (
        ".venv/bin/ansible-galaxy collection install --offline -p collections vendor/gpufleet-core-{v}.tar.gz"
        " vendor/kubernetes-core-*.tar.gz"
    )
    scaffold = REPO / "scaffold/fleet-repo/README.md"
    found = {}
    for doc in (*DOCS, scaffold):
        for n, line in enumerate(doc.read_text().splitlines(), 1):
            if "collection install" in line and "--offline" in line:
                found[f"{doc.relative_to(REPO)}:{n}"] = line.lstrip("# ").split("   #")[0].rstrip()
    assert len(found) >= 3 and any(k.startswith("scaffold/") for k in found), found
    wrong = {k: v for k, v in found.items() if v not in (want.format(v="*"), want.format(v="__COLLECTION_VERSION__"))}
    assert not wrong, wrong


def test_no_doc_sends_anyone_to_a_release_tag_that_does_not_exist() -> None:
    """gpufleet.core is built from a checkout of the version the fleet pins; no doc says to check out or
    build a tag of it unless that tag exists in this repository."""
    import subprocess

    version = yaml.safe_load((REPO / "galaxy.yml").read_text())["version"]
    p = subprocess.run(["git", "-C", str(REPO), "tag", "--list"], capture_output=True, text=True, check=False)
    tags = set(p.stdout.split())
    pattern = re.compile(rf"(\btag\b|\bcheckout\b|--branch)\W+`?v?({re.escape(version)}|__COLLECTION_VERSION__)\b")
    wrong = []
    for doc in (*DOCS, *sorted((REPO / "scaffold").rglob("*"))):
        if not doc.is_file():
            continue
        for n, line in enumerate(doc.read_text(errors="replace").splitlines(), 1):
            m = pattern.search(line)
            if m and m.group(2) not in tags and f"v{m.group(2)}" not in tags:
                wrong.append(f"{doc.relative_to(REPO)}:{n}: {line.strip()}")
    assert not wrong, wrong
