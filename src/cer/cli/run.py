"""``cer run``: its arguments and its handler. One suite against one implementation or
several side by side: run, record, judge against the baseline and the module's
constraints, and write every output (the text or JSON report, the JSON lines, each
``--report``).

Only this command imports this module (:mod:`cer.cli.main`), so what a run needs is
imported at the top; what only some runs need (several implementations, a report
format, the matrix) is imported where it is used.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from cer.categories import CategoryConfigError
from cer.cli import workflow_commands
from cer.cli.exits import (
    ExitCode,
    exit_code_for_runs,
    interrupted_code,
    interruption,
    print_error,
    print_warning,
)
from cer.cli.verdicts import ModuleDoc, Verdicts, figures_of
from cer.config import (
    ResolvedRun,
    UsageError,
    add_run_arguments,
    argument_type,
    history_max_bytes,
    resolve_run,
)
from cer.engine.limits import LimitsChanged
from cer.engine.options import RunOptions, parse_max_fail, parse_shard
from cer.engine.runner import run_suite
from cer.events import RunEvent
from cer.history.database import KEEP_RUNS, History, default_history_path
from cer.history.gaps import gap_marker, has_gap, mark_gap
from cer.history.recall import failed_last_time, record_run
from cer.history.records import ApprovalEvent, HistoryError, HistoryUntrusted, RunRecord
from cer.model import RunResult, Suite
from cer.reports import (
    FORMATS,
    STDOUT,
    ReportContext,
    ReportRequest,
    parse_report_spec,
    render_report,
    results_document,
    write_report,
)
from cer.reports import text as text_report
from cer.results import jsonlines
from cer.results.conformance import UNREADABLE, Conformance
from cer.suite.cache import load_suite_cached
from cer.suite.loader import SuiteError
from cer.text.safetext import for_json

if TYPE_CHECKING:
    from cer.constraints import Coverage, CoverageFigures
    from cer.engine.python.workerproc import WarmWorkers
    from cer.results.matrix import AgreeOn, GroupBy, Matrix

EARLY_WORKERS: WarmWorkers | None = None
"""A worker started before this module was imported (:mod:`cer.cli.entry`), which the
first run takes if it is still fresh."""


EPILOG_TEMPLATE = """\
examples:
  cer run examples/calc/evals.toml --impl calc_ref:evaluate
  cer run evals.toml --impl mypkg.parser:parse --timeout 2 --case 'tabs-*'
  cer run --format json --output results.json     # suite and impl from [tool.cer]
  cer run evals.toml --impl calc:evaluate --failed  # rerun what failed last time
  cer run evals.toml --impl calc:evaluate --report junit --report github
  cer run evals.toml --impl calc_ref:evaluate --impl-cmd 'node calc.mjs'  # a matrix

Every run is recorded in .cer/history.sqlite beside the suite (--history PATH moves
it, --no-history skips it); see `cer history` and `cer diff`.

{reports}

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


def reports_paragraph() -> str:
    """The epilog's paragraph on ``--report``, read from the formats' table
    (:data:`cer.reports.FORMATS`), so that it names every format there is."""
    import textwrap  # only for the help

    listed = ", ".join(
        f"{name} ({'stdout' if spec.default_path == STDOUT else spec.default_path})"
        for name, spec in FORMATS.items()
    )
    return textwrap.fill(
        f"Reports: {listed}; FORMAT=PATH writes elsewhere, - is stdout.",
        width=88,
        break_on_hyphens=False,
    )


def epilog() -> str:
    """``cer run --help``'s text after the options."""
    return EPILOG_TEMPLATE.format(reports=reports_paragraph())


_EPILOG = "(cer run's epilog)"
"""What the parser holds as its epilog until its help is shown: :class:`_RunHelp`
makes the text then, so that a run does not."""


class _RunHelp(argparse.RawDescriptionHelpFormatter):
    """``cer run``'s help formatter: the epilog (:func:`epilog`) is made only when the
    help is formatted, not each time the parser is built."""

    def add_text(self, text: str | None) -> None:
        super().add_text(epilog() if text is _EPILOG else text)


