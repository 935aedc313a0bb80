"""hostlist.py against the real Slurm: ``scontrol show hostlist|hostlistsorted|hostnames``.

These scontrol commands (of the Slurm build, gpufleet_testlib/slurm_build.py) need a slurm.conf
but no running slurmctld. Every batch runs in one scontrol process fed on stdin (one command per
line, a marker command between cases), so thousands of comparisons take a few seconds. Cases are
generated from fixed seeds: a failure is reproducible and names the case.
"""

from __future__ import annotations

import os
import random
import subprocess
from dataclasses import dataclass

import pytest
from gpufleet_testlib.slurm_build import require_slurm_build

from ansible_collections.gpufleet.core.plugins.module_utils.hostlist import (
    HostlistError,
    compress,
    expand,
    sort_like_scontrol,
)

pytestmark = pytest.mark.slurm

PREFIXES = ["n", "gpu", "a-", "rack1-n", "x", "", "a1b", "ib-leaf", "N", "n0", "dgx-a100-", "z9z"]
DIGITS = "0123456789"


def _name(rng: random.Random) -> str:
    p = rng.choice(PREFIXES)
    r = rng.random()
    if r < 0.08:  # no numeric suffix
        return (p + rng.choice(["", "a", "b", "-x"])) if p else rng.choice(["a", "b", "c"])
    num = rng.randint(0, 10 ** rng.randint(1, 19)) if r < 0.15 else rng.randint(0, rng.choice([9, 12, 20, 120, 1100]))
    return f"{p}{num:0{rng.choice([0, 0, 0, 1, 2, 3, 4])}d}"


