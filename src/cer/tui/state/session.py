"""A cer-tui session: one suite and its lanes, one lane per implementation.

Everything the screen shows is read from here, and every message from a run lands here
first; pure Python, no Textual, so it is tested without an app. One implementation is a
session with one lane: the data flows the same way whatever the number of lanes, and only
the rendering (the header's wording, the summary bar's layout, the banners' and toasts'
texts) chooses the one-lane form (:attr:`Session.several`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from cer.constraints import CoverageFigures
from cer.engine.kinds import kind_named
from cer.engine.options import RunOptions
from cer.model import CaseResult, RunResult, SourceAccess, Status, Suite
from cer.results.baseline import Baseline
from cer.results.matrix import Matrix
from cer.suite.selection import Selection
from cer.text.tracebacks import trim
from cer.tui.state.bars import HeaderState, LaneSummary, PartialRun, SummaryState
from cer.tui.state.board import Board, Counts, EditedSelection, Row
from cer.tui.state.coverage_view import CoverageView
from cer.tui.state.formatting import SYMBOLS
from cer.tui.state.kept import KeptResult
from cer.tui.state.known import KnownFailures, lane_aliases
from cer.tui.state.side_by_side import LaneRow

Severity = Literal["information", "warning", "error"]
"""How loud a toast is (Textual's notification severities)."""


@dataclass(frozen=True)
class Failure:
    """Why a lane's implementation did not load, or its runner crashed: the one-line
    reason and the detail (a traceback) for the banner."""

    reason: str
    detail: str


@dataclass(frozen=True)
class Announcement:
    """A toast to show when a run cycle ends."""

    title: str
    message: str
    severity: Severity


@dataclass(frozen=True)
class CoverageInput:
    """What a lane's coverage is judged by: the suite, and the results its list showed
    when its last run finished."""

    suite: Suite
    run: RunResult
    """The run's own facts, without results."""
    shown: tuple[KeptResult, ...]

    def judged_run(self) -> RunResult:
        """``run`` with the shown results, bare (coverage judges by statuses alone): built
        where the coverage is computed, off the event loop, and dropped after."""
        return replace(self.run, results=tuple(kept.bare() for kept in self.shown))


@dataclass(frozen=True)
class MatrixInput:
    """One lane's column of the matrix, as a snapshot of kept results."""

    base: RunResult
    """The last run's own facts (or a stand-in before any run finished)."""
    unlisted: tuple[KeptResult, ...]
    """The last run's results of cases the list shows no result for."""
    shown: tuple[KeptResult, ...]
    """The results the list shows."""

    def run(self) -> RunResult:
        """The lane's results as the list shows them (the list's own first), unpacked."""
        merged = {kept.case_name: kept for kept in self.unlisted}
        for kept in self.shown:
            merged[kept.case_name] = kept
        return replace(self.base, results=tuple(kept.result() for kept in merged.values()))


@dataclass
class Lane:
    """One implementation's part of the session: what it is, its results (a board of
    rows parallel to every other lane's) and what its last run reported."""

    label: str
    """Its short name, as ``cer run`` heads its matrix column."""
    options: RunOptions
    board: Board = field(default_factory=Board)
    implementation_id: str = ""
    sources: tuple[str, ...] | None = None
    """Its source files as the runner reported them; None until it has loaded once."""
    notes: tuple[str, ...] = ()
    """The last finished run's notes."""
    coverage: CoverageView = field(default_factory=CoverageView)
    coverage_input: CoverageInput | None = None
    coverage_trend: tuple[CoverageFigures, ...] = ()
    """The coverage figures of its recorded runs, oldest first (from the history)."""
    """What its coverage is judged by: the suite and the results the list shows."""
    import_failure: Failure | None = None
    crash: Failure | None = None
    source_access: SourceAccess | None = None
    """Which of its files the last finished run lets a code frame or ``E`` open."""

    def finish(
        self,
        run: RunResult,
        suite: Suite | None,
        results: Sequence[CaseResult | KeptResult] | None = None,
        count: int | None = None,
    ) -> None:
        """Take a finished run (``results`` and ``count`` as
        :meth:`~cer.tui.state.board.Board.finish_run` takes them): it becomes the rows'
        baseline, and the results the list now shows (a rerun of some cases keeps the
        others' earlier results) are what the constraints' coverage is judged by."""
        self.board.finish_run(run, results, count)
        self.notes = run.notes
        self.source_access = run.source_access
        self.crash = None
        if suite is not None:
            shown = tuple(row.kept for row in self.board.rows if row.kept is not None)
            self.coverage_input = CoverageInput(suite, replace(run, results=()), shown)

    def row_at(self, index: int) -> LaneRow:
        """A snapshot of this lane's row at ``index``, for a worker thread."""
        row = self.board.rows[index]
        known = self.board.known
        return LaneRow(
            self.label,
            row.snapshot(),
            row.name in self.board.flaky,
            self.notes,
            self.source_access,
            None if known is None else known.note(row.name, row.status, not_run=row.not_run),
        )


class Session:
    """The suite, its lanes, and the cycle of runs in flight.

    The first lane's board owns the filters; the other boards are its peers, so that
    failures-only, rerun-failed and the group-by view look at every lane.
    """

    def __init__(
        self,
        implementations: Sequence[RunOptions],
        labels: Sequence[str],
        baseline: Baseline | None = None,
    ) -> None:
        if not implementations:
            raise ValueError("a session needs at least one implementation")
        if len(labels) != len(implementations):
            raise ValueError(f"{len(labels)} labels for {len(implementations)} implementations")
        self.lanes: tuple[Lane, ...] = tuple(
            Lane(label, options) for label, options in zip(labels, implementations, strict=True)
        )
        self.board.peers = tuple(lane.board for lane in self.lanes[1:])
        self.suite: Suite | None = None
        self.baseline = baseline
        """The known-failures file (``--baseline`` or ``[tool.cer] baseline``), read
        and checked before the app started; each lane's board reads it for its own
        implementation whenever the suite changes."""
        self.trigger = "first run"
        self.runs_started = 0
        self.runs_finished = 0
        """Run cycles that ended with at least one lane's run finished."""
        self.running = 0
        """The lane whose run is in flight (or ran last)."""
        self.matrix: Matrix | None = None
        """The lanes compared case by case, rebuilt after each cycle (two lanes or more)."""
        self._previous: tuple[tuple[int, int, int, int], ...] | None = None
        self._partial_seen: tuple[Selection, list[Row], PartialRun | None] | None = None
        """The last partial run's figures without counts, with the selection and rows
        they were taken from: the summary is refreshed for every batch of results, and
        a run of 60,000 selected names need not be counted again each time."""

    @property
    def board(self) -> Board:
        """The first lane's board, which owns the filters."""
        return self.lanes[0].board

    @property
    def several(self) -> bool:
        """Whether to render the lanes side by side rather than as one implementation."""
        return len(self.lanes) > 1

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(lane.label for lane in self.lanes)

    # -- the run cycle ----------------------------------------------------------------

    def begin(self, trigger: str) -> None:
        """A new cycle starts: every lane waits for its turn."""
        self.runs_started += 1
        self.trigger = trigger
        for lane in self.lanes:
            lane.board.running = True
            lane.board.done = 0
        self.running = 0

    def load(self, suite: Suite, selection: Selection) -> bool:
        """The suite loaded for the cycle; True when it differs from the last one."""
        changed = self.suite is None or suite.content_hash != self.suite.content_hash
        self.suite = suite
        for lane in self.lanes:
            if changed or not lane.board.rows:
                lane.board.set_suite(suite)
                if self.baseline is not None:
                    others = [other.label for other in self.lanes]
                    aliases = lane_aliases(lane.label, lane.options, others)
                    lane.board.set_known(KnownFailures.of(self.baseline, suite, aliases))
            lane.board.begin_run(selection)
        return changed

    def unmatched_entries(self) -> tuple[str, ...]:
        """The baseline's entries that name no case of the suite as it is now (a case
        renamed while watching): ``cer run`` would refuse the file."""
        known = self.board.known
        return () if known is None else known.unmatched

    def suite_failed(self) -> None:
        for lane in self.lanes:
            lane.board.fail_suite()

    def abandon(self) -> None:
        """The cycle was cancelled: every lane forgets its run in flight."""
        for lane in self.lanes:
            lane.board.abandon_run()

    def crashed(self, index: int, failure: Failure) -> None:
        """The runner crashed on lane ``index``; the next lane still runs."""
        lane = self.lanes[index]
        lane.board.abandon_run()
        lane.crash = failure

    def loaded(self, index: int, implementation_id: str, sources: Sequence[str]) -> None:
        lane = self.lanes[index]
        lane.import_failure = None
        lane.implementation_id = implementation_id
        lane.sources = tuple(sorted(sources))

    def cycle_finished(self, completed: int) -> bool:
        """Every lane has had its turn; True when at least one lane's run finished (the
        cycle then counts as a finished run)."""
        if completed:
            self.runs_finished += 1
        return bool(completed)

    # -- what the lanes share ---------------------------------------------------------

    def sources(self) -> tuple[str, ...]:
        """Every lane's reported source files, sorted, without repeats."""
        return tuple(sorted({path for lane in self.lanes if lane.sources for path in lane.sources}))

    def needs_fallback(self) -> bool | None:
        """Whether to watch the import folders' ``.py`` files for a lane not loaded yet:
        with several lanes, when a Python one has not reported its files (command
        implementations are watched through the files they report and ``--watch``);
        None with one, which keeps the watch plan's own rule."""
        if not self.several:
            return None
        return any(
            lane.sources is None and kind_named(lane.options.kind).python for lane in self.lanes
        )

    def lane_rows(self, name: str) -> tuple[LaneRow, ...]:
        """Every lane's row of the case called ``name``; none when it is not listed."""
        index = self.board.index_of(name)
        if index is None:
            return ()
        return tuple(lane.row_at(index) for lane in self.lanes)

    def coverage_inputs(self) -> tuple[CoverageInput | None, ...]:
        return tuple(lane.coverage_input for lane in self.lanes)

    def matrix_inputs(self) -> tuple[MatrixInput, ...]:
        """What each lane's matrix column is made of, taken on the event loop (a
        snapshot of the rows' kept results: no unpacking here)."""
        suite = self.suite
        inputs = []
        for lane in self.lanes:
            base = lane.board.last_run
            if base is None:
                impl = lane.options.impl
                base = RunResult(
                    run_id="",
                    target_module="" if suite is None else suite.target_module,
                    implementation_id=lane.implementation_id or impl,
                    started_at_ms=0,
                    completed_at_ms=0,
                    results=(),
                    implementation=impl,
                )
            shown = tuple(row.kept for row in lane.board.rows if row.kept is not None)
            inputs.append(MatrixInput(base, lane.board.unlisted, shown))
        return tuple(inputs)

    def matrix_runs(self) -> tuple[RunResult, ...]:
        """Each lane's results as the list shows them, for the matrix; for a case the
        list shows nothing for (deselected since the session started), the last run's
        own result: skipped, deselected. Unpacks every result: call it off the event
        loop (on :meth:`matrix_inputs`' snapshot, as the app does)."""
        return tuple(each.run() for each in self.matrix_inputs())

    def set_matrix(self, matrix: Matrix) -> None:
        self.matrix = matrix
        self.board.set_agreements({row.case_name: row.agreement for row in matrix.rows})

    # -- rendering: the one-lane form or the side-by-side one ---------------------------

    def header(self, watch: str) -> HeaderState:
        """What the header says, given how the files are watched."""
        target = ""
        if self.suite is not None:
            target = " ".join(p for p in (self.suite.target, self.suite.target_version) if p)
        implementation = self.lanes[0].options.impl
        if self.several:
            implementation = f"{len(self.lanes)} implementations: {', '.join(self.labels)}"
        timeout = self.lanes[0].options.timeout
        return HeaderState(target, implementation, watch, self.trigger, timeout)

    def summary(self) -> SummaryState:
        """What the summary bar says: the counts (each lane's, with several), the
        progress or the time of the last run, and the filters in force."""
        board = self.board
        filters = ", ".join(board.filters.describe())
        if not self.several:
            last = board.last_run
            return SummaryState(
                counts=replace(board.counts),
                running=board.running,
                done=board.done,
                total=board.total or len(board.rows),
                elapsed_ms=None
                if last is None
                else max(0, last.completed_at_ms - last.started_at_ms),
                shown=len(board.visible()),
                rows=len(board.rows),
                filters=filters,
                flaky=board.flaky_count,
                partial=self._partial(counted=True),
            )
        finished = [lane.board.last_run for lane in self.lanes if lane.board.last_run]
        elapsed = None
        if finished:
            elapsed = max(
                0,
                max(run.completed_at_ms for run in finished)
                - min(run.started_at_ms for run in finished),
            )
        index = self.running
        running = self.lanes[index].board
        return SummaryState(
            counts=replace(board.counts),
            running=any(lane.board.running for lane in self.lanes),
            done=running.done,
            total=running.total or len(running.rows),
            elapsed_ms=elapsed,
            shown=len(board.visible()),
            rows=len(board.rows),
            filters=filters,
            lanes=tuple(
                LaneSummary(lane.label, replace(lane.board.counts), lane.board.flaky_count)
                for lane in self.lanes
            ),
            running_label=f"{self.lanes[index].label} {index + 1}/{len(self.lanes)}",
            disagreements=None if self.matrix is None else len(self.matrix.disagreements),
            partial=self._partial(counted=False),
        )

    def _partial(self, *, counted: bool) -> PartialRun | None:
        """:func:`partial_run` of the first board; counted only once the run is over
        (while it runs, the cases not yet done have no new status to count)."""
        board = self.board
        if board.run_selection.names is None:
            return None
        if counted and not board.running:
            return partial_run(board)
        seen = self._partial_seen
        if seen is not None and seen[0] is board.run_selection and seen[1] is board.rows:
            return seen[2]
        found = partial_run(board, counted=False)
        self._partial_seen = (board.run_selection, board.rows, found)
        return found

    def import_banner(self) -> tuple[str, str] | None:
        """The banner's title and body for the lanes that did not load, or None."""
        failures = [(lane, lane.import_failure) for lane in self.lanes if lane.import_failure]
        if not failures:
            return None
        if not self.several:
            ((lane, failure),) = failures
            if not kind_named(lane.options.kind).python:
                # The cause names the kind (harness, per-case command) and how it failed;
                # the body is the evidence (stderr), not the cause again.
                reason = failure.reason
                title = reason[:1].upper() + reason[1:]
                body = trim(failure.detail)
                return title, "" if body.strip() in reason else body
            title = (
                f"The Python implementation {lane.options.impl} could not be loaded: "
                f"{failure.reason}"
            )
            return title, _without_cause(trim(failure.detail), failure.reason)
        if len(failures) == 1:
            ((lane, failure),) = failures
            verb = "does not load" if kind_named(lane.options.kind).python else "does not start"
            title = (
                f"The implementation {lane.label} ({lane.options.impl}) {verb}: {failure.reason}"
            )
            body = _without_cause(trim(failure.detail), failure.reason)
            return title, f"── {lane.label} ──\n{body}" if body else ""
        else:
            names = ", ".join(lane.label for lane, _ in failures)
            title = f"{len(failures)} implementations do not load: {names}"
        body = "\n".join(
            f"── {lane.label} ──\n{trim(failure.detail) or failure.reason}"
            for lane, failure in failures
        )
        return title, body

    def crash_title(self, index: int, message: str) -> str:
        if not self.several:
            return f"The runner failed: {message}"
        return f"The runner failed on {self.lanes[index].label}: {message}"

    def announcement(self) -> Announcement | None:
        """The toast for a cycle that ends with other counts, or with cases fixed or
        regressed, than the last one; None otherwise."""
        counts = [lane.board.counts for lane in self.lanes]
        now = tuple(each.as_tuple() for each in counts)
        previous, self._previous = self._previous, now
        fixed = sum(each.fixed for each in counts)
        regressed = sum(each.regressed for each in counts)
        if previous is None or (previous == now and not (fixed or regressed)):
            return None
        parts = []
        if fixed:
            parts.append(f"+{fixed} fixed")
        if regressed:
            parts.append(f"−{regressed} regressed")
        failing = any(each.failed or each.errored for each in counts)
        severity: Severity = "warning" if regressed or failing else "information"
        if not self.several:
            (only,) = counts
            statuses = (
                (Status.PASS, only.passed),
                (Status.FAIL, only.failed),
                (Status.ERRORED, only.errored),
                (Status.SKIPPED, only.skipped),
            )
            parts.append("  ".join(f"{SYMBOLS[status]} {count}" for status, count in statuses))
            return Announcement(f"Run finished{_part(self.board)}", "   ".join(parts), severity)
        for lane, each in zip(self.lanes, counts, strict=True):
            tally = [f"{SYMBOLS[Status.PASS]} {each.passed}"]
            for status, count in (
                (Status.FAIL, each.failed),
                (Status.ERRORED, each.errored),
                (Status.SKIPPED, each.skipped),
            ):
                if count:
                    tally.append(f"{SYMBOLS[status]} {count}")
            parts.append(f"{lane.label} {' '.join(tally)}")
        return Announcement(f"Runs finished{_part(self.board)}", "   ".join(parts), severity)


def partial_run(board: Board, *, counted: bool = True) -> PartialRun | None:
    """What the board's last (or current) run ran, when it ran only some of the cases
    (a set of names: ``n``, ``s``, ``R``); None when it ran them all. With ``counted``,
    the statuses of the cases it ran, counted apart from the earlier results the rest
    of the list keeps. Looks at the selected names only, never at every row."""
    selection = board.run_selection
    names = selection.names
    if names is None or not board.rows:
        return None
    counts = Counts()
    ran = 0
    for name in names:
        row = board.row(name)
        if row is None or not selection.selects(row.case):
            continue
        ran += 1
        if not counted:
            continue
        status = row.status if not row.stale else None
        if status is None:
            counts.pending += 1
        elif status is Status.PASS:
            counts.passed += 1
        elif status is Status.FAIL:
            counts.failed += 1
        elif status is Status.ERRORED:
            counts.errored += 1
        else:
            counts.skipped += 1
    if ran >= len(board.rows):
        return None
    kept = selection.kept if isinstance(selection, EditedSelection) else 0
    return PartialRun(ran, len(board.rows), counts, kept)


def _part(board: Board) -> str:
    """`` (8 of 16 cases)`` for a toast's title after a partial run, else nothing: its
    counts are the whole list's, old results with new."""
    partial = partial_run(board, counted=False) if board.run_selection.names is not None else None
    return "" if partial is None else f" ({partial.ran} of {partial.rows} cases)"


def _without_cause(detail: str, reason: str) -> str:
    """A traceback for the banner's body without its last lines when they are the
    cause the title already says (``ModuleNotFoundError: No module named 'x'``): the
    error is shown once."""
    text = detail.rstrip("\n")
    cause = reason.strip()
    if cause and text.endswith(cause):
        text = text[: -len(cause)].rstrip()
    return text
