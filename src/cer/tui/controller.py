"""Run control for cer-tui: starting and cancelling runs, the workers they run in, the
generation that tells a current message from a stale one, and the watch loop.

The controller owns no widget. Its workers report only through messages
(:mod:`cer.tui.messages`), stamped with the generation of the cycle they belong to:
those about the runs go to the view that shows them (the run screen applies them to the
session and its widgets), the watcher's and the history's answers to the run control
itself go to the app.
"""

from __future__ import annotations

import functools
import threading
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields, replace
from operator import attrgetter
from pathlib import Path
from typing import Any, Literal, Protocol

from textual.app import App
from textual.message import Message
from textual.worker import Worker
from watchfiles import awatch

from cer import events
from cer.config import configured_history_max_bytes
from cer.constraints import MODULE_DOC, Coverage, CoverageFigures, compute_coverage
from cer.engine.options import RunCancelled, RunOptions
from cer.history import recall
from cer.history.database import History
from cer.history.records import HistoryError
from cer.judge.verdict import skipped
from cer.model import CaseResult, RunResult, Suite, same_value
from cer.results.baseline import Baseline, check_run
from cer.results.conformance import UNREADABLE, Conformance, CoverageCount, conformance_of
from cer.results.matrix import Known, build_matrix
from cer.review.derive import coverage_figures
from cer.suite.loader import SuiteError
from cer.suite.reload import reloader_for
from cer.suite.selection import Selection
from cer.text.safetext import for_terminal
from cer.tui import messages
from cer.tui.plain import notify
from cer.tui.state.board import EditedSelection, Row
from cer.tui.state.coverage_view import CoverageView, ModuleDoc, compute_view, read_doc
from cer.tui.state.kept import KeptResult
from cer.tui.state.session import Session
from cer.tui.state.side_by_side import render_selected
from cer.tui.state.styles import DetailStyles
from cer.tui.state.watching import DEBOUNCE_MS, STEP_MS, WatchPlan, edited_cases


class RunHost(Protocol):
    """What the controller needs of the app beyond Textual's own API: the session it
    fills, where the suite is, how a run is asked for (the app narrows it to the run
    pattern), and the view the runs' messages go to."""

    session: Session
    suite_path: Path
    base_selection: Selection

    def start_run(self, selection: Selection, trigger: str, *, narrow: bool = True) -> None:
        """Start a cycle that runs ``selection``."""

    def refresh_header(self) -> None:
        """Show the watch state in the header."""

    def post_to_view(self, message: Message) -> None:
        """Hand a message about the runs to the view that shows them (thread-safe)."""


WorkerGroup = Literal["run", "watch", "details", "coverage", "matrix", "history"]
"""The app's kinds of worker; one of each kind runs at a time."""


class RunFunction(Protocol):
    """The shape of :func:`cer.engine.runner.run_suite`, which tests replace with a fake."""

    def __call__(
        self,
        suite: Suite,
        options: RunOptions,
        *,
        on_event: Callable[[events.RunEvent], None] | None = ...,
        cancel: threading.Event | None = ...,
    ) -> RunResult: ...


LoadFunction = Callable[[Path], Suite]

FRAME_SECONDS = 0.1
"""How often, at most, a run's results are handed to the screen: one message a frame
with every result since the last. The screen redraws no faster than it is told, and
the event loop stays free for the keys and for the run's own thread, which shares the
interpreter with it (each message handled is time the run does not get)."""


class Pacer:
    """Posts a :class:`messages.CasesFinished` for a run's stream at most once a
    frame, from a thread of its own, while results are waiting and the last one was
    handled; :meth:`stop` ends it and posts what is left."""

    def __init__(self, stream: messages.ResultStream, post: Callable[[], None]) -> None:
        self._stream = stream
        self._post = post
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="cer-tui-pacer", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stopped.wait(FRAME_SECONDS):
            if self._stream.claim():
                self._post()

    def stop(self) -> None:
        """Stop posting, and post once more if results wait (the caller's thread, so
        that the message comes before anything it posts next)."""
        self._stopped.set()
        self._thread.join()
        if self._stream.claim():
            self._post()


@dataclass
class SuiteCache:
    """The last suite loaded, and the file state it was loaded from."""

    key: tuple[int, int, int]
    suite: Suite


