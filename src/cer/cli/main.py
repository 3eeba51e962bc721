"""The headless command line: ``cer run`` and friends, for CI and scripts.

stdout carries results, stderr diagnostics. Exit codes live in :class:`ExitCode`.
"""

from __future__ import annotations

import argparse
import enum
import json
import shutil
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cer import __version__, procs, serialize
from cer.categories import CategoryConfigError
from cer.cli import console
from cer.coverage import (
    ConstraintSet,
    Coverage,
    CoverageError,
    CoverageFigures,
    read_module_doc,
    suite_coverage,
)
from cer.derive import coverage_figures
from cer.engine.options import RunOptions, parse_shard
from cer.engine.runner import run_suite
from cer.engine.workerproc import WarmWorkers
from cer.history import (
    KEEP_RUNS,
    History,
    HistoryError,
    HistoryUntrusted,
    RunDiff,
    RunRecord,
    default_history_path,
)
from cer.matrix import build_matrix, matrix_to_dict
from cer.merge import MergeError, merge_files, shard_summary
from cer.model import RunResult, Status, Suite
from cer.options import (
    ResolvedRun,
    UsageError,
    add_run_arguments,
    argument_type,
    find_project_config,
    implementation_stem,
    resolve_run,
)
from cer.reports import (
    FORMATS,
    ReportContext,
    ReportRequest,
    iso_time,
    parse_report_spec,
    render_report,
    results_document,
    write_report,
)
from cer.review_cli import add_review_commands
from cer.suite import SuiteError, load_suite
from cer.suitecache import load_suite_cached

EARLY_WORKERS: WarmWorkers | None = None
"""A worker started before this module was imported (:mod:`cer.cli.entry`), which the
first run takes if it is still fresh."""


class ExitCode(enum.IntEnum):
    """What ``cer`` tells the shell."""

    OK = 0
    """Every case passed."""
    FAILED = 1
    """At least one case failed or errored."""
    USAGE = 2
    """Bad arguments, an unreadable or invalid suite, an unknown format version, a
    suite with no cases, or a history database cer did not make."""
    INCOMPLETE = 3
    """Nothing failed, but some cases were skipped: the run proves nothing complete."""
    INTERRUPTED = 130
    """Interrupted by SIGINT (Ctrl-C); SIGHUP gives 129 and SIGTERM 143 (128 + the
    signal's number), see :class:`Terminated`."""


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived (a CI timeout, a closed terminal): the run is
    stopped exactly as on Ctrl-C, every process of it ended, and ``cer`` exits with
    128 + the signal's number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def interrupted_code(exc: KeyboardInterrupt) -> int:
    """The exit code for an interrupted run: 130 for Ctrl-C, else 128 + the signal."""
    if isinstance(exc, Terminated):
        return 128 + exc.signum
    return int(ExitCode.INTERRUPTED)


def _interrupted(exc: KeyboardInterrupt) -> str:
    if isinstance(exc, Terminated):
        return f"stopped by {signal.Signals(exc.signum).name}"
    return "interrupted"


def _stop_on_signals() -> None:
    """Turn SIGTERM and SIGHUP into :class:`Terminated` in the main thread, once: a
    second signal while the run is being stopped is ignored, so that the cleanup
    (ending every worker and what it left) is not cut short."""

    def handler(signum: int, frame: object) -> None:
        for each in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(each, signal.SIG_IGN)
        raise Terminated(signum)

    for each in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(each, handler)


def exit_code_for(run: RunResult) -> ExitCode:
    """0, 1 or 3 for one run; a shard answers for the cases it ran, not for the cases
    left to the other shards."""
    summary = shard_summary(run)
    if summary.failed or summary.errored:
        return ExitCode.FAILED
    if summary.skipped:
        return ExitCode.INCOMPLETE
    return ExitCode.OK


def exit_code_for_runs(runs: Sequence[RunResult]) -> ExitCode:
    """The worst over several runs: failed before incomplete before OK."""
    codes = {exit_code_for(run) for run in runs}
    for code in (ExitCode.FAILED, ExitCode.INCOMPLETE):
        if code in codes:
            return code
    return ExitCode.OK


def labelled_path(path: str | Path, label: str) -> str:
    """A report path for one of several implementations: the label goes before the
    suffix (``cer-junit.xml`` → ``cer-junit.calc_ref.xml``), or at the end."""
    target = Path(path)
    if target.suffix:
        return str(target.with_name(f"{target.stem}.{label}{target.suffix}"))
    return str(target.with_name(f"{target.name}.{label}"))


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
(cer-manifest.json), github (stdout), html (cer-report.html, needs
pip install 'cer-tui[html]'); FORMAT=PATH writes elsewhere, - is stdout.

