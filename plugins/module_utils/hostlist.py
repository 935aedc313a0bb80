"""Slurm hostlist expressions: expand and compress exactly as Slurm 22.05 does.

``expand("gpu[001-003],a[1-2]b[3-4]")`` gives the host names in Slurm's order (what
``scontrol show hostnames`` prints); ``compress(names)`` gives the hostlist string Slurm would
write for a sorted, duplicate-free set of names (``hostlist_uniq`` followed by
``hostlist_ranged_string``). ``compress(names, sort=False)`` keeps the given order and
duplicates, like ``scontrol show hostlist``.

The model follows Slurm's ``src/common/hostlist.c`` (one dimension, as on every non-Cray
system): a list of *ranges* ``prefix + [lo-hi]`` with a zero-padding *width*, or single hosts
without a numeric suffix. Two details matter for byte-exact output:

* Widths are reconciled lazily: ``n9`` (width 1) and ``n10`` (width 2) form ``n[9-10]`` because
  padding either to the other's width changes neither, while ``n09``/``n10``/``n011`` stay
  ``n[09-10,011]``. The comparison used for sorting may adjust widths as a side effect, so the
  sort must be the same algorithm as glibc's ``qsort`` (a stable top-down merge sort in glibc
  2.36, Debian 12) to give the same bytes.
* Prefixes are ordered with Slurm's ``strnatcmp`` (natural order), hosts without a numeric
  suffix before ranges of the same prefix, then narrower widths before wider ones.

One deliberate difference: Slurm's sort comparator returns the difference of two numeric
suffixes through a C ``int``; once suffixes of one prefix differ by 2**31 or more its order is not
transitive and ``hostlist_sort``/``hostlist_uniq`` lose hosts (seen with ``scontrol show
hostlistsorted``). ``compress`` compares those numbers correctly, so it never drops a host;
``sort_like_scontrol`` keeps the C behaviour for tests.

Input is checked more strictly than Slurm: Slurm silently accepts some malformed expressions
(``n[1-`` becomes ``n]``, ``n[ 1-2]`` becomes ``n01,n02``, numbers beyond 64 bits are clamped);
here they raise :class:`HostlistError` naming the expression and the offending part.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from itertools import product

from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError

__all__ = ["MAX_HOSTS", "MAX_RANGE", "HostlistError", "compress", "expand", "natcmp", "sort_like_scontrol"]

#: Slurm's MAX_RANGE: a single ``lo-hi`` range may hold at most this many hosts.
MAX_RANGE = 64 * 1024
#: Safety cap on the number of names one expression may expand to (Slurm has no fixed cap).
MAX_HOSTS = 4 * 1024 * 1024
_ULONG = 1 << 64
_SEPARATORS = ",\t "
_VALID_NAME = re.compile(r"[^\[\],\s\x00-\x1f\x7f]+")


class HostlistError(GpufleetError, ValueError):
    """A hostlist expression or host name Slurm would reject or mangle."""

    def __init__(self, message: str, expr: str | None = None):
        self.expr = expr
        super().__init__(f"invalid hostlist {expr!r}: {message}" if expr is not None else message)


# ----------------------------------------------------------------------------------------------
# Slurm's strnatcmp (Martin Pool's natural-order comparison, case-sensitive variant)


def _signed_chars(s: str) -> list[int]:
    # C `char` is signed on x86-64; the trailing 0 is the NUL terminator.
    return [b - 256 if b > 127 else b for b in s.encode("utf-8")] + [0]


def _isdigit(c: int) -> bool:
    return 48 <= c <= 57


def _isspace(c: int) -> bool:
    return c in (9, 10, 11, 12, 13, 32)


def _compare_right(a: list[int], i: int, b: list[int], j: int) -> int:
    bias = 0
    while True:
        ca, cb = a[i], b[j]
        if not _isdigit(ca) and not _isdigit(cb):
            return bias
        if not _isdigit(ca):
            return -1
        if not _isdigit(cb):
            return 1
        if ca < cb:
            bias = bias or -1
        elif ca > cb:
            bias = bias or 1
        i += 1
        j += 1


def _compare_left(a: list[int], i: int, b: list[int], j: int) -> int:
    while True:
        ca, cb = a[i], b[j]
        if not _isdigit(ca) and not _isdigit(cb):
            return 0
        if not _isdigit(ca):
            return -1
        if not _isdigit(cb):
            return 1
        if ca != cb:
            return -1 if ca < cb else 1
        i += 1
        j += 1


def natcmp(x: str, y: str) -> int:
    """Slurm's ``strnatcmp``: <0, 0 or >0 like C; digit runs compare by value, leading zeros as fractions."""
    a, b = _signed_chars(x), _signed_chars(y)
    i = j = 0
    while True:
        while _isspace(a[i]):
            i += 1
        while _isspace(b[j]):
            j += 1
        ca, cb = a[i], b[j]
        if _isdigit(ca) and _isdigit(cb):
            if ca == 48 or cb == 48:
                result = _compare_left(a, i, b, j)
            else:
                result = _compare_right(a, i, b, j)
            if result:
                return result
        if ca == 0 and cb == 0:
            return 0
        if ca != cb:
            return -1 if ca < cb else 1
        i += 1
        j += 1