def add_commands(commands: Any) -> None:
    """Add ``cer run``, its arguments and its handler, to the subcommands."""
    run = commands.add_parser(
        "run",
        help="run a suite against an implementation and report every case",
        description="Run every case of an eval suite against an implementation under test "
        "and report, for each, pass, fail, errored or skipped, with the reason.",
        epilog=_EPILOG,
        formatter_class=_RunHelp,
    )
    run.set_defaults(handler=cmd_run)
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


def _agree_on(text: str) -> str | tuple[str, ...]:
    """``--agree-on``, parsed by the matrix (imported only when it is given)."""
    from cer.results.matrix import parse_agree_on

    return parse_agree_on(text)


@dataclass(frozen=True)
class Output:
    """What ``cer run``'s output arguments ask for (``--format``, ``--output``, ``-v``,
    ``-q``, ``--report``, ``--agree-on``, ``--group-by``, ``--coverage``), read once
    from the command line and handed to everything that reports."""

    format: Literal["text", "json", "jsonl"]
    path: Path | None
    """``--output``: the file the report goes to instead of standard output."""
    verbose: bool
    quiet: bool
    reports: tuple[ReportRequest, ...]
    agree_on: AgreeOn | None
    group_by: GroupBy | None
    coverage_details: bool

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Output:
        return cls(
            format=args.format,
            path=args.output,
            verbose=args.verbose,
            quiet=args.quiet,
            reports=tuple(args.reports),
            agree_on=args.agree_on,
            group_by=args.group_by,
            coverage_details=args.coverage,
        )


def labelled_path(path: str | Path, label: str) -> str:
    """A report path for one of several implementations: the label goes before the
    suffix (``cer-junit.xml`` → ``cer-junit.calc_ref.xml``), or at the end."""
    target = Path(path)
    if target.suffix:
        return str(target.with_name(f"{target.stem}.{label}{target.suffix}"))
    return str(target.with_name(f"{target.name}.{label}"))


MATRIX_REPORTS = ("html", "markdown")
"""Report formats that, for several implementations, write one matrix page at the path
given instead of one file per implementation (docs/matrix.md)."""


def report_targets(request: ReportRequest, labels: Sequence[str]) -> list[str]:
    """Where ``request`` writes: one file per label for several implementations (the
    label before the suffix), but one matrix page at the path given for
    :data:`MATRIX_REPORTS`."""
    if not labels or request.format in MATRIX_REPORTS:
        return [request.path]
    return [labelled_path(request.path, label) for label in labels]


def _check_reports(output: Output, labels: Sequence[str] = ()) -> str | None:
    """Why the requested reports cannot all be written, or None when they can.

    ``labels`` (several implementations): each report is written once per label, to
    :func:`labelled_path`, and never to standard output."""
    requests = output.reports
    if labels:
        for request in requests:
            if request.to_stdout:
                return (
                    f"with several implementations each report is written to one file "
                    f"per implementation; --report {request.format} would write to "
                    f"standard output: give it a path (--report {request.format}=PATH)"
                )
    seen: dict[str, str] = {}
    if output.path is not None:
        seen[str(Path(output.path).resolve())] = "--output"
    for request in requests:
        if request.to_stdout:
            continue
        for path in report_targets(request, labels):
            key = str(Path(path).resolve())
            if key in seen:
                earlier = seen[key] if seen[key] == "--output" else f"--report {seen[key]}"
                return f"{earlier} and --report {request.format} both write {path}"
            seen[key] = request.format
    exclusive = [r.format for r in requests if r.to_stdout and not FORMATS[r.format].line_oriented]
    if len(exclusive) > 1:
        return f"reports {', '.join(exclusive)} cannot all write to standard output"
    if labels and output.format == "jsonl":
        return (
            "--format jsonl streams the results of one implementation; with several, "
            "use --format json, or one cer run per implementation"
        )
    if exclusive and output.format in ("json", "jsonl") and output.path is None:
        return (
            f"--format {output.format} and --report {exclusive[0]} both write to standard output; "
            "send one of them to a file"
        )
    return None


