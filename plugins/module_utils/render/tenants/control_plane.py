"""The tenants' vCluster control planes fit in the share of the system pool the platform gives them.

Every tenant's vCluster control plane runs on the cluster's system pool, next to Argo CD and the
platform's operators. A tenant may raise its control plane's requests (allow-listed, at most 8 CPU
and 16Gi each); together they must stay within :data:`TENANT_SHARE` of the system pool's
allocatable CPU and memory (from the nodes snapshot), else the render fails naming the tenant that
asks the most, the sum and the pool's size. Tenants that set no request count with the chart's
default request. Nodes
snapshots without sizes (no ``status.allocatable``) bound nothing.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Cluster, Fleet
from ansible_collections.gpufleet.core.plugins.module_utils.model.tenant_values import quantity

# the vcluster chart's own request (values.yaml controlPlane.statefulSet.resources.requests, 0.36.1)
CHART_REQUESTS = {"cpu": "200m", "memory": "256Mi"}
# the part of the system pool's allocatable that tenants' control planes may request together
TENANT_SHARE = Fraction(1, 2)
REQUESTS = ("controlPlane", "statefulSet", "resources", "requests")


def _requests(values: dict[str, Any]) -> dict[str, Any]:
    cur: Any = values
    for k in REQUESTS:
        cur = cur.get(k) if isinstance(cur, dict) else None
    return cur if isinstance(cur, dict) else {}


def requested(fleet: Fleet, cluster: Cluster) -> dict[str, dict[str, Decimal]]:
    """tenant -> {cpu, memory} its control plane requests (cores, bytes)."""
    out = {}
    for name, t in sorted(fleet.tenants.items()):
        if t.cluster != cluster.name:
            continue
        given = {**_requests(t.vcluster_values), **_requests(cluster.tenant_override(name, "vcluster"))}
        out[name] = {r: quantity(str(given.get(r, CHART_REQUESTS[r]))) or Decimal(0) for r in CHART_REQUESTS}
    return out


def check(fleet: Fleet, cluster: Cluster, system: str | None, allocatable: dict[str, int | str]) -> None:
    """Fail when the control planes of ``cluster``'s tenants together ask for more than their share
    of the system pool ``system`` (``allocatable``: its totals as quantities)."""
    if system is None:
        return
    asks = requested(fleet, cluster)
    for res in CHART_REQUESTS:
        have = quantity(str(allocatable.get(res, 0))) or Decimal(0)
        cap = have * TENANT_SHARE.numerator / TENANT_SHARE.denominator
        total = sum(a[res] for a in asks.values())
        if have and total > cap:  # a snapshot without sizes (0) bounds nothing
            top = max(sorted(asks), key=lambda n: asks[n][res])
            raise GpufleetError(
                f"gpufleet_tenants[{top}].vcluster.values.{'.'.join(REQUESTS)}.{res}: the vCluster control planes of"
                f" cluster {cluster.name!r} request {_fmt(total, res)} {res} together, more than the"
                f" {TENANT_SHARE} of system pool {system!r} ({_fmt(have, res)} allocatable) tenants may use; the"
                f" rest is the platform's (Argo CD, operators). Lower the requests or grow the system pool"
            )


def _fmt(v: Decimal, res: str) -> str:
    if res == "memory":
        return f"{(v / 2**30).quantize(Decimal('0.01'))}Gi"
    return f"{v.normalize()}"