class RunController:
    """Starts each run cycle in a thread worker (every lane in turn), cancels the one in
    flight, and runs the watch loop; see the module's docstring."""

    def __init__(
        self,
        app: App[None],
        host: RunHost,
        *,
        run: RunFunction,
        load: LoadFunction,
        history: Path | None,
        extra_watch: Iterable[str | Path] = (),
    ) -> None:
        self.app = app
        self.host = host
        self.session = host.session
        self.suite_path = host.suite_path
        self.implementations: tuple[RunOptions, ...] = tuple(
            lane.options for lane in host.session.lanes
        )
        self.labels = host.session.labels
        self.history_path = history
        self.extra_watch = tuple(Path(p) for p in extra_watch)
        self.generation = 0
        self.selection = host.base_selection
        """What the cycle in flight runs."""
        self.plan: WatchPlan | None = None
        self.watcher: Worker[None] | None = None
        """The watch loop's worker, once watching started."""
        self.suite_cache: SuiteCache | None = None
        self._run = run
        self._load = load
        self._reloader = reloader_for(load, self.suite_path)
        """cer's own loader, kept between loads: a load after an edit parses only the
        groups of cases whose text changed (cer.suite.reload); None for a loader given
        by the caller, which is called as it is."""
        self._cancel: threading.Event | None = None
        self._one_run = threading.Lock()
        """Held by the cycle that runs: a cycle waits for the cancelled one to have
        ended its processes, so that one run's cleanup (which ends every process the
        program adopted, cer.process_tree) never meets another run's workers."""
        self._fallback: bool | None = None
        self._sources: tuple[str, ...] = ()
        self.paused = False
        self.pending_changes: set[Path] = set()
        """Files changed while watching was paused; a run follows the resume."""
        self.runs_recorded = 0
        self.history_problem: str | None = None
        """The last history failure, if any; the first one is shown in a toast."""
        self._flaky_generation = 0
        self.module_doc = ModuleDoc(self.suite_path)
        """The module's commonsformat.md as the current run read it before it started."""
        self.coverage_token = 0
        """Counts coverage requests; only the answer to the latest one is shown."""
        self.matrix_token = 0
        """Counts matrix requests; only the answer to the latest one is shown."""
        self._suite_edited = False
        """Set by a change of the suite file alone, for the cycle it starts."""
        self._cycle_complete = False
        """Whether the last cycle loaded the suite and ran every lane to its end: only
        then do the rows hold a result of that suite for every case, and only then may
        an edit of the suite rerun less than every case."""
        self._edit: tuple[Edit, Selection] | None = None
        """The edit the last cycle started from, with what its first board's run was at
        that start: when that cycle does not run to its end (its file did not load, a
        second save cancelled it), the next edit can start from the same rows."""

    # -- runs -------------------------------------------------------------------------

    def start(self, selection: Selection, trigger: str) -> None:
        """Cancel the cycle in flight, if any, and start a new one."""
        self.cancel()
        self.generation += 1
        self._cancel = cancel = threading.Event()
        self.selection = selection
        # What failed last time runs first (read before begin() marks the rows stale);
        # the list keeps declared order, so the rows that matter turn green first.
        firsts = tuple(lane.board.failed_names() for lane in self.session.lanes)
        # After an edit of the suite file alone, the cycle runs what the edit changed,
        # what failed and what has no current result, once the new file is loaded (see
        # _narrowed); every other row keeps its result.
        edited: Edit | None = None
        board = self.session.board
        if self._suite_edited and self._cycle_complete and self.session.suite is not None:
            edited = Edit(
                self.session.suite,
                board.unsettled_names(),
                tuple(
                    None if lane.board.last_run is None else lane.board.last_run.implementation_id
                    for lane in self.session.lanes
                ),
            )
        elif self._suite_edited and self._edit is not None:
            edited = _interrupted(*self._edit, board.run_selection)
        self._edit = None if edited is None else (edited, board.run_selection)
        self._suite_edited = self._cycle_complete = False
        self.session.begin(trigger)
        generation = self.generation
        self._worker(
            lambda: self._run_cycle(generation, selection, cancel, firsts, edited),
            "run",
            "load and run the suite",
        )

    def cancel(self) -> None:
        """Ask the cycle in flight to stop (quitting never waits for it)."""
        if self._cancel is not None:
            self._cancel.set()

    def is_current(self, message: messages.RunMessage) -> bool:
        return message.generation == self.generation and self.app.is_running

    def wait_for_runs(self, timeout: float) -> bool:
        """Wait until no cycle runs (False if one still does after ``timeout``)."""
        if not self._one_run.acquire(timeout=timeout):
            return False
        self._one_run.release()
        return True

    def _run_cycle(
        self,
        generation: int,
        selection: Selection,
        cancel: threading.Event,
        firsts: Sequence[frozenset[str]] = (),
        edited: Edit | None = None,
    ) -> None:
        with self._one_run:
            if cancel.is_set():  # cancelled while the previous cycle was ending
                self.host.post_to_view(messages.RunCancelled(generation))
                return
            self._run_one_cycle(generation, selection, cancel, firsts, edited)

    def _run_one_cycle(
        self,
        generation: int,
        selection: Selection,
        cancel: threading.Event,
        firsts: Sequence[frozenset[str]] = (),
        edited: Edit | None = None,
    ) -> None:
        """Load the suite and run every lane on it in turn, reporting only through
        messages; the cycle ends with :class:`messages.RunsFinished`. ``firsts`` holds,
        per lane, the cases it hands to its workers before the others; ``edited``, the
        suite as it was before an edit of its file alone (the cycle then runs only
        what the edit changed, what failed and what has no current result: the runner
        is given those cases alone, and the list keeps every other row's result)."""
        post = self.host.post_to_view
        try:
            suite = self._load_suite()
        except SuiteError as error:
            post(messages.SuiteFailed(generation, str(error), error.problems))
            return
        except Exception as error:
            post(messages.RunCrashed(generation, str(error), traceback.format_exc()))
            return
        # Read with the suite, before the implementation runs: coverage is judged on
        # this snapshot, whatever a case does to the file.
        doc = read_doc(self.suite_path)
        narrowed = None if edited is None else _narrowed(selection, edited, suite, firsts)
        part = suite
        if narrowed is not None:
            chosen = narrowed.names or frozenset()
            part = replace(
                suite,
                cases=tuple(
                    case for case in suite.cases if case.name in chosen and narrowed.selects(case)
                ),
            )
        # A cycle after an edit that runs every case hands the board a selection of its
        # own, so that the next edit can tell it ran (see _interrupted).
        loaded = narrowed if edited is None or narrowed is not None else replace(selection)
        post(messages.SuiteLoaded(generation, suite, doc, loaded))
        run_all = functools.partial(
            self._run_lanes, generation, selection, suite, suite, cancel, doc, firsts
        )
        if narrowed is not None and edited is not None:
            completed = self._run_lanes(
                generation, narrowed, part, suite, cancel, doc, firsts, edited.implementations
            )
            if completed == _DISTRUSTED:
                # The code that ran is not the code the kept results came from (it
                # changed and the watcher has not said so yet, or the run cannot tell
                # which code it ran): no kept result can be trusted, and every case of
                # every lane runs again, in this cycle.
                post(messages.SuiteLoaded(generation, suite, doc, replace(selection)))
                completed = run_all()
        else:
            completed = run_all()
        if completed is None:
            return
        if completed == len(self.implementations) and not cancel.is_set():
            self._cycle_complete = True
        post(messages.RunsFinished(generation, completed))
        if self._reloader is not None:
            # Idle now: what the load put off (the suite cache's entry, the memo).
            self._reloader.settle()

    def _run_lanes(
        self,
        generation: int,
        selection: Selection,
        part: Suite,
        suite: Suite,
        cancel: threading.Event,
        doc: ModuleDoc,
        firsts: Sequence[frozenset[str]],
        expected: Sequence[str | None] | None = None,
    ) -> int | None:
        """Run every lane in turn on ``part`` of ``suite`` (the whole of it, or the cases
        an edit asks for); how many lanes finished, None when cancelled, and
        :data:`_DISTRUSTED` as soon as a lane ran other code than ``expected`` says its
        kept results came from (the implementation ids of the runs they came from)."""
        post = self.host.post_to_view
        completed = 0
        for index, options in enumerate(self.implementations):
            if index and cancel.is_set():
                post(messages.RunCancelled(generation))
                return None
            first = firsts[index] if index < len(firsts) else frozenset()
            lane_options = replace(options, selection=selection, first=first)
            ran: list[str] = []
            outcome = self._run_lane(generation, index, lane_options, part, cancel, doc, suite, ran)
            if outcome is None:
                return None
            completed += outcome
            if expected is not None and (not ran or ran[0] != expected[index]):
                return _DISTRUSTED
        return completed

    def _run_lane(
        self,
        generation: int,
        index: int,
        options: RunOptions,
        suite: Suite,
        cancel: threading.Event,
        doc: ModuleDoc | None = None,
        whole: Suite | None = None,
        ran: list[str] | None = None,
    ) -> int | None:
        """Run one lane on ``suite`` and record its run; 1 when it finished, 0 when the
        runner crashed (the next lane still runs), None when cancelled. ``whole`` is the
        suite ``suite`` is part of, when the lane runs some of its cases only (after an
        edit): the history then records the run of the whole suite, each case left out
        skipped as deselected, as ``cer run`` would have reported it. ``ran`` takes the
        finished run's implementation id, as the screen shows it."""
        post = self.host.post_to_view
        stream = messages.ResultStream()
        # The results streamed so far, as the runner reported them (it holds them too),
        # by their case's position: the end of the run hands over only the others.
        streamed: list[CaseResult | None] = []
        # One implementation's rows keep their results packed, without observations
        # (only a comparison shows those); several implementations' rows keep theirs
        # whole, shared with the matrix (cer.tui.state.kept).
        several = len(self.implementations) > 1

        def keep(result: CaseResult) -> KeptResult:
            if several:
                return KeptResult.whole_of(result)
            return KeptResult.of(result, observation=False)

        def on_event(event: events.RunEvent) -> None:
            if cancel.is_set():
                return
            if isinstance(event, events.CaseFinished):
                # Whatever the screen shows of it goes through cer.text.safetext.displayed
                # (keep, KeptResult.result): shown, never obeyed.
                position = event.result.position
                if position >= len(streamed):
                    streamed.extend([None] * (max(position, event.total) + 1 - len(streamed)))
                if position >= 0:
                    streamed[position] = event.result
                stream.add(keep(event.result), event.done, event.total)
            elif isinstance(event, events.RunStarted):
                post(messages.RunStarted(generation, event.total, index))
            elif isinstance(event, events.ImplementationLoaded):
                post(
                    messages.ImplementationLoaded(
                        generation, event.implementation_id, event.source_files, index
                    )
                )
            elif isinstance(event, events.ImplementationFailed):
                post(
                    messages.ImplementationFailed(
                        generation,
                        for_terminal(event.reason),
                        for_terminal(event.traceback),
                        index,
                    )
                )

        pacer = Pacer(stream, lambda: post(messages.CasesFinished(generation, stream, index)))
        try:
            try:
                run = self._run(suite, options, on_event=on_event, cancel=cancel)
            finally:
                # Every streamed result reaches the screen before the run's end does.
                pacer.stop()
        except RunCancelled:
            post(messages.RunCancelled(generation))
            return None
        except Exception as error:
            post(messages.RunCrashed(generation, str(error), traceback.format_exc(), index))
            return 0
        if cancel.is_set():
            post(messages.RunCancelled(generation))
            return None
        rest = tuple(
            keep(result)
            for result in run.results
            if not (0 <= result.position < len(streamed) and streamed[result.position] is result)
        )
        streamed.clear()
        shown = replace(
            run,
            results=(),
            notes=tuple(for_terminal(note) for note in run.notes),
            implementation_id=for_terminal(run.implementation_id, multiline=False),
        )
        post(messages.RunFinished(generation, shown, index, rest, len(run.results)))
        if ran is not None:
            ran.append(shown.implementation_id)
        if self.history_path is not None:
            if whole is not None and whole is not suite:
                suite, run = whole, _of_whole(whole, run)
            baseline, label = self.session.baseline, self.labels[index]
            post(
                record_run(
                    self.history_path,
                    generation,
                    suite,
                    run,
                    index,
                    doc,
                    baseline,
                    label,
                    self.labels,
                )
            )
        return 1

    def _load_suite(self) -> Suite:
        """The suite, reloaded only when its file changed since the last load."""
        load = self._reload
        try:
            stat = self.suite_path.stat()
        except OSError:
            return load()
        key = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        cache = self.suite_cache
        if cache is not None and cache.key == key:
            return cache.suite
        suite = load()
        self.suite_cache = SuiteCache(key, suite)
        return suite

    def _reload(self) -> Suite:
        """Load the suite file: through the reloader and its memo, or the caller's
        loader."""
        if self._reloader is not None:
            return self._reloader.load()
        return self._load(self.suite_path)

    # -- what follows a run: coverage, matrix, details ---------------------------------

    def request_coverage(self) -> None:
        """Judge each lane's last results again (after a cycle, or when the constraints
        changed), off the event loop."""
        inputs = self.session.coverage_inputs()
        if all(given is None for given in inputs):
            return
        self.coverage_token += 1
        token, doc, post = self.coverage_token, self.module_doc, self.host.post_to_view

        def compute() -> None:
            views = tuple(
                CoverageView()
                if given is None
                else compute_view(doc, given.suite, given.judged_run())
                for given in inputs
            )
            post(messages.CoveragesComputed(token, views))

        self._worker(compute, "coverage", "compute constraint coverage")

    def request_matrix(self) -> None:
        """Compare the lanes case by case (cer.results.matrix), off the event loop."""
        suite = self.session.suite
        if suite is None:
            return
        self.matrix_token += 1
        token, inputs, labels = self.matrix_token, self.session.matrix_inputs(), self.labels
        post = self.host.post_to_view
        baseline = self.session.baseline

        def build() -> None:
            runs = tuple(each.run() for each in inputs)
            known = None
            if baseline is not None:  # what each lane fails as the baseline lists it
                checks = [
                    check_run(baseline, suite, r, label)
                    for r, label in zip(runs, labels, strict=True)
                ]
                known = [
                    {k.case_name: Known(k.entry.reason, k.entry.link) for k in c.known}
                    for c in checks
                ]
            post(messages.MatrixComputed(token, build_matrix(suite, runs, labels, known=known)))

        self._worker(build, "matrix", "build the matrix")

    def render_details(self, row: Row | None, styles: DetailStyles, token: int) -> None:
        """Snapshot every lane's row of ``row``'s case on the event loop, then diff and
        format it in a worker: :class:`messages.DetailsRendered` answers."""
        rows = () if row is None else self.session.lane_rows(row.name)
        case = row.case if row is not None and rows else None
        coverages = tuple(
            (lane.label, replace(lane.coverage, trend=lane.coverage_trend))
            for lane in self.session.lanes
        )
        matrix = self.session.matrix
        unobserved = () if matrix is None else matrix.unobserved
        suite_name, post = self.suite_path.name, self.host.post_to_view

        def render() -> None:
            details = render_selected(
                case,
                rows,
                styles,
                coverages=coverages,
                unobserved=unobserved,
                suite_name=suite_name,
            )
            post(messages.DetailsRendered(None if case is None else case.name, token, details))

        self._worker(render, "details", "render the selected case")

    def _worker(self, work: Callable[[], None], group: WorkerGroup, description: str) -> None:
        """Run ``work`` in a thread worker of ``group``, replacing the one in flight; its
        errors reach the user through the app's worker handler."""
        self.app.run_worker(
            work,
            thread=True,
            exclusive=True,
            exit_on_error=False,
            group=group,
            description=description,
        )

    def history_recorded(self, message: messages.HistoryRecorded) -> bool:
        """A run was recorded (or could not be: a toast, once); True when the lane's
        flaky marks changed."""
        if message.error is not None:
            first = self.history_problem is None
            self.history_problem = message.error
            if first:
                notify(
                    self.app,
                    f"{message.error}. The run is not recorded; its results are unaffected "
                    "and cer-tui goes on.",
                    title="History",
                    severity="warning",
                    timeout=10,
                )
            return False
        self.runs_recorded += 1
        if message.generation < self._flaky_generation:
            return False
        self._flaky_generation = message.generation
        lane = self.session.lanes[message.lane]
        trend_changed = lane.coverage_trend != message.coverage_trend
        lane.coverage_trend = message.coverage_trend
        return lane.board.set_flaky(message.flaky) or trend_changed

    # -- rerun what failed --------------------------------------------------------------

    def rerun_failed(self) -> None:
        """Rerun the failed and errored cases; before this session has finished a run,
        those of the last recorded one (the history answers in a worker)."""
        path = self.history_path
        if self.session.runs_finished == 0 and path is not None:
            suite = self.session.suite
            suite_hash = None if suite is None else suite.content_hash
            post = self.app.post_message

            def read() -> None:
                post(self._recorded_failures(path, suite_hash))

            self._worker(read, "history", "read the last recorded failures")
            return
        self._rerun_session_failures()

    def _rerun_session_failures(self) -> None:
        failed = self.session.board.failed_names()
        if not failed:
            notify(self.app, "No failed or errored cases to rerun.", title="Rerun failed")
            return
        count = len(failed)
        self.host.start_run(
            replace(self.host.base_selection, names=failed),
            f"rerun: {count} failed case{'s' if count != 1 else ''}",
        )

    def recorded_failures_arrived(self, message: messages.RecordedFailures) -> None:
        """The history answered: rerun the recorded failures still in the suite."""
        if self.session.runs_finished:
            # A run of this session finished meanwhile: its results are newer.
            self._rerun_session_failures()
            return
        if message.names is None:
            notify(
                self.app,
                f"Nothing to rerun: {message.problem}.",
                title="Rerun failed",
                severity="warning" if message.error else "information",
            )
            return
        names = message.names
        if self.session.suite is not None:
            present = {case.name for case in self.session.suite.cases}
            names = tuple(name for name in names if name in present)
        runs = "runs" if self.session.several else "run"
        if not names:
            have = "have" if self.session.several else "has"
            notify(
                self.app,
                f"The last recorded {runs} ({message.run_id}) {have} no failed or errored "
                "case in this suite.",
                title="Rerun failed",
            )
            return
        count = len(names)
        self.host.start_run(
            replace(self.host.base_selection, names=frozenset(names)),
            f"rerun: {count} failed case{'s' if count != 1 else ''} of recorded "
            f"{runs} {message.run_id}",
        )

    # -- what failed last time --------------------------------------------------------

    def _recorded_failures(self, path: Path, suite_hash: str | None) -> messages.RecordedFailures:
        """The failed and errored cases of the latest recorded run of the suite (one
        lane, matched by path or content), or of the newest recorded run of *each* lane
        (as ``cer run --failed`` takes them), so that every lane reruns the same cases
        and the matrix stays complete."""
        if not path.is_file():
            return messages.RecordedFailures(None, problem=f"no run history yet at {path}")
        suite_name = self.suite_path.name
        try:
            with History.open(path, create=False) as history:
                if len(self.implementations) == 1:
                    latest = history.latest_failed(
                        suite_path=self.suite_path, suite_hash=suite_hash
                    )
                    if latest is None:
                        problem = f"no run of {suite_name} is recorded in {path}"
                        return messages.RecordedFailures(None, problem=problem)
                    return messages.RecordedFailures(latest.names, run_id=latest.run_id[:8])
                last = recall.failed_last_time(history, self.suite_path, self.implementations)
                if last.missing is not None:
                    label = self.labels[self.implementations.index(last.missing)]
                    problem = f"no run of {label} on {suite_name} is recorded in {path}"
                    return messages.RecordedFailures(None, problem=problem)
                names, run_ids = last.names, last.run_ids
        except HistoryError as error:
            return messages.RecordedFailures(None, problem=str(error), error=True)
        return messages.RecordedFailures(tuple(sorted(names)), run_id=", ".join(run_ids))

    # -- watching ---------------------------------------------------------------------

    def sources_reported(self) -> bool:
        """A lane reported its source files: True when what is watched must change."""
        sources = self.session.sources()
        fallback = self.session.needs_fallback()
        if sources == self._sources and fallback == self._fallback:
            return False
        self._sources = sources
        return True

    def restart_watch(self) -> None:
        """Plan what to watch from what the lanes reported, and (re)start the loop."""
        import_dirs = (
            self.suite_path.parent,
            Path.cwd(),
            *map(Path, self.implementations[0].paths),
        )
        self._fallback = self.session.needs_fallback()
        if self._reloader is not None:
            self._reloader.watching = True  # the suite will be loaded again and again
        self.plan = WatchPlan.build(
            self.suite_path, self._sources, self.extra_watch, import_dirs, self._fallback
        )
        self.watcher = self.app.run_worker(
            functools.partial(self._watch_loop, self.plan),
            exclusive=True,
            exit_on_error=False,
            group="watch",
            description="watch files",
        )

    async def _watch_loop(self, plan: WatchPlan) -> None:
        """Post :class:`messages.FilesChanged` after each debounced burst of changes."""
        async for changes in awatch(
            *plan.directories,
            watch_filter=plan.accepts,
            debounce=DEBOUNCE_MS,
            step=STEP_MS,
            recursive=False,
        ):
            paths = tuple(sorted({Path(path) for _change, path in changes}))
            if paths:
                self.app.post_message(messages.FilesChanged(paths))

    def files_changed(self, paths: Sequence[Path]) -> None:
        """The watcher saw changes: rerun, judge the constraints again when only they
        changed, or keep the changes for later while paused. The history database (a
        ``--history`` inside a watched folder) never triggers the next run; a change
        outside the lanes' sources drops the cached suite."""
        paths = tuple(path for path in paths if not self._is_history_file(path))
        if not paths:
            return  # recording a run must never trigger the next one
        sources = {Path(p).resolve() for p in self._sources}
        if any(path.resolve() not in sources for path in paths):
            self.suite_cache = None
        doc = (self.suite_path.parent / MODULE_DOC).resolve()
        running = any(lane.board.running for lane in self.session.lanes)
        if all(path.resolve() == doc for path in paths) and not running:
            # Only the constraints changed, between runs: judge the last results again
            # on the file as it is now, no rerun. During a run the change may come from
            # the implementation, so it is judged on what the next run reads first.
            self.module_doc = read_doc(self.suite_path)
            self.request_coverage()
            return
        if self.plan is not None and any(self._is_watched_tree(path) for path in paths):
            # A folder appeared (or was made again) in fixtures/ or a --watch folder: the
            # watcher does not descend, so watch it from now on, or a change to a file
            # in it would never rerun its cases (nor stop a later edit of the suite from
            # keeping their results).
            self.restart_watch()
        if self.paused:
            self.pending_changes.update(paths)
            self.host.refresh_header()
            return
        self._suite_edited = self._only_the_suite(paths)
        self.host.start_run(self.host.base_selection, self.describe_trigger(paths))

    def _is_watched_tree(self, path: Path) -> bool:
        """Whether ``path`` is a folder now, in a tree the plan expands to its subfolders
        (the suite's ``fixtures/``, a ``--watch`` folder), or that tree itself."""
        plan = self.plan
        if plan is None or not path.is_dir():
            return False
        changed = path.resolve()
        return any(
            changed == tree or tree in changed.parents for tree in (plan.fixtures, *plan.extra)
        )

    def _only_the_suite(self, paths: Sequence[Path]) -> bool:
        """Whether ``paths`` are the suite file alone (and the implementation's files are
        not among them: a change to those reruns every case)."""
        suite = self.suite_path.resolve()
        sources = {Path(p).resolve() for p in self._sources}
        return suite not in sources and all(path.resolve() == suite for path in paths)

    def toggle_pause(self) -> None:
        """Pause watching, or resume it and rerun for what changed meanwhile."""
        self.paused = not self.paused
        pending = tuple(sorted(self.pending_changes))
        if not self.paused:
            self.pending_changes.clear()
        self.host.refresh_header()
        if not self.paused and pending:
            self._suite_edited = self._only_the_suite(pending)
            self.host.start_run(self.host.base_selection, self.describe_trigger(pending))

    def describe_watch(self, watching: bool) -> str:
        """What the header says about watching."""
        if not watching:
            return "not watching"
        if self.paused:
            waiting = len(self.pending_changes)
            return "watching paused" + (f" ({waiting} changed)" if waiting else "")
        count = self.plan.path_count if self.plan is not None else 0
        return f"watching {count} path{'s' if count != 1 else ''}"

    def _is_history_file(self, path: Path) -> bool:
        """Whether ``path`` is the history database or one of SQLite's files beside it."""
        if self.history_path is None:
            return False
        database = self.history_path.resolve()
        return path.resolve() in {
            database,
            *(database.with_name(database.name + end) for end in ("-wal", "-shm", "-journal")),
        }

    def describe_trigger(self, paths: Sequence[Path]) -> str:
        first = paths[0].resolve()
        name = first.name
        for base in (Path.cwd(), self.suite_path.parent):
            try:
                name = str(first.relative_to(base.resolve()))
                break
            except ValueError:
                continue
        more = f" and {len(paths) - 1} more" if len(paths) > 1 else ""
        return f"rerun: {name}{more} changed"


