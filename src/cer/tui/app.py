"""The cer-tui application: watch, rerun in the background, triage at a glance.

The runner and the suite loader are injected through :func:`create_app`, which both the
command line and the tests use: tests hand in a fake ``run`` that emits events from
model objects, so they stay fast and deterministic. Loading and running happen in a
thread worker; watching in an async worker; the event loop only draws.

With several implementations the same worker runs each of them in turn, every run
recorded on its own; each implementation's results live in a board of their own (the
first one's board owns the filters, the others are its peers), the list shows a cell
per implementation, and a matrix built after each run feeds the Matrix view and the
agreement marks. With one implementation the screen is the one it always was.
"""

from __future__ import annotations

import functools
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
from textual.css.query import NoMatches
from textual.notifications import SeverityLevel
from textual.theme import BUILTIN_THEMES, Theme
from textual.widgets import Footer, Input, TabbedContent, TabPane
from textual.worker import Worker, WorkerState
from watchfiles import awatch

from cer import events
from cer.coverage import MODULE_DOC
from cer.history import History, HistoryError
from cer.matrix import Matrix, build_matrix, short_label, unique_labels
from cer.model import Case, RunResult, Status, Suite
from cer.options import implementation_stem
from cer.runner import RunCancelled, RunOptions, WarmWorkers, resolve_jobs, run_suite
from cer.safetext import displayed, for_terminal
from cer.selection import Selection
from cer.suite import SuiteError, load_suite
from cer.tui import messages
from cer.tui.keys import app_keys, bindings
from cer.tui.screens.group import GroupScreen
from cer.tui.screens.help import HelpScreen
from cer.tui.screens.matrix import MatrixScreen
from cer.tui.state.board import Board, GroupKey, Row
from cer.tui.state.coverage_view import CoverageView, ModuleDoc, compute_view, read_doc
from cer.tui.state.details import DetailStyles, render_details
from cer.tui.state.formatting import SYMBOLS
from cer.tui.state.side_by_side import Lane, render_details_many
from cer.tui.state.themes import DEFAULT_THEME, ThemeFile, find_themes
from cer.tui.state.watching import DEBOUNCE_MS, STEP_MS, WatchPlan
from cer.tui.widgets.banner import Banner
from cer.tui.widgets.case_list import CaseList
from cer.tui.widgets.diff_pane import DiffPane
from cer.tui.widgets.header_bar import HeaderBar, HeaderState
from cer.tui.widgets.line_pane import LinePane
from cer.tui.widgets.output_pane import OutputPane
from cer.tui.widgets.summary_bar import LaneSummary, SummaryBar, SummaryState
from cer.tui.widgets.text_pane import TextPane

APP_CSS = Path(__file__).with_name("app.tcss")
PANES: tuple[str, ...] = ("reason", "diff", "output", "case", "coverage")
IMPL_OPTIONS: dict[str, str] = {
    "python": "--impl",
    "command": "--impl-cmd",
    "command-per-case": "--impl-cmd-per-case",
}
"""The ``cer run`` option that names an implementation of each kind."""


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
    return repro_command_many(suite_path, (options,), case_name)


def repro_command_many(
    suite_path: Path, implementations: Sequence[RunOptions], case_name: str
) -> str:
    """A one-line ``cer run`` that reruns one case against every implementation, each
    named by the option of its kind; the other settings are shared, so the first
    implementation's are used."""
    options = implementations[0]
    words = ["cer", "run", str(suite_path)]
    for each in implementations:
        words += [IMPL_OPTIONS.get(each.kind, "--impl"), each.impl]
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


