#!/usr/bin/env python3
"""CI check for a scale pull request (see plugins/module_utils/scale/check.py).

    check_scale_pr.py --base <rev> [--inventory DIR ...] [--gitops DIR] [--repo DIR]

Fails (exit 1) when the committed GitOps tree or a pool lock is not what re-rendering the
checked-out inventory gives, or when more nodes change pool between ``--base`` and HEAD than the
pool size changes require (a reshuffle). Exit 2 on bad input (unknown revision, broken inventory),
with the file/key/line. Reads only; writes nothing. In CI: ``--base origin/main`` (fetch it first).
"""

from __future__ import annotations

import argparse
import sys


def _import_path() -> None:
    """Make ``ansible_collections.gpufleet.core`` importable from this checkout (late: keeps --help fast)."""
    from checkout_path import use_checkout

    use_checkout()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    ap.add_argument("--base", required=True, help="revision the pull request targets (e.g. origin/main)")
    ap.add_argument("--inventory", action="append", help="inventory directory (repeatable); default inventories/sample")
    ap.add_argument("--gitops", help="GitOps tree root (default: gpufleet_fleet.gitops.path in the work tree)")
    ap.add_argument("--repo", default=".", help="the Git work tree (default: the current directory)")
    ap.add_argument("-v", "--verbose", action="store_true", help="list every node move")
    args = ap.parse_args(argv)
    _import_path()
    from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
    from ansible_collections.gpufleet.core.plugins.module_utils.scale.check import check_scale_change

    inventories = args.inventory or ["inventories/sample"]
    try:
        report = check_scale_change(args.repo, args.base, inventories, args.gitops)
    except GpufleetError as exc:
        print(f"check_scale_pr: {exc}", file=sys.stderr)
        return 2
    print(report.text())
    if args.verbose:
        for c in report.clusters:
            for m in c.moves:
                print(f"  {c.cluster}: {m}")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
