"""Apply the data-protecting rules (:mod:`.rules`) to a version change between two inventories.

``check(old, new)`` compares the fleet as it was (the pull request's base, or None for a new fleet) with
the fleet as it will be and returns every :class:`Finding`: ``refuse`` findings stop the change (the
command exits 2 with the reason and what to do instead), ``flag`` findings are shown in the review,
``note`` findings say what the change does that a revert cannot undo.

The Slurm release a fleet runs is the one its Slinky ``slurm`` chart ships (``rules.SLINKY_SLURM``):
gpufleet pins the chart, not the images.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from ansible_collections.gpufleet.core.plugins.module_utils.daytwo.rules import (
    RULES,
    SLINKY_SLURM,
    SLURM_RELEASES,
    SLURM_UPGRADE_ORDER,
    slinky_slurm_release,
    upgrade_path,
    version_key,
)
from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError, Issue
from ansible_collections.gpufleet.core.plugins.module_utils.model.fleet import Fleet
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
from ansible_collections.gpufleet.core.plugins.module_utils.scale.check import CheckError, _extract, _git
from ansible_collections.gpufleet.core.plugins.module_utils.versions import CHARTS, chart


class RefusedChange(GpufleetError):
    """A version change the rules refuse; the message holds every reason and what to do instead."""


@dataclass(frozen=True, order=True)
class Finding:
    action: str  # refuse | flag | note
    rule: str  # a key of rules.RULES
    subject: str
    reason: str
    instead: str = ""
    key: tuple[str, ...] = ()  # the inventory setting it is about: gpufleet_versions.<component>.version

    @property
    def source(self) -> str:
        return RULES[self.rule].source

    def issue(self, fleet: Fleet) -> Issue | None:
        """``line()`` at the file, line and key of the setting in ``fleet``'s inventory, the way the
        inventory's validation errors say it (model/inventory.py ``RawModel.issue``); None without a key."""
        return fleet.source.issue(self.key, self.line()) if self.key and fleet.source is not None else None

    def located(self, fleet: Fleet) -> str:
        return str(self.issue(fleet) or self.line())

    def line(self) -> str:
        text = f"{self.action.upper()} [{self.rule}] {self.subject}: {self.reason}"
        if self.instead:
            text += f"; instead: {self.instead}"
        return f"{text} (source: {self.source})"


def _version_key(fleet: Fleet, *components: str) -> tuple[str, ...]:
    """The ``gpufleet_versions`` key of the first of ``components`` the inventory sets (the first if none)."""
    keys = [("gpufleet_versions", c, "version") for c in components]
    where = fleet.source.where if fleet.source is not None else {}
    return next((k for k in keys if k in where), keys[0])


def _slurm_tenants(fleet: Fleet) -> list[str]:
    return sorted(t for t in fleet.tenants if fleet.tenant_pools(t, "slurm"))


def slurm_release(fleet: Fleet) -> tuple[str, str | None]:
    """(slurm chart version, the Slurm release it runs or None when the table does not know it)."""
    version = chart("slurm", fleet.versions)["version"]
    return version, slinky_slurm_release(version)


def _slinky_order(fleet: Fleet) -> list[Finding]:
    crds = chart("slurm_operator_crds", fleet.versions)["version"]
    operator = chart("slurm_operator", fleet.versions)["version"]
    slurm = chart("slurm", fleet.versions)["version"]
    out = []
    if version_key(crds) != version_key(operator):
        out.append(
            Finding(
                "refuse",
                "slinky-order",
                f"slurm-operator-crds {crds} / slurm-operator {operator}",
                "the CRD chart and the operator chart differ",
                "set gpufleet_versions.slurm_operator_crds.version and slurm_operator.version to one version",
                _version_key(fleet, "slurm_operator_crds", "slurm_operator"),
            )
        )
    op, sl = version_key(operator) or (), version_key(slurm) or ()
    if sl[:2] > op[:2]:
        out.append(
            Finding(
                "refuse",
                "slinky-order",
                f"slurm {slurm} / slurm-operator {operator}",
                "the slurm chart is of a newer release series than the operator that reconciles it",
                f"upgrade the operator (and its CRDs) to {slurm} first, in its own pull request",
                _version_key(fleet, "slurm", "slurm_operator"),
            )
        )
    return out


def _slurm_up(old: str, new: str, tenants: list[str], fleet: Fleet) -> Finding:
    if old in SLURM_RELEASES[new]:
        with_db = [t for t in tenants if fleet.tenants[t].accounting.enabled]
        order = " -> ".join(name for name, _step in SLURM_UPGRADE_ORDER)
        db = f"slurmdbd converts the accounting database of {', '.join(with_db)}" if with_db else "no accounting"
        return Finding(
            "note",
            "slurm-downgrade",
            f"Slurm {old} -> {new} ({', '.join(tenants)})",
            f"not undone by a revert: {db} and slurmctld converts its state files on their first start"
            f" (order {order}); back up StateSaveLocation and the databases before merging",
            key=_version_key(fleet, "slurm"),
        )
    path = upgrade_path(old, new)
    steps = " -> ".join([old, *path]) if path else ""
    return Finding(
        "refuse",
        "slurm-window",
        f"Slurm {old} -> {new} ({', '.join(tenants)})",
        f"{new} upgrades in place only from {', '.join(SLURM_RELEASES[new])}; the daemons would refuse to start"
        " and running jobs and accounting records would be lost",
        f"upgrade in steps, one pull request each, every step running before the next: {steps}"
        if steps
        else "no chain of supported upgrades is known; see the upgrade guide",
        _version_key(fleet, "slurm"),
    )