@dataclass(frozen=True)
class Edit:
    """What a cycle after an edit of the suite file alone starts from: the suite as the
    rows hold it, and the cases some lane has no current result for (none yet, or
    stale: a run that did not get to them)."""

    before: Suite
    unsettled: frozenset[str]
    implementations: tuple[str | None, ...]
    """Each lane's implementation id in the run its rows' results came from (None
    before any): a lane that runs other code keeps no result."""


_DISTRUSTED = -1
"""What :meth:`RunController._run_lanes` answers when a lane ran other code than the
results it was to keep came from."""

_SUITE_WIDE = tuple(
    item.name for item in fields(Suite) if item.name not in ("cases", "content_hash")
)
"""Every field of a suite besides its cases: anything outside the case arrays, which
every case may depend on."""


def _interrupted(edit: Edit, base: Selection, now: Selection) -> Edit | None:
    """What the edit after ``edit``'s cycle starts from when that cycle did not run to
    its end (its file did not load, or a second save, an editor's save seen in two
    parts, cancelled it): the suite before it, with every case it was to run among
    those without a current result. ``base`` and ``now`` are the first board's run at
    that cycle's start and now: the same when the cycle never reached the board (its
    file did not load: nothing ran); its selection when it ran some cases; anything
    else when it went on to run every case (it ran other code), and then None: every
    case runs.

    The results the board took from it are those of its messages handled before the
    cycle was cancelled (a stale message is dropped), all of them results of cases it
    was to run, which run again."""
    if now is base:
        return edit
    if isinstance(now, EditedSelection):
        return replace(edit, unsettled=edit.unsettled | (now.names or frozenset()))
    return None