exit codes:
  0  every case passed
  1  a case failed or errored
  2  usage error, unreadable or invalid suite, unknown format version, no cases
  3  nothing failed but some cases were skipped (incomplete, never conformant)

The implementation under test is MODULE:ATTR: a function called with the case's input
(as keyword arguments when its signature accepts them, else as one dict), a class
instantiated once per case, or an object with run_case(case). See
docs/execution-model.md for how results are judged.

Several implementations (--impl, --impl-cmd, --impl-cmd-per-case repeated and mixed, or
[tool.cer] impls) each run every case; the report is a matrix with the cases where they
observed different things (docs/matrix.md). The exit code is the worst over all runs;
reports are written once per implementation, the label before the file's suffix.
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
    run.add_argument(
        "--shard",
        type=argument_type(parse_shard),
        metavar="I/N",
        help="run only the I-th of N deterministic slices of the suite (positions I, I+N, "
        "...); the rest are skipped 'in another shard'; combine with cer merge",
    )
    out = run.add_argument_group("output")
    out.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text: a report for people (default); json: the full results",
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
        "--coverage",
        action="store_true",
        help="list constraint coverage in detail (from commonsformat.md)",
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
        "the latest run of any of them)",
    )

    hist = commands.add_parser(
        "history",
        help="list recorded runs, or one case's status over time",
        description="List the recorded runs of a suite, newest first (time, "
        "implementation, counts, verdict, flaky cases), or with --case one case's status "
        "in each run. A case is flaky when its status changed between runs of the same "
        "implementation id on the same suite content.",
    )
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
        f"recorded runs as a chart (the newest N with -n, else {KEEP_RUNS}); "
        "needs pip install 'cer-tui[html]'",
    )

    diff = commands.add_parser(
        "diff",
        help="compare two recorded runs: regressions, fixes, new and removed cases",
        description="Compare two recorded runs. RUN is an index from `cer history` "
        "(1 = newest) or at least five characters of a run id. With no RUN, the two "
        "newest runs; with one, that run and the newest. Exit 1 when there are "
        "regressions, else 0.",
    )
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
    check.add_argument(
        "suite", nargs="?", type=Path, help="the evals.toml to check (default: [tool.cer] suite)"
    )
    merge = commands.add_parser(
        "merge",
        help="combine the JSON results of shards into one run",
        description="Combine the --format json results of cer run --shard I/N runs into "
        "one run, and report it like cer run. Refuses overlapping or missing cases, "
        "different suites and different implementations (exit 2).",
    )
    merge.add_argument("files", nargs="+", type=Path, metavar="RESULTS.json")
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
    review_commands.update(add_review_commands(commands))
    return parser


review_commands: dict[str, Any] = {}


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
        help="the suite whose runs to use (default: [tool.cer] suite, else ./evals.toml)",
    )
    parser.add_argument(
        "--history",
        type=Path,
        metavar="PATH",
        help="the history database (default: .cer/history.sqlite beside the suite)",
    )


def _error(message: str) -> None:
    sys.stderr.write(f"cer: error: {message}\n")


def _warning(message: str) -> None:
    sys.stderr.write(f"cer: warning: {message}\n")


def _check_reports(args: argparse.Namespace, labels: Sequence[str] = ()) -> str | None:
    """Why the requested reports cannot all be written, or None when they can.

    ``labels`` (several implementations): each report is written once per label, to
    :func:`labelled_path`, and never to standard output."""
    requests: list[ReportRequest] = args.reports
    if labels:
        for request in requests:
            if request.to_stdout:
                return (
                    f"with several implementations each report is written to one file "
                    f"per implementation; --report {request.format} would write to "
                    f"standard output: give it a path (--report {request.format}=PATH)"
                )
    seen: dict[str, str] = {}
    if args.output is not None:
        seen[str(Path(args.output).resolve())] = "--output"
    for request in requests:
        if request.to_stdout:
            continue
        for path in [labelled_path(request.path, label) for label in labels] or [request.path]:
            key = str(Path(path).resolve())
            if key in seen:
                earlier = seen[key] if seen[key] == "--output" else f"--report {seen[key]}"
                return f"{earlier} and --report {request.format} both write {path}"
            seen[key] = request.format
    exclusive = [r.format for r in requests if r.to_stdout and not FORMATS[r.format].line_oriented]
    if len(exclusive) > 1:
        return f"reports {', '.join(exclusive)} cannot all write to standard output"
    if exclusive and args.format == "json" and args.output is None:
        return (
            f"--format json and --report {exclusive[0]} both write to standard output; "
            "send one of them to a file"
        )
    return None


