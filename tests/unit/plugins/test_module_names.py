"""Every file of plugins/ has a name of its own: a basename used twice (``render/accounting.py`` beside
``model/accounting.py``) makes ``accounting.py`` mean two things in a traceback, a grep or a review.

The one pair allowed is the one Ansible requires: an action plugin carries the name of the module it
runs for (``action/fleet_validate.py`` and ``modules/fleet_validate.py``).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

PLUGINS = Path(__file__).resolve().parents[3] / "plugins"


def clashes(root: Path) -> dict[str, list[str]]:
    """Basename -> the files under ``root`` that carry it, for every basename used more than once."""
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        if path.name != "__init__.py":
            by_name[path.name].append(path.relative_to(root).as_posix())
    return {
        name: files
        for name, files in by_name.items()
        if len(files) > 1 and sorted(files) != [f"action/{name}", f"modules/{name}"]
    }


def test_every_plugin_file_name_is_used_once() -> None:
    assert len(list(PLUGINS.rglob("*.py"))) > 100
    assert clashes(PLUGINS) == {}


def test_the_check_finds_a_clash_and_allows_an_action_for_its_module(tmp_path: Path) -> None:
    for rel in ("action/fleet_validate.py", "modules/fleet_validate.py", "module_utils/model/accounting.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("", encoding="utf-8")
    assert clashes(tmp_path) == {}
    (tmp_path / "module_utils/render").mkdir()
    (tmp_path / "module_utils/render/accounting.py").write_text("", encoding="utf-8")
    (tmp_path / "filter").mkdir()
    (tmp_path / "filter/fleet_validate.py").write_text("", encoding="utf-8")
    assert clashes(tmp_path) == {
        "accounting.py": ["module_utils/model/accounting.py", "module_utils/render/accounting.py"],
        "fleet_validate.py": ["action/fleet_validate.py", "filter/fleet_validate.py", "modules/fleet_validate.py"],
    }
