"""The cer-tui application: watch, rerun in the background, triage at a glance.

The runner and the suite loader are injected through :func:`create_app`, which both the
command line and the tests use: tests hand in a fake ``run`` that emits events from
model objects, so they stay fast and deterministic. Loading and running happen in a
thread worker; watching in an async worker; the event loop only draws.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import threading
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar, Protocol

from rich.console import RenderableType
from rich.style import Style
from textual import on, work
from textual.app import App, ComposeResult, SuspendNotSupported
from textual.binding import BindingType
from textual.containers import Horizontal
from textual.notifications import SeverityLevel
from textual.widgets import Footer, Input, TabbedContent, TabPane
from textual.worker import Worker, WorkerState
from watchfiles import awatch

from cer import events
from cer.coverage import MODULE_DOC
from cer.history import History, HistoryError
from cer.model import RunResult, Status, Suite
from cer.runner import RunCancelled, RunOptions, run_suite
from cer.selection import Selection
from cer.suite import SuiteError, load_suite
from cer.tui import messages
from cer.tui.banner import Banner
from cer.tui.board import Board, GroupKey, Row
from cer.tui.case_list import CaseList
from cer.tui.coverage_view import CoverageView, compute_view
from cer.tui.details import DetailStyles, render_details
from cer.tui.diff_pane import DiffPane
from cer.tui.formatting import SYMBOLS
from cer.tui.group_screen import GroupScreen
from cer.tui.header_bar import HeaderBar, HeaderState
from cer.tui.help_screen import HelpScreen
from cer.tui.keys import APP_KEYS, bindings
from cer.tui.line_pane import LinePane
from cer.tui.output_pane import OutputPane
from cer.tui.summary_bar import SummaryBar, SummaryState
from cer.tui.text_pane import TextPane
from cer.tui.themes import DEFAULT_THEME, ThemeFile, find_themes
from cer.tui.watching import DEBOUNCE_MS, STEP_MS, WatchPlan

APP_CSS = Path(__file__).with_name("app.tcss")
PANES: tuple[str, ...] = ("reason", "diff", "output", "case", "coverage")


class RunFunction(Protocol):
    """The shape of :func:`cer.runner.run_suite`, which tests replace with a fake."""

    def __call__(
        self,
        suite: Suite,
        options: RunOptions,
        *,
        on_event: Callable[[events.RunEvent], None] | None = ...,
        cancel: threading.Event | None = ...,
    ) -> RunResult: ...


LoadFunction = Callable[[Path], Suite]
Launcher = Callable[[Sequence[str]], int]


def editor_command(editor: str, path: Path, line: int | None) -> list[str]:
    """The command that opens ``path`` at ``line`` in ``editor`` (``$EDITOR`` may hold
    arguments); editors of the VS Code family take ``--goto path:line``."""
    words = shlex.split(editor) or ["vi"]
    name = Path(words[0]).name
    if line is None:
        return [*words, str(path)]
    if name in {"code", "codium", "code-insiders", "cursor", "subl", "zed"}:
        flag = [] if name in {"subl", "zed"} else ["--goto"]
        return [*words, *flag, f"{path}:{line}"]
    return [*words, f"+{line}", str(path)]


def repro_command(suite_path: Path, options: RunOptions, case_name: str) -> str:
    """A one-line ``cer run`` that reruns one case with the same options."""
    words = ["cer", "run", str(suite_path), "--impl", options.impl]
    for path in options.paths:
        words += ["--path", path]
    defaults = RunOptions(impl=options.impl)
    if options.timeout != defaults.timeout:
        words += ["--timeout", f"{options.timeout:g}"]
    if options.isolation != defaults.isolation:
        words += ["--isolation", options.isolation]
    if options.max_memory is not None:
        words += ["--max-memory", str(options.max_memory)]
    words += ["--case", case_name]
    return shlex.join(words)


def _run_subprocess(command: Sequence[str]) -> int:
    return subprocess.call(list(command))


@dataclass(frozen=True)
class _DetailContext:
    """What the detail worker needs beside the row: run notes, the flaky mark and the
    coverage of the last run."""

    notes: tuple[str, ...]
    flaky: bool
    coverage: CoverageView
    suite_name: str


@dataclass
class _SuiteCache:
    """The last suite loaded, and the file state it was loaded from."""

    key: tuple[int, int, int]
    suite: Suite


class CerApp(App[None]):
    """Watches a suite and its implementation and shows every case's latest result."""

    TITLE = "cer"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = list(bindings(APP_KEYS))

    def __init__(
        self,
        suite_path: Path,
        options: RunOptions,
        *,
        run: RunFunction = run_suite,
        load: LoadFunction = load_suite,
        watch: bool = True,
        theme: str = DEFAULT_THEME,
        extra_watch: Iterable[str | Path] = (),
        launcher: Launcher = _run_subprocess,
        history: Path | None = None,
    ) -> None:
        self.themes = find_themes()
        if theme not in self.themes:
            known = ", ".join(self.themes) or "none found"
            raise ValueError(f"unknown theme {theme!r} (known: {known})")
        self.theme_file: ThemeFile = self.themes[theme]
        super().__init__(css_path=[APP_CSS, self.theme_file.path])
        self.suite_path = suite_path
        self.options = options
        self.base_selection = options.selection
        self.board = Board()
        self.suite: Suite | None = None
        self.watching = watch
        self.paused = False
        self.extra_watch = tuple(Path(p) for p in extra_watch)
        self.sources: tuple[str, ...] = ()
        self.plan: WatchPlan | None = None
        self.trigger = "first run"
        self.implementation_id = ""
        self.generation = 0
        self.runs_finished = 0
        self.runs_started = 0
        self._run = run
        self._load = load
        self._launcher = launcher
        self._cancel: threading.Event | None = None
        self._run_selection = self.base_selection
        self._suite_cache: _SuiteCache | None = None
        self._pending_changes: set[Path] = set()
        self._previous_counts: tuple[int, int, int, int] | None = None
        self._details_token = 0
        self.details_shown: tuple[str | None, int] = (None, 0)
        """The case whose details the panes show, and the request they answered."""
        self._detail_styles: DetailStyles | None = None
        self._notes: tuple[str, ...] = ()
        self.history_path = history
        """Where finished runs are recorded; None records nothing."""
        self.history_problem: str | None = None
        """The last history failure, if any; the first one is shown in a toast."""
        self.runs_recorded = 0
        self.coverage_view = CoverageView()
        self._coverage_token = 0
        """Counts coverage requests; only the answer to the latest one is shown."""
        self._coverage_input: tuple[Suite, RunResult] | None = None
        self._flaky_generation = 0

    # -- layout -----------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield HeaderBar(id="header")
        yield SummaryBar(id="summary")
        yield Banner(id="banner")
        with Horizontal(id="main"):
            yield CaseList(self.board, id="cases")
            with TabbedContent(id="details", initial="reason"):
                with TabPane("Reason", id="reason"):
                    yield TextPane(id="reason-pane")
                with TabPane("Diff", id="diff"):
                    yield DiffPane(id="diff-pane")
                with TabPane("Output", id="output"):
                    yield OutputPane(id="output-pane")
                with TabPane("Case", id="case"):
                    yield TextPane(id="case-pane")
                with TabPane("Coverage", id="coverage"):
                    yield TextPane(id="coverage-pane")
        yield Input(placeholder="filter: words in the name, a tag or a category", id="filter")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.theme = self.theme_file.base
        self.case_list.focus()
        self._refresh_header()
        self._refresh_summary()
        if self.watching:
            self._restart_watch()
        self.start_run(self.base_selection, "first run")

    def exit(
        self,
        result: None = None,
        return_code: int = 0,
        message: RenderableType | None = None,
    ) -> None:
        """Cancel the run in flight first, so that quitting never waits for it."""
        if self._cancel is not None:
            self._cancel.set()
        super().exit(result, return_code, message)

    def on_unmount(self) -> None:
        if self._cancel is not None:
            self._cancel.set()

    @property
    def case_list(self) -> CaseList:
        return self.query_one("#cases", CaseList)

    @property
    def banner(self) -> Banner:
        return self.query_one("#banner", Banner)

    # -- runs -------------------------------------------------------------------------

    def start_run(self, selection: Selection, trigger: str) -> None:
        """Cancel the run in flight, if any, and start a new one."""
        if self._cancel is not None:
            self._cancel.set()
        self.generation += 1
        self.runs_started += 1
        self._cancel = threading.Event()
        self._run_selection = selection
        self.trigger = trigger
        self.board.running = True
        self.board.done = 0
        self._run_in_thread(self.generation, selection, self._cancel)
        self._refresh_header()
        self._refresh_summary()

    @work(
        thread=True,
        exclusive=True,
        exit_on_error=False,
        group="run",
        description="load and run the suite",
    )
    def _run_in_thread(
        self, generation: int, selection: Selection, cancel: threading.Event
    ) -> None:
        """Load the suite and run it, reporting only through messages."""
        post = self.post_message
        try:
            suite = self._load_suite()
        except SuiteError as error:
            post(messages.SuiteFailed(generation, str(error), error.problems))
            return
        except Exception as error:
            post(messages.RunCrashed(generation, str(error), traceback.format_exc()))
            return
        post(messages.SuiteLoaded(generation, suite))
        stream = messages.ResultStream()

        def on_event(event: events.RunEvent) -> None:
            if cancel.is_set():
                return
            if isinstance(event, events.CaseFinished):
                if stream.add(event.result, event.done, event.total):
                    post(messages.CasesFinished(generation, stream))
            elif isinstance(event, events.RunStarted):
                post(messages.RunStarted(generation, event.total))
            elif isinstance(event, events.ImplementationLoaded):
                post(
                    messages.ImplementationLoaded(
                        generation, event.implementation_id, event.source_files
                    )
                )
            elif isinstance(event, events.ImplementationFailed):
                post(messages.ImplementationFailed(generation, event.reason, event.traceback))

        try:
            run = self._run(
                suite, replace(self.options, selection=selection), on_event=on_event, cancel=cancel
            )
        except RunCancelled:
            post(messages.RunCancelled(generation))
            return
        except Exception as error:
            post(messages.RunCrashed(generation, str(error), traceback.format_exc()))
            return
        if cancel.is_set():
            post(messages.RunCancelled(generation))
            return
        post(messages.RunFinished(generation, run))
        if self.history_path is not None:
            post(self._record(self.history_path, generation, suite, run))

    @staticmethod
    def _record(
        path: Path, generation: int, suite: Suite, run: RunResult
    ) -> messages.HistoryRecorded:
        """Write a finished run to the history and read back its flaky cases.

        Runs in the run worker's thread, after the results are on their way to the
        screen. Any failure becomes a message: the history never costs a run its results.
        """
        try:
            with History.open(path) as history:
                history.record(run, suite)
                flaky = history.flaky_names(
                    run.implementation_id, run.suite_hash or suite.content_hash
                )
        except HistoryError as error:
            return messages.HistoryRecorded(generation, run.run_id, error=str(error))
        except Exception as error:  # a bug in recording must not end the session
            return messages.HistoryRecorded(
                generation, run.run_id, error=f"cannot record the run in {path}: {error!r}"
            )
        return messages.HistoryRecorded(generation, run.run_id, flaky=flaky)

    def _load_suite(self) -> Suite:
        """The suite, reloaded only when its file changed since the last load."""
        try:
            stat = self.suite_path.stat()
        except OSError:
            return self._load(self.suite_path)
        key = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        cache = self._suite_cache
        if cache is not None and cache.key == key:
            return cache.suite
        suite = self._load(self.suite_path)
        self._suite_cache = _SuiteCache(key, suite)
        return suite

    def _is_current(self, message: messages.RunMessage) -> bool:
        return message.generation == self.generation and self.is_running

    def on_suite_loaded(self, message: messages.SuiteLoaded) -> None:
        if not self._is_current(message):
            return
        suite = message.suite
        changed = self.suite is None or suite.content_hash != self.suite.content_hash
        self.suite = suite
        if changed or not self.board.rows:
            self.board.set_suite(suite)
        if self.banner.kind == "suite-error":
            self.banner.clear()
        self.case_list.remove_class("-dimmed")
        self.board.begin_run(self._run_selection)
        self.case_list.rows_changed(layout=changed)
        self._refresh_header()
        self._refresh_summary()
        self._refresh_details()

    def on_suite_failed(self, message: messages.SuiteFailed) -> None:
        if not self._is_current(message):
            return
        self._suite_cache = None
        self.board.fail_suite()
        self.case_list.add_class("-dimmed")
        self.banner.show_error(
            "suite-error",
            "The suite does not load; the last results are kept, dimmed. "
            "Fix the file and it reruns.",
            message.message,
        )
        self.case_list.rows_changed()
        self._refresh_summary()

    def on_run_started(self, message: messages.RunStarted) -> None:
        if self._is_current(message):
            self.board.total = message.total
            self._refresh_summary()

    def on_implementation_loaded(self, message: messages.ImplementationLoaded) -> None:
        if not self._is_current(message):
            return
        if self.banner.kind == "import-error":
            self.banner.clear()
        self.implementation_id = message.implementation_id
        sources = tuple(sorted(message.source_files))
        if sources != self.sources:
            self.sources = sources
            if self.watching:
                self._restart_watch()
        self._refresh_header()

    def on_implementation_failed(self, message: messages.ImplementationFailed) -> None:
        if not self._is_current(message):
            return
        self.banner.show_error(
            "import-error",
            f"The implementation {self.options.impl} does not import: {message.reason}",
            message.traceback,
        )

    def on_cases_finished(self, message: messages.CasesFinished) -> None:
        if not self._is_current(message):
            return
        results, done, total = message.stream.drain()
        if not results:
            return
        self.board.record(results, done, total)
        self.case_list.rows_changed()
        self._refresh_summary()
        current = self.case_list.cursor_name
        if current is not None and any(r.case_name == current for r in results):
            self._refresh_details()

    def on_run_finished(self, message: messages.RunFinished) -> None:
        if not self._is_current(message):
            return
        self.board.finish_run(message.run)
        if self.banner.kind == "run-error":
            self.banner.clear()
        self._notes = message.run.notes
        self.runs_finished += 1
        self.case_list.rows_changed()
        self._refresh_summary()
        self._refresh_details()
        self._announce_change()
        if self.suite is not None:
            # Judge coverage by what the list shows: a rerun of the failed cases keeps
            # the other cases' earlier results, and so should the constraints.
            shown = tuple(row.result for row in self.board.rows if row.result is not None)
            self._coverage_input = (self.suite, replace(message.run, results=shown))
            self._request_coverage()

    @work(
        thread=True,
        exclusive=True,
        exit_on_error=False,
        group="coverage",
        description="compute constraint coverage",
    )
    def _compute_coverage(self, token: int, suite: Suite, run: RunResult) -> None:
        """Read commonsformat.md and judge its constraints, off the event loop."""
        self.post_message(
            messages.CoverageComputed(token, compute_view(self.suite_path, suite, run))
        )

    def _request_coverage(self) -> None:
        """Judge the last results again (after a run, or when the constraints changed)."""
        if self._coverage_input is None:
            return
        self._coverage_token += 1
        self._compute_coverage(self._coverage_token, *self._coverage_input)

    def on_coverage_computed(self, message: messages.CoverageComputed) -> None:
        if message.generation != self._coverage_token:
            return
        self.coverage_view = message.view
        self._refresh_details()

    def on_history_recorded(self, message: messages.HistoryRecorded) -> None:
        if message.error is not None:
            first = self.history_problem is None
            self.history_problem = message.error
            if first:
                self.notify(
                    f"{message.error}. The run is not recorded; its results are unaffected "
                    "and cer-tui goes on.",
                    title="History",
                    severity="warning",
                    timeout=10,
                )
            return
        self.runs_recorded += 1
        if message.generation < self._flaky_generation:
            return
        self._flaky_generation = message.generation
        if self.board.set_flaky(message.flaky):
            self.case_list.refresh()
            self._refresh_summary()
            self._refresh_details()

    def on_run_cancelled(self, message: messages.RunCancelled) -> None:
        if self._is_current(message):
            self.board.abandon_run()
            self._refresh_summary()

    def on_run_crashed(self, message: messages.RunCrashed) -> None:
        if not self._is_current(message):
            return
        self.board.abandon_run()
        self.banner.show_error(
            "run-error", f"The runner failed: {message.message}", message.traceback
        )
        self._refresh_summary()

    def _announce_change(self) -> None:
        """A toast when a run ends with other counts, or other statuses, than the last one."""
        counts = self.board.counts
        now = counts.as_tuple()
        previous, self._previous_counts = self._previous_counts, now
        if previous is None or (previous == now and not (counts.fixed or counts.regressed)):
            return
        parts = []
        if counts.fixed:
            parts.append(f"+{counts.fixed} fixed")
        if counts.regressed:
            parts.append(f"−{counts.regressed} regressed")
        tally = (
            (Status.PASS, counts.passed),
            (Status.FAIL, counts.failed),
            (Status.ERRORED, counts.errored),
            (Status.SKIPPED, counts.skipped),
        )
        parts.append("  ".join(f"{SYMBOLS[status]} {count}" for status, count in tally))
        severity: SeverityLevel = (
            "warning" if counts.regressed or counts.failed or counts.errored else "information"
        )
        self.notify("   ".join(parts), title="Run finished", severity=severity, timeout=4)

    # -- watching ---------------------------------------------------------------------

    def _restart_watch(self) -> None:
        import_dirs = (self.suite_path.parent, Path.cwd(), *map(Path, self.options.paths))
        self.plan = WatchPlan.build(self.suite_path, self.sources, self.extra_watch, import_dirs)
        self._watch_loop(self.plan)
        self._refresh_header()

    @work(exclusive=True, exit_on_error=False, group="watch", description="watch files")
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
                self.post_message(messages.FilesChanged(paths))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if worker.group == "watch" and event.state is WorkerState.ERROR:
            self.notify(
                f"Watching stopped: {worker.error}", title="Watch", severity="error", timeout=8
            )

    def on_files_changed(self, message: messages.FilesChanged) -> None:
        if not self.watching:
            return
        paths = tuple(path for path in message.paths if not self._is_history_file(path))
        if not paths:
            return  # recording a run must never trigger the next one
        sources = {Path(p).resolve() for p in self.sources}
        if any(path.resolve() not in sources for path in paths):
            self._suite_cache = None
        doc = (self.suite_path.parent / MODULE_DOC).resolve()
        if all(path.resolve() == doc for path in paths):
            # Only the constraints changed: judge the last results again, no rerun.
            self._request_coverage()
            return
        if self.paused:
            self._pending_changes.update(paths)
            self._refresh_header()
            return
        self.start_run(self.base_selection, self._describe_trigger(paths))

    def _is_history_file(self, path: Path) -> bool:
        """Whether ``path`` is the history database or one of SQLite's files beside it
        (a ``--history`` inside a watched folder would otherwise rerun forever)."""
        if self.history_path is None:
            return False
        database = self.history_path.resolve()
        return path.resolve() in {
            database,
            *(database.with_name(database.name + end) for end in ("-wal", "-shm", "-journal")),
        }

    def _describe_trigger(self, paths: Sequence[Path]) -> str:
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

    # -- header, summary, details -----------------------------------------------------

    def _refresh_header(self) -> None:
        target = ""
        if self.suite is not None:
            target = " ".join(
                part for part in (self.suite.target, self.suite.target_version) if part
            )
        if not self.watching:
            watch = "not watching"
        elif self.paused:
            waiting = len(self._pending_changes)
            watch = "watching paused" + (f" ({waiting} changed)" if waiting else "")
        else:
            count = self.plan.path_count if self.plan is not None else 0
            watch = f"watching {count} path{'s' if count != 1 else ''}"
        self.query_one("#header", HeaderBar).show(
            HeaderState(target, self.options.impl, watch, self.trigger)
        )

    def _refresh_summary(self) -> None:
        board = self.board
        filters = []
        if board.filters.failures_only:
            filters.append("failures only")
        if board.filters.text.strip():
            filters.append(f"“{board.filters.text.strip()}”")
        if board.filters.group is not None:
            filters.append(board.filters.group.label)
        elapsed = None
        if board.last_run is not None:
            elapsed = max(0, board.last_run.completed_at_ms - board.last_run.started_at_ms)
        self.query_one("#summary", SummaryBar).show(
            SummaryState(
                counts=replace(board.counts),
                running=board.running,
                done=board.done,
                total=board.total or len(board.rows),
                elapsed_ms=elapsed,
                shown=len(board.visible()),
                rows=len(board.rows),
                filters=", ".join(filters),
                flaky=board.flaky_count,
            )
        )

    def detail_styles(self) -> DetailStyles:
        """The panes' styles from the current theme (cached until the theme changes)."""
        if self._detail_styles is None:
            diff = self.query_one("#diff-pane", DiffPane).diff_styles()
            output = self.query_one("#output-pane", OutputPane)
            case_list = self.case_list

            def status(component: str) -> Style:
                return case_list.get_component_rich_style(component, partial=True)

            self._detail_styles = DetailStyles(
                diff=diff,
                heading=output.section_style("heading"),
                label=output.section_style("label"),
                path=diff.header,
                stderr=output.section_style("stderr"),
                traceback=output.section_style("traceback"),
                statuses={
                    Status.PASS: status("case-list--pass"),
                    Status.FAIL: status("case-list--fail"),
                    Status.ERRORED: status("case-list--errored"),
                    Status.SKIPPED: status("case-list--skipped"),
                    None: status("case-list--pending"),
                },
            )
        return self._detail_styles

    @property
    def details_settled(self) -> bool:
        """Whether the panes show the latest details of the highlighted case."""
        return self.details_shown == (self.case_list.cursor_name, self._details_token)

    def _refresh_details(self) -> None:
        row = self.case_list.highlighted_row
        self._details_token += 1
        snapshot = None
        flaky = False
        if row is not None:
            snapshot = Row(row.case, row.result, row.stale, row.baseline)
            flaky = row.name in self.board.flaky
        self._render_details(
            snapshot,
            self.detail_styles(),
            _DetailContext(self._notes, flaky, self.coverage_view, self.suite_path.name),
            self._details_token,
        )

    @work(
        thread=True,
        exclusive=True,
        exit_on_error=False,
        group="details",
        description="render the selected case",
    )
    def _render_details(
        self, row: Row | None, styles: DetailStyles, context: _DetailContext, token: int
    ) -> None:
        """Diff and format the selected case (and its coverage) off the event loop."""
        details = render_details(
            row,
            styles,
            context.notes,
            flaky=context.flaky,
            coverage=context.coverage,
            suite_name=context.suite_name,
        )
        self.post_message(
            messages.DetailsRendered(
                None if row is None else row.name,
                token,
                details.reason,
                details.diff,
                details.output,
                details.case,
                details.coverage,
            )
        )

    def on_details_rendered(self, message: messages.DetailsRendered) -> None:
        if message.token != self._details_token:
            return
        self.details_shown = (message.case_name, message.token)
        self.query_one("#reason-pane", TextPane).show(message.reason)
        self.query_one("#diff-pane", DiffPane).set_lines(message.diff)
        self.query_one("#output-pane", OutputPane).set_lines(message.output)
        self.query_one("#case-pane", TextPane).show(message.case)
        self.query_one("#coverage-pane", TextPane).show(message.coverage)

    @on(CaseList.CaseHighlighted)
    def _case_highlighted(self, event: CaseList.CaseHighlighted) -> None:
        self._refresh_details()

    # -- filter input -------------------------------------------------------------------

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self._set_filters(text=event.value)

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        self._close_filter()

    def _close_filter(self) -> None:
        self.query_one("#filter", Input).remove_class("-shown")
        self.case_list.focus()

    def _set_filters(
        self,
        *,
        failures_only: bool | None = None,
        text: str | None = None,
        group: GroupKey | bool | None = False,
    ) -> None:
        self.board.set_filters(failures_only=failures_only, text=text, group=group)
        self.case_list.rows_changed()
        self._refresh_summary()

    # -- actions ------------------------------------------------------------------------

    def action_rerun_all(self) -> None:
        self.start_run(self.base_selection, "rerun: requested")

    def action_rerun_failed(self) -> None:
        if self.runs_finished == 0 and self.history_path is not None:
            # Nothing failed in this session yet: take up where the last session stopped.
            self._recorded_failures(
                self.history_path, None if self.suite is None else self.suite.content_hash
            )
            return
        self._rerun_session_failures()

    def _rerun_session_failures(self) -> None:
        failed = self.board.failed_names()
        if not failed:
            self.notify("No failed or errored cases to rerun.", title="Rerun failed")
            return
        count = len(failed)
        self.start_run(
            replace(self.base_selection, names=failed),
            f"rerun: {count} failed case{'s' if count != 1 else ''}",
        )

    @work(
        thread=True,
        exclusive=True,
        exit_on_error=False,
        group="history",
        description="read the last recorded failures",
    )
    def _recorded_failures(self, path: Path, suite_hash: str | None) -> None:
        """Ask the history for the failed cases of the latest recorded run of the suite."""
        post = self.post_message
        if not path.is_file():
            post(messages.RecordedFailures(None, problem=f"no run history yet at {path}"))
            return
        try:
            with History.open(path, create=False) as history:
                latest = history.latest_failed(suite_path=self.suite_path, suite_hash=suite_hash)
        except HistoryError as error:
            post(messages.RecordedFailures(None, problem=str(error), error=True))
            return
        if latest is None:
            post(
                messages.RecordedFailures(
                    None, problem=f"no run of {self.suite_path.name} is recorded in {path}"
                )
            )
            return
        post(messages.RecordedFailures(latest.names, run_id=latest.run_id))

    def on_recorded_failures(self, message: messages.RecordedFailures) -> None:
        if self.runs_finished:
            # A run of this session finished meanwhile: its results are newer.
            self._rerun_session_failures()
            return
        if message.names is None:
            self.notify(
                f"Nothing to rerun: {message.problem}.",
                title="Rerun failed",
                severity="warning" if message.error else "information",
            )
            return
        names = message.names
        if self.suite is not None:
            present = {case.name for case in self.suite.cases}
            names = tuple(name for name in names if name in present)
        short = message.run_id[:8]
        if not names:
            self.notify(
                f"The last recorded run ({short}) has no failed or errored case in this suite.",
                title="Rerun failed",
            )
            return
        count = len(names)
        self.start_run(
            replace(self.base_selection, names=frozenset(names)),
            f"rerun: {count} failed case{'s' if count != 1 else ''} of recorded run {short}",
        )

    def action_toggle_failures(self) -> None:
        self._set_filters(failures_only=not self.board.filters.failures_only)

    def action_start_filter(self) -> None:
        field = self.query_one("#filter", Input)
        field.add_class("-shown")
        field.focus()

    def action_group_by(self) -> None:
        def chosen(result: GroupKey | bool | None) -> None:
            if result is False:
                return
            self._set_filters(group=result if isinstance(result, GroupKey) else None)

        self.push_screen(GroupScreen(self.board.groups(), self.board.filters.group), chosen)

    def action_focus_details(self) -> None:
        tabs = self.query_one("#details", TabbedContent)
        pane = self.query_one(f"#{tabs.active}-pane")
        pane.focus()

    def action_cycle_pane(self) -> None:
        tabs = self.query_one("#details", TabbedContent)
        current = PANES.index(tabs.active) if tabs.active in PANES else -1
        tabs.active = PANES[(current + 1) % len(PANES)]
        if isinstance(self.focused, (LinePane, TextPane)):
            self.action_focus_details()

    def action_step_back(self) -> None:
        field = self.query_one("#filter", Input)
        if field.has_focus:
            field.value = ""
            self._close_filter()
            return
        if self.focused is not self.case_list:
            self.case_list.focus()
            return
        filters = self.board.filters
        if filters.text or filters.group is not None:
            field.value = ""
            self._set_filters(text="", group=None)

    def action_edit_case(self) -> None:
        row = self.case_list.highlighted_row
        if row is None:
            return
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        command = editor_command(editor, self.suite_path, row.case.line)
        try:
            with self.suspend():
                self._launcher(command)
        except SuspendNotSupported:
            self.notify("Cannot open an editor from here.", severity="warning")
        except OSError as error:
            self.notify(f"Cannot start {command[0]}: {error}", severity="error")

    def action_copy_repro(self) -> None:
        row = self.case_list.highlighted_row
        if row is None:
            return
        command = repro_command(self.suite_path, self.options, row.name)
        self.copy_to_clipboard(command)
        self.notify(command, title="Copied")

    def action_cycle_theme(self) -> None:
        names = list(self.themes)
        following = names[(names.index(self.theme_file.name) + 1) % len(names)]
        self.use_theme(following)
        self.notify(f"Theme: {following}", timeout=2)

    def use_theme(self, name: str) -> None:
        """Swap the theme stylesheet in place and restyle everything."""
        new = self.themes[name]
        old = self.theme_file
        if new == old:
            return
        self.stylesheet.source.pop((str(old.path), ""), None)
        self.stylesheet.add_source(
            new.path.read_text(encoding="utf-8"), read_from=(str(new.path), "")
        )
        self.css_path = [APP_CSS, new.path]
        self.theme_file = new
        if self.theme != new.base:
            self.theme = new.base
        self.refresh_css(animate=False)
        self._detail_styles = None
        self.case_list.refresh()
        self._refresh_details()

    def action_toggle_watch(self) -> None:
        if not self.watching:
            self.notify("Started with --no-watch: nothing to pause.", severity="warning")
            return
        self.paused = not self.paused
        pending = tuple(sorted(self._pending_changes))
        if not self.paused:
            self._pending_changes.clear()
        self._refresh_header()
        if not self.paused and pending:
            self.start_run(self.base_selection, self._describe_trigger(pending))

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Keep the app's keys out of the modal screens and the filter field."""
        if action == "quit":
            return True
        if self.screen is not self.screen_stack[0]:
            return False
        focused = self.focused
        return not (isinstance(focused, Input) and action != "step_back")


def create_app(
    suite_path: Path,
    options: RunOptions,
    *,
    run: RunFunction = run_suite,
    load: LoadFunction = load_suite,
    watch: bool = True,
    theme: str = DEFAULT_THEME,
    extra_watch: Iterable[str | Path] = (),
    launcher: Launcher = _run_subprocess,
    history: Path | None = None,
) -> CerApp:
    """Build the app for ``suite_path``; the CLI and the tests both come through here.

    ``history`` is the database every finished run is recorded in; None (the default,
    so that tests never write beside a suite by accident) records nothing. The command
    line passes ``.cer/history.sqlite`` beside the suite unless ``--no-history``.
    """
    return CerApp(
        suite_path,
        options,
        run=run,
        load=load,
        watch=watch,
        theme=theme,
        extra_watch=extra_watch,
        launcher=launcher,
        history=history,
    )
