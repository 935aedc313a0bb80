"""What a review does once for the base and the head: the vars files' YAML is composed once per text
(each load still builds its own values and is charged its budgets), and the base is extracted by
``git archive`` in its own process while the head renders."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from render_fixtures import GIT_ENV, copy_sample

from ansible_collections.gpufleet.core.plugins.module_utils.errors import ModelError
from ansible_collections.gpufleet.core.plugins.module_utils.model import inventory
from ansible_collections.gpufleet.core.plugins.module_utils.pools.lock import LockError, parse_lock_entries
from ansible_collections.gpufleet.core.plugins.module_utils.scale.check import CheckError, extracting


@pytest.fixture
def composes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts the loader composes (PyYAML's composer: most of a vars file's load)."""
    seen: list[str] = []
    loader = inventory._loader_class()
    real = loader.get_single_node

    def counting(self):
        seen.append(self.buffer)
        return real(self)

    monkeypatch.setattr(loader, "get_single_node", counting)
    return seen


def test_loads_share_composes_and_build_their_own_values(tmp_path: Path, composes: list[str]) -> None:
    inv = copy_sample(tmp_path)
    alone = inventory.load_inventory(inv)
    texts = set(composes)
    composes.clear()
    with inventory.shared_composes():
        a = inventory.load_inventory(inv)
        b = inventory.load_inventory(inv)
    assert sorted(composes) == sorted(texts)  # each text once for both loads
    assert a.data == b.data == alone.data and a.where == b.where == alone.where
    a.data["gpufleet_tenants"].append({"name": "changed"})
    assert b.data["gpufleet_tenants"] == alone.data["gpufleet_tenants"]  # nothing built is shared
    composes.clear()
    inventory.load_inventory(inv)
    assert sorted(composes) == sorted(texts)  # outside the block: composed again


def test_a_merge_key_file_is_composed_for_each_load() -> None:
    # constructing flattens the merge into the node; a second construction from that node would see
    # the overridden key twice and refuse it as defined twice
    text = "base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  x: 3\n"
    with inventory.shared_composes():
        first = inventory._parse(Path("a.yml"), text)[1]
        second = inventory._parse(Path("b.yml"), text)[1]
    assert first == second == {"base": {"x": 1, "y": 2}, "other": {"x": 3, "y": 2}}


def test_every_load_is_charged_its_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inv = copy_sample(tmp_path)
    charged: list[int] = []
    real = inventory._charge
    monkeypatch.setattr(inventory, "_charge", lambda nodes=0, size=0: (charged.append(nodes), real(nodes, size)))
    inventory.load_inventory(inv)
    budget = sum(charged) - 1  # one load passes it, at its last file
    monkeypatch.setattr(inventory, "MAX_TOTAL_NODES", budget)
    with inventory.shared_composes():
        for _attempt in range(2):  # the second load's files were all composed by the first
            with pytest.raises(ModelError, match=f"more than {budget} YAML nodes"):
                inventory.load_inventory(inv)


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "inv" / "sub").mkdir(parents=True)
    (repo / "inv" / "sub" / "a.txt").write_text("at the base\n", encoding="utf-8")
    env = {**os.environ, **GIT_ENV}
    for cmd in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", *cmd], cwd=repo, check=True, capture_output=True, env=env)
    (repo / "inv" / "sub" / "a.txt").write_text("in the work tree\n", encoding="utf-8")
    return repo


def test_extracting_the_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _repo(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    with extracting(repo, "main", "inv", tmp_path / "base") as done:
        assert done()
    assert (tmp_path / "base" / "inv" / "sub" / "a.txt").read_text(encoding="utf-8") == "at the base\n"
    with extracting(repo, "main", "nowhere", tmp_path / "none") as done:
        assert not done()
    assert not (tmp_path / "none").exists()
    with pytest.raises(RuntimeError, match="the head failed"):  # left early: git stopped, tar removed
        with extracting(repo, "main", "inv", tmp_path / "early"):
            raise RuntimeError("the head failed")
    assert not (tmp_path / "early").exists()
    assert list((tmp_path / "tmp").iterdir()) == []
    with pytest.raises(CheckError, match="ls-tree"):
        with extracting(repo, "no-such-branch", "inv", tmp_path / "bad"):
            pass


def test_a_lock_parsed_again_is_a_fresh_copy() -> None:
    text = "cluster: c\nowners:\n  p: t\nnodes:\n  n1: p\n  n2: p\n"
    first = parse_lock_entries(text, "lock", "c")
    first[0]["n1"] = "moved"
    first[1].clear()
    assert parse_lock_entries(text.encode(), "lock", "c") == ({"n1": "p", "n2": "p"}, {"p": "t"})
    for _attempt in range(2):  # a refusal is not remembered as a result
        with pytest.raises(LockError, match="expected 'd'"):
            parse_lock_entries(text, "lock", "d")
