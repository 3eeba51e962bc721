"""What cer-tui is started with, as one frozen value: the suite, the implementations and
their labels, the known-failures file, watching, the history, the theme to start with,
and the functions the runs, the suite's loading and the editor go through (tests hand
in fakes).

:func:`cer.tui.app.create_app` builds one for the command line and the tests (it fills
in the defaults and checks them), and the app hands it down to the run screen with the
session and the run controller: the screen shows and runs what it names, and the app
reads of it only what the app itself acts on (the theme, whether watching is on).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cer.engine.options import RunOptions
from cer.results.baseline import Baseline
from cer.suite.selection import Selection
from cer.tui.controller import LoadFunction, RunFunction
from cer.tui.state.editor import Launcher


@dataclass(frozen=True)
class TuiSettings:
    """Everything cer-tui was told when it started; nothing in it changes while it runs."""

    suite_path: Path
    implementations: tuple[RunOptions, ...]
    """Every implementation, in the order their lanes run (as
    :attr:`cer.config.ResolvedRun.implementations`); never empty."""
    labels: tuple[str, ...]
    """Each lane's short label, as ``cer run`` heads its matrix columns."""
    baseline: Baseline | None
    """The known-failures file, read and checked before the app started; None without one."""
    watch: bool
    """Whether a change of a watched file reruns (``--no-watch``: run once, ``r`` reruns)."""
    extra_watch: tuple[Path, ...]
    """What ``--watch PATH`` and ``[tool.cer] watch`` add to what the lanes reported."""
    history: Path | None
    """Where finished runs are recorded; None records nothing."""
    theme: str
    """The theme to start with (``t`` switches while running)."""
    run: RunFunction
    """Runs a suite: :func:`cer.engine.runner.run_suite` (with warm workers) or a fake."""
    load: LoadFunction
    """Loads the suite file."""
    launcher: Launcher
    """How an outside program (the editor) is run; tests hand in a fake."""

    def __post_init__(self) -> None:
        if not self.implementations:
            raise ValueError("cer-tui needs at least one implementation")

    @property
    def options(self) -> RunOptions:
        """The first lane's options (the only one's, usually): the drafts run on them."""
        return self.implementations[0]

    @property
    def base_selection(self) -> Selection:
        """What every run selects before ``s``, ``n`` or ``R`` narrow it: the command
        line's ``-k`` and ``--case``."""
        return self.options.selection
