"""The Application status core: records, readiness, the first reason, the app tree, the table, the wait loop."""

from __future__ import annotations

import copy

import pytest
from argocd_apps import application, child, fleet_apps, resource, status

from ansible_collections.gpufleet.core.plugins.module_utils.argocd import status as st
from ansible_collections.gpufleet.core.plugins.module_utils.argocd.watch import wait_ready


def lookup_of(apps):
    by_ns: dict[str, dict] = {}
    for a in apps:
        by_ns.setdefault(a["metadata"]["namespace"], {})[a["metadata"]["name"]] = a
    calls = []

    def lookup(ns):
        calls.append(ns)
        return by_ns.get(ns, {})

    lookup.calls = calls
    return lookup


def test_synced_healthy_app_is_ready_without_reason():
    rec = st.app_status(application("a", wave=10, st=status()))
    assert rec.ready and rec.reason == ""
    assert (rec.sync, rec.health, rec.phase, rec.wave) == ("Synced", "Healthy", "Succeeded", 10)
    assert rec.revision == "3f2a9c1d0b7e"


@pytest.mark.parametrize(
    ("sync", "health", "phase"),
    [("OutOfSync", "Healthy", "Succeeded"), ("Synced", "Progressing", "Succeeded"), ("Synced", "Healthy", "Running")],
)
def test_not_ready_unless_synced_healthy_and_idle(sync, health, phase):
    assert not st.app_status(application("a", st=status(sync, health, phase=phase))).ready


def test_app_without_status_is_not_ready_and_says_so():
    rec = st.app_status(application("fresh"))
    assert not rec.ready and (rec.sync, rec.health) == ("Unknown", "Unknown")
    assert "not reconciled" in rec.reason


def test_error_condition_comes_first():
    # an AppProject refusing the destination: Argo CD sets an InvalidSpecError condition
    app = application(
        "tenant-a-escape",
        st=status(
            "Unknown",
            "Unknown",
            phase=None,
            resources=[resource("ConfigMap", "x", "tenant-b", health="Missing", status="OutOfSync")],
            conditions=[
                {"type": "SharedResourceWarning", "message": "ConfigMap/x is part of another app"},
                {
                    "type": "InvalidSpecError",
                    "message": "application destination server 'https://kubernetes.default.svc' and namespace\n"
                    "'tenant-b' do not match any of the allowed destinations in project 'tenant-a'",
                },
            ],
        ),
    )
    rec = st.app_status(app)
    assert rec.reason.startswith("InvalidSpecError: application destination")
    assert "\n" not in rec.reason and "project 'tenant-a'" in rec.reason


def test_failed_sync_names_the_resource_that_failed():
    app = application(
        "gpu-operator",
        st=status(
            "OutOfSync",
            "Missing",
            phase="Failed",
            op_message="one or more objects failed to apply, reason: admission webhook denied",
            sync_failures=[
                {
                    "group": "",
                    "version": "v1",
                    "kind": "Namespace",
                    "namespace": "",
                    "name": "gpu-operator",
                    "status": "Synced",
                    "message": "namespace created",
                },
                {
                    "group": "apps",
                    "version": "v1",
                    "kind": "DaemonSet",
                    "namespace": "gpu-operator",
                    "name": "nvidia-driver",
                    "status": "SyncFailed",
                    "message": "admission webhook denied the request",
                },
            ],
        ),
    )
    reason = st.app_status(app).reason
    assert reason.startswith("sync Failed: one or more objects failed to apply")
    assert "(DaemonSet/gpu-operator/nvidia-driver: admission webhook denied the request)" in reason


def test_old_failed_operation_does_not_hide_a_ready_app():
    app = application("a", st=status(phase="Failed", op_message="old failure"))
    assert st.app_status(app).ready


