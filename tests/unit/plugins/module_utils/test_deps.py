"""Guarded imports: every module_utils file imports without PyYAML, jsonschema, ruamel.yaml and kubernetes (as
ansible-test's import test and a bare managed host need), and using one raises a clear error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[4]

CHILD = r"""
import importlib, json, pathlib, sys
class Block:  # the libraries are installed here; hide them as a host without them would
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("yaml", "jsonschema", "ruamel", "_ruamel_yaml", "kubernetes"):
            raise ImportError("blocked " + name)
sys.meta_path.insert(0, Block())
sys.path.insert(0, sys.argv[1])
failed = {}
for p in sorted(pathlib.Path("plugins/module_utils").rglob("*.py")):
    mod = "ansible_collections.gpufleet.core." + ".".join(p.with_suffix("").parts)
    try:
        importlib.import_module(mod)
    except Exception as e:
        failed[mod] = repr(e)
from ansible_collections.gpufleet.core.plugins.module_utils.deps import MissingLibraryError
from ansible_collections.gpufleet.core.plugins.module_utils import yaml_dump
from ansible_collections.gpufleet.core.plugins.module_utils.pools.lock import parse_lock
from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
uses = {}
for name, call in (("dump", lambda: yaml_dump.dump({"a": 1})), ("lock", lambda: parse_lock("nodes: {}")),
                   ("fleet", lambda: load_fleet("inventories/sample"))):
    try:
        call()
        uses[name] = "no error"
    except MissingLibraryError as e:
        uses[name] = str(e)
print(json.dumps({"failed": failed, "uses": uses}))
"""


def test_every_module_utils_file_imports_without_controller_libraries() -> None:
    p = subprocess.run(
        [sys.executable, "-c", CHILD, str(REPO / ".build" / "collections")],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["failed"] == {}
    assert "pip install PyYAML" in out["uses"]["dump"]
    assert "pip install PyYAML" in out["uses"]["lock"]
    assert "required on the Ansible controller" in out["uses"]["fleet"]
