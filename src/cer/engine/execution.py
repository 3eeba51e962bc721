"""One run's state and bookkeeping, shared by every backend.

A backend is what runs the cases of one kind of implementation: the worker pool for a
Python implementation (:mod:`cer.engine.python`), the harness or per-case processes for a
command (:mod:`cer.engine.command`). Each is an :class:`Execution`, built from a
:class:`Setup` (what the runner prepared: the suite, the options, the sandbox, the
results decided before running) and whatever its own kind needs besides: the runner
creates the one the kind names (:mod:`cer.engine.kinds`), calls :meth:`Execution.run`,
then :meth:`Execution.stop` (or :meth:`Execution.kill` when the run is abandoned), and
the backend reports every case through :meth:`Execution.record`. Backends never import
each other or the runner, and this module imports no backend: what only one kind
knows (a Python implementation's import, its workers' warm spares) is kept by that
kind's backend, and the runner reads it through the methods below.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from cer import process_tree
from cer.engine import confinement, spawned
from cer.engine.limits import OwnLimits
from cer.engine.options import (
    RunCancelled,
    RunOptions,
    stopped_reason,
)
from cer.engine.plan import Planned
from cer.events import (
    CaseFinished,
    ImplementationFailed,
    ImplementationLoaded,
    RunEvent,
)
from cer.judge.verdict import skipped
from cer.model import CaseResult, Status, Suite
from cer.text.safetext import retained, scrub

if TYPE_CHECKING:
    from cer.sandbox import Policy
    from cer.sandbox.readset import Refusal

_NO_SANDBOX = confinement.Decision(0, "none: disabled")
"""The sandbox of a run that has none."""

_EXPLAINED = (Status.ERRORED, Status.FAIL)
"""Results whose reason may be a sandbox denial worth explaining."""


@dataclass(frozen=True)
class Setup:
    """What every backend is built with: the run as the runner prepared it, before any
    case runs. A backend takes it whole and never hands it back changed."""

    suite: Suite
    options: RunOptions
    """The run's options, as the runner settled them (``isolation`` is ``none`` where
    fork is not available)."""
    emit: Callable[[RunEvent], None]
    cancel: threading.Event | None = None
    sandbox: confinement.Decision = _NO_SANDBOX
    """The sandbox the run is under."""
    policy: Policy | None = None
    """What the sandbox allows, when there is one."""
    refused: tuple[Refusal, ...] = ()
    """What the policy leaves out of the folders the implementation is imported
    from, and why (:mod:`cer.sandbox.readset`): named in the reasons of refused reads."""
    notes: tuple[str, ...] = ()
    """The run's notes so far (a shard, the plugins that run categories)."""
    decided: tuple[CaseResult, ...] = ()
    """Results decided before running (:mod:`cer.engine.plan`), reported once the
    implementation is loaded (or failed to load), so events keep their documented
    order."""
    limits_each_case: bool = True
    """Whether cer's own limits are checked after every case (see
    :attr:`cer.engine.limits.OwnLimits.each_case`)."""