def test_degraded_resource_beats_progressing_and_outofsync():
    res = [
        resource("Deployment", "web", "t", group="apps", health="Progressing", message="waiting for rollout"),
        resource("ConfigMap", "cfg", "t", status="OutOfSync"),
        resource("StatefulSet", "db", "t", group="apps", health="Degraded", message="0/1 replicas ready"),
    ]
    rec = st.app_status(application("a", st=status("OutOfSync", "Degraded", resources=res)))
    assert rec.reason == "StatefulSet/t/db Degraded: 0/1 replicas ready"
    rec = st.app_status(application("a", st=status("OutOfSync", "Progressing", resources=res[:2])))
    assert rec.reason == "Deployment/t/web Progressing: waiting for rollout"
    rec = st.app_status(application("a", st=status("OutOfSync", "Healthy", resources=res[1:2])))
    assert rec.reason == "ConfigMap/t/cfg OutOfSync"


def test_cluster_scoped_resource_and_health_message():
    rec = st.app_status(
        application("a", st=status("Synced", "Degraded", resources=[resource("Namespace", "x", health="Degraded")]))
    )
    assert rec.reason == "Namespace/x Degraded"
    rec = st.app_status(application("a", st=status("Synced", "Degraded", health_message="the CR says no")))
    assert rec.reason == "health Degraded: the CR says no"


def test_tree_follows_children_recursively_and_reports_missing():
    tenant_root = application(
        "tenant-root", wave=5, st=status(resources=[child("tenant-a"), child("tenant-b", health="Missing")])
    )
    root = application(
        "root",
        st=status(
            "Synced",
            "Progressing",
            resources=[child("platform"), child("tenant-root"), resource("ConfigMap", "not-an-app", "argocd")],
        ),
    )
    apps = [root, application("platform", wave=-1, st=status()), tenant_root, application("tenant-a", st=status())]
    apps.append(application("unrelated", st=status("OutOfSync", "Degraded")))
    lookup = lookup_of(apps)
    recs = st.tree("root", "argocd", lookup)
    assert [r.name for r in recs] == ["root", "platform", "tenant-a", "tenant-b", "tenant-root"]
    assert lookup.calls == ["argocd"]  # one LIST per namespace, not one GET per app
    byname = {r.name: r for r in recs}
    assert byname["tenant-a"].parent == "tenant-root" and byname["platform"].parent == "root"
    missing = byname["tenant-b"]
    assert not missing.found and not missing.ready and "listed by tenant-root" in missing.reason
    assert st.summary(recs) == {"total": 5, "ready": 3, "not_ready": ["root", "tenant-b"]}


def test_tree_cuts_cycles_and_follows_other_namespaces():
    a = application("a", st=status(resources=[child("b", "team")]))
    b = application("b", namespace="team", st=status(resources=[child("a")]))
    lookup = lookup_of([a, b])
    recs = st.tree("a", "argocd", lookup)
    assert [r.key for r in recs] == ["argocd/a", "team/b"]
    assert sorted(lookup.calls) == ["argocd", "team"]


def test_tree_without_root_is_a_clear_error():
    with pytest.raises(st.StatusError, match="root Application argocd/gpu-east-root not found"):
        st.tree("gpu-east-root", "argocd", lookup_of([]))


def test_select_by_names_reports_unknown_names():
    recs = st.select([application("x", st=status())], ["x", "nope"], "argocd")
    assert [(r.name, r.ready, r.found) for r in recs] == [("nope", False, False), ("x", True, True)]
    assert [r.name for r in st.select([application("b"), application("a", wave=-5)])] == ["a", "b"]


