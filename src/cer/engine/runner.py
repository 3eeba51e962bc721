"""The supervisor: runs a suite against an implementation and reports the truth.

The supervisor never imports the implementation. It plans every case (outside the
shard, deselected, unsupported category, missing fixture, nothing to verify), hands
the runnable ones to one or more worker processes in declared order, enforces deadlines
from outside, turns each reported observation into a verdict, and returns exactly one
result per declared case, in declared order. See docs/execution-model.md.

With several workers (``jobs``) one thread still does all of this: it waits on every
worker's channel at once, so results, verdicts and events are made in one place, one
at a time, exactly as with a single worker.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cer import plaindata, procs
from cer.categories import CategoryRegistry, build_registry
from cer.engine import confinement
from cer.engine.identity import UNKNOWN, Identity, extend, identify
from cer.engine.workerproc import Message, WarmWorkers, WorkerLost, WorkerProcess
from cer.events import (
    CaseFinished,
    ImplementationFailed,
    ImplementationLoaded,
    RunEvent,
    RunFinished,
    RunStarted,
)
from cer.model import Case, CaseResult, RunConditions, RunResult, Status, Suite
from cer.safetext import retained, scrub
from cer.selection import Selection
from cer.suite import resolve_fixtures
from cer.verdict import (
    Outcome,
    asks_memory,
    judge,
    outcome_from_worker,
    unmeasured_keys,
    unmeasured_reason,
)

if TYPE_CHECKING:
    from cer.sandbox import Policy

__all__ = [
    "IMPLEMENTATION_KINDS",
    "ISOLATION_MODES",
    "OTHER_SHARD",
    "RunCancelled",
    "RunOptions",
    "WarmWorkers",
    "in_shard",
    "parse_jobs",
    "parse_shard",
    "plan",
    "resolve_jobs",
    "run_suite",
    "search_paths",
]

ISOLATION_MODES = ("fork", "none")
IMPLEMENTATION_KINDS = ("python", "command", "command-per-case")
LOAD_TIMEOUT_MIN = 30.0
"""Importing an implementation may take longer than one case; this is its floor."""
REPORT_GRACE = 1.0
"""How long past a case's deadline the supervisor waits for the worker's own report of
the timeout (so that the worker can be kept). The case has timed out either way: the
deadline is the supervisor's own, fixed when the case was handed over."""
RESTART_BUDGET = 3
"""Consecutive losses of one worker, with no case finished between them, before that
worker is given up."""
START_ATTEMPTS = 3
"""How often a case is handed to a new process when its process never started it."""
OTHER_SHARD = "in another shard"
"""The reason of every case a sharded run leaves to the other shards."""
_POLL = 0.05
_EXPLAINED = (Status.ERRORED, Status.FAIL)


class RunCancelled(Exception):
    """The run was cancelled through its cancel event before it finished."""


@dataclass(frozen=True)
class RunOptions:
    impl: str
    """``MODULE:ATTR`` of the implementation under test (ATTR may be dotted), or, for
    the command kinds, the command line (split like a shell splits words)."""
    kind: str = "python"
    """``python`` (import MODULE:ATTR), ``command`` (a long-lived process speaking the
    line-delimited JSON protocol, docs/protocol.md) or ``command-per-case`` (one process
    per case: input as JSON on stdin, observation as JSON on stdout)."""
    paths: tuple[str, ...] = ()
    timeout: float = 10.0
    isolation: str = "fork"
    max_memory: int | None = None
    capture_limit: int = 65536
    selection: Selection = field(default_factory=Selection)
    first: frozenset[str] = frozenset()
    """Names of cases to hand to the workers before the others (the watch loop passes
    the cases that failed last time, so that the rows that matter change first); the
    results, events aside, keep the declared order whatever this holds."""
    category_models: Mapping[str, str] = field(default_factory=dict)
    """Extra category → built-in model mappings (``[tool.cer.categories]``)."""
    jobs: int = 1
    """How many workers run cases at the same time (python implementations); ``0``
    means one per available CPU (``-j auto``, see :func:`resolve_jobs`). Each worker
    imports the implementation itself; results do not depend on it."""
    shard: tuple[int, int] | None = None
    """``(I, N)``: run only the I-th of N slices of the suite (see :func:`in_shard`);
    the other cases are reported skipped with the reason :data:`OTHER_SHARD`."""
    sandbox: str = "auto"
    """``auto`` (Landlock where the kernel has it), ``require`` (refuse to run
    without it) or ``off``; see :mod:`cer.engine.confinement`."""
    network: str = "allow"
    """``deny`` refuses the implementation TCP bind and connect (needs the sandbox)."""
    protected: tuple[str, ...] = ()
    """Paths the implementation may not reach at all besides the suite's own (the
    report outputs, a history database given by path)."""


def parse_jobs(text: str) -> int:
    """``-j`` as given on a command line: ``auto`` (returned as 0) or a count of at
    least 1; ValueError otherwise."""
    word = text.strip().lower()
    if word == "auto":
        return 0
    try:
        jobs = int(word)
    except ValueError:
        raise ValueError(f"-j must be a number of workers or auto, not {text!r}") from None
    if jobs < 1:
        raise ValueError(f"-j must be at least 1 (or auto), not {text!r}")
    return jobs


