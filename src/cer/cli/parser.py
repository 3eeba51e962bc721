"""The ``cer`` command line's grammar: every subcommand, option and default, and the
help text around them (the docs are checked against this parser).

Each subcommand names its handler (``set_defaults(handler=...)``), the one way the
program finds what to run: ``cer.cli.commands.main`` calls ``args.handler(args)``. A
handler whose module only that command needs is named by module and function
(:func:`command`) and imported when it runs, since every ``cer`` start builds this
parser.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from importlib import import_module
from pathlib import Path

from cer import __version__
from cer.cli.baseline import add_baseline_command
from cer.cli.review import add_review_commands
from cer.cli.scaffold import add_init_command
from cer.config import (
    SUITE_HELP,
    add_run_arguments,
    argument_type,
)
from cer.engine.options import parse_max_fail, parse_shard
from cer.history.database import KEEP_RUNS
from cer.reports import (
    FORMATS,
    parse_report_spec,
)

EPILOG = """\
examples:
  cer run examples/calc/evals.toml --impl calc_ref:evaluate
  cer run evals.toml --impl mypkg.parser:parse --timeout 2 --case 'tabs-*'
  cer run --format json --output results.json     # suite and impl from [tool.cer]
  cer run evals.toml --impl calc:evaluate --failed  # rerun what failed last time
  cer run evals.toml --impl calc:evaluate --report junit --report github
  cer run evals.toml --impl calc_ref:evaluate --impl-cmd 'node calc.mjs'  # a matrix

Every run is recorded in .cer/history.sqlite beside the suite (--history PATH moves
it, --no-history skips it); see `cer history` and `cer diff`. Reports: junit
(cer-junit.xml), json (cer-results.json), tap (cer-results.tap), manifest
(cer-manifest.json), github (stdout), html (cer-report.html); FORMAT=PATH writes
elsewhere, - is stdout.

exit codes:
  0  every case passed
  1  a case failed or errored
  2  usage error, unreadable or invalid suite, unknown format version, no cases
  3  nothing failed but some cases were skipped (incomplete, never conformant)
  4  --require-coverage: a constraint has no case or needs repair (nothing else failed)

With --baseline FILE, a case it lists failing as listed does not fail the run; any other
failure (a regression) and a listed case that now passes (stale: remove it) exit 1, and
an entry naming no case of the suite exits 2. `cer baseline update` rewrites the file.

The implementation under test is MODULE:ATTR: a function called with the case's input
(as keyword arguments when its signature accepts them, else as one dict), a class
instantiated once per case, or an object with run_case(case). See
docs/execution-model.md for how results are judged.

