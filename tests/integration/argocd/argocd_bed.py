"""The Argo CD test bed: every piece started, wired and stopped together; the root-app sync.

``start_bed`` starts, all on 127.0.0.1:
- the host cluster (tools/cluster.sh: etcd, kube-apiserver, scheduler, controller-manager, KWOK
  with the sample snapshot's GPU nodes, labelled and tainted for their pools as the apply step does);
- a Helm repository holding the real vcluster chart of the pinned release and test-double charts
  for the rest (the other upstream charts cannot be downloaded here);
- the sample inventory as shipped (accounting, monitoring, health on) rendered with ``repo_url`` = a
  local ``file://`` Git repository and ``gpufleet_chart_mirrors`` mapping every upstream chart
  repository to the local one;
- one real vCluster per tenant (real_vcluster.py: the vcluster 0.36.1 binary started with the
  configuration the real chart renders from the tenant's rendered values, host access through the
  chart's ServiceAccount and RBAC), reached at ``<tenant>.vc-<tenant>:443`` as the rendered
  Applications say; inside each Slurm tenant's the real Slinky operator and its webhook
  (tenant_slinky.py), and in every tenant's the MariaDB operator doubled (operator_doubles.py);
- Argo CD v3.5.1 (tools/argocd.sh) in a loopback-only network namespace, on the CRDs of that release
  as production gets them: the argocd role's bootstrap applies what the rendered argocd-crds
  Application names (the argo-cd repository's ``manifests/crds`` at the tag, served here as its
  mirror over Git's smart HTTP from the module of that release), then that Application keeps them.
``sync_root`` registers the tenants (the tenant role, for real), applies the root app and records
when each child app appeared and became healthy. Used by the tests and by bench/.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from argocd_harness import (
    ARGOCD_CRDS,
    CILIUM_CRDS,
    REPO_ROOT,
    HelmRepo,
    LocalArgoCD,
    LocalControlPlane,
    bed_inventory,
    fleet_repository,
    status_of,
    summary,
    synced_healthy,
)
from controlplane import load_node_snapshot
from operator_doubles import OperatorDoubles
from playbook_runner import run_playbook, write_play
from real_vcluster import CHART, FenceHost, RealVCluster, fence_nodes, run_kubectl
from slinky_objects import chart_objects, chart_values
from tenant_slinky import TenantSlinky, slurm_values

from ansible_collections.gpufleet.core.plugins.module_utils.versions import CHARTS, GIT_SOURCES

TENANTS = ("inference", "llm-pretrain", "research")
PROMETHEUS_CRDS = REPO_ROOT / ".build" / "share" / "prometheus-operator-crds"
SAMPLE = REPO_ROOT / "inventories" / "sample"
SAMPLE_NODES = SAMPLE / "snapshots" / "gpu-east" / "nodes.yaml"
WAVE = "argocd.argoproj.io/sync-wave"
CLUSTER = "gpu-east"
ROOT_APP = f"{CLUSTER}-root"


class TenantAPI:
    """A tenant's real vCluster as the tests reach it from here: its API through the forwarded port,
    under the name the rendered Applications use (``<tenant>.vc-<tenant>``)."""

    def __init__(self, vc: RealVCluster) -> None:
        self.vc = vc
        self.host = f"{vc.tenant}.vc-{vc.tenant}"
        self.kubeconfig = vc.state / "api-kubeconfig"

    def write_kubeconfig(self) -> None:
        cfg = yaml.safe_load(self.vc.virtual_kubeconfig().read_text())
        for c in cfg["clusters"]:
            c["cluster"]["server"] = f"https://127.0.0.1:{self.vc.port}"
            c["cluster"]["tls-server-name"] = self.host
        self.kubeconfig.write_text(yaml.safe_dump(cfg))

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run_kubectl([], self.kubeconfig, f"kubectl ({self.host})", args, input, check)

    def get_json(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)


@dataclass
class ArgoBed:
    host: LocalControlPlane
    tenants: dict[str, TenantAPI]
    argocd: LocalArgoCD
    helm: HelmRepo
    repo: Path
    inventory: Path
    doubles: OperatorDoubles
    slinky: dict[str, TenantSlinky]
    root_app: Path = field(init=False)

    def __post_init__(self) -> None:
        self.root_app = self.repo / "gitops" / "clusters" / CLUSTER / "root-app.yaml"


def with_ephemeral_storage(node: dict[str, Any]) -> dict[str, Any]:
    """The snapshot keeps no ``ephemeral-storage`` (every kubelet reports it): without it no pod that
    requests some (the vcluster chart's control plane does, 1Gi) fits on a KWOK node."""
    status = node.setdefault("status", {})
    for key in ("capacity", "allocatable"):
        status.setdefault(key, {}).setdefault("ephemeral-storage", "1Ti")
    return node


def _parallel(jobs: list[Any]) -> None:
    """Run the callables at once (most of their time is waiting); raise the first error."""
    errors: list[BaseException] = []

    def run(job: Any) -> None:
        try:
            job()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(j,)) for j in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def slurm_chart_files(tenant_dir: Path) -> dict[str, str]:
    """The slurm chart stand-in's ``objects/<clusterName>.yaml`` of every Slurm tenant."""
    out = {}
    for t in TENANTS:
        values = slurm_values(tenant_dir, t)
        if values is not None:
            v = chart_values(values)
            out[f"objects/{v['clusterName']}.yaml"] = yaml.safe_dump_all(chart_objects(v), sort_keys=True)
    return out


