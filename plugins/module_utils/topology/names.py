"""Names in a Slurm topology: natural order, hostlists, switch/block names Slurm accepts, the host to
node name hook, exclusion globs and the names of the folded tree switches."""

from __future__ import annotations

import fnmatch
import hashlib
import re
from collections.abc import Callable, Iterable, Mapping

from ansible_collections.gpufleet.core.plugins.module_utils.fabric.model import FabricError
from ansible_collections.gpufleet.core.plugins.module_utils.hostlist import compress, expand

MAX_NAME = 64
MAX_DIGIT_TAIL = 18

# ---------------------------------------------------------------- names and hostlists

_NAT = re.compile(r"(\d+)")


def natural_key(s: str) -> tuple:
    """``n10`` after ``n9``: the text with its digit runs as ints (split by a capturing group puts
    them at the odd places; converting those by slice is half the time of a test per part)."""
    parts: list = _NAT.split(s)
    parts[1::2] = map(int, parts[1::2])
    return tuple(parts)


_ZERO_DIGITS = str.maketrans("123456789", "000000000")


def natural_sorted(names: Iterable[str]) -> list[str]:
    """``sorted(names, key=natural_key)``, without a key per name when every name has one shape.

    Names that are equal once each ASCII digit reads 0 (``gpu0007``, ``gpu0123``) have their digit
    runs at the same places and of the same length, so plain string order is natural order; any
    other mix (``n9``/``n10``, ``n01``/``n1``) is sorted by :func:`natural_key`. Names with equal
    keys (``n01``, ``n1``) keep their order: give a set sorted (``natural_sorted(sorted(s))``) so the
    result does not depend on the order a set hands them in.
    """
    out = list(names)
    if len(out) > 1:
        shape = out[0].translate(_ZERO_DIGITS)
        if all(s.translate(_ZERO_DIGITS) == shape for s in out):
            out.sort()
        else:
            out.sort(key=natural_key)
    return out


def hostlist_compress(names: Iterable[str]) -> str:
    try:
        return compress(list(names))
    except ValueError as e:
        raise FabricError(f"cannot write a hostlist: {e}") from None


def hostlist_expand(expr: str) -> list[str]:
    return expand(expr)


def node_list(nodes: str | Iterable[str] | None) -> list[str] | None:
    """A node list given as a hostlist expression or a list of names/expressions."""
    if nodes is None:
        return None
    items = [nodes] if isinstance(nodes, str) else list(nodes)
    out: list[str] = []
    for item in items:
        try:
            out.extend(hostlist_expand(str(item)))
        except ValueError as e:
            raise FabricError(f"bad node list: {e}", key="nodes") from None
    return out


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def safe_name(name: str) -> str:
    """A switch/block name every Slurm version accepts: [A-Za-z0-9_.-], <= 64, short digit tail."""
    s = _UNSAFE.sub("_", name).strip("_.-") or "sw"
    if len(s) > MAX_NAME:
        h = hashlib.sha1(name.encode()).hexdigest()[:8]
        s = s[: MAX_NAME - 10].rstrip("_.-") + "_" + h
    m = re.search(r"\d+$", s)
    if m and len(m.group(0)) > MAX_DIGIT_TAIL:
        s = s[: MAX_NAME - 1] + "_"
    return s


def name_problems(name: str) -> list[str]:
    """Why Slurm (any version since 22.05) would reject a switch or block name."""
    out = []
    if not name:
        out.append("empty name")
    if len(name) > MAX_NAME:
        out.append(f"longer than {MAX_NAME} characters (fatal since Slurm 24.05.5)")
    m = re.search(r"\d+$", name)
    if m and len(m.group(0)) > MAX_DIGIT_TAIL:
        out.append(f"trailing digit run of {len(m.group(0))} > {MAX_DIGIT_TAIL} (hostlist overflow, fatal)")
    if _UNSAFE.search(name):
        out.append("characters outside [A-Za-z0-9_.-]")
    return out


# ---------------------------------------------------------------- node name mapping