Several implementations (--impl, --impl-cmd, --impl-cmd-per-case repeated and mixed, or
[tool.cer] impls) each run every case; the report is a matrix with the cases where they
observed different things (docs/matrix.md). The exit code is the worst over all runs;
reports are written once per implementation, the label before the file's suffix.
"""


Handler = Callable[[argparse.Namespace], int]
"""What runs a subcommand: its parsed arguments in, its exit code out."""


def command(module: str, name: str) -> Handler:
    """The handler ``name`` of ``module``, imported only when its command runs."""

    def handle(args: argparse.Namespace) -> int:
        handler: Handler = getattr(import_module(module), name)
        return int(handler(args))

    return handle


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cer",
        description="Verify an implementation against a Commons Format eval suite.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"cer {__version__}")
    parser.set_defaults(handler=None)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    run = commands.add_parser(
        "run",
        help="run a suite against an implementation and report every case",
        description="Run every case of an eval suite against an implementation under test "
        "and report, for each, pass, fail, errored or skipped, with the reason.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.set_defaults(handler=command("cer.cli.commands", "cmd_run"))
    add_run_arguments(run)
    run.add_argument(
        "--shard",
        type=argument_type(parse_shard),
        metavar="I/N",
        help="run only the I-th of N deterministic slices of the suite (positions I, I+N, "
        "...); the rest are skipped 'in another shard'; combine with cer merge",
    )
    run.add_argument(
        "--max-fail",
        type=argument_type(parse_max_fail),
        metavar="N",
        help="stop handing out cases once N cases failed or errored; the rest are "
        "reported skipped, not run (never passed), and the run is nonconformant",
    )
    run.add_argument(
        "-x",
        dest="max_fail",
        action="store_const",
        const=1,
        help="stop at the first failed or errored case (--max-fail 1)",
    )
    out = run.add_argument_group("output")
    out.add_argument(
        "--format",
        choices=("text", "json", "jsonl"),
        default="text",
        help="text: a report for people (default); json: the full results; jsonl: one "
        "JSON line per result as it is known, between a header and a trailer line",
    )
    out.add_argument(
        "--output",
        "-o",
        type=Path,
        metavar="FILE",
        help="write the report to FILE instead of stdout",
    )
    out.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="list passing cases too, and captured output of failures",
    )
    out.add_argument("--quiet", "-q", action="store_true", help="no progress line")
    out.add_argument(
        "--report",
        dest="reports",
        action="append",
        default=[],
        type=argument_type(parse_report_spec),
        metavar="FORMAT[=PATH]",
        help=f"also write a report ({', '.join(FORMATS)}); repeatable; PATH - is standard output",
    )
    out.add_argument(
        "--agree-on",
        type=argument_type(_agree_on),
        default=None,
        metavar="KEYS",
        help="several implementations: what they are compared on beside the verdict: "
        "expected (the keys of each case's expect table, the default), all (whole "
        "observations), or observation keys separated by commas (docs/matrix.md)",
    )
    out.add_argument(
        "--group-by",
        choices=("tag", "array"),
        default=None,
        help="several implementations: list the matrix's rows under each tag, or under "
        "the array each case is declared in, as the suite groups them",
    )
    out.add_argument(
        "--coverage",
        action="store_true",
        help="list constraint coverage in detail (from commonsformat.md)",
    )
    out.add_argument(
        "--require-coverage",
        action="store_true",
        help="exit 4 when a constraint of commonsformat.md has no case, needs repair, or a "
        "verifies entry names none (nothing else failed)",
    )
    history = run.add_argument_group("history")
    where = history.add_mutually_exclusive_group()
    where.add_argument(
        "--history",
        type=Path,
        metavar="PATH",
        help="the history database (default: .cer/history.sqlite beside the suite)",
    )
    where.add_argument("--no-history", action="store_true", help="do not record this run")
    history.add_argument(
        "--failed",
        action="store_true",
        help="run only the cases that failed or errored in the latest "
        "recorded run of this suite (with several implementations: in "
        "the latest run of any of them); the whole suite when nothing is "
        "recorded as failed",
    )

    hist = commands.add_parser(
        "history",
        help="list recorded runs, or one case's status over time",
        description="List the recorded runs of a suite, newest first (time, "
        "implementation, counts, verdict, flaky cases), or with --case one case's status "
        "in each run. A case is flaky when its status changed between runs of the same "
        "implementation id on the same suite content.",
    )
    hist.set_defaults(handler=command("cer.cli.history", "cmd_history"))
    _add_history_location(hist)
    hist.add_argument("--case", metavar="NAME", help="show this case's status in each run")
    hist.add_argument(
        "--approvals",
        action="store_true",
        help="list approval events instead: who approved which draft, when, from what",
    )
    hist.add_argument(
        "--limit",
        "-n",
        type=_positive_int,
        metavar="N",
        help="show at most N runs (default 20)",
    )
    hist.add_argument("--format", choices=("text", "json"), default="text")
    hist.add_argument(
        "--html",
        type=Path,
        metavar="PATH",
        help="write the newest recorded run as an HTML page, with the counts of the "
        f"recorded runs as a chart (the newest N with -n, else {KEEP_RUNS})",
    )

    diff = commands.add_parser(
        "diff",
        help="compare two recorded runs: regressions, fixes, new and removed cases",
        description="Compare two recorded runs. RUN is an index from `cer history` "
        "(1 = newest) or at least five characters of a run id. With no RUN, the two "
        "newest runs; with one, that run and the newest. Exit 1 when there are "
        "regressions, else 0.",
    )
    diff.set_defaults(handler=command("cer.cli.history", "cmd_diff"))
    diff.add_argument("run_a", nargs="?", metavar="RUN_A", help="the earlier run")
    diff.add_argument("run_b", nargs="?", metavar="RUN_B", help="the later run")
    _add_history_location(diff)
    diff.add_argument("--format", choices=("text", "json"), default="text")

    check = commands.add_parser(
        "check",
        help="validate a suite without running it",
        description="Validate a suite without running it: schema problems, duplicate "
        "names, unknown categories, empty expect tables, missing fixtures, and verifies "
        "entries naming no constraint of the module's commonsformat.md. Exit 0 when "
        "clean, 1 on problems, 2 when the file cannot be read.",
    )
    check.set_defaults(handler=command("cer.cli.commands", "cmd_check"))
    check.add_argument(
        "suite", nargs="?", type=Path, help=f"the evals.toml to check ({SUITE_HELP})"
    )
    merge = commands.add_parser(
        "merge",
        help="combine the JSON results of shards into one run",
        description="Combine the --format json results of cer run --shard I/N runs into "
        "one run, and judge and report it like cer run (against --baseline, with the "
        "same exit codes). Refuses overlapping or missing cases, different suites and "
        "different implementations (exit 2).",
    )
    merge.set_defaults(handler=command("cer.cli.commands", "cmd_merge"))
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
    add_baseline_command(commands)
    add_review_commands(commands)
    add_init_command(commands)
    return parser


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _add_history_location(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--suite",
        type=Path,
        metavar="SUITE",
        help=f"the suite whose runs to use ({SUITE_HELP})",
    )
    parser.add_argument(
        "--history",
        type=Path,
        metavar="PATH",
        help="the history database (default: .cer/history.sqlite beside the suite)",
    )


def _agree_on(text: str) -> str | tuple[str, ...]:
    """``--agree-on``, parsed by the matrix (imported only when it is given)."""
    from cer.results.matrix import parse_agree_on

    return parse_agree_on(text)
