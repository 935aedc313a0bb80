#!/usr/bin/env python
"""gpufleet command line: scaffold a fleet repository, validate and render an inventory, review a change.

    gpufleet.py init DEST [--fleet NAME] [--tenant NAME[:KIND[:OWNER]]]... [--org ORG] [--site SITE]
    gpufleet.py validate --inventory DIR
    gpufleet.py render --inventory DIR [--out DIR] [--check | --fail-on-change] [--base REV]
    gpufleet.py review --inventory DIR --base REF [--markdown FILE]
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
from pathlib import Path


def _import_path() -> None:
    """Make ``ansible_collections.gpufleet.core`` importable (late: keeps --help fast): from the installed
    collection this script ships in (``<path>/ansible_collections/gpufleet/core/scripts/``), else from
    the project checkout."""
    here = Path(__file__).resolve().parent
    if here.parent.parent.name == "gpufleet" and here.parent.parent.parent.name == "ansible_collections":
        root = str(here.parents[3])
        if root not in sys.path:
            sys.path.insert(0, root)
        return
    from checkout_path import use_checkout

    use_checkout()


def cmd_render(args: argparse.Namespace) -> int:
    from ansible_collections.gpufleet.core.plugins.module_utils.render.tree import render_and_write

    _fleet, out, result, report = render_and_write(args.inventory, args.out, check=args.check, base=args.base)
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
        for p in report.plan.manifests:
            print(f"  manifest changed: {p}", file=sys.stderr)
        for p in report.locks_changed:
            print(f"  pool lock changed: {p}", file=sys.stderr)
        return 1
    p = report.plan
    locks = f"; pool locks written: {', '.join(report.locks_changed)}" if report.locks_changed else ""
    counts = f"{len(p.added)} added, {len(p.changed)} changed, {len(p.removed)} removed, {p.unchanged} unchanged"
    print(f"{out}: {counts}{locks}")
    if args.verbose or args.fail_on_change:
        for what, paths in (("added", p.added), ("changed", p.changed), ("removed", p.removed)):
            for f in paths:
                print(f"  {what}: {f}")
    if args.fail_on_change and report.changed:
        print(f"{out}: re-rendered; add the changed files to the commit", file=sys.stderr)
        return 1
    return 0


def cmd_init(args: argparse.Namespace) -> int:
    from ansible_collections.gpufleet.core.plugins.module_utils.scaffold import fleet_repo

    opts = fleet_repo.options(
        args.dest,
        fleet=args.fleet,
        site=args.site,
        cluster=args.cluster,
        branch=args.branch,
        org=args.org,
        platform_owner=args.platform_owner,
        tenants=args.tenant or (),
    )
    written = fleet_repo.scaffold(args.dest, opts)
    print(
        f"{args.dest}: fleet repository {opts.fleet!r} with {len(written)} files; tenants: "
        + ", ".join(t.name for t in opts.tenants)
    )
    print(f"next: cd {args.dest}; git init; see README.md (install, render --inventory inventories/{opts.site})")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet

    fleet = load_fleet(args.inventory)
    print(
        f"{args.inventory}: fleet {fleet.name!r} is valid: {len(fleet.clusters)} cluster(s), "
        f"{len(fleet.tenants)} tenant(s), {len(fleet.pools)} pool(s)"
    )
    return 0


def cmd_review(args: argparse.Namespace) -> int:
    from ansible_collections.gpufleet.core.plugins.module_utils.review.change import render_markdown, review_change

    rv = review_change(".", args.base, args.inventory, ignore=[args.markdown] if args.markdown else None)
    text = render_markdown(rv)
    if args.markdown:
        Path(args.markdown).write_text(text, encoding="utf-8")
    sys.stdout.write(text)
    return 0 if rv.ok else 1


def cmd_schema(args: argparse.Namespace) -> int:
    from ansible_collections.gpufleet.core.plugins.module_utils.model.schema import SCHEMA

    sys.stdout.write(json.dumps(SCHEMA, indent=2, sort_keys=True) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpufleet.py", description=__doc__.split("\n\n", maxsplit=1)[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("render", help="render the GitOps tree of an inventory")
    r.add_argument("--inventory", "-i", required=True, help="inventory directory (or its hosts.yml)")
    r.add_argument("--out", "-o", help="GitOps tree root (default: <git work tree>/<gitops.path>)")
    r.add_argument("--check", action="store_true", help="write nothing; exit 1 and list files when stale")
    r.add_argument("--verbose", "-v", action="store_true", help="list every file written")
    r.add_argument(
        "--fail-on-change", action="store_true", help="render, then exit 1 when files changed (pre-commit hooks)"
    )
    r.add_argument(
        "--base",
        help="Git revision whose pool locks are trusted (CI: the pull request's base); the working tree's"
        " locks must be those or the ones computed from them",
    )
    r.set_defaults(func=cmd_render)
    i = sub.add_parser("init", help="scaffold a new fleet repository (inventory, CODEOWNERS, CI, pre-commit)")
    i.add_argument("dest", help="directory of the new repository (created; must not hold its files)")
    i.add_argument("--fleet", help="fleet name (default: the directory name)")
    i.add_argument(
        "--tenant",
        action="append",
        metavar="NAME[:KIND[:OWNER]]",
        help="a tenant (KIND slurm or kubernetes; OWNER @org/team); repeat; default team-a, team-b",
    )
    i.add_argument("--org", default="example-org", help="GitHub/GitLab organisation of the default owners")
    i.add_argument("--platform-owner", default="", help="CODEOWNERS owner of the platform (default @ORG/platform)")
    i.add_argument("--site", default="prod", help="inventory name: inventories/SITE (default prod)")
    i.add_argument("--cluster", default="gpu-1", help="name of the example cluster (default gpu-1)")
    i.add_argument("--branch", default="main", help="the branch Argo CD syncs and pull requests target")
    i.set_defaults(func=cmd_init)
    v = sub.add_parser("validate", help="validate an inventory (every problem, with file, line and key)")
    v.add_argument("--inventory", "-i", required=True, help="inventory directory (or its hosts.yml)")
    v.set_defaults(func=cmd_validate)
    rv = sub.add_parser(
        "review",
        help="the blast radius of a change against a base branch, by owner (Markdown; exit 1 on a policy failure)",
    )
    rv.add_argument("--inventory", "-i", required=True, action="append", help="inventory directory (repeatable)")
    rv.add_argument("--base", required=True, help="base revision, e.g. origin/main (compared at the merge base)")
    rv.add_argument("--markdown", "-m", help="also write the Markdown to this file (a pull-request comment)")
    rv.set_defaults(func=cmd_review)
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
