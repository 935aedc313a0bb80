#!/usr/bin/env python
"""gpufleet command line: scaffold a fleet repository, validate and render an inventory, review a change.

    gpufleet.py init DEST --org ORG [--fleet NAME] [--tenant NAME[:KIND[:OWNER]]]... [--site SITE]
    gpufleet.py validate [--inventory DIR]
    gpufleet.py render [--inventory DIR] [--out DIR] [--check | --fail-on-change] [--base REV]
    gpufleet.py review [--inventory DIR] --base REF [--markdown FILE]
    gpufleet.py schema
    gpufleet.py maintenance start [--inventory DIR] --name NAME --cluster C (--nodes HOSTLIST | --switch S)
                --reason TEXT [--start 2026-12-01T06:00:00Z --duration 4h] [--check]
    gpufleet.py maintenance end [--inventory DIR] --name NAME [--check]
    gpufleet.py maintenance list|status [--inventory DIR] [--name NAME] [--now 2026-12-01T07:00:00Z]
    gpufleet.py check-versions [--inventory DIR] [--base REF]
    gpufleet.py --version

``--inventory`` defaults to the ``inventory`` of the ``ansible.cfg`` Ansible would read here
(``$ANSIBLE_CONFIG``, else ``./ansible.cfg``), as in a repository made by ``init``.

``render`` writes the tree atomically (only changed files) and the pool locks beside the
snapshots; ``--check`` writes nothing and exits 1 listing the files that differ when the
committed tree is stale. Bad input: a clear message naming the file/key/line, exit 2, nothing
written.
"""

from __future__ import annotations

import argparse
import configparser
import json
import os
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


def default_inventory() -> str | None:
    """The ``[defaults] inventory`` of the ansible.cfg Ansible reads from here ($ANSIBLE_CONFIG, ./ansible.cfg),
    relative to that file; None when there is none."""
    cfg = Path(os.environ.get("ANSIBLE_CONFIG") or "ansible.cfg")
    if not cfg.is_file():
        return None
    parser = configparser.ConfigParser(interpolation=None, inline_comment_prefixes=(";", "#"))
    try:
        parser.read(cfg, encoding="utf-8")
    except configparser.Error:
        return None
    value = parser.get("defaults", "inventory", fallback="").split(",")[0].strip()
    if not value:
        return None
    path = Path(os.path.expanduser(value))
    return str(path if path.is_absolute() or cfg.parent == Path(".") else cfg.parent / path)


def _inventory(args: argparse.Namespace) -> None:
    """Fill ``args.inventory`` from ansible.cfg when it was not given; exit 2 when there is none."""
    if args.inventory:
        return
    found = default_inventory()
    if found is None:
        print(
            f"gpufleet.py {args.command}: error: --inventory DIR is required (no ansible.cfg naming an inventory here)",
            file=sys.stderr,
        )
        raise SystemExit(2)
    args.inventory = [found] if args.command == "review" else found


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
        repo_url=args.repo_url,
        tenants=args.tenant or (),
    )
    written = fleet_repo.scaffold(args.dest, opts)
    print(
        f"{args.dest}: fleet repository {opts.fleet!r} with {len(written)} files; tenants: "
        + ", ".join(t.name for t in opts.tenants)
    )
    print(
        f"next: cd {args.dest}; git init; README.md: Set up (gpufleet.core pinned in requirements.yml), render,"
        " and Branch protection (required check, code-owner review: without them CODEOWNERS protects nothing)"
    )
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from ansible_collections.gpufleet.core.plugins.module_utils.daytwo.windows import (
        ended_windows,
        opened_windows,
        parse_now,
    )
    from ansible_collections.gpufleet.core.plugins.module_utils.errors import GpufleetError
    from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
    from ansible_collections.gpufleet.core.plugins.module_utils.pools.capacity import capacity_problems

    fleet = load_fleet(args.inventory)
    problems = capacity_problems(fleet)
    if problems:
        raise GpufleetError(
            f"{len(problems)} cluster(s) of {args.inventory} cannot be rendered:\n"
            + "\n".join(f"  - {p}".replace("\n", "\n  ") for p in problems)
        )
    now = parse_now(args.now)
    for w in [*ended_windows(fleet, args.inventory, now), *opened_windows(fleet, args.inventory, now)]:
        print(f"gpufleet: WARNING: {w.issue}", file=sys.stderr)
    print(
        f"{args.inventory}: fleet {fleet.name!r} is valid: {len(fleet.clusters)} cluster(s), "
        f"{len(fleet.tenants)} tenant(s), {len(fleet.pools)} pool(s)"
    )
    return 0