def _report_paths(output: Output, labels: Sequence[str]) -> list[Path]:
    """Every file this run writes a report to (``--output`` and each ``--report``)."""
    paths = [Path(output.path)] if output.path is not None else []
    for request in output.reports:
        if not request.to_stdout:
            paths.extend(Path(name) for name in report_targets(request, labels))
    return paths


def _remove_stale_reports(output: Output, labels: Sequence[str], suite: Path) -> None:
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
    for path in _report_paths(output, labels):
        try:
            if path.resolve() == suite_file or path.is_dir():
                continue
            path.unlink(missing_ok=True)
        except OSError as exc:
            print_warning(f"cannot remove the earlier report {path}: {exc}")


def _open_history(path: Path, max_bytes: int | None = None) -> History | None:
    """The history for recording; a warning and None when it cannot be used.

    A database cer did not make is not a mere inconvenience: something may have
    tampered with it, so HistoryUntrusted goes up and stops the run."""
    try:
        return History.open(path, max_bytes=max_bytes)
    except HistoryUntrusted:
        raise
    except HistoryError as exc:
        print_warning(f"history: {exc}; this run is not recorded")
        return None


def _rerun_selection(
    history: History, suite: Suite, options: RunOptions
) -> tuple[frozenset[str] | None, str]:
    """The names ``--failed`` selects: what failed in this implementation's newest
    recorded run, or, when it has none, in the suite's newest run of any implementation
    (so that a matrix run's last column never decides for another implementation).
    Empty, with the reason, when the whole suite is to run; None on a history error."""
    names, why = _rerun_selection_many(history, suite, [options])
    if names:
        return names, why
    if names is not None and not why.startswith("--failed: no recorded run"):
        return names, why
    try:
        latest = history.latest_failed(suite_path=suite.path)
    except HistoryError as exc:
        return None, f"--failed: {exc}"
    if latest is None:
        return frozenset(), (
            f"--failed: no recorded run of {suite.path} in {history.path}: running the whole suite"
        )
    if not latest.names:
        return frozenset(), (
            f"--failed: the latest recorded run ({latest.run_id[:8]}) had no failed "
            "or errored cases: running the whole suite"
        )
    return frozenset(latest.names), ""


def cmd_run(args: argparse.Namespace) -> int:
    output = Output.from_args(args)
    try:
        resolved = resolve_run(args)
        max_bytes = history_max_bytes(resolved.config)
    except UsageError as exc:
        print_error(str(exc))
        return ExitCode.USAGE
    try:
        suite: Suite = load_suite_cached(resolved.suite)
    except SuiteError as exc:
        print_error(str(exc))
        return ExitCode.USAGE
    for warning in suite.warnings:
        sys.stderr.write(f"cer: warning: {suite.path.name}: {warning}\n")
    if not suite.cases:
        print_error(f"{suite.path}: the suite declares no cases")
        return ExitCode.USAGE
    unmatched = resolved.options.selection.unmatched(suite.cases)
    if unmatched is not None:
        print_error(f"{unmatched} ({suite.path})")
        return ExitCode.USAGE
    module_doc = ModuleDoc.read(suite)
    verdicts = Verdicts.prepare(resolved, suite, module_doc)
    if verdicts is None:
        return ExitCode.USAGE
    resolved = verdicts.onto(resolved)
    problem = _check_reports(output, resolved.labels if resolved.several else ())
    if problem is not None:
        print_error(problem)
        return ExitCode.USAGE
    _remove_stale_reports(output, resolved.labels if resolved.several else (), suite.path)
    if args.failed and args.no_history:
        print_error("--failed needs the run history; it cannot be used with --no-history")
        return ExitCode.USAGE
    history = None
    if not args.no_history:
        try:
            history_path = Path(args.history or default_history_path(suite.path))
            history = _open_history(history_path, max_bytes)
        except HistoryUntrusted as exc:
            print_error(f"history: {exc}")
            return ExitCode.USAGE
        if history is None:
            mark_gap(history_path, suite.path)  # this run goes unrecorded
        if history is not None:
            history.warm_up()  # its first disk flushes overlap the run
    resolved = _protect_outputs(output, resolved, history, suite)
    try:
        return _run(
            output, resolved, suite, history, module_doc, verdicts, rerun_failed=args.failed
        )
    finally:
        if history is not None:
            history.close()


