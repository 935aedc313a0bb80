"""bench/compare.py (make bench BASE=<rev>): the verdicts of the report, and one real paired run."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location("bench_compare", REPO / "bench" / "compare.py")
assert _spec is not None and _spec.loader is not None
compare = importlib.util.module_from_spec(_spec)
sys.modules["bench_compare"] = compare  # dataclasses look their module up
_spec.loader.exec_module(compare)


def _fig(base: list[float], head: list[float], rss: tuple[float, float], headline: bool = True):
    f = compare.Figure("fig", "topology", {}, headline, len(base))
    f.samples["base"] = [{"seconds": s, "cpu": s, "rss": rss[0]} for s in base]
    f.samples["head"] = [{"seconds": s, "cpu": s, "rss": rss[1]} for s in head]
    return f


@pytest.mark.parametrize(
    "base,head,rss,headline,verdict,status",
    [
        ([1.0, 1.0, 1.0], [0.5, 0.6, 0.4], (100, 90), True, "ok", 0),
        ([1.0, 1.0, 1.0], [1.3, 1.25, 1.0], (100, 100), True, "REGRESSION (time)", 1),
        ([1.0, 1.0, 1.0], [1.0, 1.0, 1.0], (100, 130), True, "REGRESSION (memory)", 1),
        ([1.0, 1.0, 1.0], [2.0, 2.0, 2.0], (100, 100), False, "ok (not a headline)", 0),
        # pair by pair: 1.3, 0.5, 1.3 (a slow moment in pair 2 hit the base); the medians alone (2.0, 2.0) hide it
        ([1.0, 4.0, 2.0], [1.3, 2.0, 2.6], (100, 100), True, "REGRESSION (time)", 1),
    ],
)
def test_verdicts(capsys, base, head, rss, headline, verdict, status) -> None:
    assert compare.report([_fig(base, head, rss, headline)], "# header") == status
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| fig |"))
    assert row.rstrip(" |").endswith(verdict)


def test_one_paired_run_against_head(tmp_path: Path) -> None:
    """Both sides really run (base exported from Git): every column is filled, ratios near 1."""
    p = subprocess.run(
        [
            *(sys.executable, str(REPO / "bench" / "compare.py"), "--base", "HEAD", "--only", "topology-2k"),
            *("--runs", "1", "--nodes", "0", "--threshold", "100"),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert p.returncode == 0, p.stderr
    row = next(line for line in p.stdout.splitlines() if line.startswith("| topology 2,048"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[-1] == "ok (not a headline)"
    assert cells[-2] == "same"  # base and head produced the same bytes (HEAD against itself)
    assert all(re.fullmatch(r"[\d.]+( \([\d.]+-[\d.]+\))?", c) for c in cells[1:-2]), cells
    assert float(cells[5]) > 10 and float(cells[6]) > 10  # peak MiB of each child


def test_unknown_revision_fails_clearly() -> None:
    p = subprocess.run(
        [sys.executable, str(REPO / "bench" / "compare.py"), "--base", "no-such-rev-xyz", "--nodes", "0"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert p.returncode != 0


def test_ports_format_over_the_default_format_pair_by_pair(capsys) -> None:
    """The ports figure over the default-format figure of the same pairs: a slow pair hits both."""
    default = compare.Figure(compare.SIZES["16k"][0], "topology", {}, True, 3)
    ports = compare.Figure(compare.SIZES["16k-ports"][0], "topology", {}, True, 3)
    for fig, scale in ((default, 1.0), (ports, 0.9)):
        for side in ("base", "head"):
            fig.samples[side] = [{"seconds": s * scale, "cpu": s * scale, "rss": 100} for s in (1.0, 4.0, 2.0)]
    compare.report([default, ports], "# header")
    out = capsys.readouterr().out.splitlines()
    at = out.index("| figure | base x default format | head x default format | head cpu x default format cpu |")
    assert out[at + 2] == f"| {ports.name} | 0.90 (0.90-0.90) | 0.90 (0.90-0.90) | 0.90 (0.90-0.90) |"