def cmd_review(args: argparse.Namespace) -> int:
    from ansible_collections.gpufleet.core.plugins.module_utils.daytwo.windows import parse_now
    from ansible_collections.gpufleet.core.plugins.module_utils.review.change import review_change
    from ansible_collections.gpufleet.core.plugins.module_utils.review.review_json import render_json
    from ansible_collections.gpufleet.core.plugins.module_utils.review.review_markdown import render_markdown
    from ansible_collections.gpufleet.core.plugins.module_utils.review.review_output import check_output, write_output

    now = parse_now(args.now)
    target = check_output(args.markdown) if args.markdown else None  # refused before anything is read
    rv = review_change(".", args.base, args.inventory, now=now, charts_dir=args.charts, full=args.full)
    text = render_markdown(rv)
    if target is not None:
        write_output(target, text)
    sys.stdout.write(render_json(rv) if args.format == "json" else text)
    return 0 if rv.ok else 1


def cmd_maintenance(args: argparse.Namespace) -> int:
    from ansible_collections.gpufleet.core.plugins.module_utils.daytwo.maintenance_change import (
        plan_maintenance,
        write_maintenance,
    )
    from ansible_collections.gpufleet.core.plugins.module_utils.model.maintenance_model import Maintenance

    if args.action in ("list", "status"):
        return _maintenance_list(args)
    if not args.name:
        print(f"gpufleet: error: {args.action} needs --name", file=sys.stderr)
        return 2
    start = None
    if args.action == "start":
        if not args.cluster or not args.reason or bool(args.nodes) == bool(args.switch):
            print("gpufleet: error: start needs --cluster, --reason and one of --nodes or --switch", file=sys.stderr)
            return 2
        if bool(args.start) != bool(args.duration):
            print("gpufleet: error: a window needs both --start and --duration", file=sys.stderr)
            return 2
        start = Maintenance(args.name, args.cluster, args.reason, args.nodes, args.switch, args.start, args.duration)
    change = plan_maintenance(args.inventory, start=start, end=args.name if args.action == "end" else None)
    sys.stdout.write(change.plan_markdown())
    if not args.check:
        write_maintenance(change)
    verb = "would change" if args.check else "changed"
    print(f"\nmaintenance {args.action} {args.name}: {change.file} and {len(change.files())} rendered file(s) {verb}")
    for f in change.files():
        print(f"  {change.out / f}")
    return 0


def _maintenance_list(args: argparse.Namespace) -> int:
    from ansible_collections.gpufleet.core.plugins.module_utils.daytwo.maintenance_status import status_lines, statuses
    from ansible_collections.gpufleet.core.plugins.module_utils.daytwo.windows import parse_now
    from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet

    fleet = load_fleet(args.inventory)
    rows = [s for s in statuses(fleet, parse_now(args.now)) if args.name in (None, s.name)]
    if args.action == "status" and not rows:
        known = ", ".join(m.name for m in fleet.maintenance) or "none"
        print(f"gpufleet: error: status needs --name of a maintenance (known: {known})", file=sys.stderr)
        return 2
    print("\n".join(status_lines(rows)))
    return 0


def cmd_hardware(args: argparse.Namespace) -> int:
    from ansible_collections.gpufleet.core.plugins.module_utils.model.validation import load_fleet
    from ansible_collections.gpufleet.core.plugins.module_utils.scale import hardware

    fleet = load_fleet(args.inventory)
    if args.action == "add":
        if not args.leaf:
            print("gpufleet: error: add needs --leaf (and --parent for a new leaf)", file=sys.stderr)
            return 2
        change = hardware.plan_add(fleet, args.cluster, args.nodes, args.leaf, args.parent, args.like)
    else:
        change = hardware.plan_remove(fleet, args.cluster, args.nodes)
    written = hardware.write_hardware(change, check=args.check)
    for line in change.lines:
        print(line)
    for p in written:
        print(f"  {'would change' if args.check else 'changed'}: {p}")
    print(
        "next: size the pools for them in pools.yml (new nodes are in no pool until one grows; removed"
        f" nodes leave theirs), `gpufleet.py render -i {args.inventory}`, and open the scaling pull request:"
        " its review lists the node moves and what to drain"
    )
    return 0


def cmd_check_versions(args: argparse.Namespace) -> int:
    from ansible_collections.gpufleet.core.plugins.module_utils.daytwo.upgrade import upgrade_plan
    from ansible_collections.gpufleet.core.plugins.module_utils.daytwo.version_change import check, load_change, refuse

    old, new = load_change(args.inventory, args.base)
    findings = check(old, new)
    if old is not None:
        sys.stdout.write("\n".join(upgrade_plan(old, new)))
    for f in findings:
        if f.action != "refuse":
            print(f.located(new))
    refuse(findings, new)  # exit 2 with every refusal
    print(f"{args.inventory}: version change accepted ({len(findings)} finding(s) above)")
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    from ansible_collections.gpufleet.core.plugins.module_utils.model.schema import SCHEMA

    sys.stdout.write(json.dumps(SCHEMA, indent=2, sort_keys=True) + "\n")
    return 0


