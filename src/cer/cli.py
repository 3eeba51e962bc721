"""The headless command line: ``cer run`` and friends, for CI and scripts.

stdout carries results, stderr diagnostics. Exit codes live in :class:`ExitCode`.
"""

from __future__ import annotations

import argparse
import enum
import sys
from collections.abc import Sequence
from pathlib import Path

from cer import __version__, console, serialize
from cer.categories import CategoryConfigError
from cer.model import RunResult, Suite
from cer.options import UsageError, add_run_arguments, resolve_run
from cer.runner import run_suite
from cer.suite import SuiteError, load_suite


class ExitCode(enum.IntEnum):
    """What ``cer`` tells the shell."""

    OK = 0
    """Every case passed."""
    FAILED = 1
    """At least one case failed or errored."""
    USAGE = 2
    """Bad arguments, an unreadable or invalid suite, an unknown format version, or a
    suite with no cases."""
    INCOMPLETE = 3
    """Nothing failed, but some cases were skipped: the run proves nothing complete."""
    INTERRUPTED = 130


def exit_code_for(run: RunResult) -> ExitCode:
    summary = run.summary
    if summary.failed or summary.errored:
        return ExitCode.FAILED
    if summary.skipped:
        return ExitCode.INCOMPLETE
    return ExitCode.OK


EPILOG = """\
examples:
  cer run examples/calc/evals.toml --impl calc_ref:evaluate
  cer run evals.toml --impl mypkg.parser:parse --timeout 2 --case 'tabs-*'
  cer run --format json --output results.json     # suite and impl from [tool.cer]

exit codes:
  0  every case passed
  1  a case failed or errored
  2  usage error, unreadable or invalid suite, unknown format version, no cases
  3  nothing failed but some cases were skipped (incomplete, never conformant)

The implementation under test is MODULE:ATTR: a function called with the case's input
(as keyword arguments when its signature accepts them, else as one dict), a class
instantiated once per case, or an object with run_case(case). See
docs/execution-model.md for how results are judged.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cer",
        description="Verify an implementation against a Commons Format eval suite.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"cer {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    run = commands.add_parser(
        "run",
        help="run a suite against an implementation and report every case",
        description="Run every case of an eval suite against an implementation under test "
        "and report, for each, pass, fail, errored or skipped, with the reason.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_run_arguments(run)
    out = run.add_argument_group("output")
    out.add_argument("--format", choices=("text", "json"), default="text",
                     help="text: a report for people (default); json: the full results")
    out.add_argument("--output", "-o", type=Path, metavar="FILE",
                     help="write the report to FILE instead of stdout")
    out.add_argument("--verbose", "-v", action="store_true",
                     help="list passing cases too, and captured output of failures")
    out.add_argument("--quiet", "-q", action="store_true", help="no progress line")
    return parser


def _error(message: str) -> None:
    sys.stderr.write(f"cer: error: {message}\n")


def cmd_run(args: argparse.Namespace) -> ExitCode:
    try:
        resolved = resolve_run(args)
    except UsageError as exc:
        _error(str(exc))
        return ExitCode.USAGE
    try:
        suite: Suite = load_suite(resolved.suite)
    except SuiteError as exc:
        _error(str(exc))
        return ExitCode.USAGE
    for warning in suite.warnings:
        sys.stderr.write(f"cer: warning: {suite.path.name}: {warning}\n")
    if not suite.cases:
        _error(f"{suite.path}: the suite declares no cases")
        return ExitCode.USAGE
    progress = console.Progress(sys.stderr, enabled=not args.quiet and sys.stderr.isatty())
    try:
        run = run_suite(suite, resolved.options, on_event=progress)
    except CategoryConfigError as exc:
        _error(f"[tool.cer.categories]: {exc}")
        return ExitCode.USAGE
    except KeyboardInterrupt:
        progress.clear()
        _error("interrupted; no results were reported")
        return ExitCode.INTERRUPTED
    progress.clear()
    if args.format == "json":
        text = serialize.dumps(run) + "\n"
    else:
        colour = args.output is None and console.use_colour(sys.stdout)
        text = console.render_report(run, suite, colour=colour, verbose=args.verbose)
    if args.output is not None:
        try:
            args.output.write_text(text, encoding="utf-8")
        except OSError as exc:
            _error(f"cannot write {args.output}: {exc}")
            sys.stdout.write(text)
            return ExitCode.USAGE
        if args.format == "json":
            sys.stdout.write(console.render_report(run, suite, colour=False).splitlines()[-1]
                             + "\n")
    else:
        sys.stdout.write(text)
    return exit_code_for(run)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return ExitCode.USAGE
    if args.command == "run":
        return int(cmd_run(args))
    parser.error(f"unknown command {args.command}")
    return ExitCode.USAGE  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main())
