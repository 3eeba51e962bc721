"""The cer-tui application: watch, rerun in the background, triage at a glance.

The runner and the suite loader are injected through :func:`create_app`, which both the
command line and the tests use: tests hand in a fake ``run`` that emits events from
model objects, so they stay fast and deterministic.

What the app was started with is one frozen :class:`~cer.tui.settings.TuiSettings`.
The app's state is a :class:`~cer.tui.state.session.Session` of lanes, one per
implementation; its run control (runs, workers, generations, the watch loop) is the
:class:`~cer.tui.controller.RunController`. The app keeps those, the themes, the signals
and the global keys, and hands the settings, the session and the controller to its
first screen, the :class:`~cer.tui.screens.run.RunScreen`, when it builds it: the screen
reads nothing else of the app. It applies the workers' messages to the session and
shows it (one lane as the classic screen, several side by side) with the keys that act
on what it shows; the run pattern (``n``) is its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import signal
from collections.abc import Iterable, Sequence
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
from cer.results.baseline import Baseline
from cer.results.matrix import short_label, unique_labels
from cer.suite.cache import load_suite_cached
from cer.suite.selection import Selection
from cer.text.safetext import for_terminal
from cer.tui import messages
from cer.tui.controller import LoadFunction, RunController, RunFunction
from cer.tui.keys import bindings, global_keys
from cer.tui.plain import notify
from cer.tui.screens.help import HelpScreen
from cer.tui.screens.run import RunScreen
from cer.tui.settings import TuiSettings
from cer.tui.state.editor import Launcher, run_subprocess
from cer.tui.state.session import Session
from cer.tui.state.themes import DEFAULT_THEME, find_themes
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

    def __init__(self, settings: TuiSettings) -> None:
        self.themes = find_themes()
        if settings.theme not in self.themes:
            known = ", ".join(self.themes) or "none found"
            raise ValueError(f"unknown theme {settings.theme!r} (known: {known})")
        self.settings = settings
        """What the app was started with; the run screen is handed it too."""
        self.session = Session(settings.implementations, settings.labels, settings.baseline)
        self.suite_path = settings.suite_path
        """The suite, for the run controller (its host names it)."""
        self.base_selection = settings.base_selection
        """What every run selects before ``s``, ``n`` or ``R`` narrow it, for the run
        controller (its host names it)."""
        super().__init__(css_path=[APP_CSS])
        for each in self.themes.values():
            self.register_theme(textual_theme(each))
        self.theme = settings.theme
        self.control = RunController(
            self,
            self,
            run=settings.run,
            load=settings.load,
            history=settings.history,
            extra_watch=settings.extra_watch,
        )
        self._run_screen = RunScreen(settings, self.session, self.control)

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
        """Start a run cycle (the run controller's reruns come here): the run screen
        narrows it to its run pattern and shows it."""
        self._run_screen.start_run(selection, trigger, narrow=narrow)

    # -- watching ---------------------------------------------------------------------

    def on_files_changed(self, message: messages.FilesChanged) -> None:
        if self.settings.watch:
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
        if not self.settings.watch:
            notify(self, "Started with --no-watch: nothing to pause.", severity="warning")
            return
        self.control.toggle_pause()

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.session.several))

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

    The arguments are gathered, with their defaults filled in, into one
    :class:`~cer.tui.settings.TuiSettings`, which the app and its run screen are built
    with.

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
    chosen = tuple(implementations) or (options,)
    if chosen[0] != options:
        raise ValueError("options must be the first of the implementations")
    warm: WarmWorkers | None = None
    if run is run_suite:
        warm = WarmWorkers(resolve_jobs(options.jobs))
        warm.fill()
        run = functools.partial(run_suite, warm=warm)
    settings = TuiSettings(
        suite_path=suite_path,
        implementations=chosen,
        labels=tuple(labels) or unique_labels([short_label(o.kind, o.impl) for o in chosen]),
        baseline=baseline,
        watch=watch,
        extra_watch=tuple(Path(p) for p in extra_watch),
        history=history,
        theme=theme,
        run=run,
        load=load,
        launcher=launcher,
    )
    try:
        app = CerApp(settings)
    except BaseException:
        if warm is not None:  # an app refused (a bad theme, labels) never ends them
            warm.close()
        raise
    app.warm_workers = warm
    return app
