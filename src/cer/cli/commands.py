"""The headless command line: ``cer run`` and friends, for CI and scripts.

stdout carries results, stderr diagnostics. Exit codes live in :class:`ExitCode`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from cer import process_tree
from cer.categories import CategoryConfigError
from cer.cli.exits import (
    ExitCode,
    Terminated,
    exit_code_for,
    exit_code_for_runs,
    interrupted_code,
    interruption,
    print_error,
    print_warning,
)
from cer.cli.parser import (
    build_parser,
)
from cer.cli.workflow_commands import CommandPause
from cer.config import (
    ResolvedRun,
    UsageError,
    find_project_config,
    history_max_bytes,
    resolve_run,
    resolve_suite,
)
from cer.constraints import (
    ConstraintSet,
    Coverage,
    CoverageError,
    CoverageFigures,
    read_module_doc,
    suite_coverage,
)
from cer.engine.limits import LimitsChanged
from cer.engine.options import RunOptions
from cer.engine.python.workerproc import WarmWorkers
from cer.engine.runner import run_suite
from cer.events import RunEvent
from cer.history.database import KEEP_RUNS, History, default_history_path
from cer.history.gaps import gap_marker, has_gap, mark_gap
from cer.history.recall import failed_last_time, record_run
from cer.history.records import ApprovalEvent, HistoryError, HistoryUntrusted, RunRecord
from cer.model import RunResult, Suite
from cer.reports import (
    FORMATS,
    ReportContext,
    ReportRequest,
    render_report,
    results_document,
    write_report,
)
from cer.reports import text as text_report
from cer.results import jsonlines
from cer.results.baseline import (
    Baseline,
    BaselineError,
    check_run,
    load_baseline,
    unmatched_entries,
)
from cer.results.conformance import UNREADABLE, Conformance, CoverageCount, conformance_of
from cer.suite.cache import load_suite_cached
from cer.suite.loader import SuiteError, load_suite
from cer.text.safetext import for_json

EARLY_WORKERS: WarmWorkers | None = None

COMMANDS = CommandPause(sys.stdout, active=False)
"""Pauses GitHub Actions' workflow commands while ``cer``'s output may hold the
implementation's text (:mod:`cer.cli.workflow_commands`); set by :func:`main`."""
"""A worker started before this module was imported (:mod:`cer.cli.entry`), which the
first run takes if it is still fresh."""

