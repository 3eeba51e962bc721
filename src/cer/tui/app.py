"""The cer-tui application: watch, rerun in the background, triage at a glance.

The runner and the suite loader are injected through :func:`create_app`, which both the
command line and the tests use: tests hand in a fake ``run`` that emits events from
model objects, so they stay fast and deterministic.

The app's state is a :class:`~cer.tui.state.session.Session` of lanes, one per
implementation; its run control (runs, workers, generations, the watch loop) is the
:class:`~cer.tui.controller.RunController`. The app applies the workers' messages to the
session and shows it: one lane as the classic screen, several side by side.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import signal
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

from rich.console import RenderableType
from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal
from textual.css.query import NoMatches
from textual.notifications import SeverityLevel
from textual.reactive import reactive
from textual.theme import Theme
from textual.widgets import Footer, Input, TabPane
from textual.worker import Worker, WorkerState

from cer.engine.options import RunOptions, resolve_jobs
from cer.engine.runner import run_suite
from cer.engine.workerproc import WarmWorkers
from cer.matrix import Matrix, short_label, unique_labels
from cer.model import Suite
from cer.safetext import for_terminal
from cer.selection import Selection, name_matches
from cer.suitecache import load_suite_cached
from cer.tui import messages
from cer.tui.case_actions import PATTERN_PLACEHOLDER, CaseActions, Launcher, run_subprocess
from cer.tui.controller import LoadFunction, RunController, RunFunction, SuiteCache
from cer.tui.keys import app_keys, bindings
from cer.tui.plain import notify
from cer.tui.screens.group import GroupScreen
from cer.tui.screens.help import HelpScreen
from cer.tui.screens.matrix import MatrixScreen
from cer.tui.state.bars import HeaderState, SummaryState
from cer.tui.state.board import Board, GroupKey
from cer.tui.state.coverage_view import CoverageView
from cer.tui.state.session import Failure, Session
from cer.tui.state.styles import DetailStyles
from cer.tui.state.themes import DEFAULT_THEME, ThemeFile, find_themes
from cer.tui.state.watching import WatchPlan
from cer.tui.theming import detail_styles, textual_theme
from cer.tui.widgets.banner import Banner
from cer.tui.widgets.case_list import CaseList
from cer.tui.widgets.detail_panes import DetailPanes
from cer.tui.widgets.diff_pane import DiffPane
from cer.tui.widgets.header_bar import HeaderBar
from cer.tui.widgets.line_pane import LinePane
from cer.tui.widgets.output_pane import OutputPane
from cer.tui.widgets.summary_bar import SummaryBar
from cer.tui.widgets.text_pane import TextPane

APP_CSS = Path(__file__).with_name("app.tcss")


class CerApp(CaseActions):
    """Watches a suite and its implementations and shows every case's latest result."""

    TITLE = "cer"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = list(bindings(app_keys(several=True)))
    """Every key; those of several lanes are hidden (check_action) with one."""

    header_state: reactive[HeaderState] = reactive(HeaderState())
    """What the header bar shows (bound to it): set it and the bar repaints."""
    summary_state: reactive[SummaryState] = reactive(SummaryState())
    """What the summary bar shows (bound to it): set it and the bar repaints."""

    warm_workers: WarmWorkers | None = None
    """Workers started ahead of the next run; ended with the app."""

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """A toast, never read as markup whoever asks for it (a screen, a widget, cer's
        own code through :func:`cer.tui.plain.notify`): its text may be the
        implementation's, and ``[/nope]`` in markup would take the app down."""
        super().notify(
            for_terminal(message),
            title=for_terminal(title, multiline=False),
            severity=severity,
            timeout=timeout,
            markup=False,
        )

    def __init__(
        self,
        suite_path: Path,
        options: RunOptions,
        *,
        run: RunFunction = run_suite,
        load: LoadFunction = load_suite_cached,
        watch: bool = True,
        theme: str = DEFAULT_THEME,
        extra_watch: Iterable[str | Path] = (),
        launcher: Launcher = run_subprocess,
        history: Path | None = None,
        implementations: Sequence[RunOptions] = (),
        labels: Sequence[str] = (),
    ) -> None:
        chosen = tuple(implementations) or (options,)
        if chosen[0] != options:
            raise ValueError("options must be the first of the implementations")
        names = tuple(labels) or unique_labels([short_label(o.kind, o.impl) for o in chosen])
        self.themes = find_themes()
        if theme not in self.themes:
            known = ", ".join(self.themes) or "none found"
            raise ValueError(f"unknown theme {theme!r} (known: {known})")
        self.session = Session(chosen, names)
        self.several = self.session.several
        """Whether the lanes are shown side by side (several implementations)."""
        self.board: Board = self.session.board
        """The first lane's board, which owns the filters."""
        self.boards: tuple[Board, ...] = tuple(lane.board for lane in self.session.lanes)
        super().__init__(css_path=[APP_CSS])
        for each in self.themes.values():
            self.register_theme(textual_theme(each))
        self.theme = theme
        self.suite_path = suite_path
        self.options = options
        """The first lane's options (the only one's, usually)."""
        self.implementations: tuple[RunOptions, ...] = chosen
        self.labels: tuple[str, ...] = names
        """Each lane's short label, as ``cer run`` heads its matrix columns."""
        self.base_selection = options.selection
        self.run_pattern = ""
        """The pattern of ``n``: only the cases whose name matches it run ("" for all)."""
        self.watching = watch
        self.history_path = history
        """Where finished runs are recorded; None records nothing."""
        self.details_shown: tuple[str | None, int] = (None, 0)
        """The case whose details the panes show, and the request they answered."""
        self.control = RunController(
            self, self, run=run, load=load, history=history, extra_watch=extra_watch
        )
        self.extra_watch = self.control.extra_watch
        self._launcher = launcher
        self._run_function = run
        self._load_function = load
        self._details_token = 0
        self._detail_styles: DetailStyles | None = None

    # -- the session's and the controller's state, as the screens and tests read it ----

    @property
    def suite(self) -> Suite | None:
        return self.session.suite

    @property
    def matrix(self) -> Matrix | None:
        return self.session.matrix

    @property
    def trigger(self) -> str:
        return self.session.trigger

    @property
    def runs_started(self) -> int:
        return self.session.runs_started

    @property
    def runs_finished(self) -> int:
        return self.session.runs_finished

    @property
    def coverage_view(self) -> CoverageView:
        return self.session.lanes[0].coverage

    @property
    def paused(self) -> bool:
        return self.control.paused

    @property
    def plan(self) -> WatchPlan | None:
        return self.control.plan

    @property
    def runs_recorded(self) -> int:
        return self.control.runs_recorded

    @property
    def history_problem(self) -> str | None:
        return self.control.history_problem

    @property
    def _suite_cache(self) -> SuiteCache | None:
        return self.control.suite_cache

    @_suite_cache.setter
    def _suite_cache(self, cache: SuiteCache | None) -> None:
        self.control.suite_cache = cache

    @property
    def theme_file(self) -> ThemeFile:
        """The theme in use."""
        return self.themes[self.theme]

    @property
    def banner(self) -> Banner:
        return self.query_one("#banner", Banner)

    # -- layout -----------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield HeaderBar(id="header").data_bind(state=CerApp.header_state)
        yield SummaryBar(id="summary").data_bind(state=CerApp.summary_state)
        yield Banner(id="banner")
        with Horizontal(id="main"):
            labels = self.labels if self.several else ()
            yield CaseList(self.board, labels=labels, id="cases")
            with DetailPanes(id="details", initial="reason"):
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
        yield Input(
            placeholder="filter: words in the name, a tag, a category or a verified constraint",
            id="filter",
        )
        yield Input(
            placeholder=PATTERN_PLACEHOLDER,
            id="pattern",
        )
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self._stop_on_signals()
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        self.case_list.focus()
        self.refresh_header()
        self._refresh_summary()
        if self.watching:
            self.control.restart_watch()
            self.refresh_header()
        self.start_run(self.base_selection, "first run")

    def _stop_on_signals(self) -> None:
        """SIGTERM and SIGHUP (a closed terminal, a kill) quit as ``q`` does: the run
        in flight is cancelled and its processes end (see cer.tui.__main__), and the
        program exits with 128 + the signal's number."""
        loop = asyncio.get_running_loop()
        for each in (signal.SIGTERM, signal.SIGHUP):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(each, self.exit, None, 128 + each)

    def exit(
        self,
        result: None = None,
        return_code: int = 0,
        message: RenderableType | None = None,
    ) -> None:
        """Cancel the run in flight first, so that quitting never waits for it."""
        self.control.cancel()
        super().exit(result, return_code, message)

    def on_unmount(self) -> None:
        self.control.cancel()
        if self.warm_workers is not None:
            self.warm_workers.close()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Every worker's error reaches the user here: a toast naming what failed (the
        run worker reports its own failures as messages; this catches the rest)."""
        if event.state is not WorkerState.ERROR:
            return
        worker = event.worker
        if worker.group == "watch":
            notify(
                self,
                f"Watching stopped: {worker.error}",
                title="Watch",
                severity="error",
                timeout=8,
            )
            return
        notify(
            self,
            f"Cannot {worker.description}: {worker.error!r}",
            title="Error",
            severity="error",
            timeout=10,
        )

    # -- runs -------------------------------------------------------------------------

    def start_run(self, selection: Selection, trigger: str, *, narrow: bool = True) -> None:
        """Cancel the run in flight, if any, and start a new one (with ``narrow``,
        narrowed to the run pattern when one is set: the other cases keep their results,
        dimmed)."""
        if narrow and self.run_pattern and self.suite is not None:
            names = {c.name for c in self.suite.cases if name_matches(self.run_pattern, c.name)}
            if selection.names is not None:
                names &= selection.names
            selection = replace(selection, names=frozenset(names))
        self.control.start(selection, trigger)
        self.refresh_header()
        self._refresh_summary()

    def on_suite_loaded(self, message: messages.SuiteLoaded) -> None:
        if not self.control.is_current(message):
            return
        changed = self.session.load(message.suite, self.control.selection)
        self.control.module_doc = message.module_doc
        if self.banner.kind == "suite-error":
            self.banner.clear()
        self.case_list.remove_class("-dimmed")
        self.case_list.rows_changed(layout=changed)
        self.refresh_header()
        self._refresh_summary()
        self._refresh_details()

    def on_suite_failed(self, message: messages.SuiteFailed) -> None:
        if not self.control.is_current(message):
            return
        self.control.suite_cache = None
        self.session.suite_failed()
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
        if self.control.is_current(message):
            self.session.running = message.lane
            self.session.lanes[message.lane].board.total = message.total
            self._refresh_summary()

    def on_implementation_loaded(self, message: messages.ImplementationLoaded) -> None:
        if not self.control.is_current(message):
            return
        self.session.loaded(message.lane, message.implementation_id, message.source_files)
        self._show_import_failures()
        if self.control.sources_reported() and self.watching:
            self.control.restart_watch()
        self.refresh_header()

    def on_implementation_failed(self, message: messages.ImplementationFailed) -> None:
        if not self.control.is_current(message):
            return
        lane = self.session.lanes[message.lane]
        lane.import_failure = Failure(message.reason, message.traceback)
        self._show_import_failures()

    def _show_import_failures(self) -> None:
        """The banner for the lanes that did not load, or none."""
        banner = self.session.import_banner()
        if banner is not None:
            self.banner.show_error("import-error", *banner)
        elif self.banner.kind == "import-error":
            self.banner.clear()

    def on_cases_finished(self, message: messages.CasesFinished) -> None:
        if not self.control.is_current(message):
            return
        results, done, total = message.stream.drain()
        if not results:
            return
        self.session.lanes[message.lane].board.record(results, done, total)
        if message.lane:
            self.board.refilter()  # a peer's results change what the filters show
        self.case_list.rows_changed()
        self._refresh_summary()
        current = self.case_list.cursor_name
        if current is not None and any(r.case_name == current for r in results):
            self._refresh_details()

    def on_run_finished(self, message: messages.RunFinished) -> None:
        """One lane finished its run: show it, and keep what its coverage is to be
        judged by once every lane has had its turn."""
        if not self.control.is_current(message):
            return
        lane = self.session.lanes[message.lane]
        lane.finish(message.run, self.session.suite, message.rest, message.count)
        if message.lane:
            self.board.refilter()
        if not any(lane.crash for lane in self.session.lanes) and self.banner.kind == "run-error":
            self.banner.clear()
        self.case_list.rows_changed()
        self._refresh_summary()
        self._refresh_details()

    def on_runs_finished(self, message: messages.RunsFinished) -> None:
        """Every lane has had its turn: the cycle counts as one finished run, and the
        coverage and the matrix are judged again by what the list shows (once per cycle:
        a matrix of 65,000 cases takes seconds to build)."""
        if not self.control.is_current(message):
            return
        self._refresh_summary()
        if not self.session.cycle_finished(message.completed):
            return  # every lane crashed: the banner says so, no toast
        self.control.request_coverage()
        if self.several:
            self.control.request_matrix()
        announcement = self.session.announcement()
        if announcement is not None:
            notify(
                self,
                announcement.message,
                title=announcement.title,
                severity=announcement.severity,
                timeout=4,
            )

    def on_matrix_computed(self, message: messages.MatrixComputed) -> None:
        if message.generation != self.control.matrix_token:
            return
        self.session.set_matrix(message.matrix)
        self.case_list.refresh()
        self._refresh_summary()
        self._refresh_details()
        if isinstance(self.screen, MatrixScreen):
            self.screen.update(message.matrix)

    def on_coverages_computed(self, message: messages.CoveragesComputed) -> None:
        if message.generation != self.control.coverage_token:
            return
        for lane, view in zip(self.session.lanes, message.views, strict=True):
            lane.coverage = view
        self._refresh_details()

    def on_history_recorded(self, message: messages.HistoryRecorded) -> None:
        if self.control.history_recorded(message):
            self.case_list.refresh()
            self._refresh_summary()
            self._refresh_details()

    def on_run_cancelled(self, message: messages.RunCancelled) -> None:
        if self.control.is_current(message):
            self.session.abandon()
            self._refresh_summary()

    def on_run_crashed(self, message: messages.RunCrashed) -> None:
        """The runner crashed on a lane; the next lane still runs, and the banner names
        the one that crashed."""
        if not self.control.is_current(message):
            return
        self.session.crashed(message.lane, Failure(message.message, message.traceback))
        title = self.session.crash_title(message.lane, message.message)
        self.banner.show_error("run-error", title, message.traceback)
        self._refresh_summary()

    # -- watching ---------------------------------------------------------------------

    def on_files_changed(self, message: messages.FilesChanged) -> None:
        if self.watching:
            self.control.files_changed(message.paths)

    # -- header, summary, details -----------------------------------------------------

    def refresh_header(self) -> None:
        """Show what the header says now."""
        self.header_state = self.session.header(self.control.describe_watch(self.watching))

    def _refresh_summary(self) -> None:
        self.summary_state = replace(
            self.session.summary(), timeout=self.options.timeout, pattern=self.run_pattern
        )

    def detail_styles(self) -> DetailStyles:
        """The panes' styles from the current theme (cached until the theme changes)."""
        if self._detail_styles is None:
            self._detail_styles = detail_styles(
                self.case_list,
                self.query_one("#diff-pane", DiffPane),
                self.query_one("#output-pane", OutputPane),
            )
        return self._detail_styles

    @property
    def details_settled(self) -> bool:
        """Whether the panes show the latest details of the highlighted case."""
        return self.details_shown == (self.case_list.cursor_name, self._details_token)

    def _refresh_details(self) -> None:
        """Render the highlighted case's details again, off the event loop."""
        self._details_token += 1
        self.control.render_details(
            self.case_list.highlighted_row, self.detail_styles(), self._details_token
        )

    def on_details_rendered(self, message: messages.DetailsRendered) -> None:
        if message.token != self._details_token:
            return
        try:
            panes = self.query_one("#details", DetailPanes)
        except NoMatches:
            return  # a late answer while the app closes: the panes are gone
        self.details_shown = (message.case_name, message.token)
        panes.show(message)

    @on(CaseList.CaseHighlighted)
    def _case_highlighted(self, event: CaseList.CaseHighlighted) -> None:
        self._refresh_details()

    def _theme_changed(self, theme: Theme) -> None:
        """The styles are the new theme's now: render the details with them (once the
        panes are there: the first theme is announced while the screen is built)."""
        self._detail_styles = None
        if not self.query("#diff-pane"):
            return
        self.case_list.refresh()
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
        self.control.rerun_failed()

    def on_recorded_failures(self, message: messages.RecordedFailures) -> None:
        self.control.recorded_failures_arrived(message)

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
        self.query_one("#details", DetailPanes).focus_active()

    def action_cycle_pane(self) -> None:
        self.query_one("#details", DetailPanes).cycle()
        if isinstance(self.focused, (LinePane, TextPane)):
            self.action_focus_details()

    def action_cycle_pane_back(self) -> None:
        """Shift-Tab: the previous pane. The focus stays where it was (the list, or the
        pane on view), so the cursor keys never act on a widget that does not show it."""
        self.query_one("#details", DetailPanes).cycle(-1)
        if isinstance(self.focused, (LinePane, TextPane)):
            self.action_focus_details()

    @on(Input.Submitted, "#pattern")
    def _pattern_submitted(self, event: Input.Submitted) -> None:
        event.input.remove_class("-shown")
        self.case_list.focus()
        self.set_run_pattern(event.value.strip())

    def action_cycle_theme(self) -> None:
        names = list(self.themes)
        following = names[(names.index(self.theme) + 1) % len(names)]
        self.use_theme(following)
        notify(self, f"Theme: {following}", timeout=2)

    def use_theme(self, name: str) -> None:
        """Switch to the theme ``name``; Textual restyles everything."""
        self.theme = name

    def action_toggle_watch(self) -> None:
        if not self.watching:
            notify(self, "Started with --no-watch: nothing to pause.", severity="warning")
            return
        self.control.toggle_pause()

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.several))

    def action_matrix(self) -> None:
        """Open the Matrix view; choosing a case there selects it in the list."""
        if not self.several:
            return
        matrix = self.session.matrix
        if matrix is None:
            notify(self, "The matrix is built once every implementation has run.", title="Matrix")
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
        keys of several lanes away from one."""
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
    load: LoadFunction = load_suite_cached,
    watch: bool = True,
    theme: str = DEFAULT_THEME,
    extra_watch: Iterable[str | Path] = (),
    launcher: Launcher = run_subprocess,
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