def _protect_outputs(
    output: Output, resolved: ResolvedRun, history: History | None, suite: Suite
) -> ResolvedRun:
    """``resolved`` with the run's report files, history database and its mark of an
    unrecorded run added to what the sandbox keeps the implementation away from."""
    outputs: list[str | Path] = [output.path] if output.path is not None else []
    outputs.extend(r.path for r in output.reports if not r.to_stdout)
    paths = [str(Path(p).resolve()) for p in outputs]
    if resolved.several:
        paths.extend(labelled_path(p, label) for p in list(paths) for label in resolved.labels)
    if history is not None:
        paths.append(str(Path(history.path).resolve()))
        paths.append(str(gap_marker(Path(history.path).resolve(), suite.path)))
    protected = tuple(paths)
    implementations = tuple(replace(o, protected=protected) for o in resolved.implementations)
    return replace(resolved, options=implementations[0], implementations=implementations)


def _failed_only(
    history: History | None, suite: Suite, implementations: list[RunOptions], *, several: bool
) -> tuple[list[RunOptions], ExitCode | None]:
    """``--failed``: the implementations narrowed to what failed last time, or the exit
    code to stop with (no history, or a history error). When nothing is recorded as
    failed (no recorded run, a green one, or a run since that could not be recorded)
    the whole suite runs, as pytest's ``--last-failed`` does: an exit code that
    vouched for cases it did not run would claim more than ran."""
    if history is None:
        print_error("--failed needs the run history, which could not be opened")
        return implementations, ExitCode.USAGE
    if has_gap(history.path, suite.path):
        sys.stderr.write(
            f"cer: --failed: a run of {suite.path} since the latest recorded one could "
            f"not be recorded in {history.path}: running the whole suite\n"
        )
        return implementations, None
    if several:
        names, why = _rerun_selection_many(history, suite, implementations)
    else:
        names, why = _rerun_selection(history, suite, implementations[0])
    if names is None:
        print_error(why)
        return implementations, ExitCode.USAGE
    if not names:
        sys.stderr.write(f"cer: {why}\n")
        return implementations, None
    chosen_by = "--failed: the cases that failed or errored in the latest recorded run"
    return [
        replace(options, selection=replace(options.selection, names=names, chosen_by=chosen_by))
        for options in implementations
    ], None


def _run(
    output: Output,
    resolved: ResolvedRun,
    suite: Suite,
    history: History | None,
    module_doc: ModuleDoc,
    verdicts: Verdicts | None = None,
    *,
    rerun_failed: bool = False,
) -> int:
    """Run the implementations (``--failed``: only what failed last time), one alone or
    several side by side, record each run as it finishes, and write every output: for
    one its report, for several the matrix (text or JSON), then the report files (one
    per implementation, or one matrix page)."""
    several = resolved.several
    implementations = list(resolved.implementations)
    if rerun_failed:
        implementations, stop = _failed_only(history, suite, implementations, several=several)
        if stop is not None:
            return stop
    verdicts = verdicts or Verdicts()
    ran = _run_columns(
        output, suite, implementations, resolved.labels, several, history, module_doc, verdicts
    )
    if not isinstance(ran, _Ran):
        return ran
    labels = resolved.labels if several else ()
    runs = [done.run for done in ran.columns]
    concluded = [done.conformance for done in ran.columns]
    contexts = _contexts(output, ran.history, suite, ran.columns)
    matrix_page: Callable[[str], str] | None = None
    if several:
        summary_line, text, matrix_page = _matrix_outputs(
            output, suite, resolved.labels, ran.columns, contexts
        )
    else:
        (done,), (context,) = ran.columns, contexts
        summary_line = text_report.summary_line(done.run, conformance=done.conformance) + "\n"
        if ran.stream:
            ran.stream.finish(results_document(context))
            text = ""
        elif output.format == "json":
            text = render_report("json", context)
        else:
            text = text_report.render_report(
                done.run,
                suite,
                colour=output.path is None and text_report.use_colour(sys.stdout),
                verbose=output.verbose,
                coverage=done.coverage,
                coverage_details=output.coverage_details,
                flaky=done.flaky,
                conformance=done.conformance,
            )
    code = (
        ExitCode.USAGE
        if ran.untrusted
        else exit_code_for_runs(runs, concluded, require_coverage=verdicts.require_coverage)
    )
    if not several:  # said for one implementation only, as it always was
        shortfall = concluded[0].shortfall()
        if shortfall is not None and verdicts.require_coverage:
            print_error(f"--require-coverage: {shortfall}")
    # With several implementations no report may go to standard output (_check_reports).
    stdout_taken = any(r.to_stdout and not FORMATS[r.format].line_oriented for r in output.reports)
    if not _write_main_report(output, text, summary_line, stdout_taken):
        return ExitCode.USAGE
    if not _write_reports(output, contexts, labels, matrix_page):
        code = ExitCode.USAGE
    sys.stdout.flush()
    return code