def resolve_jobs(jobs: int) -> int:
    """The number of workers ``jobs`` asks for: itself, or for ``0`` the CPUs this
    process may run on."""
    if jobs > 0:
        return jobs
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def parse_shard(text: str) -> tuple[int, int]:
    """``--shard I/N`` as given on a command line, e.g. ``"2/4"`` → ``(2, 4)``; both
    whole numbers with ``1 <= I <= N``; ValueError otherwise."""
    index_text, slash, count_text = text.strip().partition("/")
    try:
        if not slash:
            raise ValueError
        index, count = int(index_text), int(count_text)
    except ValueError:
        raise ValueError(f"--shard must look like I/N (such as 2/4), not {text!r}") from None
    if not 1 <= index <= count:
        raise ValueError(f"--shard I/N needs 1 <= I <= N, not {text!r}")
    return index, count


def in_shard(position: int, shard: tuple[int, int] | None) -> bool:
    """Whether the case at declared ``position`` (1-based) belongs to ``shard``.

    Shard I of N holds the positions I, I + N, I + 2N, …: every case belongs to
    exactly one shard, the slices differ in size by at most one case, and neighbouring
    cases (often alike in cost) are spread over all shards. The rule looks at nothing
    but the position, so every machine of a CI matrix computes the same slices.
    """
    if shard is None:
        return True
    index, count = shard
    return (position - 1) % count == index - 1


@dataclass(frozen=True)
class _Planned:
    case: Case
    input: dict[str, Any]
    model: str
    alone: bool = False
    """The case runs inline in a worker of its own, a process the supervisor started and
    reaps itself: its crash and its memory are then the runner's own observation (see
    :meth:`_Execution.run_alone`)."""


def _peak_resident_mb(pid: int) -> float | None:
    """The kernel's peak resident memory of the live process ``pid`` since it started
    its program (``VmHWM`` of /proc/PID/status), in MiB; None when it cannot be read.

    Not ``ru_maxrss`` from ``wait4``: that also holds the peak of the memory the
    process had before it started its program, a copy of the supervisor's own.
    """
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"VmHWM:"):
                    return round(int(line.split()[1]) / 1024.0, 3)
    except (OSError, ValueError, IndexError):
        return None
    return None


def _case_id() -> int:
    """A fresh, unguessable identifier for one hand-over of one case: a result is
    accepted only when it names the case in flight, so that nothing can answer a case
    before it was handed over."""
    return int.from_bytes(os.urandom(8), "big")


def _now_ms() -> int:
    return int(time.time() * 1000)


def _skipped(case: Case, reason: str) -> CaseResult:
    return CaseResult(
        case_name=case.name,
        case_class=case.case_class,
        category=case.category,
        status=Status.SKIPPED,
        reason=reason,
        position=case.position,
    )


def _errored(
    case: Case, reason: str, *, traceback: str | None = None, stdout: str = "", stderr: str = ""
) -> CaseResult:
    return CaseResult(
        case_name=case.name,
        case_class=case.case_class,
        category=case.category,
        status=Status.ERRORED,
        reason=reason,
        traceback=traceback,
        stdout=stdout,
        stderr=stderr,
        position=case.position,
    )


def _known(implementation_id: str) -> bool:
    """Whether an id names code (not a one-off ``…@unknown-…``)."""
    return not implementation_id.rpartition("@")[2].startswith(UNKNOWN)


def search_paths(suite: Suite, options: RunOptions) -> list[str]:
    """Where the worker looks for the implementation: --path entries, the suite's
    folder, the working directory."""
    paths = [str(Path(p).resolve()) for p in options.paths]
    paths.append(str(suite.directory.resolve()))
    paths.append(os.getcwd())
    return list(dict.fromkeys(paths))


@dataclass
class _Flight:
    """A case sent to a worker and not answered yet."""

    seq: int
    item: _Planned
    sent_at: float


class _Lane:
    """One worker process and the cases it holds; restarted when it is lost."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.worker: WorkerProcess | None = None
        self.loading = False
        """A load request was sent and not answered yet."""
        self.load_deadline = 0.0
        self.retired = False
        self.in_flight: deque[_Flight] = deque()
        self.losses = 0
        """Losses of this lane's worker since a case of it last finished."""
        self.reported_late = False
        """The case in flight passed its deadline; the worker's own report is awaited
        for a short grace, so that the worker can be kept."""
        self.expecting_exit = False