def make_node_map(spec: object) -> Callable[[str], str | None]:
    """Build the host -> node name hook.

    ``None``: identity. A callable: used as is (return None to drop the host). A dict with
    ``pattern`` and ``replacement`` (``replace``: its former name, as the inventory had it; and optional
    ``drop_unmatched``): regex full match and expand.
    Any other dict: lookup, unknown hosts keep their name, a None/empty value drops the host.
    """
    if spec is None:
        return lambda h: h
    if callable(spec):
        return spec  # type: ignore[return-value]
    if isinstance(spec, Mapping) and "pattern" in spec and "replace" in spec and "replacement" not in spec:
        spec = {**{k: v for k, v in spec.items() if k != "replace"}, "replacement": spec["replace"]}
    if isinstance(spec, Mapping) and "pattern" in spec and "replacement" in spec:
        try:
            rx = re.compile(str(spec["pattern"]))
        except re.error as e:
            raise FabricError(f"bad node_map pattern: {e}", key="node_map.pattern") from None
        repl = str(spec["replacement"])
        drop = bool(spec.get("drop_unmatched", False))

        def by_regex(h: str) -> str | None:
            m = rx.fullmatch(h)
            if m is None:
                return None if drop else h
            try:
                return m.expand(repl)
            except (re.error, IndexError) as e:
                raise FabricError(f"bad node_map replacement: {e}", key="node_map.replacement") from None

        return by_regex
    if isinstance(spec, Mapping):
        table = dict(spec)

        def by_table(h: str) -> str | None:
            v = table.get(h, h)
            return str(v) if v else None

        return by_table
    raise FabricError("node_map must be a dict, a {pattern, replacement} dict or a callable", key="node_map")


def exclude_matcher(exclude: Iterable[str] | str | None) -> Callable[[str], bool]:
    if not exclude:
        return lambda s: False
    pats = [exclude] if isinstance(exclude, str) else list(exclude)
    rx = re.compile("|".join(f"(?:{fnmatch.translate(str(p))})" for p in pats))
    return lambda s: bool(s) and rx.match(s) is not None


def common_prefix_name(names: list[str]) -> str | None:
    if len(names) < 2:
        return None
    lo, hi = min(names), max(names)
    i = 0
    while i < len(lo) and i < len(hi) and lo[i] == hi[i]:
        i += 1
    pre = lo[:i]
    if pre == lo:
        return None
    cut = max(pre.rfind("-"), pre.rfind("_"), pre.rfind("."))
    pre = pre[:cut].rstrip("-_.") if cut > 0 else ""
    return pre if len(pre) >= 3 else None


def name_entities(member_names: list[list[str]], tiers: list[int], skip: set[int]) -> list[str]:
    """Names of the tree switches: ``member_names`` the names of the fabric switches each folds, in
    natural order (empty: a synthetic root); ``skip`` the removed ones."""
    proposals: list[str] = []
    fallback: list[str] = []
    for mnames in member_names:
        if not mnames:
            proposals.append("root")
            fallback.append("root")
            continue
        first = safe_name(mnames[0])
        pre = common_prefix_name(mnames)
        proposals.append(safe_name(pre) if pre else first)
        fallback.append(first)
    count: dict[str, int] = {}
    for i, p in enumerate(proposals):
        if i not in skip:
            count[p] = count.get(p, 0) + 1
    chosen = [p if count.get(p, 0) == 1 else fallback[i] for i, p in enumerate(proposals)]
    # synthetic roots: "root", or "root-<first child>" when several fabrics need one
    used: set[str] = set()
    order = sorted(
        (e for e in range(len(member_names)) if e not in skip), key=lambda e: (tiers[e], natural_key(chosen[e]), e)
    )
    final = [""] * len(member_names)
    for eid in order:
        base = chosen[eid]
        nm = base
        k = 2
        while nm in used:
            suffix = f"_{k}"
            nm = safe_name(base[: MAX_NAME - len(suffix)] + suffix)
            k += 1
        used.add(nm)
        final[eid] = nm
    return final
