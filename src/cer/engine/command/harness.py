"""The long-lived harness driver (``--impl-cmd``): one process for the whole run, a
``start`` handshake, then one ``run`` request per case, each answered by exactly one
``result`` with the same sequence number; restarted when it is lost, so that a lost
harness costs the case it was running and no other (see :mod:`cer.engine.restarts`)."""

from __future__ import annotations

import contextlib
import time
from collections import deque
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from cer.engine.command.identity import command_identity
from cer.engine.command.process import STOP_GRACE, CommandProcess, describe_exit, fail_all
from cer.engine.command.protocol import (
    MAX_MESSAGE_BYTES,
    PROTOCOL_VERSION,
    dumps,
    fresh_seq,
    line_evidence,
    outcome_from_result,
    parse_message,
    run_request,
    seq_of,
    start_request,
    stderr_hint,
)
from cer.engine.command.values import (
    NotEncodable,
    ProtocolError,
)
from cer.engine.execution import Execution
from cer.engine.identity import one_off_id
from cer.engine.restarts import Restarts
from cer.events import ImplementationLoaded
from cer.judge.verdict import Outcome, errored, judge
from cer.model import Status

if TYPE_CHECKING:
    from cer.engine.plan import Planned


START_TIMEOUT_MIN = 10.0
"""Floor, in seconds, of the time a harness gets to answer ``start`` (the per-case
timeout applies when it is longer): starting an interpreter can be slower than a case."""


# ----------------------------------------------------------------------- typed values


# ----------------------------------------------------------------------------- messages


# ------------------------------------------------------------------------------ process


# ----------------------------------------------------------------------- identification


# ----------------------------------------------------------------------------- entry


# ----------------------------------------------------------------- long-lived harness


@dataclass(frozen=True)
class _Held:
    """A case answered but not yet recorded: recorded once the harness has spoken
    again (or exited), so that a second answer to it can still void the first."""

    item: Planned
    outcome: Outcome
    seq: int
    line: bytes


