"""Slurm hostlist expand/compress (plugins/module_utils/hostlist.py) and the two filters.

Expected strings in the tables were printed by Slurm 22.05.8's ``scontrol show hostlist``,
``hostlistsorted`` and ``hostnames``; tests/integration/test_hostlist_scontrol.py compares with
the real scontrol on generated cases.
"""

from __future__ import annotations

import itertools
import random

import pytest
from ansible.errors import AnsibleFilterError
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.core.plugins.filter.hostlist_filters import FilterModule
from ansible_collections.gpufleet.core.plugins.module_utils.hostlist import (
    MAX_RANGE,
    HostlistError,
    compress,
    expand,
    natcmp,
    sort_like_scontrol,
)

# ---------------------------------------------------------------------------------------------
# expand

EXPAND = [
    ("gpu[001-004]", ["gpu001", "gpu002", "gpu003", "gpu004"]),
    ("n[1,3-5]", ["n1", "n3", "n4", "n5"]),
    ("a[1-2]b[3-4]", ["a1b3", "a1b4", "a2b3", "a2b4"]),
    # earlier brackets unroll from the right, the last varies fastest (scontrol show hostnames)
    ("a[1-2]b[3-4]c[5-6]", ["a1b3c5", "a1b3c6", "a2b3c5", "a2b3c6", "a1b4c5", "a1b4c6", "a2b4c5", "a2b4c6"]),
    ("a[1-2][3-4]", ["a13", "a14", "a23", "a24"]),
    ("gpu[1-2]-ib[0-1]", ["gpu1-ib0", "gpu1-ib1", "gpu2-ib0", "gpu2-ib1"]),
    ("n[01-3]", ["n01", "n02", "n03"]),  # width from the low number
    ("n[1-03]", ["n1", "n2", "n3"]),
    ("n[009-011]", ["n009", "n010", "n011"]),
    ("n[5-010]", ["n5", "n6", "n7", "n8", "n9", "n10"]),
    ("[1-2]", ["1", "2"]),
    ("a,,b", ["a", "b"]),
    ("a b\tc", ["a", "b", "c"]),
    ("n[1-2],n1", ["n1", "n2", "n1"]),  # duplicates kept, order kept
    ("leaf[1-2],spine", ["leaf1", "leaf2", "spine"]),
    ("", []),
    ("  ", []),
]


@pytest.mark.parametrize(("expr", "names"), EXPAND)
def test_expand(expr, names):
    assert expand(expr) == names


BAD_EXPRESSIONS = [
    # rejected by Slurm too
    "n[2-1]",
    "n[a]",
    "n[]",
    "n[1,,2]",
    "n[1x]",
    f"n[0-{MAX_RANGE}]",
    "n[1-2]x",
    "a[1-2]b",
    "n[-1]",
    "n[1--2]",
    "n[[1]]",
    "n[1]]",
    "n[1-2]]",
    "a[1]b]",
    # accepted (and mangled) by Slurm, rejected here
    "n[1-",
    "n[1-2",
    "n1-2]",
    "n[ 1-2]",
    "n[+1-2]",
    "n[1-]",
    "n]",
    "x18446744073709551616",
    "n[1-2][",
]


@pytest.mark.parametrize("expr", BAD_EXPRESSIONS)
def test_expand_rejects(expr):
    with pytest.raises(HostlistError) as err:
        expand(expr)
    assert repr(expr) in str(err.value)  # the message names the expression


def test_expand_not_a_string():
    with pytest.raises(HostlistError):
        expand(["n1"])  # type: ignore[arg-type]


def test_expand_large_is_fast_enough_and_exact():
    names = expand("a[0-65535]b[0-1]")
    assert len(names) == 131072
    assert names[:3] == ["a0b0", "a0b1", "a1b0"]
    assert names[-1] == "a65535b1"


# ---------------------------------------------------------------------------------------------
# compress (scontrol show hostlist / hostlistsorted outputs)

