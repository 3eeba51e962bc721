"""Messages the background workers post: a run's to the run screen, the watcher's and
the history's to the app.

Every run carries a ``generation``: a run that was cancelled may still post a message
or two after its successor has started, and the run screen drops those by comparing it. One
generation runs every lane of the session in turn (one per implementation), and the
messages of one lane's run carry its place (``lane``, 0 for the first).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from textual.message import Message

from cer.constraints import CoverageFigures
from cer.model import RunResult, Suite
from cer.results.matrix import Matrix
from cer.suite.selection import Selection
from cer.tui.state.coverage_view import CoverageView, ModuleDoc
from cer.tui.state.details import Details
from cer.tui.state.kept import KeptResult


class ResultStream:
    """Results of the run in flight, handed from its thread to the app in batches.

    The run's thread appends under a lock; a :class:`CasesFinished` is posted only when
    none is pending (:meth:`claim`), and the controller claims at most once a frame
    (:data:`cer.tui.controller.FRAME_SECONDS`), so that a fast run produces one message
    a frame with every result since the last, rather than one per case.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._results: list[KeptResult] = []
        self._done = 0
        self._total = 0
        self._pending = False

    def add(self, result: KeptResult, done: int, total: int) -> None:
        """Queue a result (the next :meth:`claim` posts it)."""
        with self._lock:
            self._results.append(result)
            self._done, self._total = done, total

    def claim(self) -> bool:
        """True when results are waiting and no message is pending for them: the
        caller then posts one (and no one else does until it is drained)."""
        with self._lock:
            if self._pending or not self._results:
                return False
            self._pending = True
            return True

    def drain(self) -> tuple[list[KeptResult], int, int]:
        """Everything queued since the last drain, and the progress so far."""
        with self._lock:
            results, self._results = self._results, []
            self._pending = False
            return results, self._done, self._total


@dataclass
class RunMessage(Message):
    """Base of the messages one run posts."""

    generation: int


@dataclass
class SuiteLoaded(RunMessage):
    suite: Suite
    module_doc: ModuleDoc
    """The module's commonsformat.md, read with the suite before the run."""
    selection: Selection | None = None
    """What the cycle runs, when the load narrowed it: after an edit of the suite file
    alone, the cases whose definition changed and those that failed."""


@dataclass
class SuiteFailed(RunMessage):
    """The suite file does not load; ``problems`` name file, line, column and case."""

    message: str
    problems: tuple[str, ...] = ()


@dataclass
class RunStarted(RunMessage):
    total: int
    lane: int = 0


@dataclass
class ImplementationLoaded(RunMessage):
    implementation_id: str
    source_files: tuple[str, ...]
    lane: int = 0


@dataclass
class ImplementationFailed(RunMessage):
    reason: str
    traceback: str
    lane: int = 0


@dataclass
class CasesFinished(RunMessage):
    """Some results are waiting in ``stream``."""

    stream: ResultStream
    lane: int = 0


@dataclass
class RunFinished(RunMessage):
    """A lane's run finished. With ``rest``, ``run`` holds its own facts only: its
    results came through :class:`CasesFinished`, but for ``rest`` (those the run did
    not stream), and ``count`` is how many it has in all; without, ``run.results``
    holds them all."""

    run: RunResult
    lane: int = 0
    rest: tuple[KeptResult, ...] | None = None
    count: int | None = None


@dataclass
class RunsFinished(RunMessage):
    """Every lane has had its turn: the cycle is over; ``completed`` counts the lanes'
    runs that finished rather than crashed."""

    completed: int


@dataclass
class RunCancelled(RunMessage):
    """The run stopped because a newer one replaced it or the app is closing."""


@dataclass
class RunCrashed(RunMessage):
    """The runner itself raised: a bug to show, not to hide."""

    message: str
    traceback: str
    lane: int = 0


@dataclass
class HistoryRecorded(RunMessage):
    """A finished run was written to the history, or could not be (``error``).

    ``flaky`` names the cases the history now marks flaky for the run's implementation
    id and suite hash.
    """

    run_id: str
    flaky: frozenset[str] = frozenset()
    error: str | None = None
    lane: int = 0
    coverage_trend: tuple[CoverageFigures, ...] = ()
    """The coverage figures of the lane's recorded runs of the suite, oldest first."""


@dataclass
class CoveragesComputed(Message):
    """Each lane's constraint coverage, in column order, answering the coverage
    request ``token`` names, so that a late answer to an older one is dropped."""

    token: int
    views: tuple[CoverageView, ...]


@dataclass
class MatrixComputed(Message):
    """The matrix of what the list shows (two lanes or more), answering the matrix
    request ``token`` names, so that a late answer to an older one is dropped."""

    token: int
    matrix: Matrix


@dataclass
class RecordedFailures(Message):
    """The history's answer to rerun-failed before this session finished a run.

    ``names`` are the failed and errored cases of the latest recorded run of the suite;
    None when there is no such run (``problem`` says why, ``error`` when the history
    itself failed).
    """

    names: tuple[str, ...] | None
    run_id: str = ""
    problem: str | None = None
    error: bool = False


@dataclass
class FilesChanged(Message):
    """The watcher saw relevant changes, after its debounce window."""

    paths: tuple[Path, ...]


@dataclass
class DetailsRendered(Message):
    """The detail panes' content for one case, built off the event loop; ``token``
    is the request it answers."""

    case_name: str | None
    token: int
    details: Details
