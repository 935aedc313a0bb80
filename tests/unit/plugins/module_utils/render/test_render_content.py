"""What the rendered tree says: the known pitfalls are handled, the fence is consistent everywhere,
the app-of-apps is wired (projects exist, $values files exist, waves ordered)."""

from __future__ import annotations

from pathlib import Path

import yaml
from render_fixtures import edit_vars, load, make_inventory, yaml_objects

from ansible_collections.gpufleet.core.plugins.module_utils import versions
from ansible_collections.gpufleet.core.plugins.module_utils.model import fence
from ansible_collections.gpufleet.core.plugins.module_utils.render import argocd as argo
from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_inventory

C = "clusters/gpu-east"


def apps(files: dict[str, bytes]) -> dict[str, dict]:
    return {
        o["metadata"]["name"]: o
        for r, o in yaml_objects(files)
        if (r.startswith(f"{C}/apps/") or (r.startswith(f"{C}/tenants/") and "/apps/" in r))
        and o["kind"] == "Application"
    }


def projects(files: dict[str, bytes]) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for r, o in yaml_objects(files) if o.get("kind") == "AppProject"}


def wave(app: dict) -> int:
    return int(app["metadata"]["annotations"][argo.WAVE])


def test_health_check_for_child_app_waves(files) -> None:
    values = load(files, f"{C}/platform/argocd/values.yaml")
    lua = values["configs"]["cm"]["resource.customizations.health.argoproj.io_Application"]
    assert "obj.status.health.status" in lua and 'hs.status = "Progressing"' in lua
    a = apps(files)
    # before every other app but the CRDs of the Argo CD release that runs (which need no health check)
    first = ("gpu-east-argocd", "gpu-east-argocd-crds")
    rest = min(wave(x) for n, x in a.items() if n not in first)
    assert wave(a["gpu-east-argocd-crds"]) < wave(a["gpu-east-argocd"]) < rest


def test_root_app_syncs_the_apps_dir(files) -> None:
    root = load(files, f"{C}/root-app.yaml")
    assert root["kind"] == "Application" and root["spec"]["source"]["path"] == f"gitops/{C}/apps"
    assert f"{C}/root-app.yaml" not in [r for r in files if r.startswith(f"{C}/apps/")]


def test_waves_crds_then_operators_then_clusters(files) -> None:
    a = apps(files)
    for t in ("research", "llm-pretrain"):
        chain = [f"{t}-host", f"{t}-vcluster", f"{t}-slurm-operator-crds", f"{t}-slurm-operator", f"{t}-slurm"]
        waves = [wave(a[n]) for n in chain]
        assert waves == sorted(waves) and len(set(waves)) == len(waves), dict(zip(chain, waves, strict=True))
    assert wave(a["gpu-east-cert-manager"]) < wave(a["gpu-east-gpu-operator"]) < wave(a["research-vcluster"])
    assert wave(a["inference-kueue"]) < wave(a["inference-objects"])
    assert all(wave(p) < min(map(wave, a.values())) for p in projects(files).values())


def test_every_app_is_wired(files) -> None:
    projs = projects(files)
    for name, app in apps(files).items():
        assert app["spec"]["project"] in projs, name
        sources = app["spec"].get("sources") or [app["spec"]["source"]]
        for s in sources:
            if "chart" in s:
                pinned = {(c["repo_url"], c["chart"], c["version"]) for c in versions.CHARTS.values()}
                assert (s["repoURL"], s["chart"], s["targetRevision"]) in pinned, name
                for vf in s["helm"]["valueFiles"]:
                    assert vf.startswith("$values/gitops/") and vf.removeprefix("$values/gitops/") in files, vf
            elif "path" in s and s["repoURL"] != "https://github.com/example-org/gpu-fleet.git":
                pinned = {(g["repo_url"], g["path"], g["revision"]) for g in versions.GIT_SOURCES.values()}
                assert (s["repoURL"], s["path"], s["targetRevision"]) in pinned, name
            elif "path" in s:
                d = s["path"].removeprefix("gitops/")
                assert any(r.startswith(d + "/") for r in files), (name, d)
            else:
                assert s == {
                    "repoURL": "https://github.com/example-org/gpu-fleet.git",
                    "targetRevision": "main",
                    "ref": "values",
                }
        dest = app["spec"]["destination"]["server"]
        proj = projs[app["spec"]["project"]]
        assert any(d["server"] == dest for d in proj["spec"]["destinations"]), (name, dest)


def test_cilium_gitops_safe(files, tmp_path: Path) -> None:
    v = load(files, f"{C}/platform/cilium/values.yaml")
    assert v["hubble"]["tls"]["auto"]["method"] == "cronJob"
    assert v["cni"]["exclusive"] is True
    inv = make_inventory(tmp_path)
    edit_vars(inv, "clusters.yml", lambda d: d["gpufleet_clusters"][0]["components"]["cilium"].update(exclusive=False))
    v2 = yaml.safe_load(render_inventory(inv).files[f"{C}/platform/cilium/values.yaml"])
    assert v2["cni"]["exclusive"] is False


