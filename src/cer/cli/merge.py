"""``cer merge``: its arguments and its handler. The JSON results of the shards of one
run combined, then judged and reported as ``cer run`` judges and reports a run."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from cer.cli.exits import ExitCode, print_error, print_warning
from cer.cli.verdicts import ModuleDoc, Verdicts, figures_of
from cer.config import argument_type
from cer.reports import ReportContext, parse_report_spec, render_report, write_report
from cer.reports import text as text_report
from cer.results.conformance import UNREADABLE
from cer.suite.loader import SuiteError, load_suite


def add_commands(commands: Any) -> None:
    """Add ``cer merge``, its arguments and its handler, to the subcommands."""
    merge = commands.add_parser(
        "merge",
        help="combine the JSON results of shards into one run",
        description="Combine the --format json results of cer run --shard I/N runs into "
        "one run, and judge and report it like cer run (against --baseline, with the "
        "same exit codes). Refuses overlapping or missing cases, different suites and "
        "different implementations (exit 2).",
    )
    merge.set_defaults(handler=cmd_merge)
    merge.add_argument("files", nargs="+", type=Path, metavar="RESULTS.json")
    merge.add_argument(
        "--baseline",
        type=Path,
        metavar="FILE",
        help="hold the merged run against this known-failures file, as cer run "
        "--baseline does: exit 1 on a regression or a stale entry",
    )
    merge.add_argument(
        "--require-coverage",
        action="store_true",
        help="exit 4 when a constraint of the module has no case, as cer run does",
    )
    merge.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text: a report for people (default); json: the merged results",
    )
    merge.add_argument(
        "--output",
        "-o",
        type=Path,
        metavar="FILE",
        help="write the merged report to FILE instead of stdout",
    )
    merge.add_argument(
        "--report",
        dest="reports",
        action="append",
        default=[],
        type=argument_type(parse_report_spec),
        metavar="FORMAT[=PATH]",
        help="also write a report of the merged run, as cer run --report does (html, "
        "markdown for a job summary, ...); repeatable; PATH - is standard output",
    )


def _remember_output(path: str) -> None:
    """Add ``path``, a file this command writes that holds expected values, to the
    record of files cer wrote, so that no later run's implementation may read it
    (:mod:`cer.sandbox.readset`); a record that cannot be kept is said, not fatal."""
    from cer.sandbox import readset

    why = readset.remember_outputs([path])
    if why is not None:
        print_warning(why)


def cmd_merge(args: argparse.Namespace) -> ExitCode:
    """Merge shard results, then judge and report the whole run as ``cer run`` does:
    against ``--baseline`` (known failures, regressions, stale entries, each counted
    over every shard) and the module's constraints, with ``cer run``'s exit codes."""
    from cer.results.merge import MergeError, merge_files  # only this command

    try:
        run = merge_files(args.files)
    except MergeError as exc:
        print_error(f"merge: {exc}")
        return ExitCode.USAGE
    try:
        suite = load_suite(run.suite_path)
    except SuiteError as exc:
        print_error(f"merge: the shards' suite cannot be read: {exc}")
        return ExitCode.USAGE
    if run.suite_hash and suite.content_hash != run.suite_hash:
        print_error(f"merge: {run.suite_path} changed since the shards ran (content hash differs)")
        return ExitCode.USAGE
    module_doc = ModuleDoc.read(suite)
    verdicts = Verdicts.load(args.baseline, args.require_coverage, suite, module_doc)
    if verdicts is None:
        return ExitCode.USAGE
    if run.conditions is not None:  # what the merged run is held against, not the shards
        run = replace(run, conditions=replace(run.conditions, **verdicts.held()))
    coverage = module_doc.coverage(suite, run)
    judged = UNREADABLE if coverage is None and module_doc.problem is not None else coverage
    conformance = verdicts.conformance(suite, run, judged, figures_of(coverage, suite), "")
    context = ReportContext(run, suite, coverage, conformance=conformance)
    if args.format == "json":
        text = render_report("json", context)
    else:
        colour = args.output is None and text_report.use_colour(sys.stdout)
        text = text_report.render_report(
            run, suite, colour=colour, coverage=coverage, conformance=conformance
        )
    code = verdicts.exit_code(run, conformance)
    shortfall = conformance.shortfall()
    if shortfall is not None and verdicts.require_coverage:
        print_error(f"--require-coverage: {shortfall}")
    for request in args.reports:  # one report of the whole run, as cer run writes them
        report = render_report(request.format, context)
        if request.to_stdout:
            sys.stdout.write(report)
            continue
        try:
            write_report(report, request.path)
        except OSError as exc:
            print_error(f"cannot write the {request.format} report {request.path}: {exc}")
            return ExitCode.USAGE
    if args.output is not None:
        _remember_output(str(args.output))
        try:
            write_report(text, args.output)
        except OSError as exc:
            print_error(f"cannot write {args.output}: {exc}")
            return ExitCode.USAGE
        sys.stdout.write(text_report.summary_line(run, conformance=conformance) + "\n")
    else:
        sys.stdout.write(text)
    return code