def _narrowed(
    selection: Selection, edit: Edit, after: Suite, failed: Sequence[frozenset[str]]
) -> EditedSelection | None:
    """What a cycle after an edit of the suite file runs: the cases whose definition
    the edit changed (or added), those some lane failed or errored last time and those
    without a current result, within ``selection``; None when the edit cannot be told
    apart (a field of the suite outside its cases changed, which every case depends
    on: every case runs).

    The rest keep their result: each is declared exactly as it was (its packed tables
    byte for byte, :func:`cer.tui.state.watching.edited_cases`) when that result was made,
    by an implementation that has not changed since (a change to it, a fixture or any
    other watched file reruns every case)."""
    before = edit.before
    if not all(same_value(getattr(before, name), getattr(after, name)) for name in _SUITE_WIDE):
        return None
    names = set(edited_cases(before, after))
    names |= edit.unsettled
    for lane in failed:
        names |= lane
    present = frozenset(map(attrgetter("name"), after.cases))
    names &= present
    if selection.names is not None:
        names &= selection.names
    chosen = frozenset(names)
    runs = chosen
    if not replace(selection, names=None).is_everything:
        runs = frozenset(case.name for case in after.cases if selection.selects(case)) & chosen
    # Rows with no current result the selection leaves out (outside the run pattern)
    # stay as they were: results of an earlier run, not kept ones.
    left = frozenset(edit.unsettled & present) - runs
    # The selection's own fields as they are, then what the edit chose.
    copied: dict[str, Any] = {
        item.name: getattr(selection, item.name) for item in fields(Selection)
    }
    return replace(
        EditedSelection(**copied),
        names=chosen,
        chosen_by=selection.chosen_by
        or "cer-tui watch: the cases an edit of the suite changed or added, and those "
        "that failed or had no current result",
        kept=len(after.cases) - len(runs) - len(left),
        left=left,
    )