UNSORTED = [
    ("gpu001,gpu002,gpu3", "gpu[001-002,3]"),
    ("n1,n1,n2", "n[1,1-2]"),
    ("n2,n1", "n[2,1]"),
    ("n9,n10,n11", "n[9-11]"),
    ("n09,n10,n011", "n[09-10,011]"),
    ("n1,n01", "n[1,01]"),
    ("a,b,a1", "a,b,a1"),
    ("b1,a1,a2", "b1,a[1-2]"),
    ("a1b3,a1b4,a2b3,a2b4", "a1b[3-4],a2b[3-4]"),
    ("gpu1-ib0,gpu1-ib1,gpu2-ib0,gpu2-ib1", "gpu1-ib[0-1],gpu2-ib[0-1]"),
    ("x", "x"),
]


@pytest.mark.parametrize(("names", "out"), UNSORTED)
def test_compress_unsorted_like_scontrol_hostlist(names, out):
    assert compress(names.split(","), sort=False) == out


SORTED = [
    ("gpu001,gpu002,gpu3", "gpu[3,001-002]"),  # narrower width first
    ("n2,n1", "n[1-2]"),
    ("n09,n10,n011", "n[09-10,011]"),
    ("n1,n01", "n[1,01]"),
    ("a,b,a1,a", "a,a1,b"),
    ("b1,a1,a2", "a[1-2],b1"),
    ("x1,x,x01,x001,x2", "x,x[1-2,01,001]"),  # name without number before the range
    ("n1,m1,n2,m2", "m[1-2],n[1-2]"),
    ("a-1,a-2,a1", "a1,a-[1-2]"),  # natural order of prefixes: "a" < "a-"
    ("n100,n99,n0100", "n[99-100,0100]"),
    ("n10,n9,n010,n9", "n[9-10,010]"),
    ("a1b3,a2b4,a1b4,a2b3", "a1b[3-4],a2b[3-4]"),
    ("gpu2,gpu10,gpu1", "gpu[1-2,10]"),
    ("rack2-n1,rack10-n1,rack1-n1", "rack1-n1,rack2-n1,rack10-n1"),  # strnatcmp on prefixes
]


@pytest.mark.parametrize(("names", "out"), SORTED)
def test_compress_sorted(names, out):
    assert compress(names.split(",")) == out


SCONTROL_SORTED = [  # hostlistsorted keeps duplicates and splits overlaps
    ("n1,n1,n2", "n[1,1-2]"),
    ("n10,n9,n010,n9", "n[9,9-10,010]"),
]


@pytest.mark.parametrize(("names", "out"), SCONTROL_SORTED)
def test_sort_like_scontrol(names, out):
    assert sort_like_scontrol(names.split(",")) == out


def test_sort_like_scontrol_overlaps():
    # scontrol show hostlistsorted 'n[1-5],n[3-7]' prints exactly this
    assert sort_like_scontrol(expand("n[1-5],n[3-7]")) == "n[1-3,3-4,4-5,5-7]"
    assert sort_like_scontrol(["n1", "n2", "n3", "n2"]) == "n[1-2,2-3]"


def test_compress_empty():
    assert compress([]) == ""
    assert compress([], sort=False) == ""


@pytest.mark.parametrize("bad", ["", "a b", "a,b", "n[1-2]", "x\x01", "n18446744073709551615"])
def test_compress_rejects_non_names(bad):
    with pytest.raises(HostlistError):
        compress([bad])


def test_compress_rejects_string_and_non_strings():
    with pytest.raises(HostlistError):
        compress("n1")  # type: ignore[arg-type]
    with pytest.raises(HostlistError):
        compress([1])  # type: ignore[list-item]


def test_compress_large_suffix_differences_keep_every_host():
    # Slurm's sort truncates the suffix difference to a C int and loses hosts here; we do not.
    names = ["N2", "N81432136417779", "gpu11", "gpu26323441981133389"]
    out = compress(names)
    assert sorted(expand(out)) == sorted(names)


def test_natcmp():
    assert natcmp("a", "a") == 0
    assert natcmp("rack2-", "rack10-") < 0
    assert natcmp("a", "a-") < 0
    assert natcmp("a01", "a1") < 0  # leading zero: fractional comparison
    assert natcmp("b", "a") > 0
    assert natcmp("A", "a") < 0  # case-sensitive


# ---------------------------------------------------------------------------------------------
# properties

