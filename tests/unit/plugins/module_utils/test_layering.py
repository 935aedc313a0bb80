"""The stage order of plugins/module_utils (docs/adr/code-shape.md, "Packages by stage"), kept by one test.

Every package and top-level file of module_utils has a stage in ``STAGES``; a file may import its own
stage or an earlier one, never a later one; the import graph between files has no cycle; imports sit
at the top of the file (the guarded ``try/except ImportError`` ones included), never in a function;
only the module plumbing (``module.py``) imports Ansible. A package added without a row here fails.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4] / "plugins" / "module_utils"
PREFIX = "ansible_collections.gpufleet.core.plugins.module_utils."

# stage -> the packages (folders) and top-level files (without .py) in it, earliest first
STAGES: list[tuple[str, ...]] = [
    ("errors", "deps", "files", "hostlist", "versions", "yaml_dump", "kubeclient"),  # shared helpers
    ("model",),  # schema, typed fleet, inventory loading and validation, nodes snapshot, the fence vocabulary
    ("fabric",),  # the fabric model and its parsers
    ("topology",),  # fabric -> switch tree, blocks, health; topology files
    ("pools",),  # assignment, lock, moves, applying them to Nodes
    ("argocd",),  # the vCluster cluster Secret, Application status
    ("render",),  # the GitOps tree
    ("health",),  # GPU quarantine of Nodes
    ("publish",),  # the branch and the pull request
    ("scale",),  # the scale change (plan, write, publish)
    ("daytwo",),  # maintenance, version rules, upgrade and rollback plans
    ("review", "scaffold"),  # a pull request reviewed by owner; a new fleet repository
    ("module",),  # Ansible module plumbing: the only file that imports Ansible
]
ANSIBLE_ALLOWED = {"module"}
# inside fabric/: the parsers (every file but the model and the loader) know only the model, load.py
# knows the parsers
FABRIC_PARSERS = tuple(
    f"fabric/{p.name}" for p in sorted((ROOT / "fabric").glob("*.py")) if p.stem not in ("__init__", "model", "load")
)
FABRIC_PARSER_IMPORTS = {"fabric.model", "errors", "hostlist", "deps", "yaml_dump"}


def _unit(rel: str) -> str:
    """``render/tree.py`` -> ``render``; ``deps.py`` -> ``deps``."""
    return rel.split("/")[0].removesuffix(".py")


def _target(root: Path, node: ast.ImportFrom, alias: ast.alias) -> str:
    """The module_utils file (``model/fence.py``) an import statement refers to."""
    mod = node.module[len(PREFIX) :].replace(".", "/")  # type: ignore[index]
    sub = f"{mod}/{alias.name}.py"
    return sub if (root / sub).is_file() else f"{mod}.py" if (root / f"{mod}.py").is_file() else f"{mod}/__init__.py"


def scan(root: Path) -> tuple[dict[str, set[str]], list[str]]:
    """(file -> module_utils files it imports, problems found on the way) for every file under ``root``."""
    graph: dict[str, set[str]] = {}
    problems: list[str] = []
    for f in sorted(root.rglob("*.py")):
        rel = f.relative_to(root).as_posix()
        tree = ast.parse(f.read_text(encoding="utf-8"))
        top = {
            id(n) for stmt in tree.body for n in ast.walk(stmt) if not isinstance(stmt, ast.FunctionDef | ast.ClassDef)
        }
        deps: set[str] = set()
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            if id(node) not in top:
                problems.append(f"{rel}:{node.lineno}: import inside a function or class")
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            if any(n == "ansible" or n.startswith("ansible.") for n in names) and _unit(rel) not in ANSIBLE_ALLOWED:
                problems.append(f"{rel}:{node.lineno}: imports Ansible (only the module plumbing may)")
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PREFIX):
                deps |= {_target(root, node, a) for a in node.names}
        graph[rel] = deps
    return graph, problems


def check(root: Path, stages: list[tuple[str, ...]]) -> list[str]:
    """Every violation of the stage order in the tree under ``root``, as readable lines."""
    stage = {u: i for i, units in enumerate(stages) for u in units}
    graph, problems = scan(root)
    for rel in graph:
        if _unit(rel) not in stage:
            problems.append(f"{rel}: {_unit(rel)!r} has no stage in the layering table (add it, and to the ADR)")
    for rel, deps in graph.items():
        for dep in sorted(deps):
            a, b = stage.get(_unit(rel)), stage.get(_unit(dep))
            if a is not None and b is not None and b > a:
                problems.append(f"{rel} imports {dep}: up the stages ({_unit(rel)} -> later {_unit(dep)})")
    problems += [f"import cycle: {' -> '.join(c)}" for c in _cycles(graph)]
    return problems


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    found: list[list[str]] = []
    state: dict[str, int] = {}  # 1 on the stack, 2 done

    def visit(n: str, path: list[str]) -> None:
        state[n] = 1
        for d in sorted(graph.get(n, ())):
            if state.get(d) == 1:
                found.append([*path[path.index(d) :], d])
            elif d not in state:
                visit(d, [*path, d])
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n, [n])
    return found


def test_module_utils_keeps_the_stage_order() -> None:
    assert check(ROOT, STAGES) == []


def test_every_package_is_in_the_table_and_the_adr() -> None:
    units = {_unit(f.relative_to(ROOT).as_posix()) for f in ROOT.rglob("*.py")}
    listed = {u for units_ in STAGES for u in units_}
    assert units == listed
    adr = (ROOT.parents[1] / "docs" / "adr" / "code-shape.md").read_text(encoding="utf-8")
    missing = sorted(u for u in units if f"`{u}/`" not in adr and f"`{u}.py`" not in adr)
    assert missing == []


def test_fabric_parsers_know_only_the_model() -> None:
    graph = scan(ROOT)[0]
    assert len(FABRIC_PARSERS) >= 3
    for parser in FABRIC_PARSERS:
        imported = {d.removesuffix(".py").replace("/", ".") for d in graph[parser]}
        assert imported <= FABRIC_PARSER_IMPORTS, parser
    assert set(FABRIC_PARSERS) | {"fabric/model.py"} <= graph["fabric/load.py"]


# packages that, though later in the stages, stay independent of some earlier ones: the GPU
# quarantine reads the fence vocabulary from the model, not the pool machinery
KEPT_APART = {"health": {"pools", "render", "argocd", "topology", "fabric"}}


def test_kept_apart_packages_do_not_import_each_other() -> None:
    graph = scan(ROOT)[0]
    found = [
        f"{rel} imports {dep}"
        for rel, deps in graph.items()
        for dep in deps
        if _unit(dep) in KEPT_APART.get(_unit(rel), set())
    ]
    assert found == []


def _write(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text, encoding="utf-8")


@pytest.mark.parametrize(
    ("rel", "text", "expected"),
    [
        ("newpkg/x.py", "", "'newpkg' has no stage"),
        ("model/up.py", f"from {PREFIX}render import tree\n", "model/up.py imports render/tree.py: up the stages"),
        ("render/late.py", f"def f():\n    from {PREFIX}errors import Issue\n", "render/late.py:2: import inside"),
        ("render/ans.py", "from ansible.module_utils.basic import AnsibleModule\n", "render/ans.py:1: imports Ansible"),
        (
            "render/a.py",
            f"from {PREFIX}render import tree\n",
            "import cycle: render/a.py -> render/tree.py -> render/a.py",
        ),
    ],
)
def test_the_checker_catches(tmp_path: Path, rel: str, text: str, expected: str) -> None:
    """The checker itself fails for an unlisted package, an import up the stages, a late import, Ansible
    outside the plumbing and a cycle (so a passing layering test means something)."""
    _write(tmp_path, "errors.py", "")
    _write(tmp_path, "model/fleet.py", f"from {PREFIX}errors import GpufleetError\n")
    _write(tmp_path, "render/tree.py", f"from {PREFIX}model import fleet\nfrom {PREFIX}render import a\n")
    _write(tmp_path, "render/a.py", "")
    assert check(tmp_path, STAGES) == []
    _write(tmp_path, rel, text)
    problems = check(tmp_path, STAGES)
    assert any(expected in p for p in problems), problems


# inside a stage, floors: a file imports its own floor or a lower one (a package counts as one unit)
SUBSTAGES: dict[str, list[tuple[str, ...]]] = {
    "render": [
        ("__init__", "shared_names", "values", "images", "argocd", "git_entries", "writer", "topology_guard"),
        ("cache", "apps", "include", "collisions"),
        ("inputs",),
        ("platform",),
        ("tenants",),
        ("report", "parallel", "tree"),
    ]
}


def substage_problems(root: Path, substages: dict[str, list[tuple[str, ...]]]) -> list[str]:
    graph = scan(root)[0]
    problems = []
    for pkg, floors in substages.items():
        floor = {u: i for i, units in enumerate(floors) for u in units}

        def sub(rel: str, pkg: str = pkg) -> str:
            return rel.split("/")[1].removesuffix(".py")

        for rel, deps in graph.items():
            if _unit(rel) != pkg:
                continue
            if sub(rel) not in floor:
                problems.append(f"{rel}: {sub(rel)!r} has no floor in SUBSTAGES[{pkg!r}]")
                continue
            for dep in sorted(deps):
                if _unit(dep) == pkg and floor.get(sub(dep), -1) > floor[sub(rel)]:
                    problems.append(f"{rel} imports {dep}: up the floors of {pkg}/")
    return problems


def test_packages_keep_their_floors() -> None:
    assert substage_problems(ROOT, SUBSTAGES) == []


def test_the_floor_check_catches_an_import_up(tmp_path: Path) -> None:
    _write(tmp_path, "render/values.py", f"from {PREFIX}render.tenants import tenant\n")
    _write(tmp_path, "render/tenants/tenant.py", "")
    problems = substage_problems(tmp_path, SUBSTAGES)
    assert any("render/values.py imports render/tenants/tenant.py: up the floors" in p for p in problems), problems