def _report_paths(args: argparse.Namespace, labels: Sequence[str]) -> list[Path]:
    """Every file this run writes a report to (``--output`` and each ``--report``)."""
    paths = [Path(args.output)] if args.output is not None else []
    for request in args.reports:
        if not request.to_stdout:
            names = [labelled_path(request.path, label) for label in labels] or [request.path]
            paths.extend(Path(name) for name in names)
    return paths


def _remove_stale_reports(args: argparse.Namespace, labels: Sequence[str], suite: Path) -> None:
    """Remove the reports of an earlier run before this one starts.

    Reports are written whole when the run finishes (cer.reports.write_report); a run
    that does not finish (interrupted, stopped by SIGTERM, crashed, killed) writes
    none, and must not leave an earlier run's report in their place, which could say
    "conformant" about code that no longer is. The suite file is never removed.
    """
    try:
        suite_file = suite.resolve()
    except OSError:
        suite_file = suite
    for path in _report_paths(args, labels):
        try:
            if path.resolve() == suite_file or path.is_dir():
                continue
            path.unlink(missing_ok=True)
        except OSError as exc:
            _warning(f"cannot remove the earlier report {path}: {exc}")


def _open_history(path: Path) -> History | None:
    """The history for recording; a warning and None when it cannot be used.

    A database cer did not make is not a mere inconvenience: something may have
    tampered with it, so HistoryUntrusted goes up and stops the run."""
    try:
        return History.open(path)
    except HistoryUntrusted:
        raise
    except HistoryError as exc:
        _warning(f"history: {exc}; this run is not recorded")
        return None


def _rerun_selection(
    history: History, suite: Suite, options: RunOptions
) -> tuple[frozenset[str] | None, str]:
    """The names ``--failed`` selects: what failed in this implementation's newest
    recorded run, or, when it has none, in the suite's newest run of any implementation
    (so that a matrix run's last column never decides for another implementation)."""
    names, why = _rerun_selection_many(history, suite, [options])
    if names is not None:
        return names, why
    try:
        latest = history.latest_failed(suite_path=suite.path)
    except HistoryError as exc:
        return None, f"--failed: {exc}"
    if latest is None:
        return None, (
            f"--failed: no recorded run of {suite.path} in {history.path}; "
            "run without --failed first"
        )
    if not latest.names:
        return frozenset(), (
            f"the latest recorded run ({latest.run_id[:8]}) had no failed "
            "or errored cases: nothing to rerun"
        )
    return frozenset(latest.names), ""


def cmd_run(args: argparse.Namespace) -> int:
    try:
        resolved = resolve_run(args)
    except UsageError as exc:
        _error(str(exc))
        return ExitCode.USAGE
    try:
        suite: Suite = load_suite_cached(resolved.suite)
    except SuiteError as exc:
        _error(str(exc))
        return ExitCode.USAGE
    for warning in suite.warnings:
        sys.stderr.write(f"cer: warning: {suite.path.name}: {warning}\n")
    if not suite.cases:
        _error(f"{suite.path}: the suite declares no cases")
        return ExitCode.USAGE
    unmatched = resolved.options.selection.unmatched(suite.cases)
    if unmatched is not None:
        _error(f"{unmatched} ({suite.path})")
        return ExitCode.USAGE
    module_doc = _ModuleDoc.read(suite)
    problem = _check_reports(args, resolved.labels if resolved.several else ())
    if problem is not None:
        _error(problem)
        return ExitCode.USAGE
    _remove_stale_reports(args, resolved.labels if resolved.several else (), suite.path)
    if args.failed and args.no_history:
        _error("--failed needs the run history; it cannot be used with --no-history")
        return ExitCode.USAGE
    history = None
    if not args.no_history:
        try:
            history = _open_history(args.history or default_history_path(suite.path))
        except HistoryUntrusted as exc:
            _error(f"history: {exc}")
            return ExitCode.USAGE
    resolved = _protect_outputs(args, resolved, history)
    try:
        if resolved.several:
            return _run_matrix(args, resolved, suite, history, module_doc)
        return _run_and_report(args, resolved.options, suite, history, module_doc)
    finally:
        if history is not None:
            history.close()


