"""files.replace_file: the one atomic single-file writer (pool locks, topology.conf, inventory edits)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.files import as_text, replace_file


def test_check_write_unchanged_change(tmp_path: Path) -> None:
    p = tmp_path / "sub" / "topology.conf"
    assert replace_file(p, "a\n", check=True) == (True, None)
    assert not p.exists() and not p.parent.exists()
    assert replace_file(p, "a\n") == (True, None)
    mtime = p.stat().st_mtime_ns
    assert replace_file(p, "a\n") == (False, b"a\n")
    assert p.stat().st_mtime_ns == mtime  # same bytes: not even touched
    assert replace_file(p, b"b\n") == (True, b"a\n")
    assert p.read_text() == "b\n" and as_text(b"a\n") == "a\n" and as_text(None) == ""
    assert [x.name for x in p.parent.iterdir()] == ["topology.conf"]  # no temporary file left


def test_mode_kept_or_set(tmp_path: Path) -> None:
    f = tmp_path / "x.yml"
    f.write_text("a: 1\n")
    f.chmod(0o640)
    replace_file(f, "a: 2\n")
    assert f.read_text() == "a: 2\n" and (f.stat().st_mode & 0o777) == 0o640
    replace_file(f, "a: 3\n", mode=0o600)
    assert (f.stat().st_mode & 0o777) == 0o600
    new = tmp_path / "new.yml"
    replace_file(new, "x\n")
    assert (new.stat().st_mode & 0o777) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.yml", "x.yml"]


def test_failed_write_keeps_old_bytes_and_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "lock.yaml"
    f.write_text("old\n")

    def broken(src, dst):  # the rename is the commit point: fail it like a full disk would
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError):
        replace_file(f, "new\n")
    assert f.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["lock.yaml"]
