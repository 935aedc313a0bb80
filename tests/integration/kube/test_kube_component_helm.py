"""install_method helm installs the values the GitOps render wrote (gpufleet.core.component).

The five component roles (cilium, gpu_operator, shared_storage, slurm_operator with its CRDs chart,
argocd) run through ``ansible-playbook`` with ``install_method: helm`` against the real test
kube-apiserver, with the real ``helm`` (built into .build/bin) and kubernetes.core.helm, reading the
rendered sample tree in ``gitops/clusters/gpu-east``.

Test double: the upstream charts cannot be downloaded here, so every role's chart is replaced by
one tiny local chart whose only template writes ``.Values`` (as JSON) into a ConfigMap. What the
test checks is therefore exactly what Helm received as values, per release, compared with the
rendered values file; chart contents are not under test.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from controlplane import BIN_DIR, REPO_ROOT, LocalControlPlane, shared_test_helpers
from playbook_runner import playbook_env, run_playbook, task_results

from ansible_collections.gpufleet.core.plugins.module_utils.versions import GIT_SOURCES

pytestmark = pytest.mark.kube

GITOPS = REPO_ROOT / "gitops" / "clusters" / "gpu-east"
CHART_VERSION = "0.1.0"
FENCE_KEY = "node-restriction.kubernetes.io/gpufleet-pool"
# role -> (namespace, release) and the rendered file its values come from
RELEASES = {
    "cilium": ("hc-cilium", "cilium", GITOPS / "platform/cilium/values.yaml"),
    "gpu_operator": ("hc-gpu-operator", "gpu-operator", GITOPS / "platform/gpu-operator/values.yaml"),
    "shared_storage": ("hc-storage", "csi-driver-nfs", GITOPS / "platform/csi-driver-nfs/values.yaml"),
    "slurm_operator_crds": (
        "hc-slinky",
        "slurm-operator-crds",
        GITOPS / "tenants/research/slurm-operator-crds/values.yaml",
    ),
    "slurm_operator": ("hc-slinky", "slurm-operator", GITOPS / "tenants/research/slurm-operator/values.yaml"),
}
# Argo CD manages itself in the sample tree: the bootstrap installs the values of its Application
ARGOCD_VALUES = GITOPS / "platform/argocd/values.yaml"

CHART_TEMPLATE = """apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-values
data:
  values.json: {{ toJson .Values | quote }}