if TYPE_CHECKING:
    from cer.results.matrix import AgreeOn, GroupBy, Matrix


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
    module_doc = _ModuleDoc.read(suite)
    verdicts = _Verdicts.prepare(resolved, suite, module_doc)
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
        if resolved.several:
            return _run_matrix(
                output, resolved, suite, history, module_doc, verdicts, rerun_failed=args.failed
            )
        return _run_and_report(
            output,
            resolved.options,
            suite,
            history,
            module_doc,
            verdicts,
            resolved.labels[0],
            rerun_failed=args.failed,
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
            print_warning(f"coverage: {self.problem}")
        if self.declared is None:
            return None
        return suite_coverage(suite, run, self.declared)


@dataclass(frozen=True)
class _Verdicts:
    """What the verdict of each run is held against besides its cases: the baseline
    (read and checked against the suite before anything runs) and whether coverage is
    required."""

    baseline: Baseline | None = None
    require_coverage: bool = False

    @classmethod
    def prepare(
        cls, resolved: ResolvedRun, suite: Suite, module_doc: _ModuleDoc
    ) -> _Verdicts | None:
        """Read the baseline; None after printing why the run cannot start (a bad
        baseline, an entry naming no case, coverage required without a module document)."""
        return cls.load(resolved.baseline, resolved.require_coverage, suite, module_doc)

    @classmethod
    def load(
        cls,
        path: str | Path | None,
        require_coverage: bool,
        suite: Suite,
        module_doc: _ModuleDoc,
    ) -> _Verdicts | None:
        """:meth:`prepare` for a baseline file and a coverage requirement given as such
        (``cer merge``)."""
        baseline = None
        if path is not None:
            try:
                baseline = load_baseline(path)
            except BaselineError as exc:
                print_error(f"baseline: {exc}")
                return None
            problems = unmatched_entries(baseline, suite)
            for problem in problems:
                print_error(f"baseline: {problem}; remove the entry or correct its case")
            if problems:
                return None
        if require_coverage and module_doc.declared is None:
            why = module_doc.problem or f"there is no commonsformat.md beside {suite.path}"
            print_error(f"--require-coverage: {why}, so there are no constraints to cover")
            return None
        return cls(baseline, require_coverage)

    def held(self) -> dict[str, Any]:
        """The baseline (its path and hash) and the coverage requirement, as the fields
        of the same names of RunOptions and RunConditions: a run's conditions say what
        its verdict was held against."""
        baseline = self.baseline
        return {
            "baseline": "" if baseline is None else str(baseline.path),
            "baseline_sha256": "" if baseline is None else baseline.sha256,
            "require_coverage": self.require_coverage,
        }

    def onto(self, resolved: ResolvedRun) -> ResolvedRun:
        """``resolved`` with :meth:`held` in each implementation's options."""
        held = self.held()
        return replace(
            resolved,
            options=replace(resolved.options, **held),
            implementations=tuple(replace(o, **held) for o in resolved.implementations),
        )

    def conformance(
        self,
        suite: Suite,
        run: RunResult,
        coverage: Coverage | CoverageCount | None,
        figures: CoverageFigures | None,
        label: str,
        others: Sequence[str] = (),
    ) -> Conformance:
        check = (
            None if self.baseline is None else check_run(self.baseline, suite, run, label, others)
        )
        needs_repair = 0 if figures is None else figures.needs_repair
        return conformance_of(run, coverage, check, needs_repair)

    def exit_code(self, run: RunResult, conformance: Conformance) -> ExitCode:
        return exit_code_for(run, conformance, require_coverage=self.require_coverage)


def _figures(coverage: Coverage | None, suite: Suite) -> CoverageFigures | None:
    """The coverage figures the history keeps and the verdict counts (needs repair)."""
    if coverage is None:
        return None
    from cer.review.derive import coverage_figures  # only with a module document

    return coverage_figures(coverage, suite)


def _run_and_report(
    output: Output,
    options: RunOptions,
    suite: Suite,
    history: History | None,
    module_doc: _ModuleDoc,
    verdicts: _Verdicts | None = None,
    label: str = "",
    *,
    rerun_failed: bool = False,
) -> int:
    """Run (``--failed``: only what failed last time), record, and write every output."""
    if rerun_failed:
        rerun, stop = _failed_only(history, suite, [options], several=False)
        if stop is not None:
            return stop
        (options,) = rerun
    progress = text_report.Progress(sys.stderr, enabled=not output.quiet and sys.stderr.isatty())
    stream = _LineStream.open(output, suite) if output.format == "jsonl" else None
    if stream is False:
        return ExitCode.USAGE
    try:
        run = run_suite(
            suite, options, on_event=stream.on(progress) if stream else progress, warm=EARLY_WORKERS
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
    progress.clear()
    verdicts = verdicts or _Verdicts()
    concluded = _conclude(run, suite, module_doc, verdicts, label, history)
    coverage, conformance, flaky = concluded.coverage, concluded.conformance, concluded.flaky
    (context,) = _contexts(output, history, suite, [concluded])
    summary_line = text_report.summary_line(run, conformance=conformance) + "\n"
    if stream:
        stream.finish(results_document(context))
        text = ""
    elif output.format == "json":
        text = render_report("json", context)
    else:
        colour = output.path is None and text_report.use_colour(sys.stdout)
        text = text_report.render_report(
            run,
            suite,
            colour=colour,
            verbose=output.verbose,
            coverage=coverage,
            coverage_details=output.coverage_details,
            flaky=flaky,
            conformance=conformance,
        )
    code = ExitCode.USAGE if concluded.untrusted else verdicts.exit_code(run, conformance)
    shortfall = conformance.shortfall()
    if shortfall is not None and verdicts.require_coverage:
        print_error(f"--require-coverage: {shortfall}")
    stdout_taken = any(r.to_stdout and not FORMATS[r.format].line_oriented for r in output.reports)
    if not _write_main_report(output, text, summary_line, stdout_taken):
        return ExitCode.USAGE
    if not _write_reports(output, [context], ()):
        code = ExitCode.USAGE
    sys.stdout.flush()
    return code


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


def _run_matrix(
    output: Output,
    resolved: ResolvedRun,
    suite: Suite,
    history: History | None,
    module_doc: _ModuleDoc,
    verdicts: _Verdicts | None = None,
    *,
    rerun_failed: bool = False,
) -> int:
    """Run the implementations side by side within the ``-j`` budget
    (:mod:`cer.engine.side_by_side`), record each run on its own as it finishes, and
    report the matrix (text or JSON) and one report file per implementation."""
    implementations = list(resolved.implementations)
    labels = resolved.labels
    if rerun_failed:
        implementations, stop = _failed_only(history, suite, implementations, several=True)
        if stop is not None:
            return stop
    from cer.engine.side_by_side import run_side_by_side  # only several implementations

    by_index: list[_Concluded | None] = [None] * len(labels)
    untrusted = False
    verdicts = verdicts or _Verdicts()
    progress = text_report.SideBySideProgress(
        sys.stderr, not output.quiet and sys.stderr.isatty(), labels
    )

    def finished(index: int, run: RunResult) -> None:
        nonlocal untrusted, history
        progress.clear()
        # Recorded as soon as it finishes: an interrupt later keeps the finished runs.
        concluded = _conclude(
            run,
            suite,
            module_doc,
            verdicts,
            labels[index],
            history,
            warn=not any(by_index),
            others=labels,
        )
        if concluded.untrusted:
            untrusted, history = True, None  # the history is closed by the caller
        by_index[index] = concluded

    try:
        run_side_by_side(
            suite, implementations, on_event=progress, on_finished=finished, warm=EARLY_WORKERS
        )
    except (CategoryConfigError, LimitsChanged, KeyboardInterrupt) as exc:
        done = sum(run is not None for run in by_index)
        recorded = ""
        if done and history is not None:
            recorded = f"; {done} finished run{'s were' if done != 1 else ' was'} recorded"
        return _ended_early(exc, progress, recorded)
    progress.clear()
    finished_runs = [done for done in by_index if done is not None]
    runs = [done.run for done in finished_runs]
    concluded = [done.conformance for done in finished_runs]
    coverages = [done.coverage for done in finished_runs]
    flaky = [done.flaky for done in finished_runs]
    from cer.results.matrix import AGREE_ON_EXPECTED, Known, build_matrix, matrix_to_dict

    agree_on = output.agree_on or AGREE_ON_EXPECTED
    known = [
        None
        if conformance.baseline is None
        else {k.case_name: Known(k.entry.reason, k.entry.link) for k in conformance.baseline.known}
        for conformance in concluded
    ]
    matrix = build_matrix(suite, runs, labels, agree_on=agree_on, known=known)
    contexts = _contexts(output, history, suite, finished_runs)
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
            coverages=coverages,
            flaky=flaky,
            group_by=output.group_by,
            baselines=[None if c.baseline is None else c.baseline.phrase() for c in concluded],
            verdict_words=words,
        )
    code = (
        ExitCode.USAGE
        if untrusted
        else exit_code_for_runs(runs, concluded, require_coverage=verdicts.require_coverage)
    )
    if not _write_main_report(output, text, summary_line, stdout_taken=False):
        return ExitCode.USAGE
    statements = [conformance.statement for conformance in concluded]

    def matrix_page(format_name: str) -> str:
        return _matrix_report(format_name, matrix, suite, statements)

    if not _write_reports(output, contexts, labels, matrix_page):
        code = ExitCode.USAGE
    sys.stdout.flush()
    return code


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
    module_doc: _ModuleDoc,
    verdicts: _Verdicts,
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
    figures = _figures(coverage, suite)
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
                with COMMANDS.own_commands() if request.format == "github" else nullcontext():
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


def cmd_check(args: argparse.Namespace) -> ExitCode:
    try:
        config = find_project_config()
    except UsageError as exc:
        print_error(str(exc))
        return ExitCode.USAGE
    try:
        suite = resolve_suite(args.suite, config)
    except UsageError as exc:
        print_error(str(exc))
        return ExitCode.USAGE
    categories = config.values.get("categories", {})
    if not isinstance(categories, dict):
        print_error("[tool.cer.categories] must map category names to model names")
        return ExitCode.USAGE
    from cer.cli.check import SuiteUnreadable, check_suite, render_check  # only this command

    try:
        report = check_suite(suite, {str(k): str(v) for k, v in categories.items()})
    except SuiteUnreadable as exc:
        print_error(str(exc))
        return ExitCode.USAGE
    sys.stdout.write(render_check(report))
    return ExitCode.OK if report.ok else ExitCode.FAILED


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
    module_doc = _ModuleDoc.read(suite)
    verdicts = _Verdicts.load(args.baseline, args.require_coverage, suite, module_doc)
    if verdicts is None:
        return ExitCode.USAGE
    if run.conditions is not None:  # what the merged run is held against, not the shards
        run = replace(run, conditions=replace(run.conditions, **verdicts.held()))
    coverage = module_doc.coverage(suite, run)
    judged = UNREADABLE if coverage is None and module_doc.problem is not None else coverage
    conformance = verdicts.conformance(suite, run, judged, _figures(coverage, suite), "")
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


def _forgiving_streams() -> None:
    """Let stdout and stderr write any text: a character UTF-8 cannot hold (a lone
    surrogate that reached a message) becomes its escape instead of a traceback."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    """The ``cer`` program. Called without ``argv`` (as the program itself), it also
    adopts the orphans of the processes it starts (cer.process_tree) and stops cleanly on
    SIGTERM and SIGHUP as on Ctrl-C."""
    global COMMANDS
    _forgiving_streams()
    if argv is None:
        process_tree.adopt_orphans()
        _stop_on_signals()
    COMMANDS = CommandPause.from_environment(sys.stdout)
    COMMANDS.pause()
    try:
        return _main(argv)
    except KeyboardInterrupt as exc:
        print_error(f"{interruption(exc)}")
        return interrupted_code(exc)
    finally:
        sys.stdout.flush()
        COMMANDS.resume()


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.handler is None:
        parser.print_help()
        return ExitCode.USAGE
    return int(args.handler(args))