@dataclass(frozen=True)
class _Ran:
    """The finished runs of :func:`_run_columns`, in the order of the implementations."""

    columns: list[_Concluded]
    history: History | None
    """What the reports read the recorded runs and approvals from."""
    untrusted: bool
    """Whether the history turned out to be a database cer did not make."""
    stream: _LineStream | None
    """One implementation's ``--format jsonl`` lines, waiting for their trailer."""


def _run_columns(
    output: Output,
    suite: Suite,
    implementations: Sequence[RunOptions],
    labels: Sequence[str],
    several: bool,
    history: History | None,
    module_doc: ModuleDoc,
    verdicts: Verdicts,
) -> _Ran | int:
    """Run every implementation, a column each, and judge and record each run as soon
    as it finishes (an interrupt later keeps the finished runs); or the exit code of a
    run that ended early, after saying why.

    One implementation runs alone (:func:`~cer.engine.runner.run_suite`, with the
    one-line progress and, for ``--format jsonl``, its lines streamed as the run goes);
    several side by side within the ``-j`` budget (:mod:`cer.engine.side_by_side`),
    each under its label on one progress line."""
    by_index: list[_Concluded | None] = [None] * len(labels)
    untrusted = False
    recording = history
    progress: text_report.Progress | text_report.SideBySideProgress

    def finished(index: int, run: RunResult) -> None:
        nonlocal untrusted, recording
        progress.clear()
        concluded = _conclude(
            run,
            suite,
            module_doc,
            verdicts,
            labels[index],
            recording,
            warn=not any(by_index),
            others=labels if several else (),
        )
        if concluded.untrusted:
            untrusted, recording = True, None  # the history is closed by the caller
        by_index[index] = concluded

    stream: _LineStream | None = None
    if several:
        from cer.engine.side_by_side import run_side_by_side  # only several implementations

        progress = text_report.SideBySideProgress(
            sys.stderr, not output.quiet and sys.stderr.isatty(), labels
        )
        try:
            run_side_by_side(
                suite, implementations, on_event=progress, on_finished=finished, warm=EARLY_WORKERS
            )
        except (CategoryConfigError, LimitsChanged, KeyboardInterrupt) as exc:
            done = sum(run is not None for run in by_index)
            recorded = ""
            if done and recording is not None:
                recorded = f"; {done} finished run{'s were' if done != 1 else ' was'} recorded"
            return _ended_early(exc, progress, recorded)
        progress.clear()
    else:
        progress = text_report.Progress(
            sys.stderr, enabled=not output.quiet and sys.stderr.isatty()
        )
        opened = _LineStream.open(output, suite) if output.format == "jsonl" else None
        if opened is False:
            return ExitCode.USAGE
        stream = opened
        try:
            run = run_suite(
                suite,
                implementations[0],
                on_event=stream.on(progress) if stream else progress,
                warm=EARLY_WORKERS,
            )
        except (CategoryConfigError, LimitsChanged, KeyboardInterrupt) as exc:
            kept = ""
            if stream:
                stream.close_unfinished()
                kept = f"; {stream.kept()}"
            return _ended_early(exc, progress, kept)
        except BaseException:
            if stream:
                stream.close_unfinished()
            raise
        finished(0, run)
    columns = [done for done in by_index if done is not None]
    # One implementation's reports read the history even when it turned out untrusted
    # (its reading says so); a matrix's stop reading it there, as they stop recording.
    return _Ran(columns, recording if several else history, untrusted, stream)