def test_gpu_operator_tolerates_every_pool_and_maps_jobs(files) -> None:
    v = load(files, f"{C}/platform/gpu-operator/values.yaml")
    tol = v["daemonsets"]["tolerations"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in tol
    assert {"key": fence.POOL_KEY, "operator": "Exists", "effect": "NoSchedule"} in tol
    assert {"key": fence.POOL_KEY, "operator": "Exists", "effect": "NoSchedule"} in v["node-feature-discovery"][
        "worker"
    ]["tolerations"]
    assert v["dcgmExporter"]["hpcJobMapping"] == {"enabled": True, "directory": "/var/lib/dcgm-exporter/job-mapping"}
    slurm = load(files, f"{C}/tenants/research/slurm/values.yaml")
    assert slurm["vendor"]["nvidia"]["dcgm"]["jobMappingDir"] == v["dcgmExporter"]["hpcJobMapping"]["directory"]


def test_slurm_values(files) -> None:
    v = load(files, f"{C}/tenants/research/slurm/values.yaml")
    assert v["slurmKey"] == {"create": False, "secretRef": {"name": "slurm-auth-slurm", "key": "slurm.key"}}
    assert v["jwtKey"]["create"] is False and v["jwtKey"]["secretRef"]["name"]
    assert v["controller"]["extraConfMap"]["GresTypes"] == ["gpu"]
    assert set(v["nodesets"]) == {"research-batch", "research-debug"}
    for name, ns in v["nodesets"].items():
        frag = fence.slinky_nodeset_fragment(name)["podSpec"]
        assert ns["podSpec"]["tolerations"] == frag["tolerations"]
        assert frag["nodeSelector"].items() <= ns["podSpec"]["nodeSelector"].items()
        assert ns["scalingMode"] == "DaemonSet" and "replicas" not in ns
        assert ns["extraConfMap"]["Gres"] == ["gpu:8"]
    assert v["partitions"]["batch"]["nodesets"] == ["research-batch"]
    assert v["partitions"]["batch"]["configMap"]["Default"] == "YES"
    assert v["partitions"]["debug"]["configMap"]["MaxTime"] == "02:00:00"
    assert "Default" not in v["partitions"]["debug"]["configMap"]
    assert v["partitions"]["all"]["enabled"] is False
    assert v["configFiles"]["topology.conf"] == files[f"{C}/tenants/research/slurm/topology.conf"].decode()
    assert v["controller"]["extraConfMap"]["TopologyPlugin"] == "topology/tree"


def test_tenant_topology_holds_only_its_nodes(files) -> None:
    pools = {}
    tables = [f"{C}/POOLS.md", *(f"{C}/tenants/{t}/POOLS.md" for t in ("inference", "llm-pretrain", "research"))]
    for table in tables:  # the nodes of no tenant, then each tenant's own
        for line in files[table].decode().splitlines():
            cells = [c.strip() for c in line.strip("|").split("|")]
            if len(cells) == 8 and cells[0].startswith(("gpu", "sys")):
                assert cells[0] not in pools, cells[0]
                pools[cells[0]] = cells[1]
    ann = load(files, f"{C}/tenants/llm-pretrain/slurm/node-topology.yaml")["nodes"]
    assert ann and all(pools[n] == "pretrain" for n in ann)
    assert len(ann) == 32
    conf = files[f"{C}/tenants/llm-pretrain/slurm/topology.conf"].decode()
    research = [n for n, p in pools.items() if p.startswith("research")]
    assert research and not any(n in conf for n in research)


def test_autoscaled_pool_gets_replicas_and_ignore_differences(tmp_path: Path) -> None:
    inv = make_inventory(tmp_path)

    def autoscale(d: dict) -> None:
        for p in d["gpufleet_pools"]:
            if p["name"] == "research-batch":
                p["slurm"]["autoscale"] = True

    edit_vars(inv, "pools.yml", autoscale)
    files = render_inventory(inv).files
    v = load(files, f"{C}/tenants/research/slurm/values.yaml")
    assert v["nodesets"]["research-batch"]["scalingMode"] == "StatefulSet"
    assert v["nodesets"]["research-batch"]["replicas"] == 12
    app = apps(files)["research-slurm"]
    assert {"group": "slinky.slurm.net", "kind": "NodeSet", "jsonPointers": ["/spec/replicas"]} in app["spec"][
        "ignoreDifferences"
    ]
    assert "RespectIgnoreDifferences=true" in app["spec"]["syncPolicy"]["syncOptions"]


def test_vcluster_fence_quota_and_endpoint(files) -> None:
    v = load(files, f"{C}/tenants/research/vcluster/values.yaml")
    assert v["sync"]["fromHost"]["nodes"]["selector"]["labels"] == {fence.TENANT_KEY: "research"}
    assert v["sync"]["toHost"]["pods"]["enforceTolerations"] == [
        f"{fence.POOL_KEY}=research-batch:NoSchedule",
        f"{fence.POOL_KEY}=research-debug:NoSchedule",
    ]
    assert v["sync"]["fromHost"]["nodes"]["syncBackChanges"] is False
    q = v["policies"]["resourceQuota"]["quota"]
    for k in ("requests.cpu", "requests.memory", "limits.cpu", "limits.memory", "count/pods"):
        assert k in q and q[k] is None, k
    assert q["requests.nvidia.com/gpu"] == 14 * 8
    assert v["policies"]["limitRange"]["enabled"] is False
    assert v["exportKubeConfig"]["server"] == "https://research.vc-research:443"
    assert "research.vc-research.svc" in v["controlPlane"]["proxy"]["extraSANs"]
    app = apps(files)["research-slurm"]
    assert app["spec"]["destination"]["server"] == "https://research.vc-research:443"
    single = load(files, f"{C}/tenants/llm-pretrain/vcluster/values.yaml")
    assert single["sync"]["fromHost"]["nodes"]["selector"]["labels"] == {fence.POOL_KEY: "pretrain"}


def test_slurm_keys_are_read_by_secret_ref_and_never_synced_from_the_host(files) -> None:
    """The slurm chart reads its keys by secretRef (the apply step writes them inside the vCluster);
    no vCluster syncs Secrets from the host."""
    slurm = load(files, f"{C}/tenants/research/slurm/values.yaml")
    assert slurm["slurmKey"]["create"] is False and slurm["jwtKey"]["create"] is False
    assert slurm["slurmKey"]["secretRef"]["name"] == "slurm-auth-slurm"
    for t in ("research", "llm-pretrain", "inference"):
        assert "secrets" not in load(files, f"{C}/tenants/{t}/vcluster/values.yaml")["sync"]["fromHost"]
    # accounting (on by default): the database password by passwordKeyRef, written inside the vCluster too
    assert slurm["accounting"]["storageConfig"]["passwordKeyRef"]["name"] == "slurm-accounting-db"


def test_tenant_project_fences(files) -> None:
    p = projects(files)["research"]["spec"]
    assert p["destinations"] == [{"server": "https://research.vc-research:443", "namespace": "*"}]
    assert p["permitOnlyProjectScopedClusters"] is True
    kinds = {(x["group"], x["kind"]) for x in p["namespaceResourceBlacklist"]}
    assert {("", "ResourceQuota"), ("", "LimitRange"), ("networking.k8s.io", "NetworkPolicy")} <= kinds
    ckinds = {(x["group"], x["kind"]) for x in p["clusterResourceBlacklist"]}
    assert ("kueue.x-k8s.io", "ClusterQueue") in ckinds
    host = "https://kubernetes.default.svc"
    assert all(d["server"] != host for d in p["destinations"])  # no host destination: no host cluster kinds
    tenant_apps = [a for a in apps(files).values() if a["spec"]["project"] == "research"]
    assert [a["metadata"]["name"] for a in tenant_apps] == ["research-slurm"]


def test_network_isolation_per_tenant(files) -> None:
    pol = load(files, f"{C}/tenants/research/host/network-policy.yaml")
    sel = pol["spec"]["endpointSelector"]["matchLabels"]
    assert sel == {"k8s:io.cilium.k8s.namespace.labels.gpufleet.io/tenant": "research"}
    assert pol["spec"]["ingress"][0]["fromEndpoints"] == [{"matchLabels": sel}]
    ns = load(files, f"{C}/tenants/research/host/namespace.yaml")
    assert ns["metadata"]["labels"][fence.NAMESPACE_TENANT_LABEL] == "research"


def test_slurm_home_static_pv_pvc(files) -> None:
    pv = load(files, f"{C}/platform/slurm-home/pv-research.yaml")
    assert pv["spec"]["accessModes"] == ["ReadWriteMany"]
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert pv["spec"]["csi"]["driver"] == "nfs.csi.k8s.io"
    assert pv["spec"]["claimRef"] == {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "namespace": "vc-research",
        "name": "slurm-home-x-slurm-x-research",
    }
    objs = list(yaml.safe_load_all(files[f"{C}/tenants/research/objects/objects.yaml"]))
    pvc = next(o for o in objs if o and o["kind"] == "PersistentVolumeClaim")
    assert pvc["metadata"] == {"name": "slurm-home", "namespace": "slurm"}
    assert pvc["spec"]["storageClassName"] == "" and pvc["spec"]["accessModes"] == ["ReadWriteMany"]


def test_kueue_queues_for_kubernetes_pools_only(files) -> None:
    objs = [o for o in yaml.safe_load_all(files[f"{C}/tenants/inference/objects/objects.yaml"]) if o]
    kinds = sorted((o["kind"], o["metadata"]["name"], o["metadata"].get("namespace", "")) for o in objs)
    assert ("ClusterQueue", "inference", "") in kinds and ("ResourceFlavor", "inference", "") in kinds
    assert ("LocalQueue", "inference", "serving") in kinds and ("LocalQueue", "inference", "eval") in kinds
    cq = next(o for o in objs if o["kind"] == "ClusterQueue")
    gpu = cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][-1]
    assert gpu == {"name": "nvidia.com/gpu", "nominalQuota": 96, "borrowingLimit": 0}
    # Kueue admits a pod only when every resource it requests is covered by the queue.
    group = cq["spec"]["resourceGroups"][0]
    assert group["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu"]
    quotas = {r["name"]: r["nominalQuota"] for r in group["flavors"][0]["resources"]}
    assert quotas["cpu"] > 0 and str(quotas["memory"]).endswith("i")
    for t in ("research", "llm-pretrain"):
        text = files[f"{C}/tenants/{t}/objects/objects.yaml"].decode()
        assert "kueue" not in text


