"""Fabric YAML file: a switch tree and the nodes under each leaf, plus accelerator domains.

The format is topograph's simulation model (``switches``/``blocks``), so its models load as is::

    switches:
      core: {switches: [spine-1, spine-2]}
      spine-1: {switches: [leaf-1]}
      leaf-2: {nodes: ["gpu[009-016]"]}        # nodes may also sit under a switch
    blocks:                                       # nodes of a leaf and their NVLink domain
      - switch: leaf-1
        nodes: ["gpu[001-008]"]
        annotations: {accelerator.topology.test/domain: nvl-1}
    domains:                                      # optional: domain -> nodes
      nvl-2: ["gpu[009-016]"]

Errors carry the file name and line.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.deps import missing
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.model import HOST, Fabric, FabricError
from ansible_collections.gpufleet.core.plugins.module_utils.hostlist import expand

try:
    import yaml
except ImportError:  # importing works without it; the first use raises a clear error
    yaml = missing("yaml", "PyYAML")

_DOMAIN_SUFFIX = ("/domain", "gpu.clique")


class _LDict(dict):
    line: int = 0


class _LList(list):
    line: int = 0


def _load(text: str, source: str) -> Any:
    class Loader(yaml.SafeLoader):
        pass

    def mapping(loader, node):
        d = _LDict()
        for k_node, v_node in node.value:
            k = loader.construct_object(k_node, deep=True)
            try:
                hash(k)
            except TypeError:
                raise FabricError("unhashable mapping key", source, k_node.start_mark.line + 1) from None
            d[k] = loader.construct_object(v_node, deep=True)
        d.line = node.start_mark.line + 1
        return d

    def sequence(loader, node):
        lst = _LList(loader.construct_object(c, deep=True) for c in node.value)
        lst.line = node.start_mark.line + 1
        return lst

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, sequence)
    try:
        return yaml.load(text, Loader=Loader)  # SafeLoader subclass
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        raise FabricError(f"YAML: {e.problem or e}", source, mark.line + 1 if mark else None) from None
    except yaml.YAMLError as e:
        raise FabricError(f"YAML: {e}", source) from None
    except RecursionError:
        raise FabricError("YAML nested too deeply", source) from None


def _line(obj: Any, default: int | None = None) -> int | None:
    return getattr(obj, "line", None) or default


def _names(value: Any, source: str, key: str, line: int | None) -> list[str]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list):
        raise FabricError("expected a list of names or hostlist expressions", source, _line(value, line), key)
    out: list[str] = []
    for it in items:
        if not isinstance(it, (str, int)) or isinstance(it, bool):
            raise FabricError("expected a name or hostlist expression", source, _line(items, line), key)
        text = str(it).strip()
        if "[" not in text and "," not in text:
            out.append(text)
            continue
        try:
            out.extend(expand(text))
        except ValueError as e:
            raise FabricError(str(e), source, _line(items, line), key) from None
    return out


def parse_fabric_yaml(text: str, source: str = "<text>") -> Fabric:
    doc = _load(text, source)
    if doc is None:
        doc = _LDict()
    if not isinstance(doc, dict):
        raise FabricError("a fabric file is a mapping with 'switches' and/or 'blocks'", source, _line(doc, 1))
    unknown = sorted(str(k) for k in doc if k not in ("switches", "blocks", "domains", "nodes"))
    if unknown:
        raise FabricError(f"unknown key(s) {', '.join(unknown)} (switches, blocks, domains)", source, _line(doc, 1))
    fab = Fabric(source=source, kind="file")

    def sw(name: Any, line: int | None, key: str):
        if not isinstance(name, (str, int)) or isinstance(name, bool) or not str(name):
            raise FabricError("switch name must be a non-empty string", source, line, key)
        s = fab.switch(str(name), str(name), line)
        s.name = str(name)
        return s

    def host(node: str, leaf: str, line: int | None) -> None:
        ca = fab.ca("H-" + node, f"{node} file", line)
        ca.kind, ca.host, ca.device = HOST, node, "file"
        fab.link_ca(ca.id, leaf)

    switches = doc.get("switches") or _LDict()
    if not isinstance(switches, dict):
        raise FabricError(
            "'switches' must map each switch name to its switches and nodes",
            source,
            _line(switches, _line(doc)),
            "switches",
        )
    for name, spec in switches.items():
        key = f"switches.{name}"
        line = _line(spec, _line(switches))
        parent = sw(name, line, key)
        if spec is None:
            continue
        if not isinstance(spec, dict):
            raise FabricError("expected a mapping with 'switches' and/or 'nodes'", source, line, key)
        bad = sorted(str(k) for k in spec if k not in ("switches", "nodes", "labels", "annotations"))
        if bad:
            raise FabricError(f"unknown key(s) {', '.join(bad)}", source, line, key)
        for child in _names(spec.get("switches") or [], source, f"{key}.switches", line):
            fab.link_switches(parent.id, sw(child, line, f"{key}.switches").id)
        for node in _names(spec.get("nodes") or [], source, f"{key}.nodes", line):
            host(node, parent.id, line)

    blocks = doc.get("blocks") or []
    if not isinstance(blocks, list):
        raise FabricError("'blocks' must be a list", source, _line(blocks, _line(doc)), "blocks")
    for i, b in enumerate(blocks):
        key = f"blocks[{i}]"
        line = _line(b, _line(blocks))
        if not isinstance(b, dict):
            raise FabricError("expected a mapping with switch, nodes, annotations", source, line, key)
        nodes = _names(b.get("nodes") or [], source, f"{key}.nodes", line)
        leaf = b.get("switch")
        if leaf is not None:
            s = sw(leaf, line, f"{key}.switch")
            for n in nodes:
                host(n, s.id, line)
        ann = b.get("annotations") or {}
        if not isinstance(ann, dict):
            raise FabricError("annotations must be a mapping", source, line, f"{key}.annotations")
        dom = next((str(v) for k, v in sorted(ann.items()) if str(k).endswith(_DOMAIN_SUFFIX)), None)
        dom = dom or (str(b["domain"]) if b.get("domain") is not None else None)
        if dom:
            for n in nodes:
                fab.domains[n] = dom

    domains = doc.get("domains") or {}
    if not isinstance(domains, dict):
        raise FabricError("'domains' must be a mapping of domain to nodes", source, _line(domains), "domains")
    for dom, members in domains.items():
        for n in _names(members, source, f"domains.{dom}", _line(domains)):
            fab.domains[n] = str(dom)
    return fab.finish()
