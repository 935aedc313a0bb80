#!/usr/bin/env python3
"""YAML dump benchmark: yaml_dump's block emitter against the libraries, on the documents a render writes.

Every document ``yaml_dump.dump`` gets during one render is recorded (the sample inventory; the generated
10,000-node, 100-tenant fleet of bench_render.py), then dumped again by each way, best of ``--runs`` in
CPU seconds (``time.process_time``), with the bytes compared to what the render wrote:

* ``yaml_dump.dump``: the block emitter, PyYAML for what it leaves (the product);
* PyYAML alone (``_pyyaml_dump``: libyaml's CSafeDumper, its representer fast path);
* PyYAML's CSafeDumper as documented (``yaml.dump`` with a literal-block representer, no fast path);
* ruamel.yaml (``typ="safe"``, its C extension when installed, else pure Python).

A last table is the whole ``render_fleet`` of the big fleet with the emitter on and off. Prints tables;
asserts nothing.

    .venv/bin/python bench/bench_yaml_dump.py [--nodes 10000] [--tenants 100] [--runs 3]
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
from checkout_path import use_checkout


def cold() -> None:
    """Forget what yaml_dump remembered (scalar texts, implicit tags), as at the start of a render process."""
    from ansible_collections.gpufleet.core.plugins.module_utils import yaml_dump

    yaml_dump._Emitter.values.clear()
    yaml_dump._Emitter.keys.clear()
    yaml_dump._dumper.cache_clear()
    yaml_dump._resolver.cache_clear()


def best_cpu(fn: Callable[[], Any], runs: int) -> tuple[float, Any]:
    """(least CPU seconds of ``runs`` calls, each from cold memos, the last result)."""
    best, out = float("inf"), None
    for _ in range(runs):
        cold()
        t0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t0)
    return best, out


def recorded_documents(render: Callable[[], Any]) -> list[Any]:
    """Every object ``yaml_dump.dump`` is given while ``render()`` runs."""
    from ansible_collections.gpufleet.core.plugins.module_utils import yaml_dump

    docs: list[Any] = []
    real = yaml_dump.dump

    def record(obj: Any) -> str:
        docs.append(obj)
        return real(obj)

    yaml_dump.dump = record
    try:
        render()
    finally:
        yaml_dump.dump = real
    return docs


def library_dumpers() -> dict[str, Callable[[Any], str]]:
    """The ways to dump one document besides the product's, each set to write the product's layout."""
    import yaml
    from ruamel.yaml import YAML

    from ansible_collections.gpufleet.core.plugins.module_utils import yaml_dump

    class Documented(yaml.CSafeDumper):  # type: ignore[misc,name-defined]
        def ignore_aliases(self, data: Any) -> bool:
            return True

    def literal(dumper: Any, value: str) -> Any:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)

    Documented.add_representer(str, literal)

    def documented(obj: Any) -> str:
        return yaml.dump(
            obj,
            Dumper=Documented,
            sort_keys=True,
            default_flow_style=False,
            allow_unicode=True,
            width=1_000_000,
            indent=2,
        )

    ruamel = YAML(typ="safe")
    ruamel.default_flow_style = False
    ruamel.allow_unicode = True
    ruamel.width = 1_000_000
    ruamel.indent(mapping=2, sequence=2, offset=0)
    ruamel.representer.add_representer(str, literal)
    ruamel.representer.ignore_aliases = lambda data: True

    def ruamel_dump(obj: Any) -> str:
        buf = io.StringIO()
        ruamel.dump(obj, buf)
        return buf.getvalue()

    c_ext = "C extension" if importlib.util.find_spec("_ruamel_yaml") else "pure Python"
    return {
        "PyYAML CSafeDumper + fast-path representer (_pyyaml_dump)": yaml_dump._pyyaml_dump,
        "PyYAML CSafeDumper, as documented": documented,
        f"ruamel.yaml typ=safe ({c_ext})": ruamel_dump,
    }


def table(label: str, docs: list[Any], runs: int) -> None:
    from ansible_collections.gpufleet.core.plugins.module_utils import yaml_dump

    want = [yaml_dump.dump(d) for d in docs]
    size = sum(len(t.encode()) for t in want) / 1e6
    base, _ = best_cpu(lambda: [yaml_dump.dump(d) for d in docs], runs)
    print(f"## {label}: {len(docs)} documents, {size:.1f} MB (CPU seconds, best of {runs})\n")
    print("dumper | CPU s | vs yaml_dump.dump | documents with other bytes")
    print("---|---|---|---")
    print(f"yaml_dump.dump (block emitter, PyYAML for the rest) | {base:.2f} | 1.00 | 0")
    for name, fn in library_dumpers().items():
        t, got = best_cpu(lambda fn=fn: [fn(d) for d in docs], runs if "ruamel" not in name else 1)
        differ = sum(a != b for a, b in zip(got, want, strict=True))
        print(f"{name} | {t:.2f} | {t / base:.2f} | {differ}")
    print()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--tenants", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    use_checkout()
    sys.path.insert(0, str(REPO / "tests" / "lib"))
    from render_fixtures import make_big_inventory

    from ansible_collections.gpufleet.core.plugins.module_utils import yaml_dump
    from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
    from ansible_collections.gpufleet.core.plugins.module_utils.render import tree as rt

    print(f"# yaml dump benchmark; machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}\n")
    tmp = Path(tempfile.mkdtemp(prefix="bench-yaml-"))
    os.environ["GPUFLEET_CACHE_DIR"] = str(tmp / "cache")
    try:
        sample = load_fleet(REPO / "inventories" / "sample")
        table("the sample inventory", recorded_documents(lambda: rt.render_fleet(sample)), args.runs)
        big = load_fleet(make_big_inventory(tmp, args.nodes, args.tenants, True))
        docs = recorded_documents(lambda: rt.render_fleet(big))
        table(f"the generated fleet ({args.nodes} nodes, {args.tenants} tenants)", docs, args.runs)

        print(f"## render_fleet of the generated fleet (CPU seconds, best of {args.runs})\n")
        print("block emitter | CPU s | files, same bytes")
        print("---|---|---")
        on, want = best_cpu(lambda: rt.render_fleet(big), args.runs)
        real = yaml_dump._fast_dump
        yaml_dump._fast_dump = lambda obj: None
        try:
            off, got = best_cpu(lambda: rt.render_fleet(big), args.runs)
        finally:
            yaml_dump._fast_dump = real
        print(f"on (the product) | {on:.2f} | {len(want.files)}")
        print(f"off (PyYAML for every document) | {off:.2f} | {got.files == want.files}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