def _names(rng: random.Random) -> list[str]:
    k = rng.choice([1, 2, 3, 5, 8, 20, 60])
    pool = [_name(rng) for _i in range(max(1, k // 2))] if rng.random() < 0.3 else None  # duplicates
    out = [rng.choice(pool) if pool else _name(rng) for _i in range(k)]
    if rng.random() < 0.3:  # a run of consecutive hosts, shuffled in
        p, w, s = rng.choice(PREFIXES) or "h", rng.choice([1, 2, 3]), rng.randint(0, 120)
        out += [f"{p}{i:0{w}d}" for i in range(s, s + rng.randint(1, 30))]
        rng.shuffle(out)
    return out


def _range(rng: random.Random) -> str:
    lo = rng.randint(0, 150)
    hi = lo + rng.choice([0, 0, 1, 3, 15, 40])
    lo_s, hi_s = f"{lo:0{rng.choice([0, 1, 2, 3])}d}", f"{hi:0{rng.choice([0, 1, 2, 3])}d}"
    return lo_s if lo == hi and rng.random() < 0.5 else f"{lo_s}-{hi_s}"


def _expr(rng: random.Random) -> str:
    toks = []
    for _i in range(rng.randint(1, 4)):
        nb = rng.choice([0, 1, 1, 1, 2, 3])
        if nb == 0:
            toks.append(_name(rng))
            continue
        t = rng.choice(["n", "gpu", "a", "x-", ""])
        for b in range(nb):
            t += "[" + ",".join(_range(rng) for _i in range(rng.randint(1, 3))) + "]"
            if b < nb - 1:
                t += rng.choice(["", "b", "-", "0", "c1"])
        toks.append(t)
    return ",".join(toks)


def _suffix_at_least(names: list[str], bound: int) -> bool:
    for n in names:
        stem = n.rstrip(DIGITS)
        if len(stem) < len(n) and int(n[len(stem) :]) >= bound:
            return True
    return False


@dataclass
class Scontrol:
    exe: str
    env: dict[str, str]

    def batch(self, commands: list[str]) -> list[list[str]]:
        """Output lines per command, all in one scontrol process (an error prints no lines)."""
        script = "".join(f"{c}\nshow hostlist @@{i}\n" for i, c in enumerate(commands))
        proc = subprocess.run(
            [self.exe], input=script, capture_output=True, text=True, env=self.env, timeout=300, check=False
        )
        results: list[list[str]] = []
        cur: list[str] = []
        for line in proc.stdout.splitlines():
            if line.startswith("scontrol: "):  # echo of the command
                continue
            if line == f"@@{len(results)}":
                results.append(cur)
                cur = []
            else:
                cur.append(line)
        assert len(results) == len(commands), proc.stderr[-2000:]
        return results


@pytest.fixture(scope="module")
def scontrol(tmp_path_factory) -> Scontrol:
    exe = require_slurm_build("scontrol")["scontrol"]
    conf = tmp_path_factory.mktemp("hostlist") / "slurm.conf"
    conf.write_text("ClusterName=hostlist\nSlurmctldHost=localhost\nNodeName=n1\nPartitionName=p Nodes=n1\n")
    # TERM/COLUMNS: scontrol's readline must not redraw long input lines with escape codes
    return Scontrol(exe, dict(os.environ, SLURM_CONF=str(conf), TERM="dumb", COLUMNS="1000000"))


def _mismatches(pairs):
    bad = [(what, case, mine, slurm) for what, case, mine, slurm in pairs if mine != slurm]
    return "\n".join(f"{w} {c!r}:\n  ours:  {m}\n  slurm: {s}" for w, c, m, s in bad[:10]) + (
        f"\n... {len(bad)} mismatches in {len(pairs)} cases" if bad else ""
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_compress_matches_scontrol(scontrol, seed):
    rng = random.Random(seed)
    cases = [_names(rng) for _i in range(250)]
    cmds: list[str] = []
    for names in cases:
        unique = list(dict.fromkeys(names))
        rng.shuffle(unique)
        cmds += [
            "show hostlist " + ",".join(names),
            "show hostlistsorted " + ",".join(names),
            "show hostlistsorted " + ",".join(unique),
        ]
    out = scontrol.batch(cmds)
    pairs = []
    for i, names in enumerate(cases):
        as_given, sorted_dups, sorted_unique = out[3 * i : 3 * i + 3]
        pairs.append(("hostlist", names, [compress(names, sort=False)], as_given))
        pairs.append(("set", names, set(expand(compress(names))), set(names)))
        if _suffix_at_least(names, 2**31):
            # Slurm's sort truncates suffix differences to a C int: garbage order, lost hosts.
            continue
        pairs.append(("hostlistsorted", names, [sort_like_scontrol(names)], sorted_dups))
        pairs.append(("compress", names, [compress(names)], sorted_unique))
    assert not _mismatches(pairs), _mismatches(pairs)


@pytest.mark.parametrize("seed", [11, 12])
def test_expand_matches_scontrol(scontrol, seed):
    rng = random.Random(seed)
    exprs = [_expr(rng) for _i in range(300)]
    out = scontrol.batch([f"show hostnames {e}" for e in exprs])
    pairs = []
    for e, slurm in zip(exprs, out, strict=True):
        try:
            mine = expand(e)
        except HostlistError as err:
            mine = [f"error: {err}"]
        pairs.append(("hostnames", e, mine, slurm))
    assert not _mismatches(pairs), _mismatches(pairs)


# Slurm rejects these (prints nothing but an error); so must we.
REJECTED_BY_BOTH = ["n[2-1]", "n[a]", "n[]", "n[1,,2]", "n[1x]", "n[0-65536]", "n[-1]"]
# Text after the last ']': 22.05 refused it, 26.05 reads it as a suffix ("n[1-2]x" is n1x n2x, "n[1]]"
# is "n1]"). We keep refusing it: a name one Slurm release reads differently from another is an error.
STRICTER_THAN_SLURM = {"n[1-2]x": ["n1x", "n2x"], "a[1-2]b": ["a1b", "a2b"], "n[1]]": ["n1]"]}


def test_invalid_expressions_rejected_like_slurm(scontrol):
    out = scontrol.batch([f"show hostnames {e}" for e in REJECTED_BY_BOTH])
    for e, slurm in zip(REJECTED_BY_BOTH, out, strict=True):
        assert slurm == [], f"scontrol accepted {e!r}: {slurm}"
        with pytest.raises(HostlistError):
            expand(e)


def test_suffix_after_bracket_is_refused_though_slurm_reads_it(scontrol):
    out = scontrol.batch([f"show hostnames {e}" for e in STRICTER_THAN_SLURM])
    assert dict(zip(STRICTER_THAN_SLURM, out, strict=True)) == STRICTER_THAN_SLURM
    for e in STRICTER_THAN_SLURM:
        with pytest.raises(HostlistError):
            expand(e)


def test_whitespace_separated_expression(scontrol):
    # the stdin batch splits commands on spaces, so this one goes through argv
    expr = "gpu[1-2] a[1-2]b[3-4]\tx"
    proc = subprocess.run(
        [scontrol.exe, "show", "hostnames", expr], capture_output=True, text=True, env=scontrol.env, check=True
    )
    assert expand(expr) == proc.stdout.split()