_natcmp_cached = lru_cache(maxsize=65536)(natcmp)


# ----------------------------------------------------------------------------------------------
# hostrange: prefix + [lo-hi] with a zero-padding width, or a single host without numeric suffix


@dataclass
class _Range:
    prefix: str
    lo: int
    hi: int
    width: int
    single: bool = False

    def copy(self) -> _Range:
        return _Range(self.prefix, self.lo, self.hi, self.width, self.single)

    def count(self) -> int:
        return 1 if self.single else self.hi - self.lo + 1

    def empty(self) -> bool:
        return self.hi < self.lo or self.hi == _ULONG - 1


def _digits(num: int) -> int:
    return len(str(num))


def _zero_padded(num: int, width: int) -> int:
    n = _digits(num)
    return width - n if width > n else 0


def _width_combine(h0: _Range, h1: _Range) -> bool:
    """Slurm's ``_width_equiv`` on (h0.lo, h0.width, h1.lo, h1.width); may adjust one width."""
    if h0.width == h1.width:
        return True
    npad = _zero_padded(h0.lo, h0.width)
    nmpad = _zero_padded(h0.lo, h1.width)
    mpad = _zero_padded(h1.lo, h1.width)
    mnpad = _zero_padded(h1.lo, h0.width)
    if npad != nmpad and mpad != mnpad:
        return False
    if npad != nmpad:
        h1.width = h0.width
    else:
        h0.width = h1.width
    return True


def _prefix_cmp(h1: _Range, h2: _Range) -> int:
    r = 0 if h1.prefix == h2.prefix else _natcmp_cached(h1.prefix, h2.prefix)
    return r if r else int(h2.single) - int(h1.single)


def _c_int(value: int) -> int:
    """An unsigned long difference returned through a C ``int`` (low 32 bits, signed)."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def _range_cmp(h1: _Range, h2: _Range, c_int: bool) -> int:
    r = _prefix_cmp(h1, h2)
    if r == 0:
        if _width_combine(h1, h2):
            diff = h1.lo - h2.lo
            r = _c_int(diff) if c_int else (diff > 0) - (diff < 0)
        else:
            r = h1.width - h2.width
    return r


def _within_range(h1: _Range, h2: _Range | None) -> bool:
    if h2 is None or _prefix_cmp(h1, h2) != 0:
        return False
    return not (h1.single or h2.single)


def _join(h1: _Range, h2: _Range) -> int:
    """Slurm's ``hostrange_join``: -1 if no join, else the number of duplicated hosts (h2 merged into h1)."""
    if _prefix_cmp(h1, h2) != 0 or not _width_combine(h1, h2):
        return -1
    if h1.single and h2.single:
        return 1
    if h1.hi == (h2.lo - 1) % _ULONG:
        h1.hi = h2.hi
        return 0
    if h1.hi >= h2.lo:
        if h1.hi < h2.hi:
            dup = h1.hi - h2.lo + 1
            h1.hi = h2.hi
            return dup
        return h2.count()
    return -1