class Execution(ABC):
    """One run's state while its cases are in a backend's hands."""

    def __init__(self, setup: Setup) -> None:
        suite, options = setup.suite, setup.options
        self.suite = suite
        self.options = options
        self._emit = setup.emit
        self.deferred: list[CaseResult] = list(setup.decided)
        """Results decided before running, reported once the implementation is loaded
        (or failed to load), so events keep their documented order."""
        self.cancel = setup.cancel
        self.results: dict[int, CaseResult] = {}
        self.retried: dict[int, str] = {}
        """Case position → why it was handed over a second time (its report says so)."""
        self.total = len(suite.cases)
        self.notes: list[str] = list(setup.notes)
        self.implementation_id = options.impl
        self.declared: tuple[str, str] | None = None
        """The name and version a command harness declared itself (its own words)."""
        self.announced = False
        """Whether ImplementationLoaded or ImplementationFailed was emitted."""
        self.finished = False
        """Set when the implementation failed to load: every remaining case is decided."""
        self.token = spawned.current()
        """Which run this is, for :mod:`cer.engine.spawned`."""
        self.children_before = process_tree.children()
        """The supervisor's children before the run: not the run's to end."""
        self.sandbox = setup.sandbox
        """The sandbox the run is under."""
        self.policy: Policy | None = setup.policy
        """What the sandbox allows, when there is one."""
        self.refused: list[Refusal] = list(setup.refused)
        """What the policy leaves out of the folders the implementation is imported
        from, and why (:mod:`cer.sandbox.readset`): named in the reasons of refused reads."""
        self.failures = 0
        """Cases that ran and failed or errored (decided ones aside): counted against
        ``options.max_fail``."""
        self.stopped = False
        """``options.max_fail`` was reached: no case is handed out any more."""
        self.not_run = 0
        """Cases left out because the run was stopped."""
        self._deciding = False
        self.limits = OwnLimits()
        """The supervisor's own resource limits as the run started: set back after
        each case if anything could have changed them (:mod:`cer.engine.limits`)."""
        self.limits.each_case = setup.limits_each_case

    # --- bookkeeping -------------------------------------------------------------------

    def emit(self, event: RunEvent) -> None:
        if isinstance(event, ImplementationFailed):
            event = replace(event, reason=scrub(event.reason), traceback=scrub(event.traceback))
        elif isinstance(event, ImplementationLoaded):
            event = replace(event, implementation_id=scrub(event.implementation_id))
        self._emit(event)
        if isinstance(event, ImplementationLoaded | ImplementationFailed):
            self.announced = True
            self.flush_deferred()

    def flush_deferred(self) -> None:
        deferred, self.deferred = self.deferred, []
        self._deciding = True  # decided before running: they count for no --max-fail
        try:
            for result in deferred:
                self.record(result)
        finally:
            self._deciding = False

    def record(self, result: CaseResult, *, limits_checked: bool = False) -> None:
        """Take a case's result. cer's own limits are checked first, unless the caller
        did when the answer came (``limits_checked``: before the next case went out)."""
        if not limits_checked:
            self.limits.after_case()
        why = self.retried.get(result.position)
        if why is not None:
            note = (
                f"[handed over again, to a fresh process: {why}; its time counts from "
                "the first hand-over]"
            )
            result = replace(result, reason=f"{result.reason}\n{note}" if result.reason else note)
        if self.policy is not None and result.reason and result.status in _EXPLAINED:
            explained = confinement.explain_denial(result.reason, self.policy, self.refused)
            if explained != result.reason:
                result = replace(result, reason=explained)
        if result.position in self.results:
            raise AssertionError(f"two results for case {result.case_name!r}")
        # Judged on everything observed; kept scrubbed and bounded (cer.text.safetext).
        result = retained(result)
        self.results[result.position] = result
        # Its texts are scrubbed already: the event goes out without emit's checks.
        self._emit(CaseFinished(result, len(self.results), self.total))
        limit = self.options.max_fail
        if limit is not None and not self._deciding and result.status in _EXPLAINED:
            self.failures += 1
            if self.failures >= limit:
                self.stopped = True

    def leave_out(self, planned: Iterable[Planned]) -> None:
        """The run was stopped (``--max-fail``): record each of ``planned`` as not run,
        a skip with the stop's reason, never a pass."""
        assert self.options.max_fail is not None
        reason = stopped_reason(self.options.max_fail)
        for item in planned:
            self.not_run += 1
            self.record(skipped(item.case, reason))

    def check_cancel(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise RunCancelled()

    def note(self, note: str) -> None:
        """Add ``note`` to the run's notes."""
        self.notes.append(note)

    def note_once(self, note: str) -> None:
        if note not in self.notes:
            self.notes.append(note)

    def end_strays(self) -> None:
        """End every process the run left with the supervisor: what a lost worker had
        adopted, a harness's daemon (see cer.process_tree); live workers are kept."""
        keep = set(self.children_before)
        keep.update(self.live_pids())
        with spawned.LOCK:  # another run's processes are not this run's strays
            keep.update(spawned.others_alive(self.token))
            process_tree.end_strays(keep)

    # --- the backend ------------------------------------------------------------------

    @abstractmethod
    def run(self, planned: list[Planned]) -> None:
        """Run the planned cases: record exactly one result for each."""

    @abstractmethod
    def stop(self) -> None:
        """The run is over: end the backend's processes, asking them first."""

    @abstractmethod
    def kill(self) -> None:
        """The run is abandoned (cancelled, or the supervisor failed): end them now."""

    def live_pids(self) -> set[int]:
        """The backend's processes that are still wanted: :meth:`end_strays` keeps them."""
        return set()

    # --- what the run record takes from the backend -----------------------------------

    def memory_method(self) -> str:
        """How the run measured a case's memory (its run conditions say it); empty when
        no case asked about memory, or the backend measures none."""
        return ""

    def source_files(self) -> tuple[str, ...]:
        """The files a code frame may show: those the supervisor checked as loaded, or
        what the implementation is known to be made of; none by default."""
        return ()