"""


def rendered(path: Path) -> dict:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    assert len(docs) == 1, path
    return docs[0]


@pytest.fixture(scope="module")
def bed(kube_cluster: LocalControlPlane, tmp_path_factory) -> dict:
    helm = shared_test_helpers().require_tool("helm", "installs the component releases")
    shared_test_helpers().require_path(GITOPS / "root-app.yaml", "the rendered sample tree")
    work = tmp_path_factory.mktemp("component-helm")
    chart = work / "values-echo"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(
        yaml.safe_dump({"apiVersion": "v2", "name": "values-echo", "version": CHART_VERSION, "type": "application"})
    )
    (chart / "templates" / "values.yaml").write_text(CHART_TEMPLATE)
    (work / "hosts.yml").write_text("all:\n  hosts:\n    localhost:\n      ansible_connection: local\n")
    return {"kube": kube_cluster, "dir": work, "chart": chart, "helm": helm}


def play(bed: dict, argocd_cm: Path | None = None, gpu_values: Path | None = None) -> Path:
    local = {"chart_ref": str(bed["chart"]), "chart_repo_url": "", "version": CHART_VERSION}
    access = {"cluster_access_kubeconfig": str(bed["kube"].kubeconfig), "cluster_access_wait": False}

    def role(name: str, extra: dict) -> dict:
        return {
            "name": f"install {name}",
            "ansible.builtin.include_role": {"name": f"gpufleet.core.{name}"},
            "vars": {f"{name}_install_method": "helm", **access, **extra},
        }

    ns = {k: v[0] for k, v in RELEASES.items()}
    tasks = [
        role(
            "cilium",
            {"cilium_chart": local, "cilium_namespace": ns["cilium"], "cilium_values_file": str(RELEASES["cilium"][2])},
        ),
        role(
            "gpu_operator",
            {
                "gpu_operator_chart": local,
                "gpu_operator_namespace": ns["gpu_operator"],
                "gpu_operator_values_file": str(gpu_values or RELEASES["gpu_operator"][2]),
            },
        ),
        role(
            "shared_storage",
            {
                "shared_storage_chart": local,
                "shared_storage_namespace": ns["shared_storage"],
                "shared_storage_values_file": str(RELEASES["shared_storage"][2]),
                "shared_storage_nfs_server": "nfs.example.invalid",
                "shared_storage_nfs_share": "/export/gpufleet",
                "shared_storage_storage_class": "hc-shared",
            },
        ),
        role(
            "slurm_operator",
            {
                "slurm_operator_chart": local,
                "slurm_operator_crds_chart": local,
                "slurm_operator_namespace": ns["slurm_operator"],
                "slurm_operator_values_file": str(RELEASES["slurm_operator"][2]),
                "slurm_operator_crds_values_file": str(RELEASES["slurm_operator_crds"][2]),
            },
        ),
        role(
            "argocd",
            {
                "argocd_chart": local,
                "argocd_namespace": "hc-argocd",
                **({"argocd_cm_file": str(argocd_cm)} if argocd_cm else {"argocd_values_file": str(ARGOCD_VALUES)}),
            },
        ),
    ]
    path = bed["dir"] / f"play-{len(list(bed['dir'].glob('play-*')))}.yml"
    path.write_text(
        yaml.safe_dump(
            [{"name": "helm path", "hosts": "localhost", "gather_facts": False, "tasks": tasks}], sort_keys=False
        )
    )
    return path


def helm_env(bed: dict, user: bool = False) -> dict[str, str]:
    """The run's environment: the built binaries and helm on PATH, helm's state under the bed (``user``:
    as a user runs site.yml, see playbook_env)."""
    env = playbook_env(
        user=user,
        HELM_CACHE_HOME=str(bed["dir"] / "helm-cache"),
        HELM_CONFIG_HOME=str(bed["dir"] / "helm-config"),
        HELM_DATA_HOME=str(bed["dir"] / "helm-data"),
    )
    env["PATH"] = f"{BIN_DIR}:{Path(bed['helm']).parent}:{env.get('PATH', '')}"
    return env


def run(bed: dict, playbook: Path, *flags: str, ok: bool = True) -> list[dict]:
    proc = run_playbook(bed["dir"] / "hosts.yml", playbook, *flags, env=helm_env(bed), ok=ok)
    return task_results(proc.stdout)


def installed_values(bed: dict, namespace: str, release: str) -> tuple[dict, dict]:
    """(helm get values, the values the chart rendered into its ConfigMap) of one release."""
    kube = bed["kube"]
    got = subprocess.run(
        [bed["helm"], "get", "values", release, "-n", namespace, "-o", "json", f"--kubeconfig={kube.kubeconfig}"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    cm = kube.get_json("configmap", f"{release}-values", "-n", namespace)
    return json.loads(got.stdout) or {}, json.loads(cm["data"]["values.json"])


def releases(bed: dict) -> set[str]:
    kube = bed["kube"]
    out = subprocess.run(
        [bed["helm"], "list", "-A", "-o", "json", f"--kubeconfig={kube.kubeconfig}"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return {f"{r['namespace']}/{r['name']}" for r in json.loads(out.stdout) if r["namespace"].startswith("hc-")}


def test_check_mode_installs_nothing(bed):
    results = run(bed, play(bed), "--check")
    assert [r for r in results if r.get("changed")], results
    assert releases(bed) == set()


def test_helm_releases_get_the_rendered_values_then_rerun_is_unchanged(bed):
    results = run(bed, play(bed))
    installs = [r for r in results if "status" in r and r.get("changed")]
    assert len(installs) == 6, [r["name"] for r in results]
    expected = {f"{ns}/{rel}" for ns, rel, _ in RELEASES.values()} | {"hc-argocd/argocd"}
    assert releases(bed) == expected
    for role, (ns, rel, path) in RELEASES.items():
        want = rendered(path)
        got, echoed = installed_values(bed, ns, rel)
        assert got == want, role
        assert echoed == want, role
    # what the issue called out: fence tolerations and our Cilium settings, not chart/role defaults
    gpu = installed_values(bed, "hc-gpu-operator", "gpu-operator")[0]
    assert {"key": FENCE_KEY, "operator": "Exists", "effect": "NoSchedule"} in gpu["daemonsets"]["tolerations"]
    cilium = installed_values(bed, "hc-cilium", "cilium")[0]
    assert cilium["cni"] == {"exclusive": True} and cilium["operator"] == {"replicas": 2}
    # Argo CD: the values its own Application syncs (with the health check in configs.cm)
    argocd = installed_values(bed, "hc-argocd", "argocd")
    assert argocd[0] == argocd[1] == rendered(ARGOCD_VALUES)
    assert "argoproj.io_Application" in next(iter(argocd[0]["configs"]["cm"]))

    again = run(bed, play(bed))
    assert [r["name"] for r in again if r.get("changed")] == [], "second run changed something"


def test_missing_or_bad_values_file_fails_before_helm(bed, tmp_path):
    before = releases(bed)
    results = run(bed, play(bed, gpu_values=tmp_path / "not-rendered.yaml"), ok=False)
    failed = [r for r in results if r.get("failed")]
    assert len(failed) == 1 and "not-rendered.yaml is not a rendered values file" in failed[0]["msg"], failed
    assert "render the tree first" in failed[0]["msg"]
    listy = tmp_path / "list.yaml"
    listy.write_text("- a\n- b\n")
    results = run(bed, play(bed, gpu_values=listy), ok=False)
    assert "list.yaml is not a rendered values file" in next(r for r in results if r.get("failed"))["msg"]
    results = run(bed, play(bed, argocd_cm=listy), ok=False)
    assert "is not a rendered argocd-cm" in next(r for r in results if r.get("failed"))["msg"]
    assert releases(bed) == before


def argocd_crds_git(tmp_path: Path) -> dict[str, str]:
    """git settings (GIT_CONFIG_* environment) that send the argo-cd repository's URL to a local copy of
    its ``manifests/crds`` at the pinned tag (tools/build.sh charts): what a site's Git mirror answers.
    Stand-in for the network only; the argocd role's bootstrap clones and applies it as it would upstream."""
    src = GIT_SOURCES["argocd_crds"]
    crds = BIN_DIR.parent / "share" / "argocd-crds"
    if not (crds / "kustomization.yaml").is_file():
        pytest.fail(f"{crds} is missing (tools/build.sh charts)")
    repo = tmp_path / "argo-cd"
    (repo / src["path"]).mkdir(parents=True)
    for f in sorted(crds.glob("*.yaml")):
        (repo / src["path"] / f.name).write_bytes(f.read_bytes())
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "crds"], ["tag", src["revision"]]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    return {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": f"url.file://{repo}.insteadOf",
        "GIT_CONFIG_VALUE_0": src["repo_url"],
    }


