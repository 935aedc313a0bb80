"""ibnetdiscover parsers: both formats, classification of CAs, errors with line numbers, fuzzing."""

from __future__ import annotations

import pytest
from gpufleet_testlib import fabric_gen
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpufleet.core.plugins.module_utils.fabric.ibnetdiscover import parse_default, parse_ports
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.load import detect_kind, load_fabric
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.model import (
    HOST,
    SHARP,
    UNNAMED,
    FabricError,
    classify_ca,
)

# Lines in the exact shape of real ibnetdiscover output (an excerpt of a topograph test fixture).
REAL = (
    "#\n# Topology file: generated on Fri Aug  8 06:33:24 2025\n#\n"
    "# Initiated from node e09d7303007a4bd8 port e09d7303007a4bd8\n\n"
    "vendid=0x2c9\ndevid=0xd2f2\nsysimgguid=0x2c5eab0300b87b40\n"
    "switchguid=0x2c5eab0300b87b40(2c5eab0300b87b40)\n"
    'Switch\t65 "S-2c5eab0300b87b40"\t\t# "MF0;A09-P1-IBLEAF-04-04:MQM9701/U1" enhanced port 0 lid 73 lmc 0\n'
    '[1]\t"H-e09d7303007a4bd8"[1](e09d7303007a4bd8) \t\t# "a08-p1-dgx-04-c01 mlx5_5" lid 647 4xNDR\n'
    '[17]\t"H-e09d7303007a5a68"[1](e09d7303007a5a68) \t\t# "a08-p1-dgx-04-c17 mlx5_5" lid 657 4xNDR\n'
    '[35]\t"S-2c5eab0300c26280"[32]\t\t# "MF0;A10-P1-IBSPINE-02:MQM9701/U1" lid 236 4xNDR\n'
    '[65]\t"H-2c5eab0300b87b50"[1](2c5eab0300b87b50) \t\t# "Mellanox Technologies Aggregation Node" lid 193 4xNDR\n'
    "\n"
    "vendid=0x2c9\ndevid=0x1021\nsysimgguid=0xe09d7303007a5a68\ncaguid=0xe09d7303007a5a68\n"
    'Ca\t1 "H-e09d7303007a5a68"\t\t# "a08-p1-dgx-04-c17 mlx5_5"\n'
    '[1](e09d7303007a5a68) \t"S-2c5eab0300b87b40"[17]\t\t# lid 657 lmc 0 '
    '"MF0;A09-P1-IBLEAF-04-04:MQM9701/U1" lid 73 4xNDR\n'
    'Ca\t1 "H-e09d7303007a0001"\t\t# "MT4129 ConnectX7   Mellanox Technologies"\n'
    '[1](e09d7303007a0001) \t"S-2c5eab0300c26280"[40]\t\t# lid 700 lmc 0 '
    '"MF0;A10-P1-IBSPINE-02:MQM9701/U1" lid 236 4xNDR\n'
)

PORTS = (
    "SW    73 17 0x2c5eab0300b87b40 4x NDR - CA   657  1 0xe09d7303007a5a68"
    " ( 'MF0;A09-P1-IBLEAF-04-04:MQM9701/U1' - 'a08-p1-dgx-04-c17 mlx5_5' )\n"
    "SW    73 35 0x2c5eab0300b87b40 4x NDR - SW   236 32 0x2c5eab0300c26280"
    " ( 'MF0;A09-P1-IBLEAF-04-04:MQM9701/U1' - 'MF0;A10-P1-IBSPINE-02:MQM9701/U1' )\n"
    "SW    73 36 0x2c5eab0300b87b40 4x NDR                                    'MF0;A09-P1-IBLEAF-04-04:MQM9701/U1'\n"
    "CA   657  1 0xe09d7303007a5a68 4x NDR - SW    73 17 0x2c5eab0300b87b40"
    " ( 'a08-p1-dgx-04-c17 mlx5_5' - 'MF0;A09-P1-IBLEAF-04-04:MQM9701/U1' )\n"
)


def test_real_shaped_default_output():
    fab = parse_default(REAL, "x.out")
    assert set(fab.switches) == {"S-2c5eab0300b87b40", "S-2c5eab0300c26280"}
    leaf = fab.switches["S-2c5eab0300b87b40"]
    assert leaf.name == "A09-P1-IBLEAF-04-04"
    assert leaf.peers == {"S-2c5eab0300c26280": 1}
    assert sorted(fab.hosts()) == ["a08-p1-dgx-04-c01", "a08-p1-dgx-04-c17"]
    kinds = {c.desc: c.kind for c in fab.cas.values()}
    assert kinds["Mellanox Technologies Aggregation Node"] == SHARP
    assert kinds["MT4129 ConnectX7   Mellanox Technologies"] == UNNAMED
    # the link printed from both ends counts once
    c17 = fab.cas["H-e09d7303007a5a68"]
    assert c17.switches == ["S-2c5eab0300b87b40"]
    assert leaf.cas.count("H-e09d7303007a5a68") == 1


