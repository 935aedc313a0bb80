"""Real Argo CD syncing the sample fleet: time from the root Application applied to all
plain-manifest apps (AppProjects, argocd-config, host namespaces and network policies, shared
storage PVs, tenant objects) Synced+Healthy, and to every app Synced+Healthy: the first install of
the sample as shipped, accounting included (chart apps use the test-double charts, the tenant
vCluster's syncer and operators are doubled: tests/integration/argocd). Prints a table; asserts
nothing.

    .venv/bin/python bench/bench_argocd_sync.py [--runs N]

Needs root, redis-server and the binaries from tools/build.sh (incl. argocd); without them it
prints why and exits 0.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests" / "integration" / "argocd"))
sys.path.insert(0, str(REPO / "tests" / "lib"))  # real_vcluster (one real vCluster per tenant)
sys.path.insert(0, str(REPO / "tests" / "integration" / "kube"))
os.environ.setdefault("ANSIBLE_COLLECTIONS_PATH", str(REPO / ".build" / "collections"))
sys.path.insert(0, str(REPO / ".build" / "collections"))


def missing() -> list[str]:
    from controlplane import BIN_DIR, missing_binaries

    out = missing_binaries()
    out += [b for b in ("argocd", "helm", "vcluster") if not os.access(BIN_DIR / b, os.X_OK)]
    out += [t for t in ("redis-server", "git", "ip") if shutil.which(t) is None]
    if not (REPO / ".build" / "share" / "prometheus-operator-crds").is_dir():
        out.append("prometheus-operator CRDs (tools/build.sh promcrds)")
    if os.geteuid() != 0:
        out.append("root (ip netns)")
    return out


def one_run() -> dict[str, float]:
    from argocd_bed import is_plain, prepare, rendered_apps, start_bed, sync_root

    row: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="gpufleet-bench-argocd-") as tmp:
        t0 = time.monotonic()
        with start_bed(Path(tmp)) as bed:
            row["bed_up_s"] = time.monotonic() - t0
            row["argocd_up_s"] = bed.argocd.startup_seconds or 0.0
            t1 = time.monotonic()
            prepare(bed)
            row["register_s"] = time.monotonic() - t1
            synced = sync_root(bed)
            apps = rendered_apps(bed)
            row["apps"] = len(apps)
            row["plain_apps"] = sum(1 for a in apps.values() if is_plain(a))
            row["plain_synced_s"] = synced.plain_seconds
            row["all_synced_s"] = synced.seconds
            t2 = time.monotonic()
        row["teardown_s"] = time.monotonic() - t2
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1)
    args = ap.parse_args()
    gone = missing()
    if gone:
        print(f"bench_argocd_sync: skipped, missing: {', '.join(gone)}")
        return 0
    rows = [one_run() for _ in range(args.runs)]
    cols = ["bed_up_s", "argocd_up_s", "register_s", "plain_synced_s", "all_synced_s", "teardown_s"]
    print(
        f"Argo CD sync of the sample fleet ({int(rows[0]['apps'])} apps, {int(rows[0]['plain_apps'])} plain-manifest)"
    )
    print(f"{'metric':<16} {'median':>8} {'min':>8} {'max':>8}")
    for c in cols:
        vals = [r[c] for r in rows]
        print(f"{c:<16} {statistics.median(vals):8.1f} {min(vals):8.1f} {max(vals):8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