def argocd_repo(helm: HelmRepo, base: Path) -> str:
    """The mirror of the argo-cd Git repository: ``manifests/crds`` of the release the bed runs (the
    module at its tag, tools/build.sh charts), tagged with that release; returns its URL."""
    src = GIT_SOURCES["argocd_crds"]
    tag = (ARGOCD_CRDS / ".version").read_text().strip()
    if tag != src["revision"]:
        raise RuntimeError(f"{ARGOCD_CRDS} holds the CRDs of {tag}, the render pins {src['revision']}")
    files = {f"{src['path']}/{f.name}": f for f in sorted(ARGOCD_CRDS.glob("*.yaml"))}
    return helm.publish_git("argo-cd", files, tag, base / "git-src")


def bootstrap_argocd_crds(host: LocalControlPlane, repo: Path) -> None:
    """The argocd role's bootstrap of the CRDs (tasks/crds.yml, for real): those the rendered
    argocd-crds Application names, fetched through the chart mirror and applied server-side."""
    task = {
        "name": "Argo CD CRDs",
        "ansible.builtin.include_role": {"name": "gpufleet.core.argocd", "tasks_from": "crds"},
        "vars": {
            "argocd_crds_app_file": str(repo / "gitops" / "clusters" / CLUSTER / "apps" / "00-argocd-crds.yaml"),
            "cluster_access_kubeconfig": str(host.kubeconfig),
        },
    }
    play = write_play(repo.parent / "argocd-crds.yml", [task], name="Apply the CRDs of the Argo CD release that runs")
    p = run_playbook("localhost,", play, "-c", "local", ok=None)
    if p.returncode != 0:
        raise RuntimeError(f"argocd role, CRDs: exit {p.returncode}\n{p.stdout[-4000:]}{p.stderr[-2000:]}")


