"""slurm.conf options in the slurm chart's values, written the way the chart reads them: as strings.

The slurm chart (1.2.1) turns ``controller.extraConfMap``, ``accounting.extraConfMap``,
``nodesets.<n>.extraConfMap`` and ``partitions.<p>.configMap`` into ``Key=value`` lines with a helper
that keeps an entry only when its value is true for a Go template (``if``), so ``0``, ``""``,
``false`` and empty lists vanish without a word; and Helm reads numbers from a values file as
float64, which print in the shortest form (``1000000`` becomes ``1e+06``, which slurmctld reads as
1). A non-empty string is true and prints as written, so every value here is rendered as a string
(or a list of strings); a value the chart would drop is an error naming the key.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError

# where the chart reads slurm.conf options ("*": every entry of that map)
CONF_MAPS = (
    ("controller", "extraConfMap"),
    ("accounting", "extraConfMap"),
    ("nodesets", "*", "extraConfMap"),
    ("partitions", "*", "configMap"),
)


def _word(value: Any, at: str) -> str:
    if isinstance(value, bool) or value is None or not isinstance(value, (str, int)) or value == "":
        raise GpufleetError(
            f"{at}: {value!r} is not a slurm.conf value the slurm chart writes (it drops empty, false and null"
            " values silently, and prints numbers as floats): give a non-empty word or a whole number"
        )
    return str(value)


def _maps(values: dict[str, Any], path: tuple[str, ...], at: str) -> list[tuple[str, dict]]:
    if not path:
        return [(at, values)] if isinstance(values, dict) else []
    head, rest = path[0], path[1:]
    if head == "*":
        return [m for k, v in sorted(values.items()) if isinstance(v, dict) for m in _maps(v, rest, f"{at}.{k}")]
    sub = values.get(head)
    return _maps(sub, rest, f"{at}.{head}" if at else head) if isinstance(sub, dict) else []


def as_words(values: dict[str, Any], where: str) -> dict[str, Any]:
    """``values`` with every slurm.conf option value of :data:`CONF_MAPS` as a string (in place)."""
    for path in CONF_MAPS:
        for at, conf in _maps(values, path, ""):
            for key, v in conf.items():
                here = f"{where}.{at}.{key}"
                if isinstance(v, list):
                    if not v:
                        raise GpufleetError(f"{here}: an empty list is dropped by the slurm chart silently")
                    conf[key] = [_word(x, f"{here}[{i}]") for i, x in enumerate(v)]
                else:
                    conf[key] = _word(v, here)
    return values
