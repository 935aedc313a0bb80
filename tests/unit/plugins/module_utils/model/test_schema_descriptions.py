"""The schema describes the objects a platform engineer writes (docs/fleet.schema.json is what editors show)."""

from __future__ import annotations

from ansible_collections.gpufleet.core.plugins.module_utils.model.schema import SCHEMA


def test_objects_are_described() -> None:
    props = SCHEMA["properties"]
    cluster = props["gpufleet_clusters"]["items"]["properties"]
    pool = props["gpufleet_pools"]["items"]["properties"]
    tenant = props["gpufleet_tenants"]["items"]["properties"]
    for where, obj in (
        ("cluster fabric", cluster["fabric"]),
        ("cluster topology", cluster["topology"]),
        ("cluster components", cluster["components"]),
        ("fabric node_name_map", cluster["fabric"]["properties"]["node_name_map"]),
        ("pool size", pool["size"]),
        ("pool slurm", pool["slurm"]),
        ("tenant slurm", tenant["slurm"]),
    ):
        assert len(obj.get("description", "")) > 20, where