def _matrix_outputs(
    output: Output,
    suite: Suite,
    labels: Sequence[str],
    columns: Sequence[_Concluded],
    contexts: Sequence[ReportContext],
) -> tuple[str, str, Callable[[str], str]]:
    """Several implementations' summary line, their matrix as the main report (text or
    JSON), and what renders the one matrix page of :data:`MATRIX_REPORTS`."""
    from cer.results.matrix import AGREE_ON_EXPECTED, Known, build_matrix, matrix_to_dict

    runs = [done.run for done in columns]
    concluded = [done.conformance for done in columns]
    agree_on = output.agree_on or AGREE_ON_EXPECTED
    known = [
        None
        if conformance.baseline is None
        else {k.case_name: Known(k.entry.reason, k.entry.link) for k in conformance.baseline.known}
        for conformance in concluded
    ]
    matrix = build_matrix(suite, runs, labels, agree_on=agree_on, known=known)
    words = [conformance.word for conformance in concluded]
    summary_line = text_report.matrix_summary_line(matrix, suite, words) + "\n"
    if output.format == "json":
        document = matrix_to_dict(matrix, suite, [results_document(c) for c in contexts])
        text = for_json(json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False)) + "\n"
    else:
        to_terminal = output.path is None and sys.stdout.isatty()
        text = text_report.render_matrix(
            matrix,
            suite,
            colour=output.path is None and text_report.use_colour(sys.stdout),
            verbose=output.verbose,
            width=shutil.get_terminal_size().columns if to_terminal else text_report.MATRIX_WIDTH,
            coverages=[done.coverage for done in columns],
            flaky=[done.flaky for done in columns],
            group_by=output.group_by,
            baselines=[None if c.baseline is None else c.baseline.phrase() for c in concluded],
            verdict_words=words,
        )
    statements = [conformance.statement for conformance in concluded]

    def matrix_page(format_name: str) -> str:
        return _matrix_report(format_name, matrix, suite, statements)

    return summary_line, text, matrix_page


def _ended_early(
    exc: CategoryConfigError | LimitsChanged | KeyboardInterrupt,
    progress: text_report.Progress | text_report.SideBySideProgress,
    kept: str,
) -> int:
    """Say why a run ended before its results could be reported, and its exit code:
    a bad categories table or a limit cer could not set back is a usage error (2), an
    interrupt its own code; ``kept`` says what was kept all the same."""
    progress.clear()
    if isinstance(exc, CategoryConfigError):
        print_error(f"[tool.cer.categories]: {exc}")
        return ExitCode.USAGE
    if isinstance(exc, LimitsChanged):
        print_error(f"{exc}; no results were reported{kept}")
        return ExitCode.USAGE
    print_error(f"{interruption(exc)}; no results were reported{kept}")
    return interrupted_code(exc)


