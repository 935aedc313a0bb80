"""The rules that protect a fleet's data across version changes, as data, each with its upstream source.

One table per kind of fact:

- ``SLURM_RELEASES``: each Slurm major release and the releases it upgrades from in place (Slurm's
  upgrade guide, "Compatibility Window"). Outside that window the daemons refuse to start and running
  jobs and accounting are lost, so the upgrade must go in steps.
- ``SLINKY_SLURM``: the Slurm release the images of each Slinky ``slurm`` chart line run by default (the
  fleet does not pin Slurm images itself, so the chart decides which Slurm runs).
- ``RULES``: what gpufleet does about a change (``refuse``: exit 2 with the reason and what to do
  instead; ``flag``: shown in the review), with the page that documents why.

``check(old, new)`` in :mod:`.versions` applies them to two inventories.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ansible_collections.gpufleet.core.plugins.module_utils.versions import SLINKY_SLURM_TAG

SLURM_UPGRADES = "https://slurm.schedmd.com/upgrades.html"

# release -> releases a daemon of this release upgrades from in place (state files, database records)
SLURM_RELEASES: dict[str, tuple[str, ...]] = {
    "23.02": ("22.05", "21.08"),
    "23.11": ("23.02", "22.05"),
    "24.05": ("23.11", "23.02"),
    "24.11": ("24.05", "23.11", "23.02"),
    "25.05": ("24.11", "24.05", "23.11"),
    "25.11": ("25.05", "24.11", "24.05"),
    "26.05": ("25.11", "25.05", "24.11"),
    "26.11": ("26.05", "25.11", "25.05"),
}

# Slinky ``slurm`` chart line (major.minor) -> the Slurm release of its default images (from the image
# tags, versions.SLINKY_SLURM_TAG)
SLINKY_SLURM: dict[str, str] = {line: tag.split("-", maxsplit=1)[0] for line, tag in SLINKY_SLURM_TAG.items()}

# the order Slurm's upgrade guide gives ("Upgrade Procedure"): the database first, the clients last
SLURM_UPGRADE_ORDER: tuple[tuple[str, str], ...] = (
    ("slurmdbd", "accounting: converts the accounting database on its first start"),
    ("slurmctld", "controller: converts StateSaveLocation on its first start"),
    ("slurmd", "workers (NodeSets): running jobs keep the old slurmstepd until they end"),
    ("login", "login pods and client commands"),
    ("slurmrestd", "REST API: a client of slurmctld and slurmdbd, with the login pods"),
)


@dataclass(frozen=True)
class Rule:
    id: str
    action: str  # refuse | flag
    what: str
    source: str


RULES: dict[str, Rule] = {
    r.id: r
    for r in (
        Rule(
            "slurm-window",
            "refuse",
            "a Slurm upgrade starts only from a release inside the target's compatibility window",
            f"{SLURM_UPGRADES}#compatibility_window",
        ),
        Rule(
            "slurm-downgrade",
            "refuse",
            "no going back to an older Slurm major release: slurmdbd converted the accounting database and"
            " slurmctld its state files when the newer release first started",
            f"{SLURM_UPGRADES}#revert",
        ),
        Rule(
            "slurm-unknown",
            "refuse",
            "a Slurm release gpufleet has no compatibility data for is not rolled out",
            f"{SLURM_UPGRADES}#compatibility_window",
        ),
        Rule(
            "slinky-order",
            "refuse",
            "the Slinky CRD chart and the operator chart carry the same version, and the slurm chart's"
            " release series is not newer than the operator's (CRDs, then the operator, then the clusters)",
            "https://github.com/SlinkyProject/slurm-operator/tree/v1.2.1#upgrades",
        ),
        Rule(
            "chart-downgrade",
            "flag",
            "a chart going to an older version runs older templates against objects the newer one wrote",
            "https://helm.sh/docs/helm/helm_rollback/",
        ),
        Rule(
            "driver-downgrade",
            "flag",
            "an older GPU driver replaces the driver pod on every GPU node (the operator drains them)",
            "https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/gpu-driver-upgrades.html",
        ),
    )
}


def version_key(version: str) -> tuple[int, ...] | None:
    """Numeric fields of a dotted version (``v26.7.0``, ``595.91.07``), for ordering; None if not dotted."""
    m = re.match(r"^v?(\d+(?:\.\d+)*)", version.strip())
    return tuple(int(x) for x in m.group(1).split(".")) if m else None


def slinky_slurm_release(chart_version: str) -> str | None:
    """The Slurm release the Slinky ``slurm`` chart ``chart_version`` runs (None: not in the table)."""
    key = version_key(chart_version)
    return SLINKY_SLURM.get(f"{key[0]}.{key[1]}") if key and len(key) >= 2 else None


def upgrade_path(old: str, new: str) -> list[str] | None:
    """The shortest chain of releases from ``old`` to ``new`` (each step inside the next's window),
    excluding ``old``; None when the table cannot bridge them."""
    order = sorted(SLURM_RELEASES, key=version_key)
    if new not in SLURM_RELEASES or version_key(new) <= version_key(old):  # type: ignore[operator]
        return None
    frontier: dict[str, list[str]] = {old: []}
    for release in order:  # releases in order: a chain only ever goes forward
        if version_key(release) <= version_key(old):  # type: ignore[operator]
            continue
        sources = [s for s in SLURM_RELEASES[release] if s in frontier]
        if sources:
            best = min(sources, key=lambda s: len(frontier[s]))
            frontier[release] = [*frontier[best], release]
        if release == new:
            break
    return frontier.get(new)