def test_real_shaped_ports_output():
    fab = parse_ports(PORTS, "p.out")
    assert fab.switches["S-2c5eab0300b87b40"].peers == {"S-2c5eab0300c26280": 1}
    assert fab.hosts() == ["a08-p1-dgx-04-c17"]
    assert detect_kind(PORTS) == "ibnetdiscover-ports"
    assert detect_kind(REAL) == "ibnetdiscover"


@pytest.mark.parametrize(
    "desc,kind,host",
    [
        ("gpu001 mlx5_0", HOST, "gpu001"),
        ("a08-p1-dgx-04-c01 HCA-1", HOST, "a08-p1-dgx-04-c01"),
        ("Mellanox Technologies Aggregation Node", SHARP, None),
        ("MT4123 ConnectX6 Mellanox Technologies", UNNAMED, None),
        ("MT4129 ConnectX7   Mellanox Technologies", UNNAMED, None),
        ("MT4129 mlx5_0", UNNAMED, None),
        ("", UNNAMED, None),
        ("onlyone", UNNAMED, None),
    ],
)
def test_classify(desc, kind, host):
    k, h, _unused = classify_ca(desc)
    assert (k, h) == (kind, host)


@pytest.mark.parametrize("rails,tiers", [(1, 2), (8, 2), (1, 3), (8, 3)])
def test_both_formats_give_the_same_fabric(rails, tiers):
    g = fabric_gen.generate(
        fabric_gen.GenSpec(
            hosts=48, rails=rails, su_size=8, tiers=tiers, su_per_pod=2, sharp=2, unnamed=1, cut_cables=1, seed=4
        )
    )
    a = load_fabric(fabric_gen.render_ibnetdiscover(g))
    b = load_fabric(fabric_gen.render_ports(g))
    assert a.summary() == b.summary()
    assert {s: sw.peers for s, sw in a.switches.items()} == {s: sw.peers for s, sw in b.switches.items()}
    assert a.hosts() == b.hosts()


@pytest.mark.parametrize(
    "text,line",
    [
        ("vendid=0x2c9\nSwitch\t65 S-zz\n", 2),
        ('[1]\t"S-2c5eab0300c26280"[32]\n', 1),
        ("vendid=0x2c9\n\ngarbage here\n", 3),
        ('Switch\t65 "H-2c5eab0300b87b40"\t\t# "x"\n', 1),
        ('Switch\t65 "S-2c5eab0300b87b40"\t\t# "x"\n[x]\t"S-1"[1]\n', 2),
    ],
)
def test_errors_carry_line_numbers(text, line):
    with pytest.raises(FabricError) as e:
        parse_default(text, "f.out")
    assert e.value.line == line and e.value.file == "f.out"
    assert f"f.out:{line}" in str(e.value)


def test_ports_error_line():
    with pytest.raises(FabricError) as e:
        parse_ports(PORTS + "SW nonsense\n", "p.out")
    assert e.value.line == 5


def test_unknown_format_and_missing_file(tmp_path):
    with pytest.raises(FabricError, match="cannot tell"):
        load_fabric("hello world\n")
    with pytest.raises(FabricError, match="unknown fabric kind"):
        load_fabric("x", kind="bogus")
    with pytest.raises(FabricError, match="not found") as e:
        load_fabric(str(tmp_path / "missing.out"))
    assert e.value.file == str(tmp_path / "missing.out")
    p = tmp_path / "f.out"
    p.write_text(REAL)
    assert load_fabric(str(p)).source == str(p)
    assert load_fabric(p).summary()["switches"] == 2


_chunks = st.sampled_from(
    REAL.splitlines()
    + PORTS.splitlines()
    + [
        "[",
        '"',
        "Switch",
        "Ca\t1",
        '[1](zz) "S-1"[1]',
        'Rt\t2 "R-00ff"\t\t# "router"',
        '[1]\t"R-00ff"[2]',
        "# comment",
        "",
        "caguid=0x1",
        "SW 1 1 0x1 4x NDR - SW 2 2 0x2 ( 'a' - 'b' )",
        "\x00",
        "[99999999999999999999]",
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(_chunks, st.text(max_size=40)), max_size=30))
def test_fuzz_parsers_only_raise_fabric_errors(lines):
    text = "\n".join(lines)
    for parse in (parse_default, parse_ports):
        try:
            parse(text, "fuzz")
        except FabricError as e:
            assert e.line is not None and e.file == "fuzz"
    try:
        load_fabric(text)
    except FabricError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_fuzz_any_text(text):
    for parse in (parse_default, parse_ports):
        try:
            parse(text, "fuzz")
        except FabricError as e:
            assert e.line is not None


