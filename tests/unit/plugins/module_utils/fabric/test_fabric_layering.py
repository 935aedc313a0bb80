"""The fabric package reads one way: parsers know the model, fabric/load.py knows the parsers,
nothing in fabric/ knows topology/ or render/ (so a parser cannot import back into a cycle)."""

from __future__ import annotations

import ast
from pathlib import Path

FABRIC = Path(__file__).resolve().parents[5] / "plugins" / "module_utils" / "fabric"
PREFIX = "ansible_collections.gpufleet.core.plugins.module_utils."


def imports(name: str) -> set[str]:
    tree = ast.parse((FABRIC / name).read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):  # module level and inside functions alike
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PREFIX):
            found.add(node.module[len(PREFIX) :])
    return found


def test_parsers_know_only_the_model() -> None:
    assert imports("model.py") <= {"errors"}
    for parser in ("ibnetdiscover.py", "labels.py", "file.py"):
        assert imports(parser) <= {"fabric.model", "errors", "hostlist", "deps", "yaml_dump"}, parser
    assert {"fabric.ibnetdiscover", "fabric.labels", "fabric.file", "fabric.model"} <= imports("load.py")


def test_nothing_in_fabric_imports_later_stages() -> None:
    for f in sorted(FABRIC.glob("*.py")):
        later = {m for m in imports(f.name) if m.split(".")[0] in ("topology", "render", "pools", "scale", "publish")}
        assert not later, f"{f.name} imports {sorted(later)}"