@contextmanager
def start_bed(base: Path) -> Iterator[ArgoBed]:
    host = FenceHost()
    helm = HelmRepo(base / "helm-repo")
    argocd = LocalArgoCD(host, base / "argocd")
    vclusters: dict[str, RealVCluster] = {}
    slinky: dict[str, TenantSlinky] = {}
    doubles: OperatorDoubles | None = None
    try:
        host.start(base / "host")
        nodes = fence_nodes(load_node_snapshot(SAMPLE_NODES), SAMPLE, SAMPLE_NODES.parent / "pools.lock.yaml", CLUSTER)
        host.create_nodes_from_snapshot([with_ephemeral_storage(n) for n in nodes])
        mirrors = {c["repo_url"]: helm.url for c in CHARTS.values()}
        mirrors[GIT_SOURCES["argocd_crds"]["repo_url"]] = argocd_repo(helm, base)
        repo = base / "fleet.git"
        inventory = bed_inventory(base / "inventory", f"file://{repo}", mirrors)
        fleet_repository(repo, inventory)
        tenant_dir = repo / "gitops" / "clusters" / CLUSTER / "tenants"
        charts = sorted({(c["chart"], c["version"]) for c in CHARTS.values()})
        slurm = {"slurm": slurm_chart_files(tenant_dir)}
        helm.publish(charts, base / "chart-src", real={"vcluster": CHART}, files=slurm)
        assert host.kubeconfig is not None
        for t in TENANTS:
            values = tenant_dir / t / "vcluster" / "values.yaml"
            vclusters[t] = RealVCluster(t, values, host.kubeconfig, base / f"vc-{t}")
        _parallel([vc.start for vc in vclusters.values()])
        tenants = {t: TenantAPI(vc) for t, vc in vclusters.items()}
        for api in tenants.values():
            api.write_kubeconfig()
        doubles = OperatorDoubles({t: api.kubeconfig for t, api in tenants.items()}, host.kubeconfig)
        doubles.start()
        for t, vc in vclusters.items():
            values_file = slurm_values(tenant_dir, t)
            if values_file is not None:
                slinky[t] = TenantSlinky(vc, values_file, base / f"slinky-{t}")

        def start_argocd() -> None:
            argocd.install_config(crds=lambda: bootstrap_argocd_crds(host, repo))
            # each tenant API is https://<tenant>.vc-<tenant>:443 in the rendered tree: inside Argo CD's
            # namespace that name resolves to its own loopback address, forwarded to the vCluster
            forwards = {str(helm.port): helm.port}
            hosts = {}
            for i, api in enumerate(tenants.values()):
                addr = f"127.0.1.{i + 1}"
                hosts[api.host] = addr
                forwards[f"{addr}:443"] = api.vc.port
            argocd.start(forwards=forwards, hosts=hosts)

        _parallel([start_argocd, *(s.start for s in slinky.values())])
        yield ArgoBed(
            host=host,
            tenants=tenants,
            argocd=argocd,
            helm=helm,
            repo=repo,
            inventory=inventory,
            doubles=doubles,
            slinky=slinky,
        )
    finally:
        if doubles is not None:
            doubles.stop()
        for op in slinky.values():
            op.stop()
        argocd.stop()
        helm.close()
        for vc in vclusters.values():
            try:
                vc.stop()
            except Exception:
                pass
        host.stop()


def rendered(bed: ArgoBed) -> dict[str, dict[str, Any]]:
    """Every Application and AppProject under apps/ of the rendered tree and under each tenant root's
    tenants/<t>/apps/, by name."""
    out = {}
    base = bed.repo / "gitops" / "clusters" / CLUSTER
    for f in sorted([*(base / "apps").glob("*.yaml"), *(base / "tenants").glob("*/apps/*.yaml")]):
        for doc in yaml.safe_load_all(f.read_text()):
            if doc:
                out[f"{doc['kind']}/{doc['metadata']['name']}"] = doc
    return out


def rendered_apps(bed: ArgoBed) -> dict[str, dict[str, Any]]:
    return {k.split("/", 1)[1]: v for k, v in rendered(bed).items() if k.startswith("Application/")}


def is_plain(app: dict[str, Any]) -> bool:
    return "source" in app["spec"] and "path" in app["spec"]["source"]


def wave(app: dict[str, Any]) -> int:
    return int(app["metadata"].get("annotations", {}).get(WAVE, "0"))


def register_tenants(bed: ArgoBed) -> subprocess.CompletedProcess[str]:
    """Run the tenant role's register tasks (each vCluster exported its kubeconfig Secret itself)."""
    task = {
        "name": "Register",
        "ansible.builtin.include_role": {"name": "gpufleet.core.tenant", "tasks_from": "register"},
        "vars": {
            "tenant_name": "{{ item }}",
            "tenant_cluster": CLUSTER,
            "cluster_access_kubeconfig": str(bed.host.kubeconfig),
            "tenant_secret_retries": 1,
            "tenant_secret_delay": 1,
        },
        "loop": sorted(bed.tenants),
    }
    play = write_play(bed.repo.parent / "register.yml", [task], name="Register the tenants' vCluster APIs with Argo CD")
    return run_playbook("localhost,", play, "-c", "local", ok=None)