def test_report_says_what_runs_where(files) -> None:
    """The cluster's report: pools, tenants (links), platform; each tenant's own settings in its tree."""
    r = files[f"{C}/REPORT.md"].decode()
    assert "| pretrain | slurm | llm-pretrain | 32 | 256 |" in r
    assert "- `research`: [tenants/research/REPORT.md](tenants/research/REPORT.md)" in r
    assert "Slurm partition" not in r and "slurm-auth-jwt" not in r and "Research group" not in r
    research = files[f"{C}/tenants/research/REPORT.md"].decode()
    assert research.startswith("# Tenant `research` on cluster `gpu-east`")
    assert "Slurm partition `batch`" in research and "https://research.vc-research:443" in research
    assert "slurm-auth-jwt" in research
    assert "- Slurm login nodes: LoginSet `main`, 1 replica(s)." in research  # what a tenant changes most
    assert "Kueue ClusterQueue `inference`" in files[f"{C}/tenants/inference/REPORT.md"].decode()
    own = files[f"{C}/tenants/research/POOLS.md"].decode()
    assert "| research-batch | slurm | research | 12 | 96 |" in own and "| pretrain |" not in own
    platform_nodes = files[f"{C}/POOLS.md"].decode().split("| node |")[1]
    assert "| sys01 | system |" in platform_nodes and "| research |" not in platform_nodes