class _Version(argparse.Action):
    """``--version``: the version of the gpufleet.core collection this CLI belongs to."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the gpufleet.core version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_args: object, **_kwargs: object) -> None:
        _import_path()
        from ansible_collections.gpufleet.core.plugins.module_utils.scaffold.fleet_repo import collection_version

        print(f"gpufleet.core {collection_version()}")
        parser.exit()


def _sub(sub: argparse._SubParsersAction, name: str, text: str) -> argparse.ArgumentParser:
    """A subcommand whose one-line help is also its description (``gpufleet.py NAME --help``)."""
    return sub.add_parser(name, help=text, description=text[:1].upper() + text[1:] + ".")


def _inventory_arg(p: argparse.ArgumentParser, **kwargs: object) -> None:
    p.add_argument(
        "--inventory",
        "-i",
        help="inventory directory (or its hosts.yml); default: the inventory of ./ansible.cfg",
        **kwargs,  # type: ignore[arg-type]
    )


def _render_command(sub: argparse._SubParsersAction) -> None:
    p = _sub(
        sub,
        "render",
        "render the GitOps tree and the pool locks of an inventory, writing only changed files (--check:"
        " write nothing, exit 1 when stale)",
    )
    _inventory_arg(p)
    p.add_argument("--out", "-o", help="GitOps tree root (default: <git work tree>/<gitops.path>)")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 and list files when stale")
    p.add_argument("--verbose", "-v", action="store_true", help="list every file written")
    p.add_argument(
        "--fail-on-change", action="store_true", help="render, then exit 1 when files changed (pre-commit hooks)"
    )
    p.add_argument(
        "--base",
        help="Git revision whose pool locks are trusted (CI: the pull request's base); the working tree's"
        " locks must be those or the ones computed from them",
    )
    p.set_defaults(func=cmd_render)


def _init_command(sub: argparse._SubParsersAction) -> None:
    p = _sub(sub, "init", "scaffold a new fleet repository (inventory, CODEOWNERS, CI, pre-commit)")
    p.add_argument("dest", help="directory of the new repository (created; must not hold its files)")
    p.add_argument("--fleet", help="fleet name (default: the directory name)")
    p.add_argument(
        "--tenant",
        action="append",
        metavar="NAME[:KIND[:OWNER]]",
        help="a tenant (KIND slurm or kubernetes; OWNER @org/team); repeat; default team-a, team-b",
    )
    p.add_argument(
        "--org",
        default="",
        help="GitHub/GitLab organisation or group of the default owners (@ORG/platform, @ORG/<tenant>) and of"
        " the repository URL; required unless --platform-owner, every tenant's OWNER and --repo-url are given",
    )
    p.add_argument("--platform-owner", default="", help="CODEOWNERS owner of the platform (default @ORG/platform)")
    p.add_argument(
        "--repo-url",
        default="",
        help="Git URL Argo CD clones this repository from (default https://github.com/ORG/FLEET.git)",
    )
    p.add_argument("--site", default="prod", help="inventory name: inventories/SITE (default prod)")
    p.add_argument("--cluster", default="gpu-1", help="name of the example cluster (default gpu-1)")
    p.add_argument("--branch", default="main", help="the branch Argo CD syncs and pull requests target")
    p.set_defaults(func=cmd_init)


def _validate_command(sub: argparse._SubParsersAction) -> None:
    p = _sub(
        sub,
        "validate",
        "check an inventory as render does, short of parsing the fabric (every problem, with file, line and key)",
    )
    _inventory_arg(p)
    p.add_argument("--now", help="warn of update windows ended by this UTC time (default: now)")
    p.set_defaults(func=cmd_validate)


def _review_command(sub: argparse._SubParsersAction) -> None:
    p = _sub(
        sub,
        "review",
        "the blast radius of a change against a base branch, by owner (Markdown; exit 1 on a policy failure)",
    )
    _inventory_arg(p, action="append")
    p.add_argument("--base", required=True, help="base revision, e.g. origin/main (compared at the merge base)")
    p.add_argument(
        "--markdown",
        "-m",
        help="also write the Markdown to this file (a pull-request comment); outside the Git work tree, never"
        " through a link",
    )
    p.add_argument(
        "--format",
        choices=["markdown", "json"],
        default="markdown",
        help="what goes to stdout: Markdown, or JSON for CI annotations (docs/review.schema.json)",
    )
    p.add_argument(
        "--charts",
        help="folder of the charts (helm pull: <chart>-<version>.tgz) to template before and after a chart or"
        " values change (needs helm on PATH)",
    )
    p.add_argument("--now", help="judge update windows at this UTC time (2026-12-05T02:00:00Z; default: now)")
    p.add_argument(
        "--full",
        action="store_true",
        help="render every cluster (default: only the clusters the change touches; the others are trusted"
        " to be the base's committed tree)",
    )
    p.set_defaults(func=cmd_review)


def _nodes_command(
    sub: argparse._SubParsersAction,
    name: str,
    text: str,
    actions: dict[str, str],
    helps: tuple[str, str, str],
    required: bool = False,
) -> argparse.ArgumentParser:
    """A subcommand that acts on nodes of a cluster: an action (``actions``: name -> help, or ""), the
    inventory, --cluster and --nodes (``required`` or not) and --check; ``helps``: their helps, in that order."""
    p = _sub(sub, name, text)
    said = "; ".join(f"{a}: {h}" for a, h in actions.items() if h)
    p.add_argument("action", choices=list(actions), help=said or None)
    _inventory_arg(p)
    p.add_argument("--cluster", required=required, help=helps[0])
    p.add_argument("--nodes", required=required, help=helps[1])
    p.add_argument("--check", action="store_true", help=helps[2])
    return p


def _maintenance_command(sub: argparse._SubParsersAction) -> None:
    p = _nodes_command(
        sub,
        "maintenance",
        "put nodes into maintenance or return them (edits the inventory, renders)",
        {
            "start": "",
            "end": "",
            "list": "every maintenance, its nodes and state",
            "status": "the one named by --name",
        },
        (
            "cluster of the nodes (start)",
            "nodes by hostlist, e.g. gpu[041-044] (start)",
            "print the plan, write nothing",
        ),
    )
    p.add_argument("--name", help="name of the maintenance (the Slurm reservation is named after it)")
    p.add_argument("--now", help="list, status: the state at this UTC time (default: now)")
    p.add_argument("--switch", help="every node under this switch, leaf group or block of the topology (start)")
    p.add_argument("--reason", help="why; Slurm shows it as the drain reason (start)")
    p.add_argument("--start", help="window start, UTC, 2026-12-01T06:00:00Z (start; default: on apply)")
    p.add_argument("--duration", help="window length: 90m, 4h, 2d (start, with --start)")
    p.set_defaults(func=cmd_maintenance)


def _hardware_command(sub: argparse._SubParsersAction) -> None:
    p = _nodes_command(
        sub,
        "hardware",
        "add nodes to a cluster's snapshots under a leaf switch of its fabric file, or remove them (kubespray's"
        " scale.yml and remove-node.yml)",
        {"add": "", "remove": ""},
        ("the cluster of the nodes", "the nodes, as a hostlist: gpu[025-032]", "say what would change, write nothing"),
        required=True,
    )
    p.add_argument("--leaf", help="the leaf switch the new nodes are cabled to (add)")
    p.add_argument("--parent", help="the switch a new leaf hangs from (add, new leaf)")
    p.add_argument("--like", help="an existing node the new Nodes copy (add; default the leaf's first node)")
    p.set_defaults(func=cmd_hardware)


def _check_versions_command(sub: argparse._SubParsersAction) -> None:
    p = _sub(
        sub,
        "check-versions",
        "the data-protecting rules on a version change (exit 2 when refused: skipped Slurm releases, going back"
        " past a database conversion)",
    )
    _inventory_arg(p)
    p.add_argument("--base", help="base revision (e.g. origin/main): compare with the inventory there")
    p.set_defaults(func=cmd_check_versions)


def _schema_command(sub: argparse._SubParsersAction) -> None:
    p = _sub(sub, "schema", "print the fleet JSON schema (docs/fleet.schema.json)")
    p.set_defaults(func=cmd_schema)


# one function a subcommand: its options and the function that runs it
COMMANDS = (
    _render_command,
    _init_command,
    _validate_command,
    _review_command,
    _maintenance_command,
    _hardware_command,
    _check_versions_command,
    _schema_command,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="gpufleet.py",
        description=__doc__.split("\n\n", maxsplit=1)[0],
        epilog="gpufleet.py COMMAND --help describes each command.",
    )
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in COMMANDS:
        add(sub)
    args = parser.parse_args(argv)
    if hasattr(args, "inventory"):
        _inventory(args)
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