def _protect_outputs(
    args: argparse.Namespace, resolved: ResolvedRun, history: History | None
) -> ResolvedRun:
    """``resolved`` with the run's report files and history database added to what the
    sandbox keeps the implementation away from."""
    outputs = [args.output] if args.output is not None else []
    outputs.extend(r.path for r in args.reports if not r.to_stdout)
    paths = [str(Path(p).resolve()) for p in outputs]
    if resolved.several:
        paths.extend(labelled_path(p, label) for p in list(paths) for label in resolved.labels)
    if history is not None:
        paths.append(str(Path(history.path).resolve()))
    protected = tuple(paths)
    implementations = tuple(replace(o, protected=protected) for o in resolved.implementations)
    return replace(resolved, options=implementations[0], implementations=implementations)


def _failed_only(
    history: History | None, suite: Suite, implementations: list[RunOptions], *, several: bool
) -> tuple[list[RunOptions], ExitCode | None]:
    """``--failed``: the implementations narrowed to what failed last time, or the exit
    code to stop with (no history, nothing recorded, or nothing to rerun)."""
    if history is None:
        _error("--failed needs the run history, which could not be opened")
        return implementations, ExitCode.USAGE
    if several:
        names, why = _rerun_selection_many(history, suite, implementations)
    else:
        names, why = _rerun_selection(history, suite, implementations[0])
    if names is None:
        _error(why)
        return implementations, ExitCode.USAGE
    if not names:
        sys.stderr.write(f"cer: {why}\n")
        return implementations, ExitCode.OK
    return [
        replace(options, selection=replace(options.selection, names=names))
        for options in implementations
    ], None


@dataclass(frozen=True)
class _ModuleDoc:
    """The module's commonsformat.md as read before the run: coverage is judged on this
    snapshot, whatever the implementation does to the file while it runs."""

    declared: ConstraintSet | None
    problem: str | None = None

    @classmethod
    def read(cls, suite: Suite) -> _ModuleDoc:
        try:
            return cls(read_module_doc(suite))
        except CoverageError as exc:
            return cls(None, str(exc))

    def coverage(self, suite: Suite, run: RunResult, *, warn: bool = True) -> Coverage | None:
        """Coverage of ``run`` on the snapshot; a warning when the file was unreadable."""
        if self.problem is not None and warn:
            _warning(f"coverage: {self.problem}")
        if self.declared is None:
            return None
        return suite_coverage(suite, run, self.declared)


def _run_and_report(
    args: argparse.Namespace,
    options: RunOptions,
    suite: Suite,
    history: History | None,
    module_doc: _ModuleDoc,
) -> int:
    """Run (``--failed``: only what failed last time), record, and write every output."""
    if args.failed:
        rerun, stop = _failed_only(history, suite, [options], several=False)
        if stop is not None:
            return stop
        (options,) = rerun
    progress = console.Progress(sys.stderr, enabled=not args.quiet and sys.stderr.isatty())
    try:
        run = run_suite(suite, options, on_event=progress, warm=EARLY_WORKERS)
    except CategoryConfigError as exc:
        _error(f"[tool.cer.categories]: {exc}")
        return ExitCode.USAGE
    except KeyboardInterrupt as exc:
        progress.clear()
        _error(f"{_interrupted(exc)}; no results were reported")
        return interrupted_code(exc)
    progress.clear()
    coverage = module_doc.coverage(suite, run)
    flaky, untrusted = _record(history, run, suite, coverage)
    context = ReportContext(run, suite, coverage, flaky, _chart_runs(args, history, suite))
    summary_line = console.summary_line(run) + "\n"
    if args.format == "json":
        text = (
            json.dumps(results_document(context), indent=2, ensure_ascii=False, allow_nan=False)
            + "\n"
        )
    else:
        colour = args.output is None and console.use_colour(sys.stdout)
        text = console.render_report(
            run,
            suite,
            colour=colour,
            verbose=args.verbose,
            coverage=coverage,
            coverage_details=args.coverage,
            flaky=flaky,
        )
    code = ExitCode.USAGE if untrusted else exit_code_for(run)
    stdout_taken = any(r.to_stdout and not FORMATS[r.format].line_oriented for r in args.reports)
    if not _write_main_report(args, text, summary_line, stdout_taken):
        return ExitCode.USAGE
    for request in args.reports:
        report = render_report(request.format, context)
        if request.to_stdout:
            sys.stdout.write(report)
            continue
        try:
            write_report(report, request.path)
        except OSError as exc:
            _error(f"cannot write the {request.format} report {request.path}: {exc}")
            code = ExitCode.USAGE
    sys.stdout.flush()
    return code


