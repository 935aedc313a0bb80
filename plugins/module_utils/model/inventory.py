"""Read the fleet model out of an Ansible inventory directory, remembering where each key came from.

The model lives in ``<inventory>/group_vars/all.yml`` or ``<inventory>/group_vars/all/*.yml``
(kubespray layout: one topic per file). Only ``gpufleet_*`` variables belong to the model; other
variables are left to Ansible. Each value's file and line is kept so that errors can point at them.
Vault-encrypted files are skipped: secrets are not part of the model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ansible_collections.gpufleet.core.plugins.module_utils.errors import Issue, ModelError

PREFIX = "gpufleet_"
# A key path: mapping keys and list indexes, e.g. ("gpufleet_pools", 1, "size"). Spelled out in each
# annotation (no alias): annotations are never evaluated, an alias would be (and fails on py3.9).


@dataclass
class RawModel:
    """The merged ``gpufleet_*`` variables plus, for every key path, its (file, line)."""

    inventory_dir: Path
    data: dict[str, Any] = field(default_factory=dict)
    where: dict[tuple[str | int, ...], tuple[str, int]] = field(default_factory=dict)

    def locate(self, path: tuple[str | int, ...]) -> tuple[str, int | None]:
        """File and line of ``path``, or of its nearest located ancestor."""
        p = tuple(path)
        while p:
            if p in self.where:
                return self.where[p]
            p = p[:-1]
        return (str(self.inventory_dir / "group_vars" / "all"), None)

    def issue(self, path: tuple[str | int, ...], message: str) -> Issue:
        file, line = self.locate(path)
        return Issue(file=file, line=line, path=format_path(path), message=message)


def format_path(path: tuple[str | int, ...]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _record(
    node: yaml.Node, path: tuple[str | int, ...], file: str, where: dict[tuple[str | int, ...], tuple[str, int]]
) -> None:
    where[path] = (file, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                _record(value, (*path, key.value), file, where)
                where[(*path, key.value)] = (file, key.start_mark.line + 1)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _record(item, (*path, i), file, where)


def vars_files(inventory_dir: Path) -> list[Path]:
    gv = inventory_dir / "group_vars"
    files: list[Path] = []
    for single in (gv / "all.yml", gv / "all.yaml"):
        if single.is_file():
            files.append(single)
    folder = gv / "all"
    if folder.is_dir():
        files.extend(sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in (".yml", ".yaml")))
    return files


def load_inventory(inventory: str | Path) -> RawModel:
    """Load and merge the ``gpufleet_*`` variables; raise ModelError listing every problem found."""
    inv = Path(inventory)
    if inv.is_file():  # hosts.yml given: the inventory is its folder
        inv = inv.parent
    raw = RawModel(inventory_dir=inv)
    issues: list[Issue] = []
    if not inv.is_dir():
        raise ModelError([Issue(file=str(inv), line=None, path="", message="inventory directory not found")])
    files = vars_files(inv)
    if not files:
        raise ModelError(
            [Issue(file=str(inv / "group_vars"), line=None, path="", message="no group_vars/all(.yml|/) found")]
        )
    for f in files:
        text = f.read_text(encoding="utf-8")
        if text.lstrip().startswith("$ANSIBLE_VAULT"):
            continue
        try:
            node = yaml.compose(text, Loader=yaml.SafeLoader)
            value = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            issues.append(
                Issue(
                    file=str(f),
                    line=mark.line + 1 if mark else None,
                    path="",
                    message=f"not valid YAML: {getattr(exc, 'problem', None) or exc}",
                )
            )
            continue
        if value is None:
            continue
        if not isinstance(value, dict) or not isinstance(node, yaml.MappingNode):
            issues.append(Issue(file=str(f), line=1, path="", message="a vars file must be a mapping"))
            continue
        where: dict[tuple[str | int, ...], tuple[str, int]] = {}
        _record(node, (), str(f), where)
        for key, val in value.items():
            if not str(key).startswith(PREFIX):
                continue
            if key in raw.data:
                first, line = raw.where[(key,)]
                issues.append(
                    Issue(
                        file=str(f),
                        line=where.get((key,), (str(f), None))[1],
                        path=key,
                        message=f"defined again (first defined in {first}:{line}); define each variable once",
                    )
                )
                continue
            raw.data[key] = val
            raw.where.update({p: w for p, w in where.items() if p and p[0] == key})
    if issues:
        raise ModelError(issues)
    return raw
