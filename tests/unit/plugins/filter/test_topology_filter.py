"""The topology filters, called as Jinja2 would (through the FilterModule), and in a real template."""

from __future__ import annotations

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from fabric_helpers import gen, gen_text
from gpufleet_testlib import fabric_gen
from playbook_runner import playbook_env, run_playbook, write_play

from ansible_collections.gpufleet.core.plugins.filter.topology import FilterModule

F = FilterModule().filters()


@pytest.fixture(scope="module")
def text():
    return gen_text(hosts=32, rails=8, su_size=8, sharp=1)


def test_filters_from_text(text):
    info = F["fabric_topology"](text)
    assert [g["name"] for g in info["leaf_groups"]] == ["su01-leaf", "su02-leaf", "su03-leaf", "su04-leaf"]
    assert info["health"]["ok"] is True
    conf = F["slurm_topology_conf"](text, nodes=["gpu[001-008]"])
    assert "SwitchName=su01-leaf Nodes=gpu[001-008]" in conf and "su02" not in conf
    assert F["slinky_topology_spec"](text)["gpu009"] == "default:spine:su02-leaf"
    labels = F["kueue_topology_labels"](text)
    assert labels["gpu001"]["topology.gpufleet.io/tier-0"] == "su01-leaf"


def test_filters_with_node_list_domains():
    g = gen(hosts=32, rails=8, su_size=8, nvl_domain=16)
    text = fabric_gen.render_ibnetdiscover(g)
    snap = fabric_gen.nodes_snapshot(g)
    conf = F["slurm_topology_conf"](text, format="block", domains=snap)
    assert conf.count("BlockName=") == 2 and "BlockSizes=16,32" in conf
    doc = yaml.safe_load(F["slurm_topology_conf"](snap["items"], format="yaml"))
    assert doc[0]["topology"] == "topo-block"  # labels only: no switch tree, cliques as blocks


def test_filter_errors_are_filter_errors():
    with pytest.raises(AnsibleFilterError, match="fabric_topology"):
        F["fabric_topology"]("not a fabric\n")
    with pytest.raises(AnsibleFilterError):
        F["slurm_topology_conf"](42)
    with pytest.raises(AnsibleFilterError, match="BlockSizes"):
        F["slurm_topology_conf"](gen_text(hosts=16, rails=1, su_size=8), format="block", block_sizes=[8, 12])


@pytest.mark.ansible
def test_in_a_real_playbook(text, tmp_path):
    (tmp_path / "fabric.out").write_text(text)
    conf_filter = "gpufleet.core.slurm_topology_conf(nodes=['gpu[001-016]'])"
    copy = {
        "dest": "{{ playbook_dir }}/topology.conf",
        "content": f"{{{{ lookup('file', playbook_dir ~ '/fabric.out') | {conf_filter} }}}}",
    }
    play = write_play(tmp_path / "play.yml", [{"name": "topology.conf", "ansible.builtin.copy": copy}])
    env = playbook_env(ANSIBLE_HOME=str(tmp_path / "ah"), ANSIBLE_INVENTORY_UNPARSED_WARNING="false")
    run_playbook("localhost,", play, "-c", "local", env=env, timeout=300)
    conf = (tmp_path / "topology.conf").read_text()
    assert "SwitchName=spine Switches=su01-leaf,su02-leaf" in conf


def test_kueue_topology_filter_levels_match_labels(text):
    obj = F["kueue_topology"](text, name="fabric")
    assert obj["kind"] == "Topology" and obj["metadata"]["name"] == "fabric"
    levels = [lv["nodeLabel"] for lv in obj["spec"]["levels"]]
    labels = F["kueue_topology_labels"](text)
    assert set(levels[:-1]) == set(labels["gpu001"])
