"""CONTRIBUTING.md stays true: every file it names exists, every function or name it puts in backticks
after a file is defined there, and every test it says proves a recipe exists."""

from __future__ import annotations

import re

from render_fixtures import REPO

TEXT = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
FILES = re.compile(r"`((?:plugins|tests|docs|scripts|changelogs)/[\w/.<>-]+)`")
DEFINED = re.compile(r"`((?:plugins|tests)/[\w/.-]+\.py)` \(`(\w+)`")


def test_the_four_recipes_are_there() -> None:
    heads = re.findall(r"^### (.+)$", TEXT, re.MULTILINE)
    assert len(heads) == 4 and all("Proved by" in part for part in TEXT.split("### ")[1:]), heads


def test_every_named_file_exists() -> None:
    named = [f for f in FILES.findall(TEXT) if "<" not in f and not f.endswith("/...")]
    assert len(named) > 15
    assert [f for f in named if not (REPO / f).exists()] == []


def test_every_named_function_and_test_exists() -> None:
    pairs = DEFINED.findall(TEXT)
    # the proving tests named in a recipe's parentheses and lists, each in the file named before it
    for part in TEXT.split("### ")[1:]:
        files = [f for f in FILES.findall(part) if f.endswith(".py") and (REPO / f).is_file()]
        for name in re.findall(r"`(test_\w+)`", part):
            assert any(re.search(rf"^def {name}\b", (REPO / f).read_text(), re.MULTILINE) for f in files), name
    assert pairs
    for path, name in pairs:
        text = (REPO / path).read_text(encoding="utf-8")
        assert re.search(rf"^\s*(def|class) {name}\b|^{name}\b[^=\n]*=", text, re.MULTILINE), (path, name)
