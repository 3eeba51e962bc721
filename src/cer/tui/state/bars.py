"""What the header and summary bars show: values the session builds after every change
and the bars' reactive ``state`` takes (the bars repaint when it differs)."""

from __future__ import annotations

from dataclasses import dataclass, field

from cer.tui.state.board import Counts


@dataclass(frozen=True)
class HeaderState:
    """What the header shows."""

    target: str = ""
    implementation: str = ""
    watch: str = ""
    trigger: str = ""
    timeout: float | None = None
    """The per-case timeout every lane runs with, in seconds (``--timeout``, ``timeout``
    in ``[tool.cer]``: the same as ``cer run``'s)."""


@dataclass(frozen=True)
class PartialRun:
    """A run of some of the cases (``n``, ``s``, ``R``): how many it ran, their own
    counts, and how many rows keep a result from an earlier run."""

    ran: int
    rows: int
    counts: Counts = field(default_factory=Counts)
    """The statuses of the cases this run ran, apart from the rest of the list."""
    kept: int = 0
    """After an edit of the suite alone: how many of the rows the run did not run are
    cases declared exactly as before, whose last result stands (not an earlier run's)."""

    @property
    def earlier(self) -> int:
        """Rows the run did not run and keeps no result of: they show what an earlier
        run said."""
        return self.rows - self.ran - self.kept


@dataclass(frozen=True)
class LaneSummary:
    """One lane's totals, for the bar of several lanes."""

    label: str
    counts: Counts = field(default_factory=Counts)
    flaky: int = 0


@dataclass(frozen=True)
class SummaryState:
    """What the summary bar shows."""

    counts: Counts = field(default_factory=Counts)
    running: bool = False
    done: int = 0
    total: int = 0
    elapsed_ms: int | None = None
    shown: int = 0
    rows: int = 0
    filters: str = ""
    flaky: int = 0
    """How many cases the history marks flaky."""
    lanes: tuple[LaneSummary, ...] = ()
    """Each lane's totals when there are several; the bar then shows these instead of
    ``counts``, and ``done``/``total`` are the running lane's."""
    running_label: str = ""
    """The lane running now, and its place (``calc_sloppy 2/3``)."""
    disagreements: int | None = None
    """Cases the lanes observed differently, once a matrix is built."""
    timeout: float | None = None
    """The per-case timeout the runs use, in seconds."""
    pattern: str = ""
    """The run pattern (``n``): only the cases whose name matches it run."""
    partial: PartialRun | None = None
    """The last (or current) run ran only some of the cases; None when it ran them all.
    The counts above are then those of the whole list, old results with new."""