class Synced:
    """What the sync of the root app looked like from outside (polled once a second)."""

    def __init__(self) -> None:
        self.first_seen: dict[str, float] = {}
        self.first_healthy: dict[str, float] = {}
        self.seconds = 0.0  # root applied -> every app Synced+Healthy
        self.plain_seconds = 0.0  # root applied -> every plain-manifest app Synced+Healthy
        self.registration = ""


def prepare(bed: ArgoBed) -> str:
    """What the platform provides before the root app: Cilium's CRD, the PodMonitor CRD, and the
    tenants' registration (returns the playbook output)."""
    bed.host.kubectl(
        "apply",
        "--server-side",
        "-f",
        "-",
        input=json.dumps({"kind": "List", "apiVersion": "v1", "items": CILIUM_CRDS}),
    )
    # the site's monitoring stack (prometheus-operator) provides the PodMonitor CRD; the real
    # upstream CRDs come from tools/build.sh promcrds
    bed.host.apply_crds(sorted(PROMETHEUS_CRDS.glob("*.yaml")))
    # the bootstrap installs Argo CD with the values of its own rendered Application
    # (platform/argocd/values.yaml): seed their configs.cm (the Application health check that holds
    # the waves) into this Argo CD's argocd-cm, as that install would
    values_file = bed.repo / "gitops" / "clusters" / CLUSTER / "platform" / "argocd" / "values.yaml"
    if values_file.is_file():
        cm_data = yaml.safe_load(values_file.read_text())["configs"]["cm"]
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "argocd-cm", "namespace": "argocd"}}
        bed.host.kubectl(
            "apply",
            "--server-side",
            "--field-manager=gpufleet-bootstrap",
            "-f",
            "-",
            input=json.dumps({**cm, "data": cm_data}),
        )
    reg = register_tenants(bed)
    if reg.returncode != 0:
        raise RuntimeError(f"tenant registration failed:\n{reg.stdout}{reg.stderr}")
    return reg.stdout


def sync_root(bed: ArgoBed, timeout: float = 900) -> Synced:
    """Apply the root app; poll once a second until every rendered app is Synced+Healthy."""
    out = Synced()
    want = [*sorted(rendered_apps(bed)), ROOT_APP]
    plain = [n for n, a in rendered_apps(bed).items() if is_plain(a)]
    t0 = time.monotonic()
    bed.host.kubectl("apply", "--server-side", "--field-manager=gpufleet-bootstrap", "-f", str(bed.root_app))
    deadline = t0 + timeout
    apps: dict[str, dict[str, Any]] = {}
    while time.monotonic() < deadline:
        apps = bed.argocd.apps()
        now = time.monotonic() - t0
        for name, app in apps.items():
            out.first_seen.setdefault(name, now)
            if status_of(app)[1] == "Healthy":
                out.first_healthy.setdefault(name, now)
        if not out.plain_seconds and all(n in apps and synced_healthy(apps[n]) for n in plain):
            out.plain_seconds = now
        if all(n in apps and synced_healthy(apps[n]) for n in want):
            out.seconds = now
            return out
        time.sleep(1)
    bad = "\n".join(f"  {n}: {summary(apps.get(n))}" for n in want if not synced_healthy(apps.get(n) or {}))
    raise RuntimeError(
        f"not Synced+Healthy after {timeout}s:\n{bad}\ncontroller log:\n{bed.argocd.logs('controller', 60)}"
    )


def argocd_status(bed: ArgoBed, **args: Any) -> dict[str, Any]:
    """Run the gpufleet.core.argocd_status module for real (one task of a play) against the host API."""
    margs = {"kubeconfig": str(bed.host.kubeconfig), **args}
    play = write_play(bed.repo.parent / "argocd-status.yml", [{"name": "status", "gpufleet.core.argocd_status": margs}])
    p = run_playbook("localhost,", play, "-c", "local", ok=None)
    try:
        return json.loads(p.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    except (ValueError, KeyError, IndexError) as exc:
        raise RuntimeError(f"argocd_status: no result (exit {p.returncode}):\n{p.stdout}{p.stderr}") from exc
