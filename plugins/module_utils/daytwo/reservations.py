"""The Slurm MAINT reservations of maintenance windows: plan the scontrol commands that make a tenant's
Slurm hold exactly the reservations the rendered ``maintenance.yaml`` lists for it.

Pure: ``plan(desired, shown)`` takes the tenant's rendered reservations and the output of
``scontrol show reservation -o`` and returns the commands (argv lists, without the prefix that reaches
the controller) to create the missing ones, update the ones whose nodes, start or duration differ and
delete the ``gpufleet-`` reservations no longer rendered (the return of a maintenance). Reservations
with other names are never touched. Times: Slurm reads ``StartTime`` in the controller's local time;
the Slinky images run slurmctld in UTC, so the rendered UTC time is passed as is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.deps import missing
from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.core.plugins.module_utils.hostlist import compress, expand
from ansible_collections.gpufleet.core.plugins.module_utils.model.maintenance_model import parse_duration
from ansible_collections.gpufleet.core.plugins.module_utils.pools.cordon import maintenance_file
from ansible_collections.gpufleet.core.plugins.module_utils.render.platform.maintenance import RESERVATION_PREFIX

try:
    import yaml
except ImportError:  # importing works without it; the first use raises a clear error
    yaml = missing("yaml", "PyYAML")


class ReservationError(GpufleetError):
    """The rendered reservations or scontrol's answer cannot be read."""


@dataclass(frozen=True)
class Reservation:
    name: str
    nodes: frozenset[str]
    start: str  # YYYY-MM-DDTHH:MM:SS (controller time)
    minutes: int
    flags: tuple[str, ...] = ()

    def fields(self) -> list[str]:
        return [
            f"ReservationName={self.name}",
            f"StartTime={self.start}",
            f"Duration={self.minutes}",
            f"Nodes={compress(self.nodes)}",
        ]


def desired(gitops_dir: str | Path, cluster: str, tenant: str) -> list[Reservation]:
    """The reservations the rendered tree lists for ``tenant`` (none when the file is absent)."""
    path = maintenance_file(gitops_dir, cluster)
    if not path.is_file():
        return []
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        out = []
        for r in doc.get("reservations") or []:
            if r["tenant"] != tenant:
                continue
            start = str(r["start"]).rstrip("Z")
            minutes = int(parse_duration(str(r["duration"])).total_seconds() // 60)
            out.append(
                Reservation(str(r["name"]), frozenset(expand(str(r["nodes"]))), start, minutes, tuple(r["flags"]))
            )
        return sorted(out, key=lambda r: r.name)
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ReservationError(f"{path}: reservations: cannot read them: {exc}") from None


_DURATION = re.compile(r"^(?:(\d+)-)?(\d+):(\d+):(\d+)$")


def _minutes(text: str) -> int:
    m = _DURATION.match(text)
    if not m:
        raise ReservationError(f"scontrol: cannot read the duration {text!r}")
    days, h, mins, _s = (int(x or 0) for x in m.groups())
    return days * 1440 + h * 60 + mins


def shown(text: str) -> dict[str, Reservation]:
    """The ``gpufleet-`` reservations in ``scontrol show reservation -o`` output."""
    out = {}
    for line in text.splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        name = fields.get("ReservationName", "")
        if not name.startswith(RESERVATION_PREFIX):
            continue
        nodes = (
            frozenset(expand(fields.get("Nodes", "")))
            if fields.get("Nodes") not in (None, "", "(null)")
            else frozenset()
        )
        flags = tuple(sorted(fields.get("Flags", "").split(","))) if fields.get("Flags") else ()
        out[name] = Reservation(
            name, nodes, fields.get("StartTime", ""), _minutes(fields.get("Duration", "0:0:0")), flags
        )
    return out


def plan(want: list[Reservation], have: Mapping[str, Reservation]) -> list[list[str]]:
    """scontrol argv lists (create, update, delete) that turn ``have`` into ``want``."""
    cmds = []
    for r in want:
        old = have.get(r.name)
        if old is None:
            cmds.append(["scontrol", "create", "reservation", *r.fields(), "Users=root", f"Flags={','.join(r.flags)}"])
        elif (old.nodes, old.start, old.minutes) != (r.nodes, r.start, r.minutes):
            cmds.append(["scontrol", "update", *r.fields()])
    for name in sorted(set(have) - {r.name for r in want}):
        cmds.append(["scontrol", "delete", f"ReservationName={name}"])
    return cmds


def as_dict(r: Reservation) -> dict[str, Any]:
    return {"name": r.name, "nodes": sorted(r.nodes), "start": r.start, "minutes": r.minutes}