class _StartFailed(Exception):
    def __init__(self, reason: str, stderr: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.stderr = stderr


class Harness:
    """Drives one run's cases through a long-lived harness, restarting it on failure."""

    def __init__(self, execution: Execution, words: list[str]) -> None:
        self.execution = execution
        self.options = execution.options
        self.words = words
        self.process: CommandProcess | None = None
        self.held: _Held | None = None
        self.first_declared: tuple[str, str, tuple[str, ...]] | None = None
        """What the first harness declared itself (:meth:`declaration`), which every
        restarted one must declare too (:meth:`check_declared`)."""
        self.restarts: Restarts | None = None
        """The run's restarts of the harness (see :meth:`loop`)."""
        self.first_sent: dict[int, float] = {}
        """Case position → when it was first sent: a case sent again (to a restarted
        harness) keeps that clock."""

    def run(self, planned: list[Planned]) -> None:
        try:
            try:
                info = self.start()
            except _StartFailed as failed:
                fail_all(self.execution, planned, failed.reason, failed.stderr)
                return
            self.first_declared = self.declaration(info)
            files = info.get("files", [])
            identity, sources = command_identity(
                self.options.kind,
                self.words,
                files,
                (str(info.get("name")), str(info.get("version"))),
            )
            self.execution.implementation_id = identity
            name, version = info.get("name"), info.get("version")
            if isinstance(name, str) and isinstance(version, str):
                self.execution.declared = (name, version)
            # What decided the cases is named in the evidence, as the harness named it.
            self.execution.notes.append(
                f"the harness declared itself {info.get('name')!r} version "
                f"{info.get('version')!r} (its own words)"
            )
            self.execution.emit(ImplementationLoaded(identity, sources))
            self.loop(deque(planned))
        finally:
            self.kill()

    # --- lifecycle ---------------------------------------------------------------------

    def start(self) -> dict[str, Any]:
        """Start the harness and shake hands; returns its ``implementation`` table."""
        try:
            process = CommandProcess(
                self.words,
                self.options.capture_limit,
                self.execution.policy,
                self.execution.sandbox.abi,
            )
        except OSError as exc:
            raise _StartFailed(f"cannot run {self.words[0]!r}: {exc.strerror or exc}", "") from None
        self.process = process
        process.send(start_request(self.execution.suite.target))
        limit = self.start_timeout()
        kind, line = process.next_line(time.monotonic() + limit, self.execution.check_cancel)
        if kind == "line":
            try:
                return self._check_started(line)
            except ProtocolError as exc:
                self.kill()
                raise _StartFailed(
                    f"{exc} (it answered start with {line_evidence(line)})", process.take_stderr()
                ) from None
        if kind == "eof":
            code = process.exit_code(0.5)
            process.drain_stderr(0.5)
            stderr = process.take_stderr()
            reason = f"the harness {describe_exit(code)} before answering start"
            self.kill()
            raise _StartFailed(reason + stderr_hint(stderr), stderr)
        self.kill()
        stderr = process.take_stderr()
        if kind == "timeout":
            reason = f"the harness did not answer start within {limit:g} s"
        else:
            reason = f"the harness answered start with a line over {MAX_MESSAGE_BYTES} bytes"
        raise _StartFailed(reason + stderr_hint(stderr), stderr)

    def start_timeout(self) -> float:
        """How long the harness may take to answer ``start``."""
        return max(START_TIMEOUT_MIN, self.options.timeout)

    def _check_started(self, line: bytes) -> dict[str, Any]:
        message = parse_message(line)
        if message.get("op") != "started":
            raise ProtocolError('the first message must be {"op": "started", ...}')
        version = message.get("protocol")
        if type(version) is not int:
            raise ProtocolError("started needs an integer protocol version")
        if version != PROTOCOL_VERSION:
            raise ProtocolError(
                f"the harness speaks protocol version {version}; this runner speaks only "
                f"version {PROTOCOL_VERSION} (docs/protocol.md)"
            )
        extra = sorted(set(message) - {"op", "protocol", "implementation"})
        if extra:
            raise ProtocolError(f"unexpected key {extra[0]!r} in started")
        info = message.get("implementation")
        if type(info) is not dict:
            raise ProtocolError("started needs an implementation table")
        for key in ("name", "version"):
            if type(info.get(key)) is not str or not info[key]:
                raise ProtocolError(f"implementation.{key} must be a non-empty string")
        files = info.get("files", [])
        if type(files) is not list or any(type(f) is not str for f in files):
            raise ProtocolError("implementation.files must be an array of strings")
        return info

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process = None

    # --- cases -------------------------------------------------------------------------

    def loop(self, pending: deque[Planned]) -> None:
        """Run every case of ``pending`` in order. A case that fails the harness (a
        crash, a timeout, a protocol violation) is recorded and the harness restarted
        for the next one: every case gets its own try. Only a harness that cannot be
        started again :data:`~cer.engine.restarts.START_ATTEMPTS` times in a row (or
        whose failed starts used up the run's allowance for them,
        :meth:`~cer.engine.restarts.Restarts.may_retry`) leaves the cases after it
        errored ``not run``, with the cause."""
        restarts = Restarts("the harness", len(pending))
        self.restarts = restarts
        in_a_row = 0
        try:
            while pending:
                self.execution.check_cancel()
                if self.execution.stopped or self.held_stops_the_run():  # --max-fail
                    break
                if self.process is None and not self.restart(restarts, in_a_row, pending):
                    return
                item = pending.popleft()
                failure = self.run_case(item, pending)
                if failure is None:
                    in_a_row = 0
                else:
                    in_a_row += 1
                    self.kill()
            self.stop()
            if pending:  # stopped by --max-fail: the held answer was the last failure allowed
                self.execution.leave_out(pending)
                pending.clear()
        finally:
            note = restarts.note()
            if note is not None:
                self.execution.notes.append(note)

    def restart(self, restarts: Restarts, in_a_row: int, pending: deque[Planned]) -> bool:
        """Start the harness again for the next case, after a wait that grows with the
        failures in a row (:class:`~cer.engine.restarts.Restarts`). A start that fails is
        tried again; after :data:`~cer.engine.restarts.START_ATTEMPTS` in a row, or once
        the failed starts of the run took their allowance of time
        (:meth:`~cer.engine.restarts.Restarts.may_retry`), the harness cannot be
        started, and the cases left are errored with the cause (False)."""
        while True:
            restarts.wait(in_a_row, self.execution.check_cancel)
            began = time.monotonic()
            try:
                info = self.start()
            except _StartFailed as failed:
                restarts.start_failed(time.monotonic() - began)
                in_a_row += 1
                if restarts.may_retry(self.start_timeout()):
                    continue
                self.flush()
                restarts.gave_up = True
                attempts = restarts.why_not(self.start_timeout())
                for item in pending:
                    self.execution.record(
                        errored(
                            item.case,
                            f"not run: the harness could not be restarted ({attempts}): "
                            f"{failed.reason}",
                            fail_class="not_run",
                            stderr=failed.stderr,
                        )
                    )
                pending.clear()
                return False
            restarts.started(time.monotonic() - began)
            restarts.failed_starts = 0
            self.check_declared(info)
            return True

    @staticmethod
    def declaration(info: dict[str, Any]) -> tuple[str, str, tuple[str, ...]]:
        """What a harness's ``started`` says it is: its name, version and files."""
        return (str(info.get("name")), str(info.get("version")), tuple(info.get("files", [])))

    def check_declared(self, info: dict[str, Any]) -> None:
        """A restarted harness must declare itself as the first one did: the run's id
        was made of the first declaration, so one that differs makes the id a one-off
        (the cases after it may have run other code), with a note."""
        if self.first_declared is None or self.declaration(info) == self.first_declared:
            return
        self.first_declared = None  # said once
        execution = self.execution
        prefix = execution.implementation_id.rpartition("@")[0] or execution.implementation_id
        execution.implementation_id = one_off_id(prefix)
        name, version, _ = self.declaration(info)
        execution.notes.append(
            f"a restarted harness declared itself {name!r} version {version!r} (with its "
            "files), not as the first one did: cases after a restart may have run other "
            "code, so the run's id is a one-off"
        )

    def held_stops_the_run(self) -> bool:
        """Whether the held answer, once recorded, reaches ``--max-fail``: then no next
        case is sent (the answer is held until the next one only to catch a second
        answer to it, which would make it errored: a failure either way)."""
        limit, held = self.options.max_fail, self.held
        if limit is None or held is None or self.execution.failures + 1 < limit:
            return False
        return judge(held.item.case, held.outcome).status in (Status.FAIL, Status.ERRORED)

    def run_case(self, item: Planned, pending: deque[Planned]) -> str | None:
        """Send one case and settle it.

        Returns None, or ``"CASE: what went wrong"`` when the harness must be restarted;
        the case is then recorded, or put back in ``pending`` when the failure was an
        earlier case's (answered twice)."""
        process = self.process
        assert process is not None
        seq = fresh_seq()
        try:
            request = run_request(seq, item)
        except NotEncodable as exc:
            self.execution.record(
                errored(
                    item.case,
                    f"the case's input cannot be sent to a command implementation: {exc}",
                    fail_class="not_run",
                )
            )
            return None
        before = process.take_stderr()
        sent = self.first_sent.setdefault(item.case.position, time.monotonic())
        process.send(request)
        kind, line = process.next_line(sent + self.options.timeout, self.execution.check_cancel)
        elapsed_ms = (time.monotonic() - sent) * 1000.0

        def stderr() -> str:
            return before + process.take_stderr()

        if kind == "line":
            try:
                message = parse_message(line)
            except ProtocolError as exc:
                return self.violation(
                    item,
                    f"the harness printed a line that is not a "
                    f"protocol message ({exc}): {line_evidence(line)}",
                    stderr(),
                    elapsed_ms,
                )
            held = self.held
            if held is not None and seq_of(message) == held.seq:
                captured = stderr()
                self.answered_twice(held, line)
                pending.appendleft(item)
                self.execution.retried.setdefault(
                    item.case.position,
                    "the harness answered an earlier case in its place and was restarted",
                )
                return f"{held.item.case.name}: the harness answered it twice" + stderr_hint(
                    captured
                )
            try:
                outcome = outcome_from_result(message, seq)
            except ProtocolError as exc:
                return self.violation(
                    item,
                    f"the harness broke the protocol ({exc}): {line_evidence(line)}",
                    stderr(),
                    elapsed_ms,
                )
            self.flush()
            self.held = _Held(
                item, replace(outcome, elapsed_ms=elapsed_ms, stderr=stderr()), seq, line
            )
            return None
        if kind == "eof":
            code = process.exit_code(0.5)
            process.drain_stderr(0.5)
            captured = stderr()
            partial = f" after printing {line_evidence(line)}" if line else ""
            detail = (
                f"the harness {describe_exit(code)} while running this case{partial}"
                + stderr_hint(captured)
            )
            self.flush()
            self.execution.record(
                judge(
                    item.case,
                    Outcome(
                        "crashed",
                        detail=detail,
                        stderr=captured,
                        elapsed_ms=elapsed_ms,
                        seen=code is not None,
                        fail_class="exited" if code is not None and code >= 0 else None,
                    ),
                )
            )
            return f"{item.case.name}: {detail}"
        if kind == "timeout":
            self.kill()
            assert process.closed
            captured = stderr()
            timeout = self.options.timeout
            detail = f"timed out after {timeout:g} s (the harness was killed)" + stderr_hint(
                captured
            )
            self.flush()
            self.execution.record(
                judge(
                    item.case,
                    Outcome(
                        "timed_out", detail=detail, stderr=captured, elapsed_ms=timeout * 1000.0
                    ),
                )
            )
            return f"{item.case.name}: {detail}"
        return self.violation(
            item,
            f"the harness printed a line over {MAX_MESSAGE_BYTES} bytes, starting "
            f"{line_evidence(line)}",
            stderr(),
            elapsed_ms,
        )

    def violation(self, item: Planned, detail: str, stderr: str, elapsed_ms: float) -> str:
        """The harness broke the protocol while ``item`` was running: that case is lost."""
        detail += stderr_hint(stderr)
        self.flush()
        self.execution.record(
            judge(item.case, Outcome("lost", detail=detail, stderr=stderr, elapsed_ms=elapsed_ms))
        )
        return f"{item.case.name}: {detail}"

    def flush(self) -> None:
        """Record the held case: nothing the harness did since contradicts its answer."""
        held, self.held = self.held, None
        if held is not None:
            self.execution.record(judge(held.item.case, held.outcome))

    def answered_twice(self, held: _Held, line: bytes) -> None:
        """The harness answered the held case again (``line``): whatever its first
        answer said, the case is lost, with both answers as the evidence."""
        self.held = None
        self.execution.record(
            judge(
                held.item.case,
                replace(
                    held.outcome,
                    kind="lost",
                    detail=f"the harness answered this case twice: first "
                    f"{line_evidence(held.line)}, then {line_evidence(line)}",
                ),
            )
        )

    def stop(self) -> None:
        """Ask the harness to exit; a last duplicate answer still voids the held case."""
        process = self.process
        if process is None:
            self.flush()
            return
        process.send(dumps({"op": "stop"}), then_close=True)
        deadline = time.monotonic() + STOP_GRACE
        while True:
            kind, line = process.next_line(deadline, self.execution.check_cancel)
            if kind != "line":
                break
            held = self.held
            with contextlib.suppress(ProtocolError):
                if held is not None and seq_of(parse_message(line)) == held.seq:
                    self.answered_twice(held, line)
        self.flush()
        self.kill()


# ---------------------------------------------------------------------- per-case runs
