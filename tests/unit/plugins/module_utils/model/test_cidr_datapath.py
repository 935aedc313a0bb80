"""Addresses as the datapath reads them: a differential test against Go's parsers.

Cilium, kube-proxy and the cloud load-balancer controllers read ``loadBalancerSourceRanges`` and
``fromCIDRSet`` with Go's ``net.ParseCIDR`` (and ``net/netip``). Every network the exposure check
accepts from a tenant must be, to both Go parsers, exactly the network Python's ``ipaddress`` saw:
same family, same bits, same text. A small Go program (standard library only) built here reads a
generated corpus of forms (IPv4 networks embedded in every IPv6 transition form, halves, plain
ranges, spellings); it is cached under tests/output/ by the hash of its source.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.model import special_addresses
from ansible_collections.gpufleet.core.plugins.module_utils.model.exposure import breadth_problem, cidr_problem

REPO = Path(__file__).resolve().parents[5]
GO_SRC = """package main

import (
    "bufio"
    "fmt"
    "net"
    "net/netip"
    "os"
)

func main() {
    in := bufio.NewScanner(os.Stdin)
    out := bufio.NewWriter(os.Stdout)
    defer out.Flush()
    for in.Scan() {
        text := in.Text()
        a, b := "error", "error"
        if _, n, err := net.ParseCIDR(text); err == nil {
            a = n.String()
        }
        if p, err := netip.ParsePrefix(text); err == nil {
            b = p.Masked().String()
        }
        fmt.Fprintf(out, "%s\\t%s\\n", a, b)
    }
}
"""

V4 = [
    "0.0.0.0/0",
    "0.0.0.0/1",
    "128.0.0.0/1",
    "8.8.8.0/24",
    "1.2.3.4/32",
    "10.0.0.0/8",
    "10.20.0.0/16",
    "172.16.0.0/12",
    "192.168.1.0/24",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "192.0.2.0/24",
    "198.51.100.0/25",
    "224.0.0.0/4",
    "255.255.255.255/32",
]
# (IPv6 prefix, the bit where the IPv4 address starts) of each transition form
EMBEDDINGS = {
    "mapped": ("::ffff:0:0", 96),
    "compatible": ("::", 96),
    "translated": ("::ffff:0:0:0", 96),
    "nat64": ("64:ff9b::", 96),
    "6to4": ("2002::", 16),
    "teredo": ("2001::", 64),  # the server's IPv4 address, bits 32..63
}
V6 = [
    "::/0",
    "::/1",
    "8000::/1",
    "::/64",
    "::/80",
    "::/95",
    "::/96",
    "::/97",
    "::1/128",
    "::/128",
    "fc00::/7",
    "fd00::/8",
    "fd12:3456::/32",
    "fd00:10:20::/48",
    "fe80::/10",
    "2001::/23",
    "2001::/32",
    "2001:0:1::/48",
    "2001:db8::/32",
    "2001:db8::/48",
    "2000::/3",
    "2002::/16",
    "64:ff9b::/96",
    "64:ff9b:1::/48",
    "100::/64",
    "ff00::/8",
    "2001:4860::/32",
]
SPELLINGS = [
    "010.0.0.0/8",
    "10.0.0.0/08",
    "10.0.0.1/8",
    "10.0.0.0/33",
    "::/129",
    "1.2.3.4",
    "FD00::/8",
    "fd00:0:0::/48",
    "0:0:0:0:0:ffff:a00:0/104",
    "::ffff:10.0.0.0/104",
    "::ffff:0.0.0.0/96",
    "::10.0.0.0/104",
    "64:ff9b::10.0.0.0/104",
    "fe80::%eth0/64",
    "0x0a.0.0.0/8",
    "10.0.0.0/+8",
]
ALLOWED = {
    "private only": None,
    "a platform list": [ipaddress.ip_network(n) for n in ("10.0.0.0/8", "fd00::/8")],
    "the world": [ipaddress.ip_network(n) for n in ("0.0.0.0/0", "::/0")],
}


def corpus() -> list[str]:
    forms = set(V4) | set(V6) | set(SPELLINGS)
    for text in V4:
        v4 = ipaddress.IPv4Network(text)
        for prefix, at in EMBEDDINGS.values():
            base = int(ipaddress.IPv6Address(prefix))
            shift = 128 - at - 32
            net = ipaddress.IPv6Network((base | int(v4.network_address) << shift, at + v4.prefixlen))
            forms.add(str(net))
            if at == 96:  # halves of the embedded network, as a tenant would split it
                for half in net.subnets(1) if net.prefixlen < 128 else ():
                    forms.add(str(half))
    return sorted(forms)


@pytest.fixture(scope="module")
def go_parse() -> Path:
    go = shutil.which("go")
    if go is None:
        pytest.skip("the Go toolchain (`go`) is not installed: the differential test needs Go's net.ParseCIDR")
    digest = hashlib.sha256(GO_SRC.encode()).hexdigest()[:16]
    out = REPO / "tests" / "output" / "go-cidr" / digest
    binary = out / "cidrparse"
    if binary.is_file():
        return binary
    src = out / "src"
    src.mkdir(parents=True, exist_ok=True)
    (src / "go.mod").write_text("module cidrparse\n\ngo 1.21\n")
    (src / "main.go").write_text(GO_SRC)
    env = {**os.environ, "GOFLAGS": "-mod=mod", "GOPROXY": "off", "GOTOOLCHAIN": "local", "CGO_ENABLED": "0"}
    p = subprocess.run(
        ["nice", "-n", "10", go, "build", "-o", str(binary.with_suffix(".tmp")), "."],
        cwd=src,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert p.returncode == 0, f"go build failed:\n{p.stderr}"
    binary.with_suffix(".tmp").replace(binary)
    return binary


def read_with_go(binary: Path, forms: list[str]) -> dict[str, tuple[str, str]]:
    p = subprocess.run(
        [str(binary)], input="\n".join(forms) + "\n", capture_output=True, text=True, timeout=60, check=True
    )
    lines = p.stdout.splitlines()
    assert len(lines) == len(forms)
    return {f: tuple(line.split("\t")) for f, line in zip(forms, lines, strict=True)}  # type: ignore[misc]


def accepted(text: str, allowed: list | None) -> bool:
    return cidr_problem(text) is None and breadth_problem(text, allowed) is None


def test_every_accepted_network_is_the_same_network_to_go(go_parse: Path) -> None:
    forms = corpus()
    assert len(forms) > 150
    go = read_with_go(go_parse, forms)
    wrong = [
        f"{what}: {text!r} accepted, Go reads net.ParseCIDR={go[text][0]!r} netip={go[text][1]!r}"
        for what, allowed in ALLOWED.items()
        for text in forms
        if accepted(text, allowed) and go[text] != (text, text)
    ]
    assert not wrong, "\n".join(wrong)
    # the corpus holds what the check exists for: forms Go reads as another network, all refused
    differ = [t for t in forms if cidr_problem(t) is None and go[t][0] not in (t, "error")]
    assert "::ffff:0:0/96" in differ and go["::ffff:0:0/96"][0] == "0.0.0.0/0"
    assert go["::ffff:808:800/120"][0] == "8.8.8.0/24"
    assert len(differ) >= len(V4)
    assert not [t for t in differ for allowed in ALLOWED.values() if accepted(t, allowed)]


def test_private_networks_stay_accepted(go_parse: Path) -> None:
    # the check is no blanket refusal of IPv6: private IPv4 and ULA networks still pass, read alike by Go
    ok = ["10.20.0.0/16", "192.168.1.0/24", "fd00::/8", "fd00:10:20::/48", "fc00::/7", "172.16.0.0/12"]
    go = read_with_go(go_parse, ok)
    for text in ok:
        assert accepted(text, None) and go[text] == (text, text), (text, go[text])


# networks whose verdict Python's ``is_private`` changed between releases (3.12.4 narrowed 2001::/23): the
# table decides, by the IANA registries' "Globally Reachable" column, the same on every Python
REGISTRY_VERDICTS = {
    "2001:1::/32": False,  # holds the PCP, TURN and DNS-SD SRP anycast addresses: globally reachable
    "2001:1::/126": False,
    "2001:1::4/126": True,
    "2001:3::/32": False,  # AMT
    "2001:20::/28": False,  # ORCHIDv2
    "2001:30::/28": False,  # Drone Remote ID
    "2001:4:112::/48": False,  # AS112-v6
    "2001:2::/48": True,  # benchmarking
    "2001:db8::/32": True,
    "3fff::/20": True,  # documentation (2024)
    "5f00::/16": True,  # segment routing SIDs
    "100:0:0:1::/64": True,  # dummy prefix
    "192.0.0.0/29": True,
    "192.0.0.8/29": False,  # holds 192.0.0.9 and .10 (PCP, TURN anycast)
    "192.31.196.0/24": False,
    "192.88.99.0/24": False,
    "224.0.0.0/4": False,
    "8.8.8.0/24": False,
    "10.0.0.0/8": True,
    "fd00::/8": True,
}


def test_the_special_purpose_table_decides_the_same_on_every_python() -> None:
    wrong = {t: v for t, v in REGISTRY_VERDICTS.items() if (breadth_problem(t, None) is None) != v}
    assert not wrong, wrong
    assert "2001:1::1/128 (port control protocol anycast)" in (breadth_problem("2001:1::/32", None) or "")


def test_the_special_purpose_table_is_read_alike_by_go(go_parse: Path) -> None:
    table = [n for n, _world, _name in special_addresses.SPECIAL]
    assert len(set(table)) == len(table)
    rows = sorted(set(table) | set(REGISTRY_VERDICTS))
    go = read_with_go(go_parse, rows)
    for text in rows:  # the same network to netip; to net.ParseCIDR too but for IPv4-mapped
        net = ipaddress.ip_network(text)
        assert ipaddress.ip_network(go[text][1]) == net, (text, go[text])
        assert go[text][0] == text or text == "::ffff:0:0/96", (text, go[text])
    assert go["::ffff:0:0/96"][0] == "0.0.0.0/0"  # why transition forms are refused before the table is read
    assert all(str(ipaddress.ip_network(n)) == n for n in rows)
    assert set(special_addresses.REGISTRIES) == {"iana-ipv4-special-registry", "iana-ipv6-special-registry"}