class _Execution:
    """One run's state while its cases are in the workers' hands."""

    def __init__(
        self,
        suite: Suite,
        options: RunOptions,
        emit: Callable[[RunEvent], None],
        cancel: threading.Event | None,
        warm: WarmWorkers | None = None,
    ) -> None:
        self.suite = suite
        self.options = options
        self._emit = emit
        self.deferred: list[CaseResult] = []
        """Results decided before running, reported once the implementation is loaded
        (or failed to load), so events keep their documented order."""
        self.cancel = cancel
        self.warm = warm
        self.results: dict[int, CaseResult] = {}
        self.total = len(suite.cases)
        self.notes: list[str] = []
        self.implementation_id = options.impl
        self.identity: Identity | None = None
        """What the run's id covers so far: the first import's files, grown by the
        files cases loaded while they ran (see :meth:`grow`)."""
        self.import_id = ""
        """The id of the first worker's import, which a later worker's is compared to."""
        self.lanes: list[_Lane] = []
        self.pending: deque[_Planned] = deque()
        self.announced = False
        """Whether ImplementationLoaded or ImplementationFailed was emitted."""
        self.finished = False
        """Set when the implementation failed to load: every remaining case is decided."""
        self._attempts: dict[int, int] = {}
        self.children_before = procs.children()
        """The supervisor's children before the run: not the run's to end."""
        self.sandbox = confinement.Decision(0, "none: disabled")
        """The sandbox the run is under (set by :func:`run_suite`)."""
        self.policy: Policy | None = None
        """What the sandbox allows, when there is one."""

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
        for result in deferred:
            self.record(result)

    def record(self, result: CaseResult) -> None:
        if self.policy is not None and result.reason and result.status in _EXPLAINED:
            explained = confinement.explain_denial(result.reason, self.policy)
            if explained != result.reason:
                result = replace(result, reason=explained)
        if result.position in self.results:
            raise AssertionError(f"two results for case {result.case_name!r}")
        # Judged on everything observed; kept scrubbed and bounded (cer.safetext).
        result = retained(result)
        self.results[result.position] = result
        self.emit(CaseFinished(result, len(self.results), self.total))

    def check_cancel(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise RunCancelled()

    def note_once(self, note: str) -> None:
        if note not in self.notes:
            self.notes.append(note)

    # --- worker lifecycle --------------------------------------------------------------

    def start_lane(self, lane: _Lane) -> None:
        """Start the lane's worker (a warm one when there is one) and ask it to load
        the implementation; the answer arrives in :meth:`execute`'s loop."""
        worker = self.warm.take() if self.warm is not None else None
        if worker is None:
            worker = WorkerProcess()
        lane.worker = worker
        lane.loading = True
        lane.reported_late = False
        lane.expecting_exit = False
        lane.load_deadline = time.monotonic() + max(LOAD_TIMEOUT_MIN, self.options.timeout)
        worker.send(
            {
                "op": "load",
                "impl": self.options.impl,
                "paths": search_paths(self.suite, self.options),
                "isolation": self.options.isolation,
                "capture_limit": self.options.capture_limit,
                "max_memory": self.options.max_memory,
                "timeout": self.options.timeout,
                "sandbox": self.policy.to_json() if self.policy is not None else None,
                "sandbox_abi": self.sandbox.abi,
            }
        )

    def kill_lane(self, lane: _Lane) -> None:
        if lane.worker is not None:
            lane.worker.kill()
            lane.worker = None
            self.end_strays()
        lane.loading = False
        lane.reported_late = False

    def end_strays(self) -> None:
        """End every process the run left with the supervisor: what a lost worker had
        adopted, a harness's daemon (see cer.procs); live workers are kept."""
        keep = set(self.children_before)
        keep.update(lane.worker.process.pid for lane in self.lanes if lane.worker is not None)
        if self.warm is not None:
            keep.update(self.warm.pids())
        procs.end_strays(keep)

    def stop_worker(self) -> None:
        """End every worker: ask them all to quit first, then make sure they are gone."""
        for lane in self.lanes:
            if lane.worker is not None:
                lane.worker.ask_to_quit()
        for lane in self.lanes:
            if lane.worker is not None:
                lane.worker.close()
                lane.worker = None

    def kill_worker(self) -> None:
        for lane in self.lanes:
            self.kill_lane(lane)

    def requeue(self, lane: _Lane) -> None:
        """Put the lane's unanswered cases back at the front of the queue, in order."""
        self.pending.extendleft(reversed([flight.item for flight in lane.in_flight]))
        lane.in_flight.clear()

    # --- running -----------------------------------------------------------------------

    def run(self, planned: list[_Planned]) -> None:
        if not planned:
            return
        if self.options.kind != "python":
            from cer.engine.command.harness import execute as execute_command

            execute_command(self, planned)
            return
        alone = [item for item in planned if item.alone]
        planned = [item for item in planned if not item.alone]
        if planned:
            self.pending = deque(planned)
            count = min(resolve_jobs(self.options.jobs), len(planned))
            self.lanes = [_Lane(index) for index in range(count)]
            self.execute()
        for item in alone:
            self.check_cancel()
            if self.finished:  # the implementation could not be loaded
                self.record(_errored(item.case, self.notes[-1] if self.notes else "not run"))
                continue
            worker = WorkerProcess()
            try:
                self.run_alone(worker, item)
            finally:
                worker.kill()

    # --- a case in a worker of its own ---------------------------------------------------

    def await_message(self, worker: WorkerProcess, deadline: float) -> tuple[str, Any]:
        """The worker's next message, or how waiting for it ended: ``("message",
        Message)``, ``("ended", description)`` (the process ended), ``("broken",
        description)`` (the channel broke or was corrupted) or ``("timeout", "")``."""
        while True:
            try:
                message = worker.next_message()
            except WorkerLost as lost:
                return ("ended" if lost.ended else "broken"), lost.description
            if message is not None:
                return "message", message
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return "timeout", ""
            death = worker.death_fd()
            fds = [worker.fileno()] if death is None else [worker.fileno(), death]
            ready, _, _ = select.select(fds, [], [], min(remaining, _POLL))
            self.check_cancel()
            try:
                if death is not None and death in ready:
                    worker.read_remaining()
                    message = worker.next_message()
                    if message is not None:
                        return "message", message
                    return "ended", worker.exit_description()
                if worker.fileno() in ready:
                    worker.read_available()
            except WorkerLost as lost:
                try:
                    message = worker.next_message()
                except WorkerLost:
                    message = None
                if message is not None:
                    return "message", message
                return ("ended" if lost.ended else "broken"), lost.description

    def run_alone(self, worker: WorkerProcess, item: _Planned) -> None:
        """Run one case inline in a fresh worker of its own, then end that worker.

        The worker is a process the supervisor started, so its end is the runner's own
        observation: a crash it sees itself (``crashed = true`` can be verified), and
        the kernel's peak resident memory of it (``resident_memory_mb``). For a case
        that asks about memory the worker is first forbidden, before the import, to
        create any process or run another program, so that this one process is all the
        case used.
        """
        options, case = self.options, item.case
        measure = asks_memory(case.expect)
        confined = "the worker did not say whether new processes were forbidden"
        try:
            worker.send(
                {
                    "op": "load",
                    "impl": options.impl,
                    "paths": search_paths(self.suite, options),
                    "isolation": "none",
                    "capture_limit": options.capture_limit,
                    "max_memory": options.max_memory,
                    "timeout": options.timeout,
                    "sandbox": self.policy.to_json() if self.policy is not None else None,
                    "sandbox_abi": self.sandbox.abi,
                    "alone": True,
                    "confine": measure,
                }
            )
        except WorkerLost as lost:
            self.alone_load_failed(item, None, lost.description)
            return
        limit = max(LOAD_TIMEOUT_MIN, options.timeout)
        load_deadline = time.monotonic() + limit
        loaded: Message | None = None
        while loaded is None:
            kind, got = self.await_message(worker, load_deadline)
            if kind != "message":
                failure = got or f"importing the implementation timed out after {limit:g} s"
                self.alone_load_failed(item, None, failure)
                return
            if measure and got.body.get("op") == "confined":
                confined = "" if got.body.get("ok") is True else str(got.body.get("why"))
                continue
            loaded = got
        if loaded.body.get("op") != "loaded" or not loaded.body.get("ok"):
            self.alone_load_failed(item, loaded, "the worker could not load the implementation")
            return
        self.announce(loaded.body)
        seq, timeout = _case_id(), options.timeout
        body = self.encode(item)
        sent = time.monotonic()
        with contextlib.suppress(WorkerLost):  # its end is seen below
            worker.send_case(seq, body)
        kind, got = self.await_message(worker, sent + timeout)
        elapsed_ms = (time.monotonic() - sent) * 1000.0
        if kind == "message":
            answer = got.body
            if answer.get("op") != "result" or answer.get("seq") != seq:
                self.record(
                    _errored(
                        case,
                        "the runner lost this case: the worker sent a message that answers "
                        "no case in flight",
                    )
                )
                return
            outcome = outcome_from_worker(
                answer, got.raw, timeout, options.capture_limit, elapsed_ms
            )
            self.grow(outcome.loaded_files)
            if elapsed_ms > timeout * 1000.0 or outcome.kind == "timed_out":
                outcome = replace(
                    outcome, kind="timed_out", detail=f"timed out after {timeout:g} s"
                )
                outcome = replace(outcome, elapsed_ms=timeout * 1000.0)
            else:
                peak = _peak_resident_mb(worker.process.pid) if measure else None
                worker.ask_to_quit()
                after, _ = self.await_message(worker, time.monotonic() + REPORT_GRACE + 1)
                if after == "message":
                    self.record(
                        _errored(
                            case,
                            "the runner lost this case: the worker sent another message "
                            "after its answer",
                        )
                    )
                    return
                code = worker.reap(0.5)
                if outcome.kind == "crashed" and code not in (0, None):
                    outcome = replace(outcome, seen=True)
        elif kind == "timeout":
            peak = None
            outcome = Outcome(
                "timed_out", detail=f"timed out after {timeout:g} s", elapsed_ms=timeout * 1000.0
            )
        elif kind == "ended":
            peak = None
            outcome = Outcome(
                "crashed",
                detail=f"the case ended the worker process: {str(got).split(': ', 1)[-1]}",
                elapsed_ms=elapsed_ms,
                seen=True,
            )
        else:
            self.record(_errored(case, f"the runner lost this case: {got}"))
            return
        if measure:
            worker.reap(0.5)
            if worker.process.returncode == -signal.SIGSYS:
                self.record(
                    _errored(
                        case,
                        "could not verify resident_memory_mb: the case tried to start a "
                        "process (killed by SIGSYS), and a case whose memory is measured "
                        "runs alone in one process",
                    )
                )
                return
            outcome = replace(
                outcome, **self.memory_of(peak, outcome, confined, self.policy is not None)
            )
        self.record(judge(case, outcome))

    @staticmethod
    def memory_of(
        peak: float | None, outcome: Outcome, confined: str, sandboxed: bool
    ) -> dict[str, Any]:
        """``memory_mb`` (or ``memory_note``) for an outcome of a worker of its own.

        Only under the sandbox: without it the process can reset the very count the
        kernel keeps for it (writing ``5`` to ``/proc/self/clear_refs`` resets the
        peak), which the sandbox's read-only ``/proc`` refuses."""
        if outcome.kind == "timed_out":
            return {"memory_note": "the case did not finish"}
        if not sandboxed:
            return {
                "memory_note": "without the sandbox the case can reset the kernel's count "
                "of its peak (/proc/self/clear_refs); run with the sandbox"
            }
        if confined:
            return {"memory_note": f"new processes could not be forbidden ({confined})"}
        if peak is None:
            return {
                "memory_note": "the kernel's account of the process could not be read "
                "(it ended before it was read)"
            }
        return {"memory_mb": peak}

    def announce(self, body: dict[str, Any]) -> None:
        """The implementation was loaded by a worker: say so once."""
        identity = identify(self.options.impl, body.get("files"))
        if not self.announced:
            self.first_import(identity)

    def first_import(self, identity: Identity) -> None:
        """The first worker loaded the implementation: the run's id starts here."""
        self.identity, self.import_id = identity, identity.implementation_id
        self.implementation_id = identity.implementation_id
        self.emit(ImplementationLoaded(identity.implementation_id, identity.files))

    def grow(self, reported: object) -> None:
        """Add the files a case reported it loaded while it ran to the run's id and to
        what watchers watch (cer.engine.identity.extend); the list is data, checked
        and hashed there. Once the id is a one-off, it stays one."""
        if reported is None or self.identity is None:
            return
        grown = extend(self.identity, self.options.impl, reported)
        if grown is self.identity:
            return
        self.identity = grown
        if _known(self.implementation_id) or not grown.known:
            self.implementation_id = grown.implementation_id
        self.emit(ImplementationLoaded(self.implementation_id, grown.files))

    def alone_load_failed(self, item: _Planned, message: Message | None, failure: str) -> None:
        if not self.announced:
            self.fail_import([item], message, failure)
            return
        body = message.body if message is not None else {}
        reason = str(body.get("reason") or failure)
        self.record(
            _errored(
                item.case, f"the implementation {self.options.impl} could not be loaded: {reason}"
            )
        )

    def execute(self) -> None:
        """Keep every lane busy until each case has a result."""
        pending, lanes = self.pending, self.lanes
        while not self.finished and (pending or any(lane.in_flight for lane in lanes)):
            self.check_cancel()
            for lane in lanes:
                if lane.worker is None and not lane.retired:
                    self.revive(lane)
                if self.finished:
                    return
            if all(lane.retired for lane in lanes):
                self.give_up()
                return
            for lane in lanes:
                if lane.worker is not None and not lane.loading:
                    self.fill(lane)
            self.wait(lanes)
            now = time.monotonic()
            for lane in lanes:
                if lane.worker is not None:
                    self.check_deadlines(lane, now)

    def revive(self, lane: _Lane) -> None:
        """Start a worker for a lane that has none, unless it used up its budget or
        there is nothing left for it to do."""
        if lane.losses > RESTART_BUDGET:
            lane.retired = True
            return
        if not self.pending and not lane.in_flight:
            return
        try:
            self.start_lane(lane)
        except WorkerLost as lost:
            self.load_failed(lane, None, lost.description)

    def give_up(self) -> None:
        """Every lane lost its worker too often: the remaining cases are not run."""
        losses = max(lane.losses for lane in self.lanes)
        for lane in self.lanes:
            self.requeue(lane)
        while self.pending:
            item = self.pending.popleft()
            self.record(
                _errored(
                    item.case,
                    "not run: the worker process was lost "
                    f"{losses} times in a row without finishing a case",
                )
            )

    def fill(self, lane: _Lane) -> None:
        """Hand the lane's worker the next case from the shared queue, when it has none.

        One case at a time: the worker holds no other case's input, a result can only
        be for the case in flight, and the time from handing it over to its answer is
        that case's own (``elapsed_ms``), measured here on the supervisor's clock.
        """
        worker, pending, in_flight = lane.worker, self.pending, lane.in_flight
        assert worker is not None
        if not pending or in_flight or lane.expecting_exit:
            return
        item = pending.popleft()
        seq = _case_id()
        body = self.encode(item)
        handed_over = time.monotonic()
        try:
            worker.send_case(seq, body)
        except WorkerLost as lost:
            pending.appendleft(item)
            self.salvage(lane, lost.description)
            return
        in_flight.append(_Flight(seq, item, handed_over))

    @staticmethod
    def encode(item: _Planned) -> bytes:
        case = item.case
        return plaindata.dumps(
            {
                "name": case.name,
                "case_class": case.case_class,
                "category": case.category,
                "tags": list(case.tags),
                "model": item.model,
                "input": plaindata.to_wire(item.input),
            }
        )

    def wait(self, lanes: list[_Lane]) -> None:
        """Wait for any worker to speak (or a short while), then handle every complete
        message, lane by lane."""
        channels = {lane.worker.fileno(): lane for lane in lanes if lane.worker is not None}
        if not channels:
            return
        deaths: dict[int, _Lane] = {}
        for lane in lanes:
            death = lane.worker.death_fd() if lane.worker is not None else None
            if death is not None:
                deaths[death] = lane
        ready, _, _ = select.select([*channels, *deaths], [], [], _POLL)
        now = time.monotonic()
        for fd in ready:
            if fd in deaths:
                continue
            lane = channels[fd]
            worker = lane.worker
            if worker is None:
                continue
            try:
                worker.read_available()
            except WorkerLost as lost:
                self.drain(lane, now)
                if lane.worker is worker:
                    self.lost(lane, lost.description, ended=lost.ended)
                continue
            self.drain(lane, now)
        for fd in ready:
            # The worker process ended. What it wrote before it ended is read first;
            # the supervisor never waits for the channel's end of file, which a process
            # the worker left behind may hold open.
            dead = deaths.get(fd)
            if dead is None or dead.worker is None or dead.worker.death_fd() != fd:
                continue
            lane, worker = dead, dead.worker
            try:
                worker.read_remaining()
            except WorkerLost as lost:
                self.drain(lane, now)
                if lane.worker is worker:
                    self.lost(lane, lost.description, ended=lost.ended)
                continue
            self.drain(lane, now)
            if lane.worker is worker:
                self.lost(lane, worker.exit_description(), ended=True)

    def salvage(self, lane: _Lane, description: str) -> None:
        """Sending to the lane's worker failed: it has gone. What it sent before it went
        (a result, then its exit after a case that changed its state) is handled first,
        so that no answered case is charged with the loss."""
        worker = lane.worker
        deadline = time.monotonic() + 2.0
        while lane.worker is worker and worker is not None and time.monotonic() < deadline:
            ready, _, _ = select.select([worker.fileno()], [], [], _POLL)
            if not ready:
                continue
            try:
                worker.read_available()
            except WorkerLost as lost:
                description = lost.description
                break
            finally:
                self.drain(lane, time.monotonic())
        if lane.worker is worker:
            self.drain(lane, time.monotonic())
        if lane.worker is worker:
            self.lost(lane, description)

    def drain(self, lane: _Lane, now: float) -> None:
        """Handle the messages of the lane's worker that have arrived whole; ``now`` is
        when they were read."""
        while lane.worker is not None:
            worker = lane.worker
            try:
                message = worker.next_message()
            except WorkerLost as lost:
                self.lost(lane, lost.description)
                return
            if message is None:
                return
            if lane.loading:
                self.loaded(lane, message)
            else:
                self.answer(lane, message, now)
            if self.finished:
                return

    def loaded(self, lane: _Lane, message: Message) -> None:
        """The lane's worker answered the load request."""
        body = message.body
        if body.get("op") != "loaded":
            self.load_failed(lane, None, "the worker answered the load request with something else")
            return
        if not body.get("ok"):
            self.load_failed(lane, message, "")
            return
        lane.loading = False
        # The worker lists the files after importing the implementation: its list is
        # data, checked and hashed here (see cer.engine.identity).
        identity = identify(self.options.impl, body.get("files"))
        if not self.announced:
            self.first_import(identity)
        elif not identity.known:
            self.implementation_id = identity.implementation_id  # it can no longer say
        elif identity.implementation_id != self.import_id and _known(self.implementation_id):
            self.note_once(
                "the implementation's source changed during the run: a worker started "
                f"later imported {identity.implementation_id}, so results may mix both "
                "versions"
            )

    def load_failed(self, lane: _Lane, message: Message | None, failure: str) -> None:
        """The lane's worker could not load the implementation.

        Before any worker loaded it, that decides the run: every case is errored (as
        with a single worker). Later, while other workers still run, only this lane
        stops; when none is left, the remaining cases are errored.
        """
        self.kill_lane(lane)
        others = [
            other
            for other in self.lanes
            if other is not lane and not other.retired and other.worker is not None
        ]
        if self.announced and others:
            lane.retired = True
            self.requeue(lane)
            body = message.body if message is not None else {}
            reason = str(body.get("reason") or failure or "it could not be loaded")
            self.note_once(f"a worker could not load the implementation again: {reason}")
            return
        items: list[_Planned] = []
        for each in self.lanes:
            items.extend(flight.item for flight in each.in_flight)
            each.in_flight.clear()
            if each is not lane:
                self.kill_lane(each)
        items.extend(self.pending)
        self.pending.clear()
        items.sort(key=lambda item: item.case.position)
        self.finished = True
        self.fail_import(items, message, failure)

    def fail_import(self, planned: list[_Planned], message: Message | None, failure: str) -> None:
        body = message.body if message is not None else {}
        reason = str(body.get("reason") or failure or "the implementation could not be loaded")
        trace = str(body.get("traceback") or "") or None
        output = str(body.get("output") or "")
        if message is not None and not self.announced:
            identity = identify(self.options.impl, body.get("files"))
            self.implementation_id = identity.implementation_id
        self.kill_worker()
        note = f"the implementation {self.options.impl} could not be loaded: {reason}"
        self.notes.append(note)
        self.emit(ImplementationFailed(reason, trace or ""))
        for item in planned:
            self.record(_errored(item.case, note, traceback=trace, stdout=output))

    def answer(self, lane: _Lane, message: Message, now: float) -> None:
        """A message from a worker that runs cases.

        The worker is on the implementation's side: what it sends is data. A result is
        accepted only for the case in flight (it names the case's unguessable id), once;
        anything else ends the worker and errors the case in flight. The time and the
        timeout are the supervisor's own: from handing the case over to reading its
        answer, on this process's clock.
        """
        body = message.body
        op = body.get("op")
        in_flight = lane.in_flight
        if op != "result" or not in_flight or body.get("seq") != in_flight[0].seq:
            what = f"a {op!r} message" if type(op) is str else "a message"
            self.lost(
                lane,
                f"the worker sent {what} that answers no case in flight (it was replaced)",
                expected=False,
            )
            return
        flight = in_flight.popleft()
        late = lane.reported_late
        lane.reported_late = False
        timeout = self.options.timeout
        elapsed_ms = (now - flight.sent_at) * 1000.0
        how = body.get("exit")
        if isinstance(how, dict) and how.get("how") == "unstarted" and not late:
            self.restart_case(flight.item)
            return
        lane.losses = 0
        outcome = outcome_from_worker(
            body, message.raw, timeout, self.options.capture_limit, elapsed_ms
        )
        self.grow(outcome.loaded_files)
        if late or elapsed_ms > timeout * 1000.0:
            # Past the supervisor's own deadline: whatever the worker says now, the case
            # did not answer in time.
            outcome = Outcome(
                "timed_out",
                detail=f"timed out after {timeout:g} s",
                elapsed_ms=timeout * 1000.0,
                stdout=outcome.stdout,
                stderr=outcome.stderr,
                # The stack the case's process dumped when the worker stopped it: data
                # from the implementation's side, shown as its stack, never judged.
                traceback=outcome.traceback if outcome.kind == "timed_out" else None,
            )
        elif outcome.kind == "timed_out":
            outcome = Outcome(
                "lost",
                detail=f"the worker reported a timeout after {elapsed_ms:.0f} ms, before "
                f"the {timeout:g} s deadline: the runner did not see one",
                elapsed_ms=elapsed_ms,
            )
        self.record(judge(flight.item.case, outcome))
        if body.get("anomaly"):
            lane.expecting_exit = True
            self.requeue(lane)

    def restart_case(self, item: _Planned) -> None:
        """The case's process ended before it started the case (something disturbed
        it): nothing of the implementation ran, so the case is sent again."""
        attempts = self._attempts.get(item.case.position, 0) + 1
        self._attempts[item.case.position] = attempts
        if attempts >= START_ATTEMPTS:
            self.record(
                _errored(
                    item.case,
                    f"the runner could not start this case: its process was disturbed "
                    f"before it began, {attempts} times",
                )
            )
            return
        self.pending.appendleft(item)

    def lost(
        self,
        lane: _Lane,
        description: str,
        *,
        expected: bool | None = None,
        ended: bool = False,
    ) -> None:
        """The lane's worker vanished or broke its channel (``ended``: the supervisor
        saw the worker process end)."""
        if lane.loading:
            self.load_failed(lane, None, description)
            return
        expecting = lane.expecting_exit if expected is None else expected
        self.handle_loss(lane, description, expecting, ended)
        if not expecting:
            lane.losses += 1
        self.kill_lane(lane)
        self.requeue(lane)

    def check_deadlines(self, lane: _Lane, now: float) -> None:
        """The load timeout and the case's deadline.

        The deadline is fixed when the case is handed over (its timeout after that) and
        nothing the worker sends moves it. With ``fork`` the worker kills the case's
        process at its own deadline and reports it; it gets a short grace to do so, so
        that it can be kept. The case has timed out either way.
        """
        if lane.loading:
            if now > lane.load_deadline:
                limit = max(LOAD_TIMEOUT_MIN, self.options.timeout)
                self.load_failed(
                    lane, None, f"importing the implementation timed out after {limit:g} s"
                )
            return
        if not lane.in_flight:
            return
        deadline = lane.in_flight[0].sent_at + self.options.timeout
        if now <= deadline:
            return
        if self.options.isolation == "fork" and now <= deadline + REPORT_GRACE:
            lane.reported_late = True
            return
        self.handle_timeout(lane)
        self.kill_lane(lane)
        lane.losses = 0
        self.requeue(lane)

    def handle_loss(self, lane: _Lane, description: str, expected: bool, ended: bool) -> None:
        """The worker vanished: the case it was running is errored (or crashed)."""
        if expected or not lane.in_flight:
            return
        flight = lane.in_flight.popleft()
        worker = lane.worker
        if self.options.isolation == "none" and ended:
            # The case ran in the worker, a process the supervisor started and saw end:
            # a crash the runner observed itself.
            outcome = Outcome(
                "crashed",
                detail=f"the case ended the worker process: {description.split(': ', 1)[-1]}",
                elapsed_ms=(time.monotonic() - flight.sent_at) * 1000.0,
                seen=True,
            )
            self.record(judge(flight.item.case, outcome))
            return
        tail = worker.stderr_tail() if worker is not None else ""
        self.record(
            _errored(flight.item.case, f"the runner lost this case: {description}", stderr=tail)
        )

    def handle_timeout(self, lane: _Lane) -> None:
        item = lane.in_flight.popleft().item
        lane.reported_late = False
        timeout = self.options.timeout
        outcome = Outcome(
            "timed_out", detail=f"timed out after {timeout:g} s", elapsed_ms=timeout * 1000.0
        )
        self.record(judge(item.case, outcome))


def plan(
    suite: Suite, options: RunOptions, registry: CategoryRegistry
) -> tuple[list[_Planned], list[CaseResult]]:
    """Split the suite into cases to run and cases already decided without running."""
    runnable: list[_Planned] = []
    decided: list[CaseResult] = []
    selection = options.selection
    shard = options.shard
    everything = selection.is_everything
    for case in suite.cases:
        if shard is not None and not in_shard(case.position, shard):
            decided.append(_skipped(case, OTHER_SHARD))
            continue
        if not everything and not selection.selects(case):
            decided.append(_skipped(case, "deselected"))
            continue
        model = registry.model_for(case.category)
        if model is None:
            decided.append(_skipped(case, f"category not supported: {case.category}"))
            continue
        if not case.expect:
            decided.append(_errored(case, "could not verify: the case's expect table is empty"))
            continue
        unmeasured = unmeasured_keys(case.expect)
        if unmeasured:
            decided.append(_errored(case, unmeasured_reason(unmeasured)))
            continue
        memory = asks_memory(case.expect)
        if memory and options.kind != "python":
            decided.append(
                _errored(
                    case,
                    "could not verify resident_memory_mb: the runner measures it only for "
                    "Python implementations (a command's processes are not its own to "
                    "account for)",
                )
            )
            continue
        resolved, missing = resolve_fixtures(dict(case.input), suite.fixtures_dir)
        if missing:
            names = ", ".join(missing)
            decided.append(
                _errored(case, f"missing fixture: {names} (looked in {suite.fixtures_dir})")
            )
            continue
        alone = options.kind == "python" and (memory or case.expect.get("crashed") is True)
        runnable.append(_Planned(case, resolved, model, alone))
    if options.first:
        first = options.first
        runnable.sort(key=lambda item: item.case.name not in first)  # stable
    return runnable, decided


def _check_options(options: RunOptions) -> None:
    if options.kind not in IMPLEMENTATION_KINDS:
        raise ValueError(f"kind must be one of {', '.join(IMPLEMENTATION_KINDS)}")
    if options.isolation not in ISOLATION_MODES:
        raise ValueError(f"isolation must be one of {', '.join(ISOLATION_MODES)}")
    if not 0 < options.timeout <= 86_400:
        raise ValueError("timeout must be a number of seconds above 0 and at most 86400")
    if type(options.jobs) is not int or options.jobs < 0:
        raise ValueError("jobs must be a whole number of workers, or 0 for one per CPU")
    if options.shard is not None:
        index, count = options.shard
        if not (type(index) is int and type(count) is int and 1 <= index <= count):
            raise ValueError("shard must be (I, N) with 1 <= I <= N")
    if options.sandbox not in confinement.SANDBOX_MODES:
        raise ValueError(f"sandbox must be one of {', '.join(confinement.SANDBOX_MODES)}")
    if options.network not in confinement.NETWORK_MODES:
        raise ValueError(f"network must be one of {', '.join(confinement.NETWORK_MODES)}")


def _shard_note(shard: tuple[int, int], total: int) -> str:
    index, count = shard
    mine = range(index, total + 1, count)
    shown = ", ".join(str(position) for position in mine[:3])
    more = ", …" if len(mine) > 3 else ""
    at = f", at positions {shown}{more} (one in {count})" if len(mine) else ""
    return (
        f"shard {index}/{count}: covers {len(mine)} of the {total} cases{at}; "
        f"the others are skipped as {OTHER_SHARD}"
    )


def run_suite(
    suite: Suite,
    options: RunOptions,
    *,
    on_event: Callable[[RunEvent], None] | None = None,
    cancel: threading.Event | None = None,
    warm: WarmWorkers | None = None,
) -> RunResult:
    """Run every case of ``suite`` and return one result per case in declared order.

    ``on_event`` is called from the calling thread only, one event at a time, whatever
    ``options.jobs`` is. ``warm`` supplies workers started ahead of time; it is
    refilled when the run ends, for the next one.

    Raises RunCancelled when ``cancel`` is set before the run completes (the workers
    are killed first), ValueError for options that make no sense, and
    :class:`cer.engine.confinement.SandboxUnavailable` (a ValueError) when the sandbox the
    options ask for cannot be had here.
    """
    _check_options(options)
    decision = confinement.decide(options.sandbox, options.network)
    scratch = tempfile.mkdtemp(prefix="cer-scratch-") if decision.abi else None
    try:
        return _run_suite(suite, options, decision, scratch, on_event, cancel, warm)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def _run_suite(
    suite: Suite,
    options: RunOptions,
    decision: confinement.Decision,
    scratch: str | None,
    on_event: Callable[[RunEvent], None] | None,
    cancel: threading.Event | None,
    warm: WarmWorkers | None,
) -> RunResult:
    emit = on_event or (lambda event: None)
    registry = build_registry(options.category_models)
    run_id = os.urandom(16).hex()  # like uuid4().hex, without importing uuid
    started = _now_ms()
    execution = _Execution(suite, options, emit, cancel, warm)
    execution.sandbox = decision
    if scratch is not None:
        execution.policy = confinement.build_policy(
            suite, options, scratch, search_paths(suite, options)
        )
    if options.isolation == "fork" and not hasattr(os, "fork"):
        execution.notes.append("fork is not available here: cases ran without isolation")
        options = replace(options, isolation="none")
        execution.options = options
    if options.shard is not None:
        execution.notes.append(_shard_note(options.shard, len(suite.cases)))
    emit(RunStarted(run_id, suite, options.impl, len(suite.cases)))
    runnable, decided = plan(suite, options, registry)
    execution.deferred = list(decided)
    if not runnable:
        execution.flush_deferred()
    try:
        execution.run(runnable)
    except BaseException:
        execution.kill_worker()
        execution.end_strays()
        if warm is not None:
            warm.fill()
        raise
    execution.flush_deferred()
    execution.stop_worker()
    execution.end_strays()
    if warm is not None:
        warm.fill()
    results = []
    for case in suite.cases:
        found = execution.results.get(case.position)
        if found is None:  # a bug in the runner must never look like a pass
            found = _errored(case, "the runner produced no result for this case")
        results.append(found)
    run = RunResult(
        run_id=run_id,
        target_module=suite.target or suite.directory.name,
        implementation_id=scrub(execution.implementation_id),
        started_at_ms=started,
        completed_at_ms=_now_ms(),
        results=tuple(results),
        suite_path=str(suite.path),
        suite_hash=suite.content_hash,
        format_version=suite.format_version,
        implementation=scrub(options.impl),
        notes=tuple(scrub(note) for note in execution.notes),
        conditions=run_conditions(options, decision),
    )
    emit(RunFinished(run))
    return run


def run_conditions(options: RunOptions, decision: confinement.Decision) -> RunConditions:
    """What a run with ``options`` ran under, as its records keep it."""
    import platform

    import cer

    return RunConditions(
        isolation=options.isolation if options.kind == "python" else "process",
        sandbox=decision.description,
        network=options.network,
        timeout=options.timeout,
        jobs=resolve_jobs(options.jobs) if options.kind == "python" else 1,
        category_remaps=tuple(sorted(options.category_models.items())),
        cer_version=cer.__version__,
        python_version=platform.python_version(),
    )