def textual_theme(theme: ThemeFile) -> Theme:
    """``theme`` as a Textual theme: its base's colours for the stock widgets (footer,
    tabs, inputs), under its own name, with its ``cer-*`` colours as extra variables."""
    base = BUILTIN_THEMES[theme.base]
    return replace(base, name=theme.name, variables={**base.variables, **theme.variables})


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
    """Watches a suite and its implementations and shows every case's latest result."""

    TITLE = "cer"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = list(bindings(app_keys(several=True)))
    """Every key; those of several implementations are hidden (check_action) with one."""

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
        implementations: Sequence[RunOptions] = (),
        labels: Sequence[str] = (),
    ) -> None:
        chosen = tuple(implementations) or (options,)
        if chosen[0] != options:
            raise ValueError("options must be the first of the implementations")
        names = tuple(labels) or unique_labels([short_label(o.kind, o.impl) for o in chosen])
        if len(names) != len(chosen):
            raise ValueError(f"{len(names)} labels for {len(chosen)} implementations")
        self.themes = find_themes()
        if theme not in self.themes:
            known = ", ".join(self.themes) or "none found"
            raise ValueError(f"unknown theme {theme!r} (known: {known})")
        super().__init__(css_path=[APP_CSS])
        for each in self.themes.values():
            self.register_theme(textual_theme(each))
        self.theme = theme
        self.suite_path = suite_path
        self.options = options
        """The first implementation's options (the only one's, usually)."""
        self.implementations: tuple[RunOptions, ...] = chosen
        self.labels: tuple[str, ...] = names
        """Each implementation's short label, as ``cer run`` heads its matrix columns."""
        self.several = len(chosen) > 1
        self.base_selection = options.selection
        self.board = Board()
        """The first implementation's results; it owns the filters."""
        self.boards: tuple[Board, ...] = (self.board, *(Board() for _ in chosen[1:]))
        """One board per implementation, in column order; the first is ``board``."""
        self.board.peers = self.boards[1:]
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
        self.module_doc = ModuleDoc(self.suite_path)
        """The module's commonsformat.md as the current run read it before it started."""
        self._flaky_generation = 0
        count = len(chosen)
        self.implementation_ids: list[str] = [""] * count
        self.sources_by: list[tuple[str, ...] | None] = [None] * count
        """Each implementation's source files as the runner reported them; None until
        it has loaded once."""
        self._fallback: bool | None = None
        self.running_index = 0
        """The implementation whose run is in flight (or ran last)."""
        self.notes_by: list[tuple[str, ...]] = [()] * count
        self.coverage_views: tuple[CoverageView, ...] = (CoverageView(),) * count
        self._coverage_inputs: list[tuple[Suite, RunResult] | None] = [None] * count
        self.matrix: Matrix | None = None
        """The matrix of what the list shows, rebuilt after each implementation's run."""
        self._matrix_token = 0
        self._import_failures: dict[int, tuple[str, str]] = {}
        self._crashes: dict[int, tuple[str, str]] = {}
        self._previous_lanes: tuple[tuple[int, int, int, int], ...] | None = None

    # -- layout -----------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield HeaderBar(id="header")
        yield SummaryBar(id="summary")
        yield Banner(id="banner")
        with Horizontal(id="main"):
            yield CaseList(self.board, labels=self.labels if self.several else (), id="cases")
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
        self.theme_changed_signal.subscribe(self, self._theme_changed)
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

    warm_workers: WarmWorkers | None = None
    """Workers started ahead of the next run; ended with the app."""

    def on_unmount(self) -> None:
        if self._cancel is not None:
            self._cancel.set()
        if self.warm_workers is not None:
            self.warm_workers.close()

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
        for board in self.boards:
            board.running = True
            board.done = 0
        self.running_index = 0
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
        """Load the suite and run every implementation on it in turn, reporting only
        through messages."""
        post = self.post_message
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
        post(messages.SuiteLoaded(generation, suite, read_doc(self.suite_path)))
        completed = 0
        for index, options in enumerate(self.implementations):
            if index and cancel.is_set():
                post(messages.RunCancelled(generation))
                return
            outcome = self._run_one(
                generation, index, replace(options, selection=selection), suite, cancel
            )
            if outcome is None:
                return
            completed += outcome
        if self.several:
            post(messages.RunsFinished(generation, completed))

    def _run_one(
        self,
        generation: int,
        index: int,
        options: RunOptions,
        suite: Suite,
        cancel: threading.Event,
    ) -> int | None:
        """Run one implementation and record its run; 1 when it finished, 0 when the
        runner crashed (the next implementation still runs), None when cancelled."""
        post = self.post_message
        stream = messages.ResultStream()

        def on_event(event: events.RunEvent) -> None:
            if cancel.is_set():
                return
            if isinstance(event, events.CaseFinished):
                # Shown, never obeyed: the implementation's text cannot drive the
                # terminal (cer.safetext.displayed).
                if stream.add(displayed(event.result), event.done, event.total):
                    post(messages.CasesFinished(generation, stream, index))
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

        try:
            run = self._run(suite, options, on_event=on_event, cancel=cancel)
        except RunCancelled:
            post(messages.RunCancelled(generation))
            return None
        except Exception as error:
            post(messages.RunCrashed(generation, str(error), traceback.format_exc(), index))
            return 0
        if cancel.is_set():
            post(messages.RunCancelled(generation))
            return None
        shown = replace(
            run,
            results=tuple(displayed(result) for result in run.results),
            notes=tuple(for_terminal(note) for note in run.notes),
            implementation_id=for_terminal(run.implementation_id, multiline=False),
        )
        post(messages.RunFinished(generation, shown, index))
        if self.history_path is not None:
            post(self._record(self.history_path, generation, suite, run, index))
        return 1

    @staticmethod
    def _record(
        path: Path, generation: int, suite: Suite, run: RunResult, index: int = 0
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
            return messages.HistoryRecorded(
                generation, run.run_id, error=str(error), implementation=index
            )
        except Exception as error:  # a bug in recording must not end the session
            return messages.HistoryRecorded(
                generation,
                run.run_id,
                error=f"cannot record the run in {path}: {error!r}",
                implementation=index,
            )
        return messages.HistoryRecorded(generation, run.run_id, flaky=flaky, implementation=index)

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
        self.module_doc = message.module_doc
        if changed or not self.board.rows:
            for board in self.boards:
                board.set_suite(suite)
        if self.banner.kind == "suite-error":
            self.banner.clear()
        self.case_list.remove_class("-dimmed")
        for board in self.boards:
            board.begin_run(self._run_selection)
        self.case_list.rows_changed(layout=changed)
        self._refresh_header()
        self._refresh_summary()
        self._refresh_details()

    def on_suite_failed(self, message: messages.SuiteFailed) -> None:
        if not self._is_current(message):
            return
        self._suite_cache = None
        for board in self.boards:
            board.fail_suite()
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
            self.running_index = message.implementation
            self.boards[message.implementation].total = message.total
            self._refresh_summary()

    def on_implementation_loaded(self, message: messages.ImplementationLoaded) -> None:
        if not self._is_current(message):
            return
        index = message.implementation
        if self.several:
            self._import_failures.pop(index, None)
            self._show_import_failures()
        elif self.banner.kind == "import-error":
            self.banner.clear()
        if index == 0:
            self.implementation_id = message.implementation_id
        self.implementation_ids[index] = message.implementation_id
        self.sources_by[index] = tuple(sorted(message.source_files))
        sources = self._all_sources()
        fallback = self._needs_fallback()
        if sources != self.sources or fallback != self._fallback:
            self.sources = sources
            if self.watching:
                self._restart_watch()
        self._refresh_header()

    def _all_sources(self) -> tuple[str, ...]:
        """Every implementation's reported source files, sorted, without repeats."""
        if not self.several:
            return self.sources_by[0] or ()
        return tuple(sorted({path for files in self.sources_by if files for path in files}))

    def _needs_fallback(self) -> bool | None:
        """Whether to watch the import folders' ``.py`` files for an implementation not
        loaded yet: with several, when a Python one has not reported its files (command
        implementations are watched through the files they report and ``--watch``);
        None with one, which keeps the watch plan's own rule."""
        if not self.several:
            return None
        return any(
            files is None and options.kind == "python"
            for files, options in zip(self.sources_by, self.implementations, strict=True)
        )

    def on_implementation_failed(self, message: messages.ImplementationFailed) -> None:
        if not self._is_current(message):
            return
        if self.several:
            self._import_failures[message.implementation] = (message.reason, message.traceback)
            self._show_import_failures()
            return
        self.banner.show_error(
            "import-error",
            f"The implementation {self.options.impl} does not import: {message.reason}",
            message.traceback,
        )

    def _show_import_failures(self) -> None:
        """The banner for the implementations that did not load, or none."""
        failures = sorted(self._import_failures.items())
        if not failures:
            if self.banner.kind == "import-error":
                self.banner.clear()
            return
        if len(failures) == 1:
            ((index, (reason, _trace)),) = failures
            title = (
                f"The implementation {self.labels[index]} ({self.implementations[index].impl}) "
                f"does not load: {reason}"
            )
        else:
            names = ", ".join(self.labels[index] for index, _ in failures)
            title = f"{len(failures)} implementations do not load: {names}"
        body = "\n".join(
            f"── {self.labels[index]} ──\n{trace or reason}" for index, (reason, trace) in failures
        )
        self.banner.show_error("import-error", title, body)

    def on_cases_finished(self, message: messages.CasesFinished) -> None:
        if not self._is_current(message):
            return
        results, done, total = message.stream.drain()
        if not results:
            return
        self.boards[message.implementation].record(results, done, total)
        if self.several:
            self.board.refilter()
        self.case_list.rows_changed()
        self._refresh_summary()
        current = self.case_list.cursor_name
        if current is not None and any(r.case_name == current for r in results):
            self._refresh_details()

    def on_run_finished(self, message: messages.RunFinished) -> None:
        if not self._is_current(message):
            return
        if self.several:
            self._lane_finished(message.implementation, message.run)
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

    def _lane_finished(self, index: int, run: RunResult) -> None:
        """One of several implementations finished its run: show it, and keep what its
        coverage is to be judged by once every implementation has had its turn."""
        self.boards[index].finish_run(run)
        self.board.refilter()
        self.notes_by[index] = run.notes
        crashed = self._crashes.pop(index, None) is not None
        if crashed and not self._crashes and self.banner.kind == "run-error":
            self.banner.clear()
        self.case_list.rows_changed()
        self._refresh_summary()
        self._refresh_details()
        if self.suite is not None:
            shown = tuple(row.result for row in self.boards[index].rows if row.result is not None)
            self._coverage_inputs[index] = (self.suite, replace(run, results=shown))

    def on_runs_finished(self, message: messages.RunsFinished) -> None:
        """Every implementation has had its turn: the cycle counts as one finished run,
        and the matrix and the coverage are judged again by what the list shows (once
        per cycle: a matrix of 65,000 cases takes seconds to build)."""
        if not self._is_current(message):
            return
        if message.completed:
            self.runs_finished += 1
            self._request_coverage()
            self._request_matrix()
        self._refresh_summary()
        self._announce_lanes()

    def _request_matrix(self) -> None:
        """Build the matrix again from what the list shows, off the event loop."""
        suite = self.suite
        if suite is None:
            return
        runs = []
        for index, board in enumerate(self.boards):
            base = board.last_run
            if base is None:
                impl = self.implementations[index].impl
                base = RunResult(
                    run_id="",
                    target_module=suite.target or "",
                    implementation_id=self.implementation_ids[index] or impl,
                    started_at_ms=0,
                    completed_at_ms=0,
                    results=(),
                    implementation=impl,
                )
            # What the list shows, and for a case it shows nothing for (deselected since
            # the session started) the last run's own result: skipped, deselected.
            merged = {result.case_name: result for result in base.results}
            for row in board.rows:
                if row.result is not None:
                    merged[row.name] = row.result
            runs.append(replace(base, results=tuple(merged.values())))
        self._matrix_token += 1
        self._compute_matrix(self._matrix_token, suite, tuple(runs))

    @work(
        thread=True,
        exclusive=True,
        exit_on_error=False,
        group="matrix",
        description="build the matrix",
    )
    def _compute_matrix(self, token: int, suite: Suite, runs: tuple[RunResult, ...]) -> None:
        """Compare the implementations case by case (cer.matrix), off the event loop."""
        self.post_message(messages.MatrixComputed(token, build_matrix(suite, runs, self.labels)))

    def on_matrix_computed(self, message: messages.MatrixComputed) -> None:
        if message.generation != self._matrix_token:
            return
        matrix = message.matrix
        self.matrix = matrix
        self.board.set_agreements({row.case_name: row.agreement for row in matrix.rows})
        self.case_list.refresh()
        self._refresh_summary()
        self._refresh_details()
        if isinstance(self.screen, MatrixScreen):
            self.screen.update(matrix)

    @work(
        thread=True,
        exclusive=True,
        exit_on_error=False,
        group="coverage",
        description="compute constraint coverage",
    )
    def _compute_coverages(
        self, token: int, doc: ModuleDoc, inputs: tuple[tuple[Suite, RunResult] | None, ...]
    ) -> None:
        """Each implementation's coverage, off the event loop (several implementations)."""
        views = tuple(
            CoverageView() if given is None else compute_view(doc, *given) for given in inputs
        )
        self.post_message(messages.CoveragesComputed(token, views))

    def on_coverages_computed(self, message: messages.CoveragesComputed) -> None:
        if message.generation != self._coverage_token:
            return
        self.coverage_views = message.views
        self.coverage_view = message.views[0]
        self._refresh_details()

    @work(
        thread=True,
        exclusive=True,
        exit_on_error=False,
        group="coverage",
        description="compute constraint coverage",
    )
    def _compute_coverage(self, token: int, doc: ModuleDoc, suite: Suite, run: RunResult) -> None:
        """Judge the constraints the run read before it started, off the event loop."""
        self.post_message(messages.CoverageComputed(token, compute_view(doc, suite, run)))

    def _request_coverage(self) -> None:
        """Judge the last results again (after a run, or when the constraints changed)."""
        if self.several:
            if any(given is not None for given in self._coverage_inputs):
                self._coverage_token += 1
                self._compute_coverages(
                    self._coverage_token, self.module_doc, tuple(self._coverage_inputs)
                )
            return
        if self._coverage_input is None:
            return
        self._coverage_token += 1
        self._compute_coverage(self._coverage_token, self.module_doc, *self._coverage_input)

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
        if self.boards[message.implementation].set_flaky(message.flaky):
            self.case_list.refresh()
            self._refresh_summary()
            self._refresh_details()

    def on_run_cancelled(self, message: messages.RunCancelled) -> None:
        if self._is_current(message):
            for board in self.boards:
                board.abandon_run()
            self._refresh_summary()

    def on_run_crashed(self, message: messages.RunCrashed) -> None:
        if not self._is_current(message):
            return
        if self.several:
            # The next implementation still runs; the banner names the one that crashed.
            index = message.implementation
            self.boards[index].abandon_run()
            self._crashes[index] = (message.message, message.traceback)
            label = self.labels[index]
            self.banner.show_error(
                "run-error",
                f"The runner failed on {label}: {message.message}",
                message.traceback,
            )
            self._refresh_summary()
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

    def _announce_lanes(self) -> None:
        """A toast when the runs of several implementations end with other counts, or
        with cases fixed or regressed, than the last time: each one's counts by label."""
        now = tuple(board.counts.as_tuple() for board in self.boards)
        previous, self._previous_lanes = self._previous_lanes, now
        fixed = sum(board.counts.fixed for board in self.boards)
        regressed = sum(board.counts.regressed for board in self.boards)
        if previous is None or (previous == now and not (fixed or regressed)):
            return
        parts = []
        if fixed:
            parts.append(f"+{fixed} fixed")
        if regressed:
            parts.append(f"−{regressed} regressed")
        for label, board in zip(self.labels, self.boards, strict=True):
            counts = board.counts
            tally = [f"{SYMBOLS[Status.PASS]} {counts.passed}"]
            for status, count in (
                (Status.FAIL, counts.failed),
                (Status.ERRORED, counts.errored),
                (Status.SKIPPED, counts.skipped),
            ):
                if count:
                    tally.append(f"{SYMBOLS[status]} {count}")
            parts.append(f"{label} {' '.join(tally)}")
        failing = any(board.counts.failed or board.counts.errored for board in self.boards)
        severity: SeverityLevel = "warning" if regressed or failing else "information"
        self.notify("   ".join(parts), title="Runs finished", severity=severity, timeout=4)

    # -- watching ---------------------------------------------------------------------

    def _restart_watch(self) -> None:
        import_dirs = (self.suite_path.parent, Path.cwd(), *map(Path, self.options.paths))
        self._fallback = self._needs_fallback()
        self.plan = WatchPlan.build(
            self.suite_path, self.sources, self.extra_watch, import_dirs, self._fallback
        )
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
        if all(path.resolve() == doc for path in paths) and not any(b.running for b in self.boards):
            # Only the constraints changed, between runs: judge the last results again
            # on the file as it is now, no rerun. During a run the change may come from
            # the implementation, so it is judged on what the next run reads first.
            self.module_doc = read_doc(self.suite_path)
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
        implementation = self.options.impl
        if self.several:
            implementation = f"{len(self.labels)} implementations: {', '.join(self.labels)}"
        self.query_one("#header", HeaderBar).show(
            HeaderState(target, implementation, watch, self.trigger)
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
        if self.several:
            self._refresh_lanes_summary(", ".join(filters))
            return
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

    def _refresh_lanes_summary(self, filters: str) -> None:
        """The summary bar of several implementations: each one's totals by label."""
        board = self.board
        finished = [lane.last_run for lane in self.boards if lane.last_run is not None]
        elapsed = None
        if finished:
            elapsed = max(
                0,
                max(run.completed_at_ms for run in finished)
                - min(run.started_at_ms for run in finished),
            )
        index = self.running_index
        running = self.boards[index]
        self.query_one("#summary", SummaryBar).show(
            SummaryState(
                counts=replace(board.counts),
                running=any(lane.running for lane in self.boards),
                done=running.done,
                total=running.total or len(running.rows),
                elapsed_ms=elapsed,
                shown=len(board.visible()),
                rows=len(board.rows),
                filters=filters,
                lanes=tuple(
                    LaneSummary(label, replace(lane.counts), lane.flaky_count)
                    for label, lane in zip(self.labels, self.boards, strict=True)
                ),
                running_label=f"{self.labels[index]} {index + 1}/{len(self.labels)}",
                disagreements=None if self.matrix is None else len(self.matrix.disagreements),
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
        if self.several:
            self._refresh_details_many(row)
            return
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

    def _refresh_details_many(self, row: Row | None) -> None:
        """Snapshot every implementation's row of the highlighted case for the worker."""
        lanes: tuple[Lane, ...] = ()
        case = None
        index = None if row is None else self.board.index_of(row.name)
        if row is not None and index is not None:
            case = row.case
            lanes = tuple(
                Lane(
                    label,
                    Row(lane.case, lane.result, lane.stale, lane.baseline),
                    flaky=lane.name in board.flaky,
                    notes=notes,
                )
                for label, lane, board, notes in zip(
                    self.labels,
                    self.board.lanes_at(index),
                    self.boards,
                    self.notes_by,
                    strict=True,
                )
            )
        self._render_details_many(
            case,
            lanes,
            tuple(zip(self.labels, self.coverage_views, strict=True)),
            () if self.matrix is None else self.matrix.unobserved,
            self.detail_styles(),
            self._details_token,
        )

    @work(
        thread=True,
        exclusive=True,
        exit_on_error=False,
        group="details",
        description="render the selected case",
    )
    def _render_details_many(
        self,
        case: Case | None,
        lanes: tuple[Lane, ...],
        coverages: tuple[tuple[str, CoverageView], ...],
        unobserved: tuple[str, ...],
        styles: DetailStyles,
        token: int,
    ) -> None:
        """Compare and format the selected case across implementations off the loop."""
        details = render_details_many(
            case,
            lanes,
            styles,
            coverages=coverages,
            unobserved=unobserved,
            suite_name=self.suite_path.name,
        )
        self.post_message(
            messages.DetailsRendered(
                None if case is None else case.name,
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
        try:
            reason = self.query_one("#reason-pane", TextPane)
        except NoMatches:
            return  # a late answer while the app closes: the panes are gone
        self.details_shown = (message.case_name, message.token)
        reason.show(message.reason)
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
            if self.several:
                self._recorded_failures_many(self.history_path)
                return
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

    @work(
        thread=True,
        exclusive=True,
        exit_on_error=False,
        group="history",
        description="read the last recorded failures",
    )
    def _recorded_failures_many(self, path: Path) -> None:
        """The cases that failed or errored in the newest recorded run of *each*
        implementation (as ``cer run --failed`` takes them), so that every implementation
        reruns the same cases and the matrix stays complete."""
        post = self.post_message
        if not path.is_file():
            post(messages.RecordedFailures(None, problem=f"no run history yet at {path}"))
            return
        names: set[str] = set()
        run_ids: list[str] = []
        try:
            with History.open(path, create=False) as history:
                for label, options in zip(self.labels, self.implementations, strict=True):
                    record = history.newest_run_of(
                        options.impl, implementation_stem(options), suite_path=self.suite_path
                    )
                    if record is None:
                        problem = (
                            f"no run of {label} on {self.suite_path.name} is recorded in {path}"
                        )
                        post(messages.RecordedFailures(None, problem=problem))
                        return
                    run_ids.append(record.short_id)
                    names.update(
                        name
                        for name, status, _ in history.statuses(record.run_id)
                        if status in (Status.FAIL.value, Status.ERRORED.value)
                    )
        except HistoryError as error:
            post(messages.RecordedFailures(None, problem=str(error), error=True))
            return
        post(messages.RecordedFailures(tuple(sorted(names)), run_id=", ".join(run_ids)))

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
        if self.several:
            short = message.run_id
        if not names:
            which = f"recorded run{'s' if self.several else ''} ({short}) "
            which += "have" if self.several else "has"
            self.notify(
                f"The last {which} no failed or errored case in this suite.",
                title="Rerun failed",
            )
            return
        count = len(names)
        self.start_run(
            replace(self.base_selection, names=frozenset(names)),
            f"rerun: {count} failed case{'s' if count != 1 else ''} of recorded "
            f"run{'s' if self.several else ''} {short}",
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
        command = repro_command_many(self.suite_path, self.implementations, row.name)
        self.copy_to_clipboard(command)
        self.notify(command, title="Copied")

    def action_cycle_theme(self) -> None:
        names = list(self.themes)
        following = names[(names.index(self.theme_file.name) + 1) % len(names)]
        self.use_theme(following)
        self.notify(f"Theme: {following}", timeout=2)

    @property
    def theme_file(self) -> ThemeFile:
        """The theme in use."""
        return self.themes[self.theme]

    def use_theme(self, name: str) -> None:
        """Switch to the theme ``name``; Textual restyles everything."""
        self.theme = name

    def _theme_changed(self, theme: Theme) -> None:
        """The styles are the new theme's now: render the details with them (once the
        panes are there: the first theme is announced while the screen is built)."""
        self._detail_styles = None
        if not self.query("#diff-pane"):
            return
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
        self.push_screen(HelpScreen(self.several))

    def action_matrix(self) -> None:
        """Open the Matrix view; choosing a case there selects it in the list."""
        if not self.several:
            return
        matrix = self.matrix
        if matrix is None:
            self.notify("The matrix is built once every implementation has run.", title="Matrix")
            return

        def chosen(name: str | None) -> None:
            if name is not None:
                self.show_case(name)

        self.push_screen(
            MatrixScreen(matrix, self.suite_path.name, statuses=self.detail_styles().statuses),
            chosen,
        )

    def show_case(self, name: str) -> bool:
        """Select the case called ``name`` in the list, clearing the filters that hide it."""
        if self.case_list.select_name(name):
            return True
        self.query_one("#filter", Input).value = ""
        self._set_filters(failures_only=False, text="", group=None)
        return self.case_list.select_name(name)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Keep the app's keys out of the modal screens and the filter field, and the
        keys of several implementations away from one."""
        if action == "quit":
            return True
        if action == "matrix" and not self.several:
            return False
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
    implementations: Sequence[RunOptions] = (),
    labels: Sequence[str] = (),
) -> CerApp:
    """Build the app for ``suite_path``; the CLI and the tests both come through here.

    ``history`` is the database every finished run is recorded in; None (the default,
    so that tests never write beside a suite by accident) records nothing. The command
    line passes ``.cer/history.sqlite`` beside the suite unless ``--no-history``.

    ``implementations`` lists every implementation to run, ``options`` first (as
    :class:`cer.options.ResolvedRun` does); empty means ``options`` alone. ``labels``
    name them (default: as ``cer run`` labels its matrix columns).

    With the real runner, worker processes are started ahead of each run (warm
    workers), so that after a save only the implementation's own import remains.
    """
    warm: WarmWorkers | None = None
    if run is run_suite:
        warm = WarmWorkers(resolve_jobs(options.jobs))
        warm.fill()
        run = functools.partial(run_suite, warm=warm)
    app = CerApp(
        suite_path,
        options,
        run=run,
        load=load,
        watch=watch,
        theme=theme,
        extra_watch=extra_watch,
        launcher=launcher,
        history=history,
        implementations=implementations,
        labels=labels,
    )
    app.warm_workers = warm
    return app
