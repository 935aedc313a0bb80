#!/usr/bin/env python3
"""gpufleet command line: render the GitOps tree of an inventory, print the fleet schema.

    gpufleet.py render --inventory DIR [--out DIR] [--check] [--base REV]
    gpufleet.py schema

``render`` writes the tree atomically (only changed files) and the pool locks beside the
snapshots; ``--check`` writes nothing and exits 1 listing the files that differ when the
committed tree is stale. Bad input: a clear message naming the file/key/line, exit 2, nothing
written.
"""

from __future__ import annotations

import argparse
import json
import sys


def _import_path() -> None:
    """Make ``ansible_collections.gpufleet.core`` importable from this checkout (late: keeps --help fast)."""
    from checkout_path import use_checkout

    use_checkout()


def cmd_render(args: argparse.Namespace) -> int:
    from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_and_write

    _, out, result, report = render_and_write(args.inventory, args.out, check=args.check, base=args.base)
    for name, cluster in (result.summary if result is not None else {}).items():
        for warning in cluster.get("warnings", []):
            print(f"gpufleet: WARNING: {warning}", file=sys.stderr)
        for move in cluster.get("moves", []):  # a node changes tenant: the plan names it
            print(f"gpufleet: pool plan {name}: {move}")
    if args.check:
        if not report.changed:
            print(f"{out}: up to date ({report.plan.unchanged} files)")
            return 0
        print(f"{out}: stale; re-render with: gpufleet.py render --inventory {args.inventory}", file=sys.stderr)
        for what, paths in (
            ("added", report.plan.added),
            ("changed", report.plan.changed),
            ("removed", report.plan.removed),
        ):
            for p in paths:
                print(f"  {what}: {p}", file=sys.stderr)
        if report.plan.manifest_changed and not (report.plan.added or report.plan.changed or report.plan.removed):
            print("  changed: .gpufleet-manifest", file=sys.stderr)
        for p in report.locks_changed:
            print(f"  pool lock changed: {p}", file=sys.stderr)
        return 1
    p = report.plan
    locks = f"; pool locks written: {', '.join(report.locks_changed)}" if report.locks_changed else ""
    counts = f"{len(p.added)} added, {len(p.changed)} changed, {len(p.removed)} removed, {p.unchanged} unchanged"
    print(f"{out}: {counts}{locks}")
    if args.verbose:
        for what, paths in (("added", p.added), ("changed", p.changed), ("removed", p.removed)):
            for f in paths:
                print(f"  {what}: {f}")
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    from ansible_collections.gpufleet.core.plugins.module_utils.model.schema import SCHEMA

    sys.stdout.write(json.dumps(SCHEMA, indent=2, sort_keys=True) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpufleet.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("render", help="render the GitOps tree of an inventory")
    r.add_argument("--inventory", "-i", required=True, help="inventory directory (or its hosts.yml)")
    r.add_argument("--out", "-o", help="GitOps tree root (default: <git work tree>/<gitops.path>)")
    r.add_argument("--check", action="store_true", help="write nothing; exit 1 and list files when stale")
    r.add_argument("--verbose", "-v", action="store_true", help="list every file written")
    r.add_argument(
        "--base",
        help="Git revision whose pool locks are trusted (CI: the pull request's base); the working tree's"
        " locks must be those or the ones computed from them",
    )
    r.set_defaults(func=cmd_render)
    s = sub.add_parser("schema", help="print the fleet JSON schema (docs/fleet.schema.json)")
    s.set_defaults(func=cmd_schema)
    args = parser.parse_args(argv)
    _import_path()
    from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError

    try:
        return int(args.func(args))
    except GpufleetError as exc:
        print(f"gpufleet: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"gpufleet: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
