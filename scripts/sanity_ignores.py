#!/usr/bin/env python3
"""Keep the computed part of tests/sanity/ignore-2.{19,20,21}.txt current.

The Python core in plugins/module_utils/ runs on the controller and uses PyYAML, jsonschema and
ruamel.yaml. ansible-test's `import` sanity test imports every module_utils file in a venv that
has none of these (module_utils are assumed to run on managed hosts), so each file that imports
one of them at module level, directly or through another module_utils file, needs the narrow
entry `<path> import-<py>!skip` (the import test takes no error codes). Modules guard those
imports (missing_required_lib) and need no entry. This script computes exactly those entries
from the import graph, so no entry is missing or stale; every other line of the ignore files
(hand-written, narrow) is kept as it is.

    scripts/sanity_ignores.py          # rewrite the files
    scripts/sanity_ignores.py --check  # exit 1 and show the difference when they are stale
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODULE_UTILS = ROOT / "plugins" / "module_utils"
PREFIX = "ansible_collections.gpufleet.core.plugins.module_utils."
CONTROLLER_ONLY = ("yaml", "jsonschema", "ruamel")
# ansible-core version -> Python versions its import test may run on this project's machines
VERSIONS = {"2.19": ("3.11", "3.12"), "2.20": ("3.12",), "2.21": ("3.12",)}
MARK = "!skip"


def _module_level_imports(path: Path) -> tuple[set[str], set[str]]:
    """(third-party roots, sibling module_utils names) imported unguarded at module level."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    third, local = set(), set()

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.Try):
                continue  # guarded import: the file handles its absence
            if isinstance(node, ast.If):
                if not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
                    visit(node.body)
                    visit(node.orelse)
                continue
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for n in names:
                if n.startswith(PREFIX):
                    local.add(n[len(PREFIX) :])
                elif n.split(".")[0] in CONTROLLER_ONLY:
                    third.add(n.split(".")[0])

    visit(tree.body)
    return third, local


def failing_files() -> list[str]:
    files = {
        ".".join(p.relative_to(MODULE_UTILS).with_suffix("").parts): p
        for p in MODULE_UTILS.rglob("*.py")
        if p.name != "__init__.py"
    }
    graph = {name: _module_level_imports(path) for name, path in files.items()}
    bad: dict[str, bool] = {}

    def fails(name: str, seen: frozenset[str] = frozenset()) -> bool:
        if name in bad:
            return bad[name]
        if name not in graph or name in seen:
            return False
        third, local = graph[name]
        result = bool(third) or any(fails(dep, seen | {name}) for dep in sorted(local))
        bad[name] = result
        return result

    return sorted(files[n].relative_to(ROOT).as_posix() for n in files if fails(n))


def computed(version: str) -> list[str]:
    return [f"{path} import-{py}{MARK}" for path in failing_files() for py in VERSIONS[version]]


def is_computed(line: str) -> bool:
    parts = line.split()
    return len(parts) == 2 and parts[0].startswith("plugins/module_utils/") and parts[1].startswith("import-")
    # every other line is hand-written and kept


def wanted(path: Path, version: str) -> str:
    kept = [ln for ln in (path.read_text().splitlines() if path.exists() else []) if ln.strip() and not is_computed(ln)]
    return "\n".join(sorted(set(kept + computed(version)))) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    stale = []
    for version in VERSIONS:
        path = ROOT / "tests" / "sanity" / f"ignore-{version}.txt"
        text = wanted(path, version)
        current = path.read_text() if path.exists() else ""
        if text != current:
            stale.append(path)
            if not a.check:
                path.write_text(text)
    if a.check and stale:
        names = ", ".join(p.relative_to(ROOT).as_posix() for p in stale)
        print(f"stale sanity ignore entries in {names}: run scripts/sanity_ignores.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