_GEN = fabric_gen.render_ibnetdiscover(fabric_gen.generate(fabric_gen.GenSpec(hosts=8, rails=2, su_size=4, sharp=1)))
_GEN_P = fabric_gen.render_ports(fabric_gen.generate(fabric_gen.GenSpec(hosts=8, rails=2, su_size=4, sharp=1)))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([_GEN, _GEN_P]), st.data())
def test_fuzz_mutated_real_output(base, data):
    lines = base.splitlines()
    for _round in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(lines) - 1))
        op = data.draw(st.sampled_from(["cut", "dup", "junk", "del"]))
        if op == "cut":
            lines[i] = lines[i][: data.draw(st.integers(0, max(0, len(lines[i]) - 1)))]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "junk":
            j = data.draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:j] + data.draw(st.text(max_size=5)) + lines[i][j:]
        else:
            del lines[i]
    text = "\n".join(lines)
    for parse in (parse_default, parse_ports):
        try:
            fab = parse(text, "fuzz")
        except FabricError as e:
            assert e.line is not None
        else:
            from ansible_collections.gpufleet.core.plugins.module_utils.topology.build import build_topology

            build_topology(fab)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="abz019_.-", min_size=1, max_size=30), min_size=1, max_size=6))
def test_fuzz_host_names_render_or_fabric_error(hosts):
    from ansible_collections.gpufleet.core.plugins.module_utils.topology.build import build_topology
    from ansible_collections.gpufleet.core.plugins.module_utils.topology.render import render_tree

    text = 'Switch\t65 "S-0000000000000001"\t\t# "MF0;leaf:X/U1" enhanced port 0 lid 1 lmc 0\n'
    for i, h in enumerate(hosts, 1):
        text += f'[{i}]\t"H-{i:016x}"[1]({i:016x}) \t\t# "{h} mlx5_0" lid {i + 1} 4xNDR\n'
    try:
        render_tree(build_topology(parse_default(text, "fuzz")))
    except FabricError:
        pass


def test_repeated_switch_descriptions_fall_back_to_guids():
    text = (
        'Switch\t65 "S-0000000000000001"\t\t# "Quantum-2 Mellanox Technologies" enhanced port 0 lid 1 lmc 0\n'
        '[1]\t"S-0000000000000002"[1]\t\t# "MF0;dup:X/U1" lid 2 4xNDR\n'
        'Switch\t65 "S-0000000000000002"\t\t# "MF0;dup:X/U1" enhanced port 0 lid 2 lmc 0\n'
        'Switch\t65 "S-0000000000000003"\t\t# "MF0;dup:X/U1" enhanced port 0 lid 3 lmc 0\n'
        'Switch\t65 "S-0000000000000004"\t\t# "ISR9024 Voltaire" base port 0 lid 4 lmc 0\n'
    )
    fab = parse_default(text)
    names = {s: sw.name for s, sw in fab.switches.items()}
    assert names == {
        "S-0000000000000001": "S-0000000000000001",
        "S-0000000000000002": "S-0000000000000002",
        "S-0000000000000003": "S-0000000000000003",
        "S-0000000000000004": "ISR9024 Voltaire",
    }


def test_grouped_output_with_ext_ports_and_chassis_comments():
    # ibnetdiscover -g: chassis comment lines and [ext N] after port numbers; routers are skipped
    text = (
        "# Chassis 1 (guid 0x0002c9020040da28)\n"
        'Switch\t36 "S-0002c9020040da28"\t\t# "MF0;ib-leaf-1:SX6036/U1" enhanced port 0 lid 4 lmc 0\n'
        '[1][ext 1]\t"H-0002c903000e0b4a"[1](2c903000e0b4b) \t\t# "node01 mlx4_0" lid 5 4xFDR\n'
        '[2][ext 2]\t"S-0002c9020040da29"[3][ext 7]\t\t# "MF0;ib-spine-1:SX6036/U1" lid 6 4xFDR\n'
        '[3]\t"R-0002c9020040da30"[1]\t\t# "router" lid 9 4xFDR\n'
        'Rt\t2 "R-0002c9020040da30"\t\t# "router"\n'
        '[1]\t"S-0002c9020040da28"[3]\t\t# "MF0;ib-leaf-1:SX6036/U1" lid 4 4xFDR\n'
    )
    fab = parse_default(text, "g.out")
    assert fab.hosts() == ["node01"]
    assert fab.switches["S-0002c9020040da28"].peers == {"S-0002c9020040da29": 1}
    assert fab.switches["S-0002c9020040da29"].name == "ib-spine-1"