_prefix = st.sampled_from(["n", "gpu", "a-", "rack1-n", "", "a1b", "leaf", "N", "x9x"])
_name = st.one_of(
    st.builds(lambda p, n, w: f"{p}{n:0{w}d}", _prefix, st.integers(0, 1200), st.integers(0, 5)),
    st.builds(lambda p, s: (p + s) or "z", _prefix, st.sampled_from(["", "a", "-x", "b"])),
)
_names = st.lists(_name, max_size=60)


@settings(max_examples=150, deadline=None)
@given(_names)
def test_expand_of_compress_is_the_sorted_set(names):
    out = expand(compress(names))
    assert len(out) == len(set(out))
    assert set(out) == set(names)
    # already in Slurm order: compressing again in the given order changes nothing
    assert compress(out, sort=False) == compress(names)
    assert compress(out) == compress(names)


@settings(max_examples=100, deadline=None)
@given(_names, st.randoms(use_true_random=False))
def test_compress_ignores_input_order_and_duplicates(names, rnd):
    shuffled = names + names[: len(names) // 2]
    rnd.shuffle(shuffled)
    assert compress(shuffled) == compress(names)


@settings(max_examples=100, deadline=None)
@given(_names)
def test_unsorted_roundtrip_keeps_order_and_duplicates(names):
    assert expand(compress(names, sort=False)) == names


@settings(max_examples=100, deadline=None)
@given(_names)
def test_sorted_output_groups_prefixes_in_natural_order(names):
    out = expand(compress(names))
    stems = [n.rstrip("0123456789") for n in out]
    firsts = list(dict.fromkeys(stems))  # each prefix forms one contiguous block
    assert len(firsts) == len({*stems})
    for a, b in itertools.pairwise(firsts):
        assert natcmp(a, b) <= 0


@settings(max_examples=100, deadline=None)
@given(
    _prefix,
    st.lists(st.tuples(st.integers(0, 300), st.integers(0, 40), st.integers(0, 4)), min_size=1, max_size=4),
)
def test_expand_bracket_matches_reference(prefix, ranges):
    body = ",".join(f"{lo:0{w}d}-{lo + span}" if span else f"{lo:0{w}d}" for lo, span, w in ranges)
    expected = [f"{prefix}{i:0{w}d}" for lo, span, w in ranges for i in range(lo, lo + span + 1)]
    assert expand(f"{prefix}[{body}]") == expected


def test_compress_is_deterministic_across_runs():
    rnd = random.Random(7)
    names = [f"gpu{rnd.randint(0, 500):03d}" for _i in range(300)]
    assert compress(names) == compress(list(reversed(names)))


# ---------------------------------------------------------------------------------------------
# filters


def test_filters():
    f = FilterModule().filters()
    assert f["hostlist_compress"](["gpu003", "gpu001", "gpu002"]) == "gpu[001-003]"
    assert f["hostlist_compress"](["n2", "n1"], sort=False) == "n[2,1]"
    assert f["hostlist_expand"]("gpu[1-2]") == ["gpu1", "gpu2"]
    assert f["hostlist_expand"](["a[1-2]", "b"]) == ["a1", "a2", "b"]


@pytest.mark.parametrize(
    ("name", "arg"),
    [
        ("hostlist_compress", "n1"),
        ("hostlist_compress", ["n[1-2]"]),
        ("hostlist_expand", "n[2-1]"),
        ("hostlist_expand", 3),
    ],
)
def test_filter_errors(name, arg):
    with pytest.raises(AnsibleFilterError):
        FilterModule().filters()[name](arg)


@pytest.mark.parametrize("name", ["gpu001", "a.b-c_d", "n", "x" * 63])
def test_one_plain_name_expands_to_itself(name: str) -> None:
    assert expand(name) == [name]


@pytest.mark.parametrize(
    ("expr", "message"),
    [("n\x01", "contains"), ("n" + "9" * 21, "64-bit host index"), ("n]", "without '\\['"), ("n\n", "contains")],
)
def test_one_name_still_checked(expr: str, message: str) -> None:
    """The single-name shortcut checks the name as the token path does."""
    with pytest.raises(HostlistError, match=message):
        expand(expr)