def _of_whole(suite: Suite, run: RunResult) -> RunResult:
    """``run`` of some of ``suite``'s cases as a run of the whole suite: every case it
    left out skipped as deselected, in declared order, as the runner reports them."""
    ran = {result.position: result for result in run.results}
    return replace(
        run,
        results=tuple(
            found if (found := ran.get(case.position)) is not None else skipped(case, "deselected")
            for case in suite.cases
        ),
    )


def record_run(
    path: Path,
    generation: int,
    suite: Suite,
    run: RunResult,
    index: int = 0,
    doc: ModuleDoc | None = None,
    baseline: Baseline | None = None,
    label: str = "",
    others: Sequence[str] = (),
) -> messages.HistoryRecorded:
    """Write a finished run to the history, with its coverage figures when the module
    declares constraints, and read back its flaky cases and the coverage figures of the
    implementation's recorded runs of the suite (the Coverage pane's sparkline).

    Runs in the run worker's thread, after the results are on their way to the screen.
    Any failure becomes a message: the history never costs a run its results.
    """
    figures = run_figures(suite, run, doc)
    verdict = run_verdict(suite, run, doc, figures, baseline, label, others)
    try:
        with History.open(path, max_bytes=configured_history_max_bytes(suite.directory)) as history:
            flaky = recall.record_run(history, run, suite, figures, verdict)
            trend = coverage_trend(history, suite, run)
    except HistoryError as error:
        return messages.HistoryRecorded(generation, run.run_id, error=str(error), lane=index)
    except Exception as error:  # a bug in recording must not end the session
        return messages.HistoryRecorded(
            generation,
            run.run_id,
            error=f"cannot record the run in {path}: {error!r}",
            lane=index,
        )
    return messages.HistoryRecorded(
        generation, run.run_id, flaky=flaky, lane=index, coverage_trend=trend
    )


