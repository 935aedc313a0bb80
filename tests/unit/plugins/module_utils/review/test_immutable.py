"""review/immutable.py on the sample's rendered Kueue objects: a change of a field the component keeps
immutable is refused with the object, the fields and the source; other changes, and flavors without a
topology, are not. (The rule itself against Kueue's CRD on the real kube-apiserver:
tests/integration/kube/test_kube_kueue_topology.py.)"""

from __future__ import annotations

import copy
from collections.abc import Mapping

import pytest
import yaml

from ansible_collections.gpufleet.core.plugins.module_utils.review import immutable

PATH = "gitops/clusters/gpu-east/tenants/inference/objects/objects.yaml"


@pytest.fixture(scope="module")
def objects(files: Mapping[str, bytes]) -> list[dict]:
    return [d for d in yaml.safe_load_all(files[PATH.removeprefix("gitops/")]) if d]


def _dump(docs: list[dict]) -> bytes:
    return yaml.safe_dump_all(docs).encode()


def _edited(objects: list[dict], kind: str, edit) -> list[dict]:
    out = copy.deepcopy(objects)
    edit(next(o for o in out if o["kind"] == kind))
    return out


def test_a_flavor_with_a_topology_keeps_its_labels_tolerations_and_topology(objects: list[dict]) -> None:
    flavor = next(o for o in objects if o["kind"] == "ResourceFlavor")
    assert flavor["spec"]["topologyName"] and flavor["spec"]["nodeLabels"] and flavor["spec"]["tolerations"]
    moved = _edited(objects, "ResourceFlavor", lambda f: f["spec"].update(tolerations=[], topologyName="other"))
    (problem,) = immutable.refusals(PATH, _dump(objects), _dump(moved))
    assert problem.startswith(f"`{PATH}`: ResourceFlavor `{flavor['metadata']['name']}` changes spec.tolerations,")
    assert "spec.topologyName" in problem and "Kueue v0.19.2 resourceflavor_types.go" in problem


def test_what_kueue_lets_change_passes(objects: list[dict]) -> None:
    tainted = _edited(
        objects, "ResourceFlavor", lambda f: f["spec"].update(nodeTaints=[{"key": "k", "effect": "NoSchedule"}])
    )
    assert immutable.refusals(PATH, _dump(objects), _dump(tainted)) == []
    flat = _edited(objects, "ResourceFlavor", lambda f: f["spec"].pop("topologyName"))
    relabelled = _edited(flat, "ResourceFlavor", lambda f: f["spec"]["nodeLabels"].update(extra="x"))
    assert immutable.refusals(PATH, _dump(flat), _dump(relabelled)) == []  # no topology yet: labels may move
    assert immutable.refusals(PATH, None, _dump(objects)) == [] and immutable.refusals(PATH, _dump(objects), None) == []


def test_a_topology_keeps_its_levels(objects: list[dict]) -> None:
    fewer = _edited(objects, "Topology", lambda t: t["spec"]["levels"].pop(0))
    (problem,) = immutable.refusals(PATH, _dump(objects), _dump(fewer))
    assert "Topology" in problem and "spec.levels" in problem and "topology_types.go" in problem
