"""CODEOWNERS read as GitHub reads it: the examples of GitHub's documentation, last match wins."""

from __future__ import annotations

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.review import codeowners as co

# (pattern, path, matches) from GitHub's "About code owners" examples and .gitignore rules
CASES = [
    ("*", "a/b/c.txt", True),
    ("*.js", "src/app/main.js", True),
    ("*.js", "src/app/main.jsx", False),
    ("*.go", "main.go", True),
    ("/build/logs/", "build/logs/x.log", True),
    ("/build/logs/", "build/logs/deep/x.log", True),
    ("/build/logs/", "src/build/logs/x.log", False),
    ("/build/logs/", "build/logs", False),  # a directory pattern: the files under it
    ("docs/*", "docs/getting-started.md", True),
    ("docs/*", "docs/build-app/troubleshooting.md", False),  # dir/*: not deeper
    ("docs/*", "src/docs/x.md", False),  # a slash inside anchors at the root
    ("apps/", "apps/x", True),
    ("apps/", "src/apps/deep/x", True),  # no slash but the trailing one: any depth
    ("/docs/", "docs/a/b.md", True),
    ("/docs/", "x/docs/a.md", False),
    ("**/logs", "logs/a", True),
    ("**/logs", "build/logs/a", True),
    ("**/logs", "deeply/nested/logs/a", True),
    ("/scripts/", "scripts/a.sh", True),
    ("/apps/github", "apps/github/x", True),
    ("/apps/github", "apps/github", True),
    ("/apps/github", "apps/githubx", False),
    ("/a/**/b", "a/b", True),
    ("/a/**/b", "a/x/y/b", True),
    ("/a/**", "a/x/y", True),
    ("/a/**", "b/a/x", False),
    ("/CODEOWNERS", "CODEOWNERS", True),
    ("/CODEOWNERS", "docs/CODEOWNERS", False),
    ("fi?e.txt", "dir/file.txt", True),
    ("fi?e.txt", "dir/fi/e.txt", False),
    ("/gitops/clusters/c/tenants/t/", "gitops/clusters/c/tenants/t/.gpufleet-manifest", True),
    ("/gitops/clusters/c/tenants/t/", "gitops/clusters/c/tenants/tt/x", False),
    ("a.b", "axb", False),  # a dot is a dot
]


@pytest.mark.parametrize(("pattern", "path", "matches"), CASES)
def test_pattern(pattern: str, path: str, matches: bool) -> None:
    assert bool(co.pattern_regex(pattern).match(path)) is matches


def test_last_match_wins_and_an_ownerless_line_clears() -> None:
    owners = co.parse(
        "# comment\n*  @org/platform\n/t/  @org/t  # trailing comment\n/t/open.md\n\\#odd  @org/x\n", "CODEOWNERS"
    )
    assert owners.match("x/y").owners == ("@org/platform",)
    rule = owners.match("t/a.yaml")
    assert rule.owners == ("@org/t",) and rule.line == 3 and rule.pattern == "/t/"
    assert owners.match("t/open.md").owners == ()  # matched, no owner: no code-owner review
    assert owners.match("#odd").owners == ("@org/x",)


@pytest.mark.parametrize(
    ("line", "why"),
    [("!/t/x  @org/t", "negation"), ("/t/[ab]  @org/t", "ranges"), ("/t/  a@b#c", "not @user")],
)
def test_lines_github_skips_are_named(line: str, why: str) -> None:
    owners = co.parse(f"*  @org/platform\n{line}\n", "CODEOWNERS")
    assert len(owners.rules) == 1 and why in owners.skipped[0] and "CODEOWNERS:2" in owners.skipped[0]
    assert co.parse("", "CODEOWNERS").match("x") is None