def _intersect(h1: _Range, h2: _Range) -> _Range | None:
    if h1.single or h2.single:
        return None
    if h1.hi > h2.lo and _prefix_cmp(h1, h2) == 0 and _width_combine(h1, h2):
        new = h1.copy()
        new.lo = h2.lo
        new.hi = min(h2.hi, h1.hi)
        return new
    return None


def _msort(items: list[_Range], c_int: bool) -> list[_Range]:
    """glibc 2.36 ``qsort`` (``msort_with_tmp``): top-down, stable, left half is n // 2.

    ``c_int=True`` reproduces Slurm's comparator exactly, including its truncation of the
    suffix difference to a C ``int``; that is not a total order once suffixes differ by 2**31
    or more, and ``hostlist_uniq`` then drops hosts. ``compress`` uses the plain sign instead.
    """
    n = len(items)
    if n <= 1:
        return items
    n1 = n // 2
    left, right = _msort(items[:n1], c_int), _msort(items[n1:], c_int)
    out: list[_Range] = []
    i = j = 0
    while i < len(left) and j < len(right):
        if _range_cmp(left[i], right[j], c_int) <= 0:
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    out.extend(left[i:])
    out.extend(right[j:])
    return out


class _Hostlist:
    def __init__(self) -> None:
        self.ranges: list[_Range] = []

    def push_range(self, hr: _Range) -> None:
        tail = self.ranges[-1] if self.ranges else None
        if (
            tail is not None
            and tail.hi == (hr.lo - 1) % _ULONG
            and _prefix_cmp(tail, hr) == 0
            and _width_combine(tail, hr)
        ):
            tail.hi = hr.hi
        else:
            self.ranges.append(hr.copy())

    def push_host(self, name: str) -> None:
        stem = name.rstrip("0123456789")
        if len(stem) == len(name):
            self.push_range(_Range(name, 0, 0, 0, single=True))
            return
        suffix = name[len(stem) :]
        num = int(suffix)
        self.push_range(_Range(stem, num, num, len(suffix)))

    # hostlist_uniq: sort, then join neighbours (drops duplicates)
    def uniq(self) -> None:
        if len(self.ranges) <= 1:
            return
        self.ranges = _msort(self.ranges, c_int=False)
        i = 1
        while i < len(self.ranges):
            if _join(self.ranges[i - 1], self.ranges[i]) >= 0:
                del self.ranges[i]
            else:
                i += 1

    # hostlist_sort: sort, then coalesce (splits overlaps, keeps duplicates) and collapse
    def sort(self) -> None:
        if len(self.ranges) <= 1:
            return
        self.ranges = _msort(self.ranges, c_int=True)
        self._coalesce()

    def _coalesce(self) -> None:
        hl = self.ranges
        i = len(hl) - 1
        while i > 0:
            new = _intersect(hl[i - 1], hl[i])
            if new is not None:
                hprev, hnext = hl[i - 1], hl[i]
                j = i
                if new.hi < hprev.hi:
                    hnext.hi = hprev.hi
                hprev.hi = new.lo
                hnext.lo = new.hi
                if hprev.empty():
                    del hl[i]
                while new.lo <= new.hi:
                    single = _Range(new.prefix, new.lo, new.lo, new.width)
                    if new.lo > hprev.hi:
                        hl.insert(j, single.copy())
                        j += 1
                    if new.lo < hnext.lo:
                        hl.insert(j, single.copy())
                        j += 1
                    new.lo += 1
                i = len(hl)
            i -= 1
        self._collapse()

    def _collapse(self) -> None:
        hl = self.ranges
        for i in range(len(hl) - 1, 0, -1):
            hprev, hnext = hl[i - 1], hl[i]
            if hprev.hi == (hnext.lo - 1) % _ULONG and _prefix_cmp(hprev, hnext) == 0 and _width_combine(hprev, hnext):
                hprev.hi = hnext.hi
                del hl[i]

    def ranged_string(self) -> str:
        hl = self.ranges
        parts: list[str] = []
        i = 0
        while i < len(hl):
            nxt = hl[i + 1] if i + 1 < len(hl) else None
            bracket = hl[i].count() > 1 or _within_range(hl[i], nxt)
            nums: list[str] = []
            prefix = hl[i].prefix
            while True:
                hr = hl[i]
                if not hr.single:
                    num = f"{hr.lo:0{hr.width}d}"
                    if hr.lo < hr.hi:
                        num += f"-{hr.hi:0{hr.width}d}"
                    nums.append(num)
                i += 1
                if not (i < len(hl) and _within_range(hl[i], hl[i - 1])):
                    break
            if bracket:
                parts.append(f"{prefix}[{','.join(nums)}]")
            else:
                parts.append(prefix + "".join(nums))
        return ",".join(parts)