def _slurm(old: Fleet, new: Fleet) -> list[Finding]:
    tenants = _slurm_tenants(new)
    if not tenants:
        return []
    old_chart, old_rel = slurm_release(old)
    new_chart, new_rel = slurm_release(new)
    if new_rel is None or new_rel not in SLURM_RELEASES:
        return [
            Finding(
                "refuse",
                "slurm-unknown",
                f"slurm chart {new_chart}",
                "gpufleet does not know which Slurm release this chart runs or from which releases it upgrades",
                "use a slurm chart of a line this gpufleet.core knows ("
                + ", ".join(f"{line}.x: Slurm {rel}" for line, rel in sorted(SLINKY_SLURM.items()))
                + "); a newer line needs a gpufleet.core that knows it (raise the pin in requirements.yml)",
                _version_key(new, "slurm"),
            )
        ]
    if old_rel is None or old_rel == new_rel or not _slurm_tenants(old):
        return []
    if version_key(new_rel) > version_key(old_rel):  # type: ignore[operator]
        return [_slurm_up(old_rel, new_rel, tenants, new)]
    return [
        Finding(
            "refuse",
            "slurm-downgrade",
            f"Slurm {old_rel} -> {new_rel} (slurm chart {old_chart} -> {new_chart}; {', '.join(tenants)})",
            f"the daemons of {old_rel} converted the accounting database and the controller state; {new_rel}"
            " cannot read them (a revert of the upgrade cannot undo that conversion)",
            f"stay on {old_rel}; to go back, restore StateSaveLocation and the accounting database from the"
            " backups taken before the upgrade, outside gpufleet, then change the version",
            _version_key(new, "slurm"),
        )
    ]


def _charts(old: Fleet, new: Fleet) -> list[Finding]:
    out = []
    for name in sorted(CHARTS):
        a, b = chart(name, old.versions)["version"], chart(name, new.versions)["version"]
        ka, kb = version_key(a), version_key(b)
        if ka is not None and kb is not None and kb < ka:
            out.append(
                Finding(
                    "flag",
                    "chart-downgrade",
                    f"chart {chart(name, new.versions)['chart']} {a} -> {b}",
                    "a downgrade: read the chart's upgrade notes for state the newer version wrote",
                    key=_version_key(new, name),
                )
            )
    return out


def driver_version(fleet: Fleet, cluster: str) -> str | None:
    comp = fleet.clusters[cluster].components.get("gpu_operator")
    driver = (comp.values.get("driver") if comp is not None else None) or {}
    version = driver.get("version") if isinstance(driver, dict) else None
    return str(version) if version is not None else None


def _drivers(old: Fleet, new: Fleet) -> list[Finding]:
    out = []
    for cluster in sorted(set(old.clusters) & set(new.clusters)):
        a, b = driver_version(old, cluster), driver_version(new, cluster)
        ka, kb = version_key(a or ""), version_key(b or "")
        if ka and kb and kb < ka:
            out.append(
                Finding(
                    "flag",
                    "driver-downgrade",
                    f"cluster {cluster}: GPU driver {a} -> {b}",
                    "a downgrade: every GPU node is drained and its driver pod replaced by the older driver",
                )
            )
    return out


def check(old: Fleet | None, new: Fleet) -> list[Finding]:
    """Every finding of the change ``old`` -> ``new`` (refusals first)."""
    found = _slinky_order(new)
    if old is not None:
        found += _slurm(old, new) + _charts(old, new) + _drivers(old, new)
    else:
        found += [f for f in _slurm(new, new) if f.action == "refuse"]
    rank = {"refuse": 0, "flag": 1, "note": 2}
    return sorted(found, key=lambda f: (rank[f.action], f))


def refuse(findings: list[Finding], fleet: Fleet) -> None:
    """Raise :class:`RefusedChange` (exit 2) when any finding refuses the change; each refusal names the
    file, line and key of ``fleet``'s inventory it is about."""
    refused = [f for f in findings if f.action == "refuse"]
    if refused:
        raise RefusedChange("refused:\n" + "\n".join(f"  - {f.located(fleet)}" for f in refused))


def load_change(inventory: str | Path, base: str | None = None) -> tuple[Fleet | None, Fleet]:
    """(the inventory at Git revision ``base``, its merge base with HEAD, or None; the inventory as it is)."""
    given = Path(inventory)
    given = given.parent if given.is_file() else given
    new = load_fleet(given)  # its messages name the files as the user gave the inventory
    inv = given.resolve()
    if base is None:
        return None, new
    root = Path(_git(inv, "rev-parse", "--show-toplevel").decode().strip())
    try:
        commit = _git(root, "merge-base", base, "HEAD").decode().strip()
    except CheckError:
        commit = _git(root, "rev-parse", "--verify", f"{base}^{{commit}}").decode().strip()
    rel = inv.relative_to(root).as_posix()
    with tempfile.TemporaryDirectory(prefix="gpufleet-versions-") as tmp:
        old = load_fleet(Path(tmp) / rel) if _extract(root, commit, rel, Path(tmp)) else None
    return old, new