def run_figures(suite: Suite, run: RunResult, doc: ModuleDoc | None) -> CoverageFigures | None:
    """The run's coverage figures, judged on the constraints read before it ran, as
    ``cer run`` records them; None without constraints (or when they cannot be judged:
    the run is recorded all the same)."""
    if doc is None or doc.declared is None:
        return None
    try:
        return coverage_figures(compute_coverage(suite, doc.declared, run), suite)
    except Exception:  # figures are extra: they never cost a run its record
        return None


def run_verdict(
    suite: Suite,
    run: RunResult,
    doc: ModuleDoc | None,
    figures: CoverageFigures | None,
    baseline: Baseline | None = None,
    label: str = "",
    others: Sequence[str] = (),
) -> Conformance:
    """The verdict sentence the run states, as ``cer run`` would state it: the word
    from its cases, what the known-failures baseline makes of them (for the lane's
    implementation, ``label``, beside the lanes labelled ``others``), and K of N
    constraints covered when the module
    declares them."""
    coverage: Coverage | CoverageCount | None = None
    if doc is not None and doc.declared is not None:
        try:
            coverage = compute_coverage(suite, doc.declared, run)
        except Exception:  # coverage is extra: the verdict then states the word alone
            coverage = None
    elif doc is not None and doc.problem is not None:
        coverage = UNREADABLE  # a commonsformat.md that cannot be read covers nothing
    needs_repair = 0 if figures is None else figures.needs_repair
    check = None if baseline is None else check_run(baseline, suite, run, label or None, others)
    return conformance_of(run, coverage, check, needs_repair)


TREND_RUNS = 40
"""How many recorded runs the Coverage pane's sparkline spans."""


def coverage_trend(history: History, suite: Suite, run: RunResult) -> tuple[CoverageFigures, ...]:
    """The coverage figures of the implementation's recorded runs of ``suite``, oldest
    first (runs recorded without figures are left out)."""
    records = history.runs(TREND_RUNS, suite_path=suite.path)
    return tuple(
        record.coverage
        for record in reversed(records)
        if record.coverage is not None and record.implementation == run.implementation
    )