class _LineStream:
    """``--format jsonl``: the run's lines (:mod:`cer.results.jsonlines`) written to
    ``--output`` or stdout as the run goes, each line on its way at once."""

    def __init__(
        self, write: Callable[[bytes], None], close: Callable[[], None], suite: Suite, where: str
    ) -> None:
        self.writer = jsonlines.LineWriter(write, suite)
        self._close: Callable[[], None] | None = close
        self.where = where

    @classmethod
    def open(cls, output: Output, suite: Suite) -> _LineStream | Literal[False]:
        """The stream, or False (after saying why) when ``--output`` cannot be opened."""
        if output.path is None:
            out = sys.stdout.buffer
            gone = False

            def to_stdout(data: bytes) -> None:
                nonlocal gone
                if gone:
                    return
                try:
                    out.write(data)
                    out.flush()
                except BrokenPipeError:  # the reader went (| head): the run goes on
                    gone = True

            return cls(to_stdout, sys.stdout.flush, suite, "standard output")
        try:
            write, close = jsonlines.file_writer(output.path)
        except OSError as exc:
            print_error(f"cannot write {output.path}: {exc.strerror or exc}")
            return False
        return cls(write, close, suite, str(output.path))

    def on(self, progress: Callable[[RunEvent], None]) -> Callable[[RunEvent], None]:
        """An event handler that writes the lines, then shows the progress."""

        def handle(event: RunEvent) -> None:
            self.writer(event)
            progress(event)

        return handle

    def kept(self) -> str:
        done = self.writer.written
        plural = "s" if done != 1 else ""
        return f"{self.where} keeps the {done} result{plural} finished, without a trailer"

    def finish(self, document: dict[str, Any]) -> None:
        self.writer.finish(document)
        self.close_unfinished()

    def close_unfinished(self) -> None:
        """Close the output (once); a run that did not finish leaves it without a trailer."""
        close, self._close = self._close, None
        if close is not None:
            self.writer.flush()
            close()


def _write_main_report(output: Output, text: str, summary_line: str, stdout_taken: bool) -> bool:
    """Write the report (``--output`` or stdout); False when ``--output`` failed, after
    the report went to stdout instead."""
    if output.format == "jsonl":  # the lines went out as the run went
        if output.path is not None and not stdout_taken:
            sys.stdout.write(summary_line)
        return True
    if output.path is not None:
        try:
            write_report(text, output.path)
        except OSError as exc:
            print_error(f"cannot write {output.path}: {exc}")
            sys.stdout.write(text)
            return False
        if output.format == "json" and not stdout_taken:
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
    the reason (the whole suite runs) when one of them has no recorded run or
    none failed anything."""
    try:
        last = failed_last_time(history, suite.path, implementations)
    except HistoryError as exc:
        return None, f"--failed: {exc}"
    if last.missing is not None:
        return frozenset(), (
            f"--failed: no recorded run of {last.missing.impl} on {suite.path} "
            f"in {history.path}: running the whole suite"
        )
    names = set(last.names)
    if not names:
        return frozenset(), (
            "--failed: the latest recorded runs of these implementations had no "
            "failed or errored cases: running the whole suite"
        )
    present = {case.name for case in suite.cases}
    gone = sorted(name for name in names if name not in present)
    if gone:
        print_warning(f"--failed: no longer in the suite: {', '.join(gone)}")
    return frozenset(names), ""


@dataclass(frozen=True)
class _Concluded:
    """One implementation's finished run as every output reads it: judged against the
    module's constraints and the baseline, and recorded."""

    run: RunResult
    coverage: Coverage | None
    conformance: Conformance
    flaky: frozenset[str] | None
    """The cases the history marks flaky (None without a history)."""
    untrusted: bool
    """Whether the history turned out to be a database cer did not make."""


def _conclude(
    run: RunResult,
    suite: Suite,
    module_doc: ModuleDoc,
    verdicts: Verdicts,
    label: str,
    history: History | None,
    *,
    warn: bool = True,
    others: Sequence[str] = (),
) -> _Concluded:
    """Judge a finished run's coverage and verdict and record it, the same for one
    implementation or each of several (``warn``: say once that the module's document
    could not be read; ``others``: the labels of the implementations run beside it)."""
    coverage = module_doc.coverage(suite, run, warn=warn)
    figures = figures_of(coverage, suite)
    # An unreadable commonsformat.md covers nothing: the verdict is never conformant.
    judged = UNREADABLE if coverage is None and module_doc.problem is not None else coverage
    conformance = verdicts.conformance(suite, run, judged, figures, label, others)
    flaky, untrusted = _record(history, run, suite, figures, conformance)
    return _Concluded(run, coverage, conformance, flaky, untrusted)


