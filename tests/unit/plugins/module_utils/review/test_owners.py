"""Attribution of fleet-repository files and of changes inside shared rendered files."""

from __future__ import annotations

from ansible_collections.gpufleet.core.plugins.module_utils.review import owners as own

P = own.PLATFORM_OWNER
T = own.tenant


def test_inputs() -> None:
    assert own.input_owner("group_vars/all/tenants/team-a.yml") == T("team-a")
    assert own.input_owner("group_vars/all/tenants.yml") == P  # the shared single list is the platform's
    assert own.input_owner("group_vars/all/tenants/sub/x.yml") == P
    assert own.input_owner("group_vars/all/pools.yml") == P
    assert own.input_owner("snapshots/gpu-1/nodes.yaml") == P
    assert own.is_lock("snapshots/gpu-1/pools.lock.yaml") and not own.is_lock("snapshots/pools.lock.yaml")


def test_rendered_scope_matches_whole_names() -> None:
    names = {"a", "a-0-project", "ab"}
    assert own.rendered_scope("clusters/c/tenants/a/slurm/values.yaml", names) == T("a")
    assert own.rendered_scope("clusters/c/tenants/zz/x.yaml", names) is None
    assert own.rendered_scope("clusters/c/apps/tenant-a.yaml", names) == T("a")
    assert own.rendered_scope("clusters/c/apps/tenant-ab.yaml", names) == T("ab")
    # tenant a-0-project's root app vs tenant a's AppProject: the longer name wins on its own file
    assert own.rendered_scope("clusters/c/apps/tenant-a-0-project.yaml", names) == T("a-0-project")
    assert own.rendered_scope("clusters/c/apps/10-cilium.yaml", names) is None


REPORT = """# Cluster `c`

Nodes: 16 (128 GPUs) in 4 pools.

## Pools

| pool | kind | tenant | nodes |
| --- | --- | --- | ---: |
| a | slurm | a | 6 |
| b | kubernetes | b | 4 |
| spare | spare | - | 4 |

## Tenants

### a

Slurm of a

### b

Kubernetes of b
"""


def changed(old: str, new: str, path: str = "clusters/c/REPORT.md") -> set[own.Owner]:
    return own.rendered_owners(path, old.encode(), new.encode(), {"a", "b"})


def test_markdown_sections_and_table_rows() -> None:
    assert changed(REPORT, REPORT.replace("Slurm of a", "Big Slurm of a")) == {T("a")}
    assert changed(REPORT, REPORT.replace("Kubernetes of b", "K8s of b")) == {T("b")}
    assert changed(REPORT, REPORT.replace("| b | kubernetes | b | 4 |", "| b | kubernetes | b | 5 |")) == {T("b")}
    moved = REPORT.replace("| a | slurm | a | 6 |", "| a | slurm | a | 5 |").replace(
        "| spare | spare | - | 4 |", "| spare | spare | - | 5 |"
    )
    assert changed(REPORT, moved) == {T("a"), P}
    assert changed(REPORT, REPORT.replace("in 4 pools", "in 5 pools")) == {P}


def test_vclusters_entries_and_the_manifest() -> None:
    old = "cluster: c\nvclusters:\n- {name: a, server: x}\n- {name: b, server: y}\n"
    assert changed(old, old.replace("server: y", "server: z"), "clusters/c/vclusters.yaml") == {T("b")}
    assert changed(old, old.replace("cluster: c", "cluster: d"), "clusters/c/vclusters.yaml") == {P}
    assert changed("x", "y", ".gpufleet-manifest") == set()
    assert changed("x", "y", "clusters/c/platform/gpu-operator/values.yaml") == {P}
    assert own.is_shared_platform_file("clusters/c/platform/gpu-operator/values.yaml")
    assert not own.is_shared_platform_file("clusters/c/tenants/a/slurm/values.yaml")
