#!/usr/bin/env python3
"""Write (or check) plugins/module_utils/model/feature_gate_table.py from the Kubernetes source.

Reads the versioned feature specs of every gate a Kubernetes component registers at the Kubernetes
version tools/build.sh pins (``K8S_VERSION``): ``k8s.io/kubernetes/pkg/features/kube_features.go`` and
the staging modules' feature files (apiserver, apiextensions-apiserver, client-go, component-base,
controller-manager), from the Go module cache the test bed's build fills. For each gate it keeps the
spec in force at that minor version (the last one whose ``Version`` is not newer): maturity, default,
locked to default.

Usage: tools/feature_gates.py [--check]     (--check: exit 1 when the committed table differs)
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "plugins" / "module_utils" / "model" / "feature_gate_table.py"
# (module, version prefix, file) of every feature file a 1.3x component registers gates from
STAGING = (
    ("k8s.io/apiserver", "pkg/features/kube_features.go"),
    ("k8s.io/apiextensions-apiserver", "pkg/features/kube_features.go"),
    ("k8s.io/client-go", "features/known_features.go"),
    ("k8s.io/component-base", "logs/api/v1/kube_features.go"),
    ("k8s.io/component-base", "metrics/features/kube_features.go"),
    ("k8s.io/component-base", "zpages/features/kube_features.go"),
    ("k8s.io/controller-manager", "pkg/features/kube_features.go"),
)
# a gate's name: typed (X featuregate.Feature = "X"), untyped (X = "X"), converted (X = featuregate.Feature("X"))
_CONST = re.compile(
    r"^\s*(\w+)\s+(?:(?:featuregate\.)?Feature\s*)?=\s*(?:featuregate\.Feature\()?\"(\w+)\"", re.MULTILINE
)
# a gate's specs: a block (its own name or another package's, ``genericfeatures.X``) or one line
_BLOCK = re.compile(r"^(\t+)(?:\w+\.)?(\w+): \{\n(.*?)^\1\},?$", re.MULTILINE | re.DOTALL)
_ONELINE = re.compile(r"^\t+(?:\w+\.)?(\w+): \{(\{Version.*\})\},?$", re.MULTILINE)
_SPEC = re.compile(r"\{([^{}]*\bVersion: version\.MustParse[^{}]*)\}")  # one spec, its fields in any order
_FIELD = re.compile(r"(\w+): (?:version\.MustParse\(\"(\d+\.\d+)\"\)|(?:featuregate\.)?(\w+))")


def pinned_kubernetes() -> str:
    m = re.search(r"^K8S_VERSION=(\S+)", (ROOT / "tools" / "build.sh").read_text(), re.MULTILINE)
    if not m:
        raise SystemExit("tools/build.sh has no K8S_VERSION")
    return m.group(1)


def module_cache() -> Path:
    out = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def source_files(version: str, cache: Path | None = None) -> list[Path]:
    """The feature files of ``k8s.io/kubernetes@v<version>`` and its staging modules (v0.<minor>.<patch>)."""
    cache = cache or module_cache()
    staging = "v0." + version.split(".", 1)[1]
    files = [cache / f"k8s.io/kubernetes@v{version}" / "pkg/features/kube_features.go"]
    files += [cache / f"{mod}@{staging}" / rel for mod, rel in STAGING]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise FileNotFoundError(f"not in the Go module cache (tools/build.sh k8s fills it): {', '.join(missing)}")
    return files


def specs_at(text: str, minor: tuple[int, int], names: dict[str, str]) -> dict[str, tuple[str, bool, bool]]:
    """gate -> (maturity, default, locked) at ``minor`` for one feature file (gates not yet there left
    out); ``names``: Go identifier -> gate name of every feature file. Every spec of the file must be
    read, so a format this parser does not know fails instead of dropping gates."""
    blocks = [(i, b) for _tab, i, b in _BLOCK.findall(text)] + _ONELINE.findall(text)
    read, there = sum(len(_SPEC.findall(b)) for _i, b in blocks), text.count("Version: version.MustParse(")
    if read != there:
        raise ValueError(f"read {read} of the {there} feature specs: a format this parser does not know")
    out: dict[str, tuple[str, bool, bool]] = {}
    for ident, body in blocks:
        specs = [_fields(s) for s in _SPEC.findall(body)]
        specs = [s for s in specs if tuple(map(int, s["Version"].split("."))) <= minor]
        if specs and ident in names:
            last = specs[-1]
            locked = last.get("LockToDefault") == "true"
            out[names[ident]] = (last["PreRelease"].upper(), last["Default"] == "true", locked)
    return out


def _fields(spec: str) -> dict[str, str]:
    return {k: v or w for k, v, w in _FIELD.findall(spec)}


def table(version: str, cache: Path | None = None) -> dict[str, tuple[str, bool, bool]]:
    minor = tuple(int(x) for x in version.split(".")[:2])
    texts = {f: f.read_text() for f in source_files(version, cache)}
    names = {i: n for t in texts.values() for i, n in _CONST.findall(t)}
    gates: dict[str, tuple[str, bool, bool]] = {}
    for f, text in texts.items():
        for name, spec in specs_at(text, minor, names).items():  # type: ignore[arg-type]
            if gates.setdefault(name, spec) != spec:
                raise ValueError(f"{f}: gate {name} is {spec}, another file says {gates[name]}")
    return dict(sorted(gates.items()))


def module_text(version: str, gates: dict[str, tuple[str, bool, bool]]) -> str:
    minor = ".".join(version.split(".")[:2])
    rows = "".join(f'    "{name}": ("{s}", {d}, {lk}),\n' for name, (s, d, lk) in gates.items())  # as ruff formats
    return (
        '"""Maturity of every Kubernetes feature gate at the pinned Kubernetes minor version.\n\n'
        f"Generated by tools/feature_gates.py from k8s.io/kubernetes v{version} and its staging modules\n"
        "(tests/unit/packaging/test_feature_gate_table.py keeps it equal to that source): gate ->\n"
        "(maturity ALPHA | BETA | GA | DEPRECATED, on by default, locked to its default).\n"
        '"""\n\n'
        "from __future__ import annotations\n\n"
        f'KUBERNETES = "{minor}"\n\n'
        "GATES: dict[str, tuple[str, bool, bool]] = {\n"
        f"{rows}"
        "}\n"
    )


def main(argv: list[str]) -> int:
    version = pinned_kubernetes()
    text = module_text(version, table(version))
    if "--check" in argv:
        if TABLE.read_text() != text:
            print(f"{TABLE} is stale: run tools/feature_gates.py", file=sys.stderr)
            return 1
        return 0
    TABLE.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