def test_site_apply_installs_helm_components_with_the_values_it_rendered(bed, tmp_path):
    """site.yml -e gpufleet_apply=true on a fleet whose components use install_method helm:
    render, then apply reads each component's values from the tree it just rendered."""
    import shutil

    inv = tmp_path / "inv"
    shutil.copytree(REPO_ROOT / "inventories" / "sample", inv)
    clusters_file = inv / "group_vars" / "all" / "clusters.yml"
    clusters = yaml.safe_load(clusters_file.read_text())
    comps = clusters["gpufleet_clusters"][0]["components"]
    for name in ("cilium", "gpu_operator", "shared_storage", "slurm_operator"):
        comps[name] = {**(comps.get(name) or {}), "install_method": "helm", "namespace": f"hs-{name.replace('_', '-')}"}
    clusters_file.write_text(yaml.safe_dump(clusters, sort_keys=False))
    gitops = tmp_path / "gitops"
    local = {"chart_ref": str(bed["chart"]), "chart_repo_url": "", "version": CHART_VERSION}
    extra = {
        "gpufleet_gitops_dir": str(gitops),
        "gpufleet_apply": True,
        "gpufleet_bootstrap": True,  # Argo CD and Cilium with Helm too
        "gpufleet_kubeconfig": str(bed["kube"].kubeconfig),
        "gpufleet_discover_live": False,
        "gpufleet_apply_node_pools": False,
        "gpufleet_register_tenants": False,
        "gpufleet_apply_status": False,
        "gpufleet_root_application": "",
        # the local values-echo chart for every release (by chart key), in this test's namespaces
        "component_chart_overrides": {
            c: local for c in ("cilium", "gpu_operator", "csi_driver_nfs", "slurm_operator", "slurm_operator_crds")
        },
        "argocd_chart": local,
        "argocd_namespace": "hs-argocd",
        "cluster_access_wait": False,
    }
    extra_file = tmp_path / "extra.json"
    extra_file.write_text(json.dumps(extra))
    env = {**helm_env(bed, user=True), **argocd_crds_git(tmp_path)}
    run_playbook(inv, Path("site.yml"), "-e", f"@{extra_file}", env=env, timeout=900, cwd=REPO_ROOT)
    c = gitops / "clusters" / "gpu-east"
    want = {
        ("hs-cilium", "cilium"): rendered(c / "platform/cilium/values.yaml"),
        ("hs-gpu-operator", "gpu-operator"): rendered(c / "platform/gpu-operator/values.yaml"),
        ("hs-shared-storage", "csi-driver-nfs"): rendered(c / "platform/csi-driver-nfs/values.yaml"),
        ("hs-slurm-operator", "slurm-operator"): rendered(c / "tenants/llm-pretrain/slurm-operator/values.yaml"),
        ("hs-slurm-operator", "slurm-operator-crds"): rendered(
            c / "tenants/llm-pretrain/slurm-operator-crds/values.yaml"
        ),
        ("hs-argocd", "argocd"): rendered(c / "platform/argocd/values.yaml"),
    }
    assert want[("hs-gpu-operator", "gpu-operator")]["daemonsets"]["tolerations"]  # fence tolerations rendered
    for (ns, rel), values in want.items():
        got, echoed = installed_values(bed, ns, rel)
        assert got == echoed == values, (ns, rel)
    # helm components have no Argo CD Application in the tree they were rendered into
    apps = {p.name for p in (c / "apps").iterdir()}
    assert not {"10-cilium.yaml", "30-gpu-operator.yaml", "40-csi-driver-nfs.yaml"} & apps
