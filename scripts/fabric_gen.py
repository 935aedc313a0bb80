#!/usr/bin/env python
"""Generate a synthetic InfiniBand fabric (ibnetdiscover output) and the matching Kubernetes Node list.

Deterministic for a given set of options (seeded). The sample fleet is made with:

    scripts/fabric_gen.py --hosts 64 --su-size 8 --rails 8 --tiers 2 --sharp 1 --unnamed 1 \\
        --cut-cables 1 --out fabric.ibnetdiscover --nodes-out nodes.yaml
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from checkout_path import use_checkout

use_checkout()

from gpufleet_testlib import fabric_gen


def _write(path: str | None, text: str) -> None:
    if path in (None, "-"):
        sys.stdout.write(text)
        return
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(p)


def main(argv: list[str] | None = None) -> int:
    d = fabric_gen.GenSpec()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, default=d.hosts)
    ap.add_argument("--rails", type=int, default=d.rails, help="HCAs per host, one leaf per rail per SU")
    ap.add_argument("--su-size", type=int, default=d.su_size, help="hosts per scalable unit")
    ap.add_argument("--tiers", type=int, choices=(2, 3), default=d.tiers)
    ap.add_argument("--radix", type=int, default=d.radix, help="switch ports")
    ap.add_argument("--su-per-pod", type=int, default=0, help="3 tiers: SUs per pod (default radix/2)")
    ap.add_argument("--sharp", type=int, default=d.sharp, help="switches with a SHARP aggregation node (-1: all)")
    ap.add_argument("--unnamed", type=int, default=d.unnamed, help="HCAs left with the firmware description")
    ap.add_argument("--cut-cables", type=int, default=d.cut_cables, help="host cables removed (seeded)")
    ap.add_argument("--storage", type=int, default=d.storage, help="storage hosts on their own leaf")
    ap.add_argument("--seed", type=int, default=d.seed)
    ap.add_argument("--name-format", default=d.name_format, help="Python format for host names (index from 1)")
    ap.add_argument("--nvl-domain", type=int, default=0, help="hosts per NVLink domain (default: SU size)")
    ap.add_argument("--gpu-product", default=d.gpu_product)
    ap.add_argument("--gpus", type=int, default=d.gpus)
    ap.add_argument("--format", choices=("default", "ports"), default="default",
                    help="ibnetdiscover output format: default or -p ports report")
    ap.add_argument("--out", help="fabric output file (default: stdout)")
    ap.add_argument("--nodes-out", help="write the Kubernetes Node list here (JSON if it ends in .json, else YAML)")
    a = ap.parse_args(argv)
    spec = fabric_gen.GenSpec(
        hosts=a.hosts, rails=a.rails, su_size=a.su_size, tiers=a.tiers, radix=a.radix, sharp=a.sharp,
        unnamed=a.unnamed, cut_cables=a.cut_cables, storage=a.storage, seed=a.seed, name_format=a.name_format,
        su_per_pod=a.su_per_pod, nvl_domain=a.nvl_domain, gpu_product=a.gpu_product, gpus=a.gpus,
    )
    try:
        g = fabric_gen.generate(spec)
    except ValueError as e:
        print(f"fabric_gen: {e}", file=sys.stderr)
        return 2
    _write(a.out, fabric_gen.render_ports(g) if a.format == "ports" else fabric_gen.render_ibnetdiscover(g))
    if a.nodes_out:
        snapshot = fabric_gen.nodes_snapshot(g)
        if a.nodes_out.endswith(".json"):  # JSON is YAML too, and loads 40x faster for large fleets
            import json

            _write(a.nodes_out, json.dumps(snapshot, indent=1, sort_keys=True) + "\n")
        else:
            import yaml

            _write(a.nodes_out, yaml.safe_dump(snapshot, sort_keys=True, default_flow_style=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
