"""Who must approve a change of a file: the fleet repository's CODEOWNERS, read as GitHub reads it.

- the file is the first of ``.github/CODEOWNERS``, ``CODEOWNERS``, ``docs/CODEOWNERS`` that exists, as
  of the pull request's **base** (GitHub takes the rules from the base branch: a pull request that
  edits CODEOWNERS does not choose its own approvers);
- each line is a pattern and zero or more owners; ``#`` starts a comment (``\\#`` is a literal ``#``);
  the **last** matching line wins, and a matching line with no owner leaves the file without owners;
- patterns follow ``.gitignore`` with GitHub's differences: a leading ``/`` or a ``/`` inside anchors
  at the root, else the pattern matches at any depth; ``*`` stays within a path segment, ``**`` crosses
  them, ``?`` is one character; a pattern that names a directory covers everything under it, but
  ``dir/*`` covers only the files directly in ``dir``; ``!`` negation and ``[...]`` ranges are not
  supported by GitHub: such a line is skipped (and named, it is a mistake in the repository).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ansible_collections.gpufleet.core.plugins.module_utils.model import grammar as g

LOCATIONS = (".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS")


@dataclass(frozen=True)
class Rule:
    line: int
    pattern: str
    owners: tuple[str, ...]
    regex: re.Pattern[str]

    def __str__(self) -> str:
        return f"`{self.pattern}` (line {self.line})"


@dataclass
class CodeOwners:
    path: str  # repository-relative, "" when the repository has none
    rules: list[Rule]
    skipped: list[str]  # lines GitHub does not accept, with why

    def match(self, path: str) -> Rule | None:
        """The rule that decides who must approve a change of ``path`` (the last that matches)."""
        for rule in reversed(self.rules):
            if rule.regex.match(path):
                return rule
        return None


def _segment(seg: str) -> str:
    out = []
    for ch in seg:
        out.append("[^/]*" if ch == "*" else "[^/]" if ch == "?" else re.escape(ch))
    return "".join(out)


def pattern_regex(pattern: str) -> re.Pattern[str]:
    """The compiled matcher of one CODEOWNERS pattern over repository-relative POSIX paths."""
    anchored = pattern.startswith("/") or "/" in pattern.rstrip("/")
    directory = pattern.endswith("/")
    segs = [s for s in pattern.strip("/").split("/") if s != ""]
    body: list[str] = []
    for i, seg in enumerate(segs):
        last = i == len(segs) - 1
        if seg == "**":
            body.append(".*" if last else "(?:[^/]+/)*")
            continue
        body.append(_segment(seg) + ("" if last else "/"))
    regex = "".join(body)
    if segs and segs[0] == "**":
        anchored = True
    prefix = "" if anchored else "(?:.*/)?"
    if directory:
        suffix = "/.+"
    elif segs and segs[-1] == "*" and len(segs) > 1:
        suffix = ""  # ``dir/*``: the files directly in dir, not deeper
    else:
        suffix = "(?:/.+)?"
    return re.compile(f"^{prefix}{regex}{suffix}$", re.DOTALL)


def _split(line: str) -> list[str]:
    """Whitespace-separated fields; ``\\#`` and ``\\ `` escape, an unescaped ``#`` starts a comment."""
    fields: list[str] = []
    cur = ""
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\" and i + 1 < len(line):
            cur += line[i + 1]
            i += 2
            continue
        if ch == "#":
            break
        if ch in " \t":
            if cur:
                fields.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    if cur:
        fields.append(cur)
    return fields


def _line_problem(pattern: str, owners: tuple[str, ...]) -> str | None:
    if pattern.startswith("!"):
        return "`!` negation is not supported"
    if "[" in pattern:
        return "`[...]` ranges are not supported"
    bad = [o for o in owners if not g.fullmatch(g.CODE_OWNER, o)]
    return f"`{bad[0]}` is not @user, @org/team or an e-mail" if bad else None


def parse(text: str, path: str) -> CodeOwners:
    rules: list[Rule] = []
    skipped: list[str] = []
    for n, raw in enumerate(text.splitlines(), 1):
        fields = _split(raw)
        if not fields:
            continue
        pattern, owners = fields[0], tuple(fields[1:])
        why = _line_problem(pattern, owners)
        if why:
            skipped.append(f"{path}:{n}: {why}; GitHub skips the line")
            continue
        rules.append(Rule(n, pattern, owners, pattern_regex(pattern)))
    return CodeOwners(path, rules, skipped)


def none() -> CodeOwners:
    return CodeOwners("", [], [])