def test_failure_message_and_table():
    apps = fleet_apps(1)
    bad = copy.deepcopy(apps)
    bad[4]["status"] = status(
        "OutOfSync",
        "Degraded",
        resources=[
            resource(
                "Deployment",
                "cert-manager",
                "kube-system",
                group="apps",
                health="Degraded",
                message="Deployment has minimum availability false",
            )
        ],
    )
    recs = st.tree("gpu-east-root", "argocd", lookup_of(bad))
    msg = st.failure_message(recs, waited=30)
    assert msg.splitlines()[0] == "1 of 15 Argo CD Applications not Synced/Healthy after waiting 30s:"
    assert msg.splitlines()[1] == (
        "  - argocd/gpu-east-cert-manager: OutOfSync/Degraded (Succeeded): "
        "Deployment/kube-system/cert-manager Degraded: Deployment has minimum availability false"
    )
    lines = st.table(recs)
    assert lines[0].split() == list(st.COLUMNS)
    assert len(lines) == 16
    assert lines[1].split()[:5] == ["gpu-east-root", "0", "Synced", "Healthy", "Succeeded"]
    cm = next(line for line in lines if line.startswith("gpu-east-cert-manager"))
    assert cm.split()[:4] == ["gpu-east-cert-manager", "20", "OutOfSync", "Degraded"]
    assert cm.endswith("Deployment has minimum availability false")
    # sync-wave order after the root, columns aligned
    waves = [int(line.split()[1]) for line in lines[2:]]
    assert waves == sorted(waves)
    assert len({line.index(" Synced") if " Synced" in line else -1 for line in lines[1:]} - {-1}) == 1


def test_progress_lines_and_changes():
    old = st.app_status(application("a", st=status("OutOfSync", "Missing", phase="Running", op_message="waiting")))
    new = st.app_status(application("a", st=status()))
    assert st.changes({old.key: old}, [new]) == [new]
    assert st.changes({new.key: new}, [new]) == []
    assert st.progress_line(12.04, new, old) == "[  12.0s] a: OutOfSync/Missing/Running -> Synced/Healthy/Succeeded"


class FakeClock:
    """Deterministic time for the wait loop (the real loop runs against the apiserver in tests/integration)."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, s):
        self.now += s


def test_wait_until_ready_records_each_change():
    apps = fleet_apps(1)
    apps[4]["status"] = status("OutOfSync", "Missing", phase="Running", op_message="waiting for healthy state")
    clock = FakeClock()
    polls = []

    def fetch():
        polls.append(clock.now)
        if clock.now >= 10:
            apps[4]["status"] = status()
        return st.tree("gpu-east-root", "argocd", lookup_of(apps))

    res = wait_ready(fetch, timeout=60, interval=5, clock=clock, sleep=clock.sleep)
    assert res.ready and res.waited == 10 and polls == [0, 5, 10]
    # 15 "new" lines on the first poll, then one line for the app that changed
    assert len(res.progress) == 16
    assert res.progress[-1] == "[  10.0s] gpu-east-cert-manager: OutOfSync/Missing/Running -> Synced/Healthy/Succeeded"


def test_wait_times_out_with_the_last_records():
    apps = fleet_apps(0)
    apps[2]["status"] = status("Synced", "Progressing")
    clock = FakeClock()
    res = wait_ready(
        lambda: st.tree("gpu-east-root", "argocd", lookup_of(apps)),
        timeout=12,
        interval=5,
        clock=clock,
        sleep=clock.sleep,
    )
    assert not res.ready and res.waited == 12 and res.polls == 4
    assert [r.name for r in st.not_ready(res.records)] == ["gpu-east-project-platform"]


def test_wait_for_a_root_that_appears_late_and_one_that_never_does():
    apps = fleet_apps(0)
    clock = FakeClock()

    def fetch():
        return st.tree("gpu-east-root", "argocd", lookup_of(apps if clock.now >= 5 else []))

    assert wait_ready(fetch, timeout=30, interval=5, clock=clock, sleep=clock.sleep).ready
    clock = FakeClock()
    with pytest.raises(st.StatusError, match=r"not found .*\(waited 10s\)"):
        wait_ready(
            lambda: st.tree("r", "argocd", lookup_of([])), timeout=10, interval=5, clock=clock, sleep=clock.sleep
        )


def test_empty_selection_is_never_ready():
    clock = FakeClock()
    res = wait_ready(lambda: [], timeout=5, interval=5, clock=clock, sleep=clock.sleep)
    assert not res.ready and res.records == []