def _write_main_report(
    args: argparse.Namespace, text: str, summary_line: str, stdout_taken: bool
) -> bool:
    """Write the report (``--output`` or stdout); False when ``--output`` failed, after
    the report went to stdout instead."""
    if args.output is not None:
        try:
            write_report(text, args.output)
        except OSError as exc:
            _error(f"cannot write {args.output}: {exc}")
            sys.stdout.write(text)
            return False
        if args.format == "json" and not stdout_taken:
            sys.stdout.write(summary_line)
    elif stdout_taken:
        sys.stderr.write(text)  # standard output carries the report
    else:
        sys.stdout.write(text)
    return True


def _rerun_selection_many(
    history: History, suite: Suite, implementations: Sequence[RunOptions]
) -> tuple[frozenset[str] | None, str]:
    """``--failed`` with several implementations: the cases that failed or errored in
    the newest recorded run of any of them (matched by the implementation as given and
    the kind of its id), so that each implementation reruns the same cases. None with
    the reason when one of them has no recorded run."""
    try:
        names: set[str] = set()
        for options in implementations:
            record = history.newest_run_of(
                options.impl, implementation_stem(options), suite_path=suite.path
            )
            if record is None:
                return None, (
                    f"--failed: no recorded run of {options.impl} on {suite.path} "
                    f"in {history.path}; run without --failed first"
                )
            names.update(
                name
                for name, status, _ in history.statuses(record.run_id)
                if status in (Status.FAIL.value, Status.ERRORED.value)
            )
    except HistoryError as exc:
        return None, f"--failed: {exc}"
    if not names:
        return frozenset(), (
            "the latest recorded runs of these implementations had no "
            "failed or errored cases: nothing to rerun"
        )
    present = {case.name for case in suite.cases}
    gone = sorted(name for name in names if name not in present)
    if gone:
        _warning(f"--failed: no longer in the suite: {', '.join(gone)}")
    return frozenset(names), ""


def _run_matrix(
    args: argparse.Namespace,
    resolved: ResolvedRun,
    suite: Suite,
    history: History | None,
    module_doc: _ModuleDoc,
) -> int:
    """Run every implementation in turn, record each run on its own, and report the
    matrix (text or JSON) and one report file per implementation."""
    implementations = list(resolved.implementations)
    labels = resolved.labels
    if args.failed:
        implementations, stop = _failed_only(history, suite, implementations, several=True)
        if stop is not None:
            return stop
    runs: list[RunResult] = []
    flaky: list[frozenset[str] | None] = []
    untrusted = False
    coverages: list[Coverage | None] = []
    show_progress = not args.quiet and sys.stderr.isatty()
    for index, (options, label) in enumerate(zip(implementations, labels, strict=True)):
        progress = console.Progress(
            sys.stderr, enabled=show_progress, label=f"{label} ({index + 1}/{len(labels)})"
        )
        try:
            run = run_suite(suite, options, on_event=progress, warm=EARLY_WORKERS)
        except CategoryConfigError as exc:
            _error(f"[tool.cer.categories]: {exc}")
            return ExitCode.USAGE
        except KeyboardInterrupt as exc:
            progress.clear()
            recorded = ""
            if runs and history is not None:
                recorded = (
                    f"; {len(runs)} finished run{'s were' if len(runs) != 1 else ' was'} recorded"
                )
            _error(f"{_interrupted(exc)}; no results were reported{recorded}")
            return interrupted_code(exc)
        progress.clear()
        coverage = module_doc.coverage(suite, run, warn=not runs)
        # Recorded as soon as it finishes: an interrupt later keeps the finished runs.
        flaky_names, refused = _record(history, run, suite, coverage)
        if refused:
            untrusted, history = True, None  # the history is closed by the caller
        flaky.append(flaky_names)
        coverages.append(coverage)
        runs.append(run)
    matrix = build_matrix(suite, runs, labels)
    charted = _chart_runs(args, history, suite)
    contexts = [
        ReportContext(run, suite, coverage, flaky_names, charted)
        for run, coverage, flaky_names in zip(runs, coverages, flaky, strict=True)
    ]
    summary_line = console.matrix_summary_line(matrix, suite) + "\n"
    if args.format == "json":
        document = matrix_to_dict(matrix, suite, [results_document(c) for c in contexts])
        text = json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    else:
        to_terminal = args.output is None and sys.stdout.isatty()
        text = console.render_matrix(
            matrix,
            suite,
            colour=args.output is None and console.use_colour(sys.stdout),
            verbose=args.verbose,
            width=shutil.get_terminal_size().columns if to_terminal else console.MATRIX_WIDTH,
            coverages=coverages,
            flaky=flaky,
        )
    code = ExitCode.USAGE if untrusted else exit_code_for_runs(runs)
    if not _write_main_report(args, text, summary_line, stdout_taken=False):
        return ExitCode.USAGE
    for request in args.reports:
        for label, context in zip(labels, contexts, strict=True):
            path = labelled_path(request.path, label)
            try:
                write_report(render_report(request.format, context), path)
            except OSError as exc:
                _error(f"cannot write the {request.format} report {path}: {exc}")
                code = ExitCode.USAGE
    sys.stdout.flush()
    return code