def _contexts(
    output: Output, history: History | None, suite: Suite, runs: Sequence[_Concluded]
) -> list[ReportContext]:
    """What each implementation's reports are written from, in the order of ``runs``."""
    charted = _chart_runs(output, history, suite)
    approvals = _approvals(output, history, suite)
    return [
        ReportContext(
            done.run,
            suite,
            done.coverage,
            done.flaky,
            charted,
            approvals,
            conformance=done.conformance,
        )
        for done in runs
    ]


def _write_reports(
    output: Output,
    contexts: Sequence[ReportContext],
    labels: Sequence[str],
    matrix_page: Callable[[str], str] | None = None,
) -> bool:
    """Write every ``--report``: one per implementation (``labels``, several: each to
    its labelled path), or with several the one matrix page of
    :data:`MATRIX_REPORTS`; False when one could not be written, after saying so."""
    written = True
    for request in output.reports:
        if matrix_page is not None and request.format in MATRIX_REPORTS:
            pages = [(request.path, matrix_page(request.format))]
        else:
            pages = [
                (path, render_report(request.format, context))
                for path, context in zip(report_targets(request, labels), contexts, strict=True)
            ]
        for path, report in pages:
            if request.to_stdout:
                sys.stdout.flush()
                with (
                    workflow_commands.PAUSE.own_commands()
                    if request.format == "github"
                    else nullcontext()
                ):
                    sys.stdout.write(report)
                    sys.stdout.flush()
                continue
            try:
                write_report(report, path)
            except OSError as exc:
                print_error(f"cannot write the {request.format} report {path}: {exc}")
                written = False
    return written


def _matrix_report(format_name: str, matrix: Matrix, suite: Suite, statements: list[str]) -> str:
    """The one page of a matrix in ``format_name`` (:data:`MATRIX_REPORTS`)."""
    if format_name == "html":
        from cer.reports import matrix_html

        return matrix_html.render(matrix, suite, statements)
    from cer.reports import matrix_markdown

    return matrix_markdown.render(matrix, suite, statements)


def _record(
    history: History | None,
    run: RunResult,
    suite: Suite,
    figures: CoverageFigures | None = None,
    conformance: Conformance | None = None,
) -> tuple[frozenset[str] | None, bool]:
    """Record the run, with its coverage figures and its verdict sentence. Returns the
    flaky cases under its implementation and suite (None when history is off or failed,
    which only costs a warning) and whether the history turned out to be a database cer
    did not make (changed during the run): an error, and the run's exit code becomes 2
    whatever its results."""
    if history is None:
        return None, False
    try:
        return record_run(history, run, suite, figures, conformance), False
    except HistoryUntrusted as exc:
        print_error(f"history: {exc}; this run is not recorded")
        return None, True
    except HistoryError as exc:
        print_warning(f"history: {exc}; this run is not recorded")
        return None, False


def _approvals(
    output: Output, history: History | None, suite: Suite
) -> tuple[ApprovalEvent, ...] | None:
    """The suite's approval records (who approved which case), when a manifest is
    written; None without history, or with a warning when it cannot be read."""
    if history is None or not any(r.format == "manifest" for r in output.reports):
        return None
    try:
        return history.approvals(suite_path=suite.path)
    except HistoryError as exc:
        print_warning(f"history: {exc}; the manifest confirms no approval")
        return None


def _chart_runs(output: Output, history: History | None, suite: Suite) -> tuple[RunRecord, ...]:
    """The recorded runs of the suite, newest first, when a requested report charts
    them (html); empty otherwise, or with a warning when history cannot be read."""
    if history is None or not any(FORMATS[r.format].needs_history for r in output.reports):
        return ()
    try:
        return history.runs(KEEP_RUNS, suite_path=suite.path)
    except HistoryError as exc:
        print_warning(f"history: {exc}; the report shows no earlier runs")
        return ()