def _pool_column(markdown: str) -> list[str]:
    """The pool names of the first table of ``markdown`` whose first column is ``pool``."""
    table = markdown.split("| pool |", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    return [row.split("|")[1].strip() for row in table if row.split("|")[1].strip() != "-"]


def test_report_and_pool_table_list_pools_in_one_order(tmp_path: Path) -> None:
    """REPORT.md and POOLS.md list a cluster's pools in the assignment's order (by name), also where the
    order by kind differs: a spare pool named ``a-spare`` comes first in both."""
    inv = make_inventory(tmp_path)

    def rename_spare(d: dict) -> None:
        next(p for p in d["gpufleet_pools"] if p["name"] == "spare")["name"] = "a-spare"

    edit_vars(inv, "pools.yml", rename_spare)
    files = render_inventory(inv).files
    report, pools = _pool_column(files[f"{C}/REPORT.md"].decode()), _pool_column(files[f"{C}/POOLS.md"].decode())
    assert report == pools == sorted(pools) and pools[0] == "a-spare", (report, pools)


def test_topology_view_renders_like_subset(tmp_path: Path) -> None:
    from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
    from ansible_collections.gpufleet.core.plugins.module_utils.render.inputs import cluster_inputs
    from ansible_collections.gpufleet.core.plugins.module_utils.topology import render as tr

    fleet = load_fleet(make_inventory(tmp_path))
    inputs = cluster_inputs(fleet, fleet.clusters["gpu-east"])
    for pools in (["pretrain"], ["research-batch", "research-debug"], ["research-debug"], ["inference", "pretrain"]):
        nodes = sorted(n for p in pools for n in inputs.members[p])
        view, sub = inputs.topology_view(nodes), inputs.topology.subset(nodes)
        assert tr.render_tree(view) == tr.render_tree(sub)
        assert tr.render_yaml(view) == tr.render_yaml(sub)
        assert tr.slinky_topology_spec(view) == tr.slinky_topology_spec(sub)
        assert view.order == sub.order and view.leaf_groups == sub.leaf_groups and view.roots == sub.roots
