"""Fields the API server refuses to change on a live object: a rendered change of one would fail Argo CD's
sync of the file (the object keeps its old fields, the Application stays OutOfSync and Degraded), so the
review refuses it with the reason and the way out, before the merge.

One row per rule, each from the component's own validation at the pinned version:

* Kueue v0.19.2 ``apis/kueue/v1beta2/resourceflavor_types.go`` (CEL on the ResourceFlavor): once a flavor
  has ``topologyName``, its ``nodeLabels``, ``tolerations`` and ``topologyName`` are immutable;
* Kueue v0.19.2 ``apis/kueue/v1beta2/topology_types.go``: a Topology's ``levels`` are immutable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.review.summary import yaml_docs

KUEUE = "kueue.x-k8s.io/"


@dataclass(frozen=True)
class Rule:
    kind: str
    fields: tuple[str, ...]  # under spec
    when: str | None  # the rule holds once the live (old) spec has this field; None: always
    source: str


RULES = (
    Rule(
        "ResourceFlavor",
        ("nodeLabels", "tolerations", "topologyName"),
        "topologyName",
        "Kueue v0.19.2 resourceflavor_types.go",
    ),
    Rule("Topology", ("levels",), None, "Kueue v0.19.2 topology_types.go"),
)


def _objects(data: bytes | None) -> dict[tuple[str, str, str], dict[str, Any]]:
    out = {}
    for doc in yaml_docs(data):
        if isinstance(doc, dict) and str(doc.get("apiVersion", "")).startswith(KUEUE):
            meta = doc.get("metadata") or {}
            out[(str(doc.get("kind")), str(meta.get("namespace", "")), str(meta.get("name")))] = doc
    return out


def refusals(path: str, old: bytes | None, new: bytes | None) -> list[str]:
    """One problem per object of ``path`` whose change alters a field its component keeps immutable."""
    before, after = _objects(old), _objects(new)
    out = []
    for key in sorted(before.keys() & after.keys()):
        a, b = before[key].get("spec") or {}, after[key].get("spec") or {}
        for rule in RULES:
            if rule.kind != key[0] or (rule.when is not None and rule.when not in a):
                continue
            moved = [f for f in rule.fields if a.get(f) != b.get(f)]
            if moved:
                out.append(
                    f"`{path}`: {key[0]} `{key[2]}` changes {', '.join(f'spec.{f}' for f in moved)}, which the API"
                    f" server refuses to change on the live object ({rule.source}): Argo CD's sync of it would"
                    " fail; give the object a new name (a new flavor or topology) or delete it first"
                )
    return out
