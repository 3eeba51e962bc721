"""The supervisor: runs a suite against an implementation and reports the truth.

The supervisor never imports the implementation. It plans every case (deselected,
unsupported category, missing fixture, nothing to verify), hands the runnable ones to a
worker process in declared order, enforces deadlines from outside, turns each reported
observation into a verdict, and returns exactly one result per declared case, in
declared order. See docs/execution-model.md.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from cer import plaindata
from cer.categories import CategoryRegistry, build_registry
from cer.events import (
    CaseFinished,
    ImplementationFailed,
    ImplementationLoaded,
    RunEvent,
    RunFinished,
    RunStarted,
)
from cer.model import Case, CaseResult, RunResult, Status, Suite
from cer.selection import Selection
from cer.suite import resolve_fixtures
from cer.verdict import Outcome, judge, outcome_from_worker
from cer.workerproc import Message, WorkerLost, WorkerProcess

ISOLATION_MODES = ("fork", "none")
IMPLEMENTATION_KINDS = ("python", "command", "command-per-case")
LOAD_TIMEOUT_MIN = 30.0
"""Importing an implementation may take longer than one case; this is its floor."""
WATCHDOG_GRACE = 5.0
"""How long past a case's timeout the supervisor waits for the worker's own report."""
RESTART_BUDGET = 3
"""Consecutive worker losses, with no case finished between them, before giving up."""
_POLL = 0.05


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
    category_models: Mapping[str, str] = field(default_factory=dict)
    """Extra category → built-in model mappings (``[tool.cer.categories]``)."""


@dataclass(frozen=True)
class _Planned:
    case: Case
    input: dict[str, Any]
    model: str


def _now_ms() -> int:
    return int(time.time() * 1000)


def _implementation_id(impl: str, files: Iterable[str]) -> str:
    """``impl@hash``: the hash covers the content of the implementation's source files
    (not their location), so the same code has the same id in any checkout."""
    contents = []
    for name in files:
        try:
            contents.append(hashlib.sha256(Path(name).read_bytes()).digest())
        except OSError:
            contents.append(b"<unreadable>")
    digest = hashlib.sha256(b"".join(sorted(contents)))
    return f"{impl}@{digest.hexdigest()[:10]}"


def _skipped(case: Case, reason: str) -> CaseResult:
    return CaseResult(
        case_name=case.name,
        case_class=case.case_class,
        category=case.category,
        status=Status.SKIPPED,
        reason=reason,
        position=case.position,
    )


def _errored(case: Case, reason: str, *, traceback: str | None = None, stdout: str = "",
             stderr: str = "") -> CaseResult:
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


def search_paths(suite: Suite, options: RunOptions) -> list[str]:
    """Where the worker looks for the implementation: --path entries, the suite's
    folder, the working directory."""
    paths = [str(Path(p).resolve()) for p in options.paths]
    paths.append(str(suite.directory.resolve()))
    paths.append(os.getcwd())
    return list(dict.fromkeys(paths))


class _Execution:
    """One run's state while its cases are in the worker's hands."""

    def __init__(
        self,
        suite: Suite,
        options: RunOptions,
        emit: Callable[[RunEvent], None],
        cancel: threading.Event | None,
    ) -> None:
        self.suite = suite
        self.options = options
        self._emit = emit
        self.deferred: list[CaseResult] = []
        """Results decided before running, reported once the implementation is loaded
        (or failed to load), so events keep their documented order."""
        self.cancel = cancel
        self.results: dict[int, CaseResult] = {}
        self.total = len(suite.cases)
        self.notes: list[str] = []
        self.implementation_id = options.impl
        self.worker: WorkerProcess | None = None

    # --- bookkeeping -------------------------------------------------------------------

    def emit(self, event: RunEvent) -> None:
        self._emit(event)
        if isinstance(event, ImplementationLoaded | ImplementationFailed):
            self.flush_deferred()

    def flush_deferred(self) -> None:
        deferred, self.deferred = self.deferred, []
        for result in deferred:
            self.record(result)

    def record(self, result: CaseResult) -> None:
        if result.position in self.results:
            raise AssertionError(f"two results for case {result.case_name!r}")
        self.results[result.position] = result
        self.emit(CaseFinished(result, len(self.results), self.total))

    def check_cancel(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise RunCancelled()

    # --- worker lifecycle --------------------------------------------------------------

    def start_worker(self) -> tuple[bool, Message | None, str]:
        """Start a worker and load the implementation.

        Returns (loaded, the 'loaded' message, a failure description)."""
        worker = WorkerProcess()
        self.worker = worker
        worker.send(
            {
                "op": "load",
                "impl": self.options.impl,
                "paths": search_paths(self.suite, self.options),
                "isolation": self.options.isolation,
                "capture_limit": self.options.capture_limit,
                "max_memory": self.options.max_memory,
                "timeout": self.options.timeout,
            }
        )
        limit = max(LOAD_TIMEOUT_MIN, self.options.timeout)
        deadline = time.monotonic() + limit
        while True:
            self.check_cancel()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                worker.kill()
                return False, None, f"importing the implementation timed out after {limit:g} s"
            message = worker.receive(min(_POLL, remaining))
            if message is None:
                continue
            if message.body.get("op") != "loaded":
                worker.kill()
                return False, None, "the worker answered the load request with something else"
            return bool(message.body.get("ok")), message, ""

    def stop_worker(self) -> None:
        if self.worker is not None:
            self.worker.close()
            self.worker = None

    def kill_worker(self) -> None:
        if self.worker is not None:
            self.worker.kill()
            self.worker = None

    # --- running -----------------------------------------------------------------------

    def run(self, planned: list[_Planned]) -> None:
        if not planned:
            return
        if self.options.kind != "python":
            from cer.commandimpl import execute as execute_command

            execute_command(self, planned)
            return
        try:
            loaded, message, failure = self.start_worker()
        except WorkerLost as lost:
            loaded, message, failure = False, None, lost.description
        if not loaded:
            self.fail_import(planned, message, failure)
            return
        assert message is not None
        files = tuple(str(f) for f in message.body.get("files", ()))
        self.implementation_id = _implementation_id(self.options.impl, files)
        self.emit(ImplementationLoaded(self.implementation_id, files))
        self.execute(deque(planned))

    def fail_import(self, planned: list[_Planned], message: Message | None, failure: str) -> None:
        body = message.body if message is not None else {}
        reason = str(body.get("reason") or failure or "the implementation could not be loaded")
        trace = str(body.get("traceback") or "") or None
        output = str(body.get("output") or "")
        if message is not None:
            files = tuple(str(f) for f in body.get("files", ()))
            self.implementation_id = _implementation_id(self.options.impl, files)
        self.kill_worker()
        note = f"the implementation {self.options.impl} could not be loaded: {reason}"
        self.notes.append(note)
        self.emit(ImplementationFailed(reason, trace or ""))
        for item in planned:
            self.record(
                _errored(item.case, note, traceback=trace, stdout=output)
            )

    def execute(self, pending: deque[_Planned]) -> None:
        # Without isolation the case runs in the worker, whose own clock the case could
        # tamper with; there, one case at a time, timed here from send to result.
        inline = self.options.isolation == "none"
        window = 1 if inline else 4
        sent_at: dict[int, float] = {}
        in_flight: deque[tuple[int, _Planned]] = deque()
        seq = 0
        losses = 0
        begun_at: float | None = None
        last_heard = time.monotonic()
        timeout = self.options.timeout
        expecting_exit = False
        while pending or in_flight:
            self.check_cancel()
            worker = self.worker
            if worker is None:
                if losses > RESTART_BUDGET:
                    for _, item in in_flight:
                        pending.appendleft(item)
                    for item in pending:
                        self.record(_errored(
                            item.case,
                            "not run: the worker process was lost "
                            f"{losses} times in a row without finishing a case",
                        ))
                    return
                pending.extendleft(reversed([item for _, item in in_flight]))
                in_flight.clear()
                try:
                    loaded, message, failure = self.start_worker()
                except WorkerLost as lost:
                    loaded, message, failure = False, None, lost.description
                if not loaded:
                    self.fail_import(list(pending), message, failure)
                    return
                worker = self.worker
                assert worker is not None
                begun_at = None
                last_heard = time.monotonic()
                expecting_exit = False
            try:
                while pending and len(in_flight) < window and not expecting_exit:
                    item = pending.popleft()
                    seq += 1
                    worker.send({
                        "op": "case",
                        "seq": seq,
                        "name": item.case.name,
                        "case_class": item.case.case_class,
                        "category": item.case.category,
                        "tags": list(item.case.tags),
                        "model": item.model,
                        "input": plaindata.to_wire(item.input),
                    })
                    sent_at[seq] = time.monotonic()
                    in_flight.append((seq, item))
                message = worker.receive(_POLL)
            except WorkerLost as lost:
                self.handle_loss(in_flight, lost.description, begun_at, expecting_exit)
                if not expecting_exit:
                    losses += 1
                self.kill_worker()
                begun_at = None
                continue
            now = time.monotonic()
            if message is None:
                overdue = (
                    begun_at is not None and now - begun_at > timeout
                ) or now - last_heard > timeout + WATCHDOG_GRACE
                if overdue and in_flight:
                    self.handle_timeout(in_flight, begun_at is not None)
                    self.kill_worker()
                    losses = 0
                    begun_at = None
                continue
            last_heard = now
            op = message.body.get("op")
            if op == "begin":
                begun_at = now
                continue
            if op != "result" or not in_flight or message.body.get("seq") != in_flight[0][0]:
                self.handle_loss(in_flight, f"the worker sent an unexpected message {op!r}",
                                 begun_at, False)
                losses += 1
                self.kill_worker()
                begun_at = None
                continue
            done_seq, item = in_flight.popleft()
            begun_at = None
            losses = 0
            outcome = outcome_from_worker(
                message.body, message.raw, timeout, self.options.capture_limit
            )
            started_at = sent_at.pop(done_seq, None)
            if inline and outcome.elapsed_ms is not None and started_at is not None:
                outcome = replace(outcome, elapsed_ms=(now - started_at) * 1000.0)
            self.record(judge(item.case, outcome))
            if message.body.get("anomaly"):
                expecting_exit = True
                pending.extendleft(reversed([queued for _, queued in in_flight]))
                in_flight.clear()

    def handle_loss(
        self,
        in_flight: deque[tuple[int, _Planned]],
        description: str,
        begun_at: float | None,
        expected: bool,
    ) -> None:
        """The worker vanished: the case it was running is errored (or crashed)."""
        if expected or not in_flight:
            return
        _, item = in_flight.popleft()
        worker = self.worker
        if self.options.isolation == "none" and begun_at is not None:
            outcome = Outcome("crashed", detail=f"the case ended the worker process: "
                              f"{description.split(': ', 1)[-1]}")
            self.record(judge(item.case, outcome))
            return
        tail = worker.stderr_tail() if worker is not None else ""
        self.record(_errored(item.case, f"the runner lost this case: {description}",
                             stderr=tail))

    def handle_timeout(self, in_flight: deque[tuple[int, _Planned]], precise: bool) -> None:
        _, item = in_flight.popleft()
        timeout = self.options.timeout
        if precise:
            outcome = Outcome("timed_out", detail=f"timed out after {timeout:g} s",
                              elapsed_ms=timeout * 1000.0)
            self.record(judge(item.case, outcome))
        else:
            self.record(_errored(
                item.case,
                f"the worker stopped responding for {timeout + WATCHDOG_GRACE:g} s",
            ))


def plan(
    suite: Suite, options: RunOptions, registry: CategoryRegistry
) -> tuple[list[_Planned], list[CaseResult]]:
    """Split the suite into cases to run and cases already decided without running."""
    runnable: list[_Planned] = []
    decided: list[CaseResult] = []
    selection = options.selection
    for case in suite.cases:
        if not selection.selects(case):
            decided.append(_skipped(case, "deselected"))
            continue
        model = registry.model_for(case.category)
        if model is None:
            decided.append(_skipped(case, f"category not supported: {case.category}"))
            continue
        if not case.expect:
            decided.append(_errored(case, "could not verify: the case's expect table is empty"))
            continue
        resolved, missing = resolve_fixtures(dict(case.input), suite.fixtures_dir)
        if missing:
            names = ", ".join(missing)
            decided.append(_errored(
                case, f"missing fixture: {names} (looked in {suite.fixtures_dir})"
            ))
            continue
        runnable.append(_Planned(case, resolved, model))
    return runnable, decided


def run_suite(
    suite: Suite,
    options: RunOptions,
    *,
    on_event: Callable[[RunEvent], None] | None = None,
    cancel: threading.Event | None = None,
) -> RunResult:
    """Run every case of ``suite`` and return one result per case in declared order.

    Raises RunCancelled when ``cancel`` is set before the run completes (the worker is
    killed first), and ValueError for options that make no sense.
    """
    if options.kind not in IMPLEMENTATION_KINDS:
        raise ValueError(f"kind must be one of {', '.join(IMPLEMENTATION_KINDS)}")
    if options.isolation not in ISOLATION_MODES:
        raise ValueError(f"isolation must be one of {', '.join(ISOLATION_MODES)}")
    if not 0 < options.timeout <= 86_400:
        raise ValueError("timeout must be a number of seconds above 0 and at most 86400")
    emit = on_event or (lambda event: None)
    registry = build_registry(options.category_models)
    run_id = uuid.uuid4().hex
    started = _now_ms()
    execution = _Execution(suite, options, emit, cancel)
    if options.isolation == "fork" and not hasattr(os, "fork"):
        execution.notes.append("fork is not available here: cases ran without isolation")
        options = replace(options, isolation="none")
        execution.options = options
    emit(RunStarted(run_id, suite, options.impl, len(suite.cases)))
    runnable, decided = plan(suite, options, registry)
    execution.deferred = list(decided)
    if not runnable:
        execution.flush_deferred()
    try:
        execution.run(runnable)
    except BaseException:
        execution.kill_worker()
        raise
    execution.flush_deferred()
    execution.stop_worker()
    results = []
    for case in suite.cases:
        found = execution.results.get(case.position)
        if found is None:  # a bug in the runner must never look like a pass
            found = _errored(case, "the runner produced no result for this case")
        results.append(found)
    run = RunResult(
        run_id=run_id,
        target_module=suite.target or suite.directory.name,
        implementation_id=execution.implementation_id,
        started_at_ms=started,
        completed_at_ms=_now_ms(),
        results=tuple(results),
        suite_path=str(suite.path),
        suite_hash=suite.content_hash,
        format_version=suite.format_version,
        implementation=options.impl,
        notes=tuple(execution.notes),
    )
    emit(RunFinished(run))
    return run