def _record(
    history: History | None, run: RunResult, suite: Suite, coverage: Coverage | None = None
) -> tuple[frozenset[str] | None, bool]:
    """Record the run, with its coverage figures. Returns the flaky cases under its
    implementation and suite (None when history is off or failed, which only costs a
    warning) and whether the history turned out to be a database cer did not make
    (changed during the run): an error, and the run's exit code becomes 2 whatever its
    results."""
    if history is None:
        return None, False
    figures: CoverageFigures | None = None
    if coverage is not None:
        figures = coverage_figures(coverage, suite)
    try:
        history.record(run, suite, figures)
        return history.flaky_names(run.implementation_id, run.suite_hash), False
    except HistoryUntrusted as exc:
        _error(f"history: {exc}; this run is not recorded")
        return None, True
    except HistoryError as exc:
        _warning(f"history: {exc}; this run is not recorded")
        return None, False


def _chart_runs(
    args: argparse.Namespace, history: History | None, suite: Suite
) -> tuple[RunRecord, ...]:
    """The recorded runs of the suite, newest first, when a requested report charts
    them (html); empty otherwise, or with a warning when history cannot be read."""
    if history is None or not any(FORMATS[r.format].needs_history for r in args.reports):
        return ()
    try:
        return history.runs(KEEP_RUNS, suite_path=suite.path)
    except HistoryError as exc:
        _warning(f"history: {exc}; the report shows no earlier runs")
        return ()


def _history_location(args: argparse.Namespace) -> tuple[Path, Path | None]:
    """The database ``cer history``/``cer diff`` read, and the suite whose runs count."""
    suite: Path | None = args.suite
    if suite is None:
        suite = find_project_config().path_value("suite")
    if suite is None and args.history is None and Path("evals.toml").is_file():
        suite = Path("evals.toml")
    if args.history is not None:
        return args.history, suite
    if suite is None:
        raise UsageError(
            "no suite given: pass --suite PATH or --history PATH, or set suite in [tool.cer]"
        )
    return default_history_path(suite), suite


def _open_for_reading(args: argparse.Namespace) -> tuple[History, Path | None]:
    path, suite = _history_location(args)
    return History.open(path, create=False), suite


def _record_json(record: RunRecord) -> dict[str, Any]:
    s = record.summary
    return {
        "run_id": record.run_id,
        "started_at": iso_time(record.started_at_ms),
        "completed_at": iso_time(record.completed_at_ms),
        "target_module": record.target_module,
        "implementation": record.implementation,
        "implementation_id": record.implementation_id,
        "suite_path": record.suite_path,
        "suite_hash": record.suite_hash,
        "summary": {
            "cases_total": s.total,
            "cases_passed": s.passed,
            "cases_failed": s.failed,
            "cases_skipped": s.skipped,
            "cases_errored": s.errored,
            "verdict": s.verdict,
        },
        "flaky": list(record.flaky),
        "coverage": None if record.coverage is None else _figures_json(record.coverage),
    }


def _figures_json(figures: CoverageFigures) -> dict[str, Any]:
    return {
        "constraints_total": figures.total,
        "constraints_covered": figures.covered,
        "constraints_verified": figures.verified,
        "constraints_enforceable": figures.enforceable,
        "constraints_needs_repair": figures.needs_repair,
    }


HISTORY_LIMIT = 20
"""Runs ``cer history`` lists without ``-n``."""


