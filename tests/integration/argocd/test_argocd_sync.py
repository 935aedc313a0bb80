"""A real Argo CD (v3.5.1, the release production runs; tools/build.sh argocd) syncs the sample fleet's rendered tree.

Real: kube-apiservers, KWOK GPU nodes, the host's kube-scheduler, Argo CD's repo-server and
application controller, redis, git, helm, ansible-playbook (tenant registration), the vcluster chart
and one vCluster 0.36.1 per tenant (its syncer puts the tenants' pods, claims, Services, ConfigMaps
and Secrets into ``vc-<tenant>``), reached as ``<tenant>.vc-<tenant>:443``.

Doubled, because it cannot run or be downloaded here:
- the other upstream charts (Cilium, cert-manager, GPU Operator, Slinky, Kueue, ...): small charts
  served from a local Helm repository through ``gpufleet_chart_mirrors``; each renders its values
  into a ConfigMap ``<release>-values`` so the ``$values`` wiring can be checked, and the Kueue
  double ships the four Kueue CRDs the tenant objects use (as the real chart does);
- inside the vClusters, the Slinky and MariaDB operators and the host's volume provisioner
  (operator_doubles.py, limits written there);
- the Cilium operator's CRD registration: the CiliumClusterwideNetworkPolicy CRD is applied here.
"""

from __future__ import annotations

import base64
import json
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from argocd_bed import (
    CLUSTER,
    ROOT_APP,
    ArgoBed,
    Synced,
    argocd_status,
    is_plain,
    rendered,
    rendered_apps,
    wave,
)
from argocd_harness import conditions, git, status_of, summary, synced_healthy


def test_root_app_syncs_every_rendered_child(argocd_bed: ArgoBed, synced: Synced) -> None:
    apps = argocd_bed.argocd.apps()
    assert synced_healthy(apps[ROOT_APP]), summary(apps[ROOT_APP])
    assert set(rendered_apps(argocd_bed)) == set(apps) - {ROOT_APP}
    projects = {
        p["metadata"]["name"] for p in argocd_bed.host.get_json("appprojects.argoproj.io", "-n", "argocd")["items"]
    }
    want = {k.split("/", 1)[1] for k in rendered(argocd_bed) if k.startswith("AppProject/")}
    assert want <= projects, sorted(want - projects)


def test_children_appear_in_wave_order(argocd_bed: ArgoBed, synced: Synced) -> None:
    """Within the cluster root and within each tenant root, an app of a later wave is created only
    after every app of the earlier waves was Healthy (the argocd-cm Application health check holds the
    waves; without it all appear at once). Tenants do not wait for each other.

    Read from the controller's own record, not from a poll: an app can be Healthy for less than a
    second (a claim not yet in the controller's cache) and then Progressing again; the root moves on
    at that moment. So "Healthy" is the controller's first ``Updated health status: ... -> Healthy``
    Event on the Application and "appears" is the Application's creationTimestamp (both whole
    seconds, from this machine's clock)."""
    apps = rendered_apps(argocd_bed)
    created = {n: _stamp(a["metadata"]["creationTimestamp"]) for n, a in argocd_bed.argocd.apps().items()}
    healthy: dict[str, float] = {}
    for ev in argocd_bed.host.get_json("events", "-n", "argocd")["items"]:
        obj, msg = ev.get("involvedObject") or {}, ev.get("message") or ""
        when = ev.get("eventTime") or ev.get("firstTimestamp") or ev.get("lastTimestamp")
        if obj.get("kind") == "Application" and msg.startswith("Updated health status:") and when:
            if msg.endswith("-> Healthy"):
                healthy[obj["name"]] = min(healthy.get(obj["name"], float("inf")), _stamp(when))

    def root_of(app: dict) -> str:  # the cluster root, or the tenant root that syncs it
        labels = app["metadata"].get("labels", {})
        tenant = labels.get("gpufleet.io/tenant")
        return "cluster" if not tenant or labels.get("gpufleet.io/component") == "tenant-root" else tenant

    groups: dict[str, dict[str, dict]] = {}
    for n, a in apps.items():
        groups.setdefault(root_of(a), {})[n] = a
    assert len(groups) >= 3, sorted(groups)
    for root, members in sorted(groups.items()):  # waves hold within each root, not across tenants
        waves = sorted({wave(a) for a in members.values()})
        assert len(waves) >= 3, (root, waves)
        for i, w in enumerate(waves[1:], 1):
            earlier = [n for n, a in members.items() if wave(a) < w]
            later = [n for n, a in members.items() if wave(a) == w]
            healthy_by = max(healthy[n] for n in earlier)
            seen_at = min(created[n] for n in later)
            assert seen_at >= healthy_by, (root, w, waves[i - 1], later, seen_at, healthy_by)
    assert synced.seconds > 0


