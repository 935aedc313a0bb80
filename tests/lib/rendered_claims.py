"""The storage claims a tenant's rendered apps make in its host namespace ``vc-<tenant>``, collected
from the rendered tree independently of render/tenants/quota.py (used by its unit test and by the quota
admission test on the real apiserver).

Every PersistentVolumeClaim and mariadb-operator MariaDB in the tenant's manifests, plus the
chart-made claims (vCluster data, slurmctld state) from the values files, with the defaults of the
pinned charts' values.yaml (``charts``: ../shared/upstream/charts).
"""

from __future__ import annotations

from pathlib import Path

import yaml
from render_fixtures import yaml_objects

C = "clusters/gpu-east"
UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def size(q: str) -> int:
    for u, m in UNITS.items():
        if str(q).endswith(u):
            return int(str(q)[: -len(u)]) * m
    return int(q)


def upstream(charts: Path, chart: str, *path: str):
    v = yaml.safe_load((charts / chart / "values.yaml").read_text())
    for k in path:
        v = v[k]
    return v


def claims_of(files: dict[str, bytes], tenant: str, charts: Path) -> dict[str, int]:
    """Every claim landing in vc-<tenant>, by what makes it: {"pvc <name>" | "mariadb <name>" |
    "vcluster data" | "slurmctld state": bytes}."""
    base = f"{C}/tenants/{tenant}"
    out: dict[str, int] = {}
    for rel, obj in yaml_objects(files):
        if not rel.startswith(base + "/") or "/apps/" in rel:
            continue
        if obj.get("kind") == "PersistentVolumeClaim":
            out[f"pvc {obj['metadata']['name']}"] = size(obj["spec"]["resources"]["requests"]["storage"])
        if obj.get("kind") == "MariaDB":
            out[f"mariadb {obj['metadata']['name']}"] = size(obj["spec"]["storage"]["size"])
    vc = yaml.safe_load(files[f"{base}/vcluster/values.yaml"])
    claim = vc["controlPlane"].get("statefulSet", {}).get("persistence", {}).get("volumeClaim", {})
    default = upstream(charts, "vcluster", "controlPlane", "statefulSet", "persistence", "volumeClaim")
    out["vcluster data"] = size(claim.get("size", default["size"]))
    slurm = files.get(f"{base}/slurm/values.yaml")
    if slurm:
        persistence = yaml.safe_load(slurm)["controller"].get("persistence", {})
        default = upstream(charts, "slurm", "controller", "persistence", "resources", "requests", "storage")
        out["slurmctld state"] = size(persistence.get("resources", {}).get("requests", {}).get("storage", default))
    return out