def _history_html(args: argparse.Namespace) -> ExitCode:
    """``cer history --html PATH``: the newest recorded run of the suite as a page."""
    from cer.reports import html
    from cer.reports.recorded import recorded_context

    problem = html.missing_dependency()
    if problem is not None:
        _error(problem)
        return ExitCode.USAGE
    if args.case is not None or args.format != "text":
        _error("--html cannot be combined with --case or --format")
        return ExitCode.USAGE
    try:
        history, suite = _open_for_reading(args)
    except (UsageError, HistoryError) as exc:
        _error(str(exc))
        return ExitCode.USAGE
    with history:
        try:
            found = recorded_context(history, suite, args.limit or KEEP_RUNS)
        except HistoryError as exc:
            _error(str(exc))
            return ExitCode.USAGE
    if found is None:
        _error(f"no recorded run{f' of {suite}' if suite else ''} in {history.path}")
        return ExitCode.USAGE
    for warning in found.warnings:
        _warning(warning)
    try:
        write_report(html.render(found.context), args.html)
    except OSError as exc:
        _error(f"cannot write {args.html}: {exc}")
        return ExitCode.USAGE
    run = found.context.run
    sys.stdout.write(
        f"{args.html}: run {run.run_id[:8]} ({run.implementation_id}), "
        f"{len(found.context.history)} recorded runs charted\n"
    )
    return ExitCode.OK


def cmd_history(args: argparse.Namespace) -> ExitCode:
    if args.html is not None:
        return _history_html(args)
    try:
        path, _ = _history_location(args)
        if not path.exists():
            if args.approvals:
                sys.stdout.write(
                    json.dumps({"history": str(path), "approvals": []}) + "\n"
                    if args.format == "json"
                    else f"no approvals recorded (no history at {path})\n"
                )
            elif args.format == "json":
                sys.stdout.write(json.dumps({"history": str(path), "runs": []}) + "\n")
            else:
                sys.stdout.write(f"no runs recorded (no history at {path})\n")
            return ExitCode.OK
        history, suite = _open_for_reading(args)
    except (UsageError, HistoryError) as exc:
        _error(str(exc))
        return ExitCode.USAGE
    with history:
        try:
            document: Any
            if args.approvals:
                events = history.approvals(suite_path=suite, limit=args.limit or HISTORY_LIMIT)
                if args.format == "json":
                    document = {
                        "history": str(history.path),
                        "approvals": [
                            {
                                "case": e.case_name,
                                "constraints": list(e.constraints),
                                "approver": e.approver,
                                "approved_at": iso_time(e.approved_at_ms),
                                "text_sha256": e.text_hash,
                                "from_observation": e.from_observation,
                                "observed_from": e.observed_from,
                                "suite_path": e.suite_path,
                            }
                            for e in events
                        ],
                    }
                    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
                else:
                    text = console.render_approvals(events, str(history.path))
            elif args.case is not None:
                entries = history.case_history(
                    args.case, suite_path=suite, limit=args.limit or HISTORY_LIMIT
                )
                if args.format == "json":
                    document = {
                        "case": args.case,
                        "entries": [
                            {
                                "run_id": e.run_id,
                                "started_at": iso_time(e.started_at_ms),
                                "implementation_id": e.implementation_id,
                                "suite_hash": e.suite_hash,
                                "status": e.status,
                                "reason": e.reason,
                                "elapsed_ms": e.elapsed_ms,
                                "flaky": e.flaky,
                            }
                            for e in entries
                        ],
                    }
                    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
                else:
                    text = console.render_case_history(args.case, entries, str(history.path))
            else:
                records = history.runs(args.limit or HISTORY_LIMIT, suite_path=suite)
                if args.format == "json":
                    document = {
                        "history": str(history.path),
                        "runs": [_record_json(r) for r in records],
                    }
                    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
                else:
                    text = console.render_history(records, str(history.path))
        except HistoryError as exc:
            _error(str(exc))
            return ExitCode.USAGE
    sys.stdout.write(text)
    return ExitCode.OK


def _diff_json(diff: RunDiff, before: RunRecord, after: RunRecord) -> dict[str, Any]:
    def changes(items: Sequence[Any]) -> list[dict[str, Any]]:
        return [
            {"case_name": c.case_name, "before": c.before, "after": c.after, "reason": c.reason}
            for c in items
        ]

    return {
        "before": _record_json(before),
        "after": _record_json(after),
        "regressions": changes(diff.regressions),
        "fixes": changes(diff.fixes),
        "changed": changes(diff.changed),
        "new": changes(diff.new),
        "removed": changes(diff.removed),
        "unchanged": diff.unchanged,
    }


