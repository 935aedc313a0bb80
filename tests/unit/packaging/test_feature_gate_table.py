"""The feature-gate table is the Kubernetes source at the pinned version: tools/feature_gates.py reads
kube_features.go and the staging modules' feature files from the Go module cache (the test bed's
build fills it) and the committed table must equal what it reads; the pinned minor is the one of the
tenant control plane image and of the bed's Kubernetes build."""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

import pytest
import yaml
from render_fixtures import REPO

from ansible_collections.gpufleet.core.plugins.module_utils.model.feature_gate_table import GATES, KUBERNETES
from ansible_collections.gpufleet.core.plugins.module_utils.render.images import IMAGES

_spec = importlib.util.spec_from_file_location("feature_gates_tool", REPO / "tools" / "feature_gates.py")
assert _spec and _spec.loader
tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tool)


def _sources() -> list[Path]:
    """The Kubernetes feature files; a missing module cache skips outside CI and fails in CI."""
    try:
        return tool.source_files(tool.pinned_kubernetes())
    except (FileNotFoundError, OSError) as e:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            raise
        pytest.skip(str(e))


def test_table_is_the_kubernetes_source_at_the_pinned_version() -> None:
    _sources()
    version = tool.pinned_kubernetes()
    assert tool.module_text(version, tool.table(version)) == tool.TABLE.read_text(), "run tools/feature_gates.py"


def test_table_agrees_with_the_kubernetes_reference_list() -> None:
    """A second reading of the same source, which Kubernetes generates from its registry:
    test/compatibility_lifecycle/reference/versioned_feature_list.yaml (every gate of the kube feature
    gate, with its versioned specs). Each gate there is in the table with the spec in force at the pinned
    minor (the table also has client-go's gates, which that list leaves out); a gate the Go parser
    missed fails here."""
    (kube, *_staging) = _sources()
    listed = yaml.safe_load(
        (kube.parents[2] / "test/compatibility_lifecycle/reference/versioned_feature_list.yaml").read_text()
    )
    minor = tuple(int(x) for x in KUBERNETES.split("."))
    want = {}
    for gate in listed:
        specs = [s for s in gate["versionedSpecs"] if tuple(int(x) for x in str(s["version"]).split(".")) <= minor]
        if specs:
            s = specs[-1]
            want[gate["name"]] = (s["preRelease"].upper(), s["default"], bool(s.get("lockToDefault", False)))
    assert len(want) > 200
    assert {k: GATES.get(k) for k in want} == want


def test_bridge_scheduler_gates_read_from_source() -> None:
    """What the slurm-bridge scheduler asks for, straight from kube_features.go (not the table)."""
    (kube, *_staging) = _sources()
    got = tool.specs_at(
        kube.read_text(),
        (1, 36),
        {
            n: n
            for n in ("DRAExtendedResource", "DynamicResourceAllocation", "SchedulerPopFromBackoffQ", "GenericWorkload")
        },
    )
    assert got["DRAExtendedResource"][:2] == ("BETA", True)
    assert got["DynamicResourceAllocation"] == ("GA", True, True)
    assert got["SchedulerPopFromBackoffQ"][:2] == ("BETA", True)
    assert got["GenericWorkload"][:2] == ("ALPHA", False)
    assert {k: GATES[k] for k in got} == got


def test_pinned_minor_is_the_tenant_control_plane_and_the_bed() -> None:
    build = tool.pinned_kubernetes()
    assert ".".join(build.split(".")[:2]) == KUBERNETES
    (distro,) = [i.upstream for i in IMAGES if i.path == ("controlPlane", "distro", "k8s", "image")]
    assert re.search(r":v(\d+\.\d+)\.", distro).group(1) == KUBERNETES, distro


def test_parser_refuses_a_spec_format_it_does_not_read() -> None:
    text = (
        '\tA featuregate.Feature = "A"\n'
        "var x = map[featuregate.Feature]featuregate.VersionedSpecs{\n"
        "\tA: {\n"
        '\t\t{Version: version.MustParse("1.30"), Default: false, PreRelease: featuregate.Alpha},\n'
        '\t\t{Version: version.MustParse("1.36"), Default: true, PreRelease: featuregate.Beta},\n'
        "\t},\n"
        "\tB: newSpecs(\n"
        '\t\t{Version: version.MustParse("1.36"), Default: true, PreRelease: featuregate.Beta}),\n'
        "}\n"
    )
    with pytest.raises(ValueError, match="read 2 of the 3"):
        tool.specs_at(text, (1, 36), {"A": "A"})
    assert tool.specs_at(text.split("\tB:", maxsplit=1)[0], (1, 35), {"A": "A"}) == {"A": ("ALPHA", False, False)}
    assert tool.specs_at(text.split("\tB:", maxsplit=1)[0], (1, 36), {"A": "A"}) == {"A": ("BETA", True, False)}