# ----------------------------------------------------------------------------------------------
# parsing


def _check_name(name: str, expr: str | None) -> None:
    if _VALID_NAME.fullmatch(name) is None:
        if not name:
            raise HostlistError("empty host name", expr)
        bad = "".join(sorted({c for c in name if _VALID_NAME.fullmatch(c) is None}))
        raise HostlistError(f"host name {name!r} contains {bad!r} (brackets, commas, whitespace, control)", expr)
    if name[-20:].isdigit() or (name[-1].isdigit() and len(name) - len(name.rstrip("0123456789")) > 19):
        stem = name.rstrip("0123456789")
        if int(name[len(stem) :]) >= _ULONG - 1:
            raise HostlistError(
                f"numeric suffix of {name!r} does not fit Slurm's 64-bit host index (Slurm would rename the host)",
                expr,
            )


_ONE_NAME = re.compile(r"[^\[\],\t ]+")  # no bracket, no separator (_SEPARATORS)


def _tokens(expr: str) -> list[str]:
    """Split on commas, tabs and spaces outside brackets (Slurm's ``_next_tok``)."""
    tokens: list[str] = []
    cur: list[str] = []
    depth = 0
    for c in expr:
        if c == "[":
            if depth:
                raise HostlistError("nested '['", expr)
            depth = 1
        elif c == "]":
            if not depth:
                raise HostlistError("']' without '['", expr)
            depth = 0
        elif c in _SEPARATORS and not depth:
            if cur:
                tokens.append("".join(cur))
                cur = []
            continue
        cur.append(c)
    if depth:
        raise HostlistError("'[' without ']'", expr)
    if cur:
        tokens.append("".join(cur))
    return tokens


def _parse_ranges(body: str, expr: str) -> list[tuple[int, int, int]]:
    """``1,3-5,07`` -> [(lo, hi, width)]; width is the length of the ``lo`` text, as in Slurm."""
    out: list[tuple[int, int, int]] = []
    for item in body.split(","):
        lo_s, sep, hi_s = item.partition("-")
        if not lo_s.isdecimal() or not lo_s.isascii() or (sep and not (hi_s.isdecimal() and hi_s.isascii())):
            raise HostlistError(f"invalid range {item!r} in '[{body}]'", expr)
        lo = int(lo_s)
        hi = int(hi_s) if sep else lo
        if lo > hi:
            raise HostlistError(f"range {item!r} goes down", expr)
        if hi - lo + 1 > MAX_RANGE:
            raise HostlistError(f"range {item!r} has more than {MAX_RANGE} hosts (Slurm's limit)", expr)
        if hi >= _ULONG - 1:
            raise HostlistError(f"range {item!r} exceeds Slurm's 64-bit host index", expr)
        out.append((lo, hi, len(lo_s)))
    return out


