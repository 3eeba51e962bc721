"""The cer-tui application: watch, rerun in the background, triage at a glance.

The runner and the suite loader are injected through :func:`create_app`, which both the
command line and the tests use: tests hand in a fake ``run`` that emits events from
model objects, so they stay fast and deterministic.

The app's state is a :class:`~cer.tui.state.session.Session` of lanes, one per
implementation; its run control (runs, workers, generations, the watch loop) is the
:class:`~cer.tui.controller.RunController`. The app keeps those, the themes, the signals
and the global keys; its first screen, the :class:`~cer.tui.screens.run.RunScreen`,
applies the workers' messages to the session and shows it (one lane as the classic
screen, several side by side) with the keys that act on what it shows.
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
from textual.app import App
from textual.binding import BindingType
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.widgets import Input
from textual.worker import Worker, WorkerState

from cer.engine.options import RunOptions, resolve_jobs
from cer.engine.python.workerproc import WarmWorkers
from cer.engine.runner import run_suite
from cer.model import Suite
from cer.results.baseline import Baseline
from cer.results.matrix import Matrix, short_label, unique_labels
from cer.suite.cache import load_suite_cached
from cer.suite.selection import Selection, name_matches
from cer.text.safetext import for_terminal
from cer.tui import messages
from cer.tui.controller import LoadFunction, RunController, RunFunction, SuiteCache
from cer.tui.keys import bindings, global_keys
from cer.tui.plain import notify
from cer.tui.screens.help import HelpScreen
from cer.tui.screens.run import RunScreen
from cer.tui.state.board import Board
from cer.tui.state.coverage_view import CoverageView
from cer.tui.state.editor import Launcher, run_subprocess
from cer.tui.state.session import Session
from cer.tui.state.themes import DEFAULT_THEME, ThemeFile, find_themes
from cer.tui.state.watching import WatchPlan
from cer.tui.theming import textual_theme

APP_CSS = Path(__file__).with_name("app.tcss")


class CerApp(App[None]):
    """Watches a suite and its implementations and shows every case's latest result."""

    TITLE = "cer"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = list(bindings(global_keys()))
    """The global keys; the run screen has the keys of what it shows."""

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
        baseline: Baseline | None = None,
    ) -> None:
        chosen = tuple(implementations) or (options,)
        if chosen[0] != options:
            raise ValueError("options must be the first of the implementations")
        names = tuple(labels) or unique_labels([short_label(o.kind, o.impl) for o in chosen])
        self.themes = find_themes()
        if theme not in self.themes:
            known = ", ".join(self.themes) or "none found"
            raise ValueError(f"unknown theme {theme!r} (known: {known})")
        self.session = Session(chosen, names, baseline)
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
        self.control = RunController(
            self, self, run=run, load=load, history=history, extra_watch=extra_watch
        )
        self.extra_watch = self.control.extra_watch
        self.launcher = launcher
        """How an outside program (the editor) is run; tests hand in a fake."""
        self.run_function = run
        self.load_function = load
        self._run_screen = RunScreen(self)

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
    def run_screen(self) -> RunScreen:
        """The main view, first on the screen stack."""
        return self._run_screen

    # -- lifecycle --------------------------------------------------------------------

    def get_default_screen(self) -> RunScreen:
        return self._run_screen

    def on_mount(self) -> None:
        self._stop_on_signals()

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
        if selection.names is not None:  # the run's conditions say how they were chosen
            selection = replace(selection, chosen_by=f"cer-tui {trigger}")
        if narrow and self.run_pattern and self.suite is not None:
            names = {c.name for c in self.suite.cases if name_matches(self.run_pattern, c.name)}
            chosen = f"cer-tui run pattern {self.run_pattern!r}"
            if selection.names is not None:
                names &= selection.names
                chosen = f"{selection.chosen_by}; {chosen}"
            selection = replace(selection, names=frozenset(names), chosen_by=chosen)
        self.control.start(selection, trigger)
        self._run_screen.refresh_header()
        self._run_screen.refresh_summary()

    # -- watching ---------------------------------------------------------------------

    def on_files_changed(self, message: messages.FilesChanged) -> None:
        if self.watching:
            self.control.files_changed(message.paths)

    def refresh_header(self) -> None:
        """Show what the header says now (on the run screen)."""
        self._run_screen.refresh_header()

    def post_to_view(self, message: Message) -> None:
        """The runs' messages go to the run screen, which shows them; those it does not
        answer (the run control's) bubble up to the app."""
        self._run_screen.post_message(message)

    def on_recorded_failures(self, message: messages.RecordedFailures) -> None:
        self.control.recorded_failures_arrived(message)

    # -- global keys --------------------------------------------------------------------

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

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Keep the app's keys (but quit) out of the other screens and the fields."""
        if action == "quit":
            return True
        if self.screen is not self.screen_stack[0]:
            return False
        focused = self.focused
        return not isinstance(focused, Input)


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
    baseline: Baseline | None = None,
) -> CerApp:
    """Build the app for ``suite_path``; the CLI and the tests both come through here.

    ``history`` is the database every finished run is recorded in; None (the default,
    so that tests never write beside a suite by accident) records nothing. The command
    line passes ``.cer/history.sqlite`` beside the suite unless ``--no-history``.

    ``implementations`` lists every implementation to run, ``options`` first (as
    :class:`cer.config.ResolvedRun` does); empty means ``options`` alone. ``labels``
    name them (default: as ``cer run`` labels its matrix columns). ``baseline`` is the
    known-failures file, read and checked (``cer-tui`` does as ``cer run`` does): the
    list shows its known failures apart and flags its stale entries.

    With the real runner, worker processes are started ahead of each run (warm
    workers), so that after a save only the implementation's own import remains.
    """
    warm: WarmWorkers | None = None
    if run is run_suite:
        warm = WarmWorkers(resolve_jobs(options.jobs))
        warm.fill()
        run = functools.partial(run_suite, warm=warm)
    try:
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
            baseline=baseline,
        )
    except BaseException:
        if warm is not None:  # an app refused (a bad theme, labels) never ends them
            warm.close()
        raise
    app.warm_workers = warm
    return app