def _stamp(text: str) -> float:
    """An RFC 3339 time of the apiserver (``2026-11-27T13:07:26Z``, or with microseconds) in seconds."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_plain_manifest_apps_synced_healthy_on_real_apiserver(argocd_bed: ArgoBed, synced: Synced) -> None:
    bed = argocd_bed
    live = bed.argocd.apps()
    plain = sorted(n for n, a in rendered_apps(bed).items() if is_plain(a))
    assert len(plain) >= 8, plain
    for n in plain:
        assert synced_healthy(live[n]), f"{n}: {summary(live[n])}"
        resources = live[n]["status"].get("resources") or []
        assert resources, f"{n}: synced nothing"
        assert all(r.get("status") == "Synced" for r in resources), (n, resources)
    # the objects are really there, on the host
    for t in bed.tenants:
        ns = bed.host.get_json("namespace", f"vc-{t}")
        assert ns["metadata"]["labels"]["gpufleet.io/tenant"] == t
        bed.host.get_json("ciliumclusterwidenetworkpolicies.cilium.io", f"tenant-{t}-isolation")
    storage = bed.repo / "gitops" / "clusters" / CLUSTER / "platform" / "slurm-home"
    want_pvs = {
        d["metadata"]["name"]
        for f in storage.glob("pv-*.yaml")
        for d in yaml.safe_load_all(f.read_text())
        if d and d["kind"] == "PersistentVolume"
    }
    live_pvs = {p["metadata"]["name"]: p for p in bed.host.get_json("pv")["items"]}
    assert want_pvs and want_pvs <= set(live_pvs), (want_pvs, sorted(live_pvs))
    for p in want_pvs:  # pre-bound to the claim vCluster's syncer (the double) creates on the host
        tenant = live_pvs[p]["metadata"]["labels"]["gpufleet.io/tenant"]
        assert live_pvs[p]["status"]["phase"] == "Bound", p
        assert live_pvs[p]["spec"]["claimRef"]["namespace"] == f"vc-{tenant}", p
    cm = bed.host.get_json("configmap", "argocd-cm", "-n", "argocd")
    assert "resource.customizations.health.argoproj.io_Application" in cm["data"]
    assert cm["data"]["timeout.reconciliation"] == "10s"  # install's keys survive (SSA, Prune=false)


def test_tenant_apps_sync_into_the_tenant_api_not_the_host(argocd_bed: ArgoBed, synced: Synced) -> None:
    bed = argocd_bed
    assert "registered" in synced.registration
    for t, plane in bed.tenants.items():
        secret = bed.host.get_json("secret", f"cluster-{t}", "-n", "argocd")
        assert secret["metadata"]["labels"]["argocd.argoproj.io/secret-type"] == "cluster"
        assert base64.b64decode(secret["data"]["server"]).decode() == f"https://{plane.host}:443"
    for t in ("research", "llm-pretrain"):
        pvc = bed.tenants[t].get_json("pvc", "slurm-home", "-n", "slurm")
        assert pvc["status"]["phase"] == "Bound"
        assert bed.host.kubectl("get", "namespace", "slurm", check=False).returncode != 0  # not on the host
    flavor = bed.tenants["inference"].get_json("resourceflavors.kueue.x-k8s.io", "inference")
    assert flavor["metadata"]["name"] == "inference"
    assert bed.tenants["research"].kubectl("get", "namespace", "serving", check=False).returncode != 0


def values_not_in(values: Any, config: Any, path: str = "") -> list[str]:
    """Paths of the set (non-null) leaves of ``values`` that ``config`` does not hold unchanged."""
    if not isinstance(values, dict):
        return [] if values == config else [path]
    if not isinstance(config, dict):
        return [path]
    return [p for k, v in values.items() if v is not None for p in values_not_in(v, config.get(k), f"{path}.{k}")]


def test_chart_apps_use_the_mirror_and_the_values_files(argocd_bed: ArgoBed, synced: Synced) -> None:
    """Multi-source apps: chart from the mirror, values from ``$values/<path>`` of this repository."""
    bed = argocd_bed
    live = bed.argocd.apps()
    charted = {n: a for n, a in rendered_apps(bed).items() if "sources" in a["spec"]}
    assert len(charted) >= 8, sorted(charted)
    for name, app in charted.items():
        chart_src = next(s for s in app["spec"]["sources"] if "chart" in s)
        assert chart_src["repoURL"] == bed.helm.url, name
        assert synced_healthy(live[name]), f"{name}: {summary(live[name])}"
        release = chart_src["helm"]["releaseName"]
        dest = app["spec"]["destination"]
        plane = bed.host
        for p in bed.tenants.values():
            if dest["server"] == f"https://{p.host}:443":
                plane = p
        values_file = chart_src["helm"]["valueFiles"][0].removeprefix("$values/")
        want = yaml.safe_load((bed.repo / values_file).read_text()) or {}
        if chart_src["chart"] == "vcluster":  # the real chart: its config Secret merges our values in
            secret = plane.get_json("secret", f"vc-config-{release}", "-n", dest["namespace"])
            assert secret["metadata"]["labels"]["chart"] == f"vcluster-{chart_src['targetRevision']}", name
            config = yaml.safe_load(base64.b64decode(secret["data"]["config.yaml"]))
            assert not values_not_in(want, config), (name, values_not_in(want, config))
            continue
        cm = plane.get_json("configmap", f"{release}-values", "-n", dest["namespace"])
        assert cm["data"]["chart"] == chart_src["chart"]
        assert cm["data"]["version"] == chart_src["targetRevision"]
        assert json.loads(cm["data"]["values.json"]) == want, name
    ours = {k.split("/", 1)[1] for k in rendered(bed) if k.startswith("AppProject/")}
    assert ours
    for proj in bed.host.get_json("appprojects.argoproj.io", "-n", "argocd")["items"]:
        if proj["metadata"]["name"] not in ours:
            continue  # "default", created by the install
        repos = proj["spec"]["sourceRepos"]
        if proj["metadata"]["name"].startswith(f"{CLUSTER}-host-"):  # a tenant's host folder: plain files only
            assert repos == [f"file://{bed.repo}"], repos
            continue
        assert bed.helm.url in repos, proj["metadata"]["name"]
        assert not [r for r in repos if "ghcr.io" in r or "charts.loft.sh" in r], repos


FENCE_MANIFESTS = {
    "fence/configmap/cm.yaml": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fence-probe"}},
    "fence/clusterqueue/cq.yaml": {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "fence-probe"},
        "spec": {"namespaceSelector": {}},
    },
    "fence/quota/rq.yaml": {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "fence-probe"},
        "spec": {"hard": {"pods": "1"}},
    },
}


def fence_app(name: str, path: str, server: str, namespace: str, repo: str) -> dict[str, Any]:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name, "namespace": "argocd"},
        "spec": {
            "project": "inference",
            "destination": {"server": server, "namespace": namespace},
            "source": {"repoURL": repo, "targetRevision": "main", "path": path},
            "syncPolicy": {"automated": {}, "retry": {"limit": 0}},
        },
    }


def test_appproject_fencing_is_enforced_by_argocd(argocd_bed: ArgoBed, synced: Synced) -> None:
    """Tenant inference's project refuses another tenant's API, the host's kube-system and a
    blacklisted cluster-scoped kind (ClusterQueue) and namespaced kind (ResourceQuota)."""
    bed = argocd_bed
    for rel, doc in FENCE_MANIFESTS.items():
        (bed.repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (bed.repo / rel).write_text(yaml.safe_dump(doc))
    git(bed.repo, "add", "-A")
    git(bed.repo, "commit", "-q", "-m", "fence probes")
    repo = f"file://{bed.repo}"
    own = f"https://{bed.tenants['inference'].host}:443"
    other = f"https://{bed.tenants['llm-pretrain'].host}:443"
    cases = {
        "fence-other-tenant": (
            fence_app("fence-other-tenant", "fence/configmap", other, "default", repo),
            "do not match any of the allowed destinations in project 'inference'",
        ),
        "fence-host-kube-system": (
            fence_app(
                "fence-host-kube-system", "fence/configmap", "https://kubernetes.default.svc", "kube-system", repo
            ),
            "do not match any of the allowed destinations in project 'inference'",
        ),
        "fence-cluster-kind": (
            fence_app("fence-cluster-kind", "fence/clusterqueue", own, "default", repo),
            "resource kueue.x-k8s.io:ClusterQueue is not permitted in project inference",
        ),
        "fence-quota": (
            fence_app("fence-quota", "fence/quota", own, "default", repo),
            "resource :ResourceQuota is not permitted in project inference",
        ),
    }
    control = fence_app("fence-control", "fence/configmap", own, "default", repo)
    items = [c[0] for c in cases.values()] + [control]
    bed.host.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    try:
        # the control app (same project, own API, an allowed kind) syncs: the refusals are the fence
        bed.argocd.wait(["fence-control"], synced_healthy, "Synced+Healthy", timeout=180)
        assert bed.tenants["inference"].get_json("configmap", "fence-probe", "-n", "default")

        def refusal(app: dict[str, Any]) -> list[str]:
            """Why Argo CD refused: app conditions (destination) or per-resource sync results (kind)."""
            op = (app.get("status") or {}).get("operationState") or {}
            results = (op.get("syncResult") or {}).get("resources") or []
            return conditions(app) + [f"{r.get('status')}: {r.get('message')}" for r in results]

        def refused(app: dict[str, Any]) -> bool:
            return any(cases[app["metadata"]["name"]][1] in m for m in refusal(app))

        apps = bed.argocd.wait(sorted(cases), refused, "refused by the project", timeout=180)
        for name in cases:
            assert status_of(apps[name])[0] != "Synced", (name, refusal(apps[name]))
        # the status module (apply's reader) reports the refusal as the reason
        res = argocd_status(bed, names=["fence-control", "fence-quota"])
        assert res["ready"] is False and res["summary"]["not_ready"] == ["fence-quota"], res.get("summary")
        quota = next(a for a in res["apps"] if a["name"] == "fence-quota")
        # today the reason is the app's SyncError condition; the per-resource "not permitted"
        # message is only in operationState.syncResult (see refusal() above)
        assert "SyncError" in quota["reason"] or "not permitted" in quota["reason"], quota
        assert bed.host.kubectl("get", "configmap", "fence-probe", "-n", "kube-system", check=False).returncode != 0
        assert (
            bed.tenants["llm-pretrain"]
            .kubectl("get", "configmap", "fence-probe", "-n", "default", check=False)
            .returncode
            != 0
        )
        assert (
            bed.tenants["inference"]
            .kubectl("get", "clusterqueue.kueue.x-k8s.io", "fence-probe", check=False)
            .returncode
            != 0
        )
        assert (
            bed.tenants["inference"]
            .kubectl("get", "resourcequota", "fence-probe", "-n", "default", check=False)
            .returncode
            != 0
        )
    finally:
        bed.host.kubectl(
            "delete", "applications.argoproj.io", "-n", "argocd", "--wait=false", *cases, "fence-control", check=False
        )


def test_no_drift_after_sync(argocd_bed: ArgoBed, synced: Synced) -> None:
    """A hard refresh of every app after the sync finds no diff and starts no new sync."""
    bed = argocd_bed
    names = [*sorted(rendered_apps(bed)), ROOT_APP]
    before = bed.argocd.apps()
    started = {n: (before[n]["status"].get("operationState") or {}).get("startedAt") for n in names}
    for n in names:
        bed.host.kubectl(
            "annotate",
            "--overwrite",
            "-n",
            "argocd",
            f"applications.argoproj.io/{n}",
            "argocd.argoproj.io/refresh=hard",
        )

    def refreshed(app: dict[str, Any]) -> bool:
        return "argocd.argoproj.io/refresh" not in (app["metadata"].get("annotations") or {})

    bed.argocd.wait(names, refreshed, "refreshed", timeout=300)
    time.sleep(12)  # one more reconciliation period (timeout.reconciliation 10s)
    after = bed.argocd.apps()
    for n in names:
        assert synced_healthy(after[n]), f"{n} drifted: {summary(after[n])}"
        # hook Jobs (the slurm chart's readiness gates) run once per sync: Argo CD lists them OutOfSync
        resources = [r for r in after[n]["status"].get("resources") or [] if not r.get("hook")]
        out_of_sync = [r for r in resources if r.get("status") != "Synced"]
        assert not out_of_sync, (n, out_of_sync)
        assert (after[n]["status"].get("operationState") or {}).get("startedAt") == started[n], f"{n} re-synced"


def test_argocd_status_module_reads_the_synced_tree(argocd_bed: ArgoBed, synced: Synced) -> None:
    """gpufleet.core.argocd_status over the root app: every rendered app, all Synced/Healthy."""
    res = argocd_status(argocd_bed, root=ROOT_APP)
    assert not res.get("failed"), res.get("msg")
    names = {a["name"] for a in res["apps"]}
    assert names == {*rendered_apps(argocd_bed), ROOT_APP}, sorted(names ^ {*rendered_apps(argocd_bed), ROOT_APP})
    assert res["ready"] is True, res["not_ready_report"]
    assert all(a["sync"] == "Synced" and a["health"] == "Healthy" for a in res["apps"])
    assert res["apps"][0]["name"] == ROOT_APP