def _expand_token(token: str, expr: str, out: list[str]) -> None:
    if "[" not in token:
        _check_name(token, expr)
        out.append(token)
        return
    if not token.endswith("]"):
        raise HostlistError(f"text after the last ']' in {token!r} (refused: Slurm releases disagree on it)", expr)
    # "a[1-2]b[3-4]" -> literals ["a", "b"], bracket bodies ["1-2", "3-4"]
    literals: list[str] = []
    values: list[list[str]] = []
    rest = token
    while rest:
        head, _sep, tail = rest.partition("[")
        body, _sep, rest = tail.partition("]")
        for c in head:
            if ord(c) < 32 or ord(c) == 127:
                raise HostlistError(f"{token!r} contains a control character", expr)
        literals.append(head)
        values.append([f"{j:0{w}d}" for lo, hi, w in _parse_ranges(body, expr) for j in range(lo, hi + 1)])
    total = 1
    for v in values:
        total *= len(v)
    if len(out) + total > MAX_HOSTS:
        raise HostlistError(f"expands to more than {MAX_HOSTS} names", expr)

    # Slurm splits the prefix at its last '[' and recurses, so the earlier brackets are unrolled
    # from the right and the last bracket varies fastest: a[1-2]b[3-4]c[5-6] gives
    # a1b3c5 a1b3c6 a2b3c5 a2b3c6 a1b4c5 ...
    k = len(values) - 1
    last = values[k]
    for combo in product(*reversed(values[:k])):
        # combo[0] belongs to bracket k-1, combo[k-1-i] to bracket i
        prefix = "".join(literals[i] + combo[k - 1 - i] for i in range(k)) + literals[k]
        out.extend([prefix + v for v in last])

    # Only a long trailing digit run can overflow Slurm's 64-bit host index: check names then.
    run = 0
    for i in range(k, -1, -1):
        run += max(len(v) for v in values[i])
        lit = literals[i]
        digits = len(lit) - len(lit.rstrip("0123456789"))
        run += digits
        if digits < len(lit):
            break
    if run > 19:
        for name in out[-total:]:
            _check_name(name, expr)


def expand(expr: str) -> list[str]:
    """Host names of a Slurm hostlist expression, in Slurm's order, duplicates kept.

    ``expand("gpu[001-003]")`` -> ``["gpu001", "gpu002", "gpu003"]``;
    ``expand("a[1-2]b[3-4]")`` -> ``["a1b3", "a1b4", "a2b3", "a2b4"]``. Separators are commas,
    spaces and tabs outside brackets; an empty expression gives an empty list.
    """
    if not isinstance(expr, str):
        raise HostlistError(f"expected a string, got {type(expr).__name__}")
    if _ONE_NAME.fullmatch(expr):  # one plain name (most calls: node lists): no per-character split
        _check_name(expr, expr)
        return [expr]
    out: list[str] = []
    for token in _tokens(expr):
        _expand_token(token, expr, out)
    return out


def _push_key(name: str) -> tuple[str, int, int]:
    stem = name.rstrip("0123456789")
    suffix = name[len(stem) :]
    return (stem, len(suffix), int(suffix) if suffix else -1)


def compress(names: Iterable[str], *, sort: bool = True) -> str:
    """The Slurm hostlist string for ``names``.

    With ``sort=True`` (default) the result is what Slurm prints for the sorted, duplicate-free
    set of names (``hostlist_uniq``), independent of input order: ``["n3", "n1", "n2", "n2"]`` ->
    ``"n[1-3]"``. With ``sort=False`` order and duplicates are kept (``scontrol show hostlist``):
    ``["n2", "n1"]`` -> ``"n[2,1]"``. Each name must be a single host name, not an expression.
    """
    if isinstance(names, str):
        raise HostlistError("compress() takes an iterable of host names, not a string (use expand() first)")
    items = list(names)
    for n in items:
        if not isinstance(n, str):
            raise HostlistError(f"host names must be strings, got {type(n).__name__} {n!r}")
        _check_name(n, None)
    hl = _Hostlist()
    if sort:
        # A canonical input order makes the result independent of the caller's order; grouping
        # equal-width runs lets consecutive names merge before the (slower) Slurm sort.
        for n in sorted(set(items), key=_push_key):
            hl.push_host(n)
        hl.uniq()
    else:
        for n in items:
            hl.push_host(n)
    return hl.ranged_string()


def sort_like_scontrol(names: Iterable[str]) -> str:
    """What ``scontrol show hostlistsorted`` prints for ``names`` in this order (duplicates kept)."""
    hl = _Hostlist()
    for n in names:
        _check_name(n, None)
        hl.push_host(n)
    hl.sort()
    return hl.ranged_string()