def cmd_diff(args: argparse.Namespace) -> ExitCode:
    try:
        history, suite = _open_for_reading(args)
    except UsageError as exc:
        _error(str(exc))
        return ExitCode.USAGE
    except HistoryError as exc:
        _error(str(exc))
        return ExitCode.USAGE
    with history:
        try:
            if args.run_a is None:
                recent = history.runs(2, suite_path=suite)
                if len(recent) < 2:
                    _error(f"cer diff needs two recorded runs; {history.path} has {len(recent)}")
                    return ExitCode.USAGE
                after, before = recent
            else:
                before = history.run(args.run_a, suite_path=suite)
                after = (
                    history.run(args.run_b, suite_path=suite)
                    if args.run_b is not None
                    else history.run("1", suite_path=suite)
                )
            diff = history.diff(before.run_id, after.run_id)
        except HistoryError as exc:
            _error(str(exc))
            return ExitCode.USAGE
    if args.format == "json":
        text = json.dumps(_diff_json(diff, before, after), indent=2, ensure_ascii=False) + "\n"
    else:
        text = console.render_diff(diff, before, after)
    sys.stdout.write(text)
    return ExitCode.FAILED if diff.regressions else ExitCode.OK


def cmd_check(args: argparse.Namespace) -> ExitCode:
    try:
        config = find_project_config()
    except UsageError as exc:
        _error(str(exc))
        return ExitCode.USAGE
    suite = args.suite if args.suite is not None else config.path_value("suite")
    if suite is None:
        _error("no suite given: pass the path to an evals.toml, or set suite in [tool.cer]")
        return ExitCode.USAGE
    categories = config.values.get("categories", {})
    if not isinstance(categories, dict):
        _error("[tool.cer.categories] must map category names to model names")
        return ExitCode.USAGE
    from cer.check import SuiteUnreadable, check_suite, render_check  # only this command

    try:
        report = check_suite(suite, {str(k): str(v) for k, v in categories.items()})
    except SuiteUnreadable as exc:
        _error(str(exc))
        return ExitCode.USAGE
    sys.stdout.write(render_check(report))
    return ExitCode.OK if report.ok else ExitCode.FAILED


def cmd_merge(args: argparse.Namespace) -> ExitCode:
    """Merge shard results, then report the whole run as ``cer run`` does."""
    try:
        run = merge_files(args.files)
    except MergeError as exc:
        _error(f"merge: {exc}")
        return ExitCode.USAGE
    try:
        suite = load_suite(run.suite_path)
    except SuiteError as exc:
        _error(f"merge: the shards' suite cannot be read: {exc}")
        return ExitCode.USAGE
    if run.suite_hash and suite.content_hash != run.suite_hash:
        _error(f"merge: {run.suite_path} changed since the shards ran (content hash differs)")
        return ExitCode.USAGE
    if args.format == "json":
        text = (
            json.dumps(serialize.run_to_dict(run), indent=2, ensure_ascii=False, allow_nan=False)
            + "\n"
        )
    else:
        colour = args.output is None and console.use_colour(sys.stdout)
        text = console.render_report(run, suite, colour=colour)
    if args.output is not None:
        try:
            write_report(text, args.output)
        except OSError as exc:
            _error(f"cannot write {args.output}: {exc}")
            return ExitCode.USAGE
        sys.stdout.write(console.summary_line(run) + "\n")
    else:
        sys.stdout.write(text)
    return exit_code_for(run)


def _forgiving_streams() -> None:
    """Let stdout and stderr write any text: a character UTF-8 cannot hold (a lone
    surrogate that reached a message) becomes its escape instead of a traceback."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    """The ``cer`` program. Called without ``argv`` (as the program itself), it also
    adopts the orphans of the processes it starts (cer.procs) and stops cleanly on
    SIGTERM and SIGHUP as on Ctrl-C."""
    _forgiving_streams()
    if argv is None:
        procs.adopt_orphans()
        _stop_on_signals()
    try:
        return _main(argv)
    except KeyboardInterrupt as exc:
        _error(f"{_interrupted(exc)}")
        return interrupted_code(exc)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return ExitCode.USAGE
    commands = {
        **review_commands,
        "run": cmd_run,
        "history": cmd_history,
        "diff": cmd_diff,
        "check": cmd_check,
        "merge": cmd_merge,
    }
    if args.command in commands:
        return int(commands[args.command](args))
    parser.error(f"unknown command {args.command}")
    return ExitCode.USAGE  # pragma: no cover
