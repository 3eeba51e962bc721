"""The per-case driver (``--impl-cmd-per-case``): one process per case, the ``run``
request (carrying the protocol version) on its stdin, the ``result`` (or a refusal of
the version) on its stdout."""

from __future__ import annotations

import os
import re
import shutil
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from cer.engine.command import startup
from cer.engine.command.identity import command_identity
from cer.engine.command.process import CommandProcess, describe_exit, fail_all, not_found
from cer.engine.command.protocol import (
    MAX_MESSAGE_BYTES,
    fresh_seq,
    line_evidence,
    outcome_from_result,
    parse_message,
    refusal_of,
    run_request,
    stderr_hint,
)
from cer.engine.command.values import (
    NotEncodable,
    ProtocolError,
    clip,
)
from cer.engine.execution import Execution
from cer.events import ImplementationLoaded
from cer.judge.verdict import Outcome, errored, judge

if TYPE_CHECKING:
    from cer.engine.plan import Planned

_CANNOT_START = re.compile(r"the process exited with status 12[67] without an error document")
"""How a per-case command that the shell could not execute (126) or find (127) ends."""


@dataclass(frozen=True)
class Refused:
    """A per-case command refused the protocol version its request offered: the case
    did not run (``not run: <reason>``), whatever the command's exit status."""

    reason: str
    stderr: str


class PerCase:
    """Runs each case in a process of its own (``--impl-cmd-per-case``)."""

    def __init__(self, execution: Execution, words: list[str]) -> None:
        self.execution = execution
        self.options = execution.options
        self.words = words
        self.refusals = 0
        self.first_refusal = ""
        self.refusal_note = 0
        """Where the note about refusals is in the run's notes."""
        """Cases the command refused (see :class:`Refused`): the run's note is made of
        the first refusal, and says how many there were, so that a command that words
        each refusal differently cannot add a note per case."""

    def run(self, planned: list[Planned]) -> None:
        program = self.words[0]
        found = (
            shutil.which(program)
            if os.sep not in program
            else (program if os.access(program, os.X_OK) and os.path.isfile(program) else None)
        )
        if found is None:
            fail_all(self.execution, planned, not_found(program), "")
            return
        identity, sources = command_identity(self.options.kind, self.words)
        self.execution.implementation_id = identity
        self.execution.emit(ImplementationLoaded(identity, sources))
        for index, item in enumerate(planned):
            seq = fresh_seq()
            self.execution.check_cancel()
            if self.execution.stopped:  # --max-fail reached
                self.execution.leave_out(planned[index:])
                return
            try:
                request = run_request(seq, item, per_case=True)
            except NotEncodable as exc:
                self.execution.record(
                    errored(
                        item.case,
                        f"the case's input cannot be sent to a command implementation: {exc}",
                        fail_class="not_run",
                    )
                )
                continue
            try:
                outcome = self.run_one(request, seq)
            except OSError as exc:
                self.execution.record(
                    errored(
                        item.case,
                        f"cannot run {program!r}: {exc.strerror or exc}",
                        fail_class="not_run",
                    )
                )
                continue
            if isinstance(outcome, Refused):
                self.note_refusal(outcome)
                self.execution.record(
                    errored(
                        item.case,
                        f"not run: {outcome.reason}",
                        fail_class="not_run",
                        stderr=outcome.stderr,
                    )
                )
                continue
            cause = self.sandbox_refused_start(outcome)
            if cause:
                reason = f"not run: {cause}"
                self.execution.record(
                    errored(item.case, reason, fail_class="not_run", stderr=outcome.stderr)
                )
                continue
            self.execution.record(judge(item.case, outcome))

    def sandbox_refused_start(self, outcome: Outcome) -> str:
        """The cause, in words, when the command could not start because the sandbox
        refused it a file it needs (the shell's exit 126 or 127, nothing printed, a
        refused path in stderr); said once in the run's note. Empty otherwise."""
        if outcome.kind != "lost" or outcome.stdout or not _CANNOT_START.match(outcome.detail):
            return ""
        execution = self.execution
        if not startup.denied_path(outcome.stderr, execution.policy, execution.refused):
            return ""
        line = startup.headline(
            self.options.kind,
            self.options.impl,
            outcome.detail,
            outcome.stderr,
            execution.policy,
            execution.refused,
        )
        if not any(note.startswith(line) for note in execution.notes):
            execution.notes.append(startup.note(line, outcome.stderr))
        return line

    def note_refusal(self, refused: Refused) -> None:
        """Say the command's refusals in one note: the first one's words, and how many
        cases were refused."""
        notes = self.execution.notes
        if not self.refusals:
            self.first_refusal = refused.reason
            notes.append("")
            self.refusal_note = len(notes) - 1
        self.refusals += 1
        cases = "1 case was" if self.refusals == 1 else f"{self.refusals} cases were"
        notes[self.refusal_note] = f"{self.first_refusal}; {cases} refused, so not run"

    def run_one(self, request: bytes, seq: int) -> Outcome | Refused:
        """Run the command once for one case and say what happened."""
        timeout = self.options.timeout
        started = time.monotonic()
        process = CommandProcess(
            self.words,
            self.options.capture_limit,
            self.execution.policy,
            self.execution.sandbox.abi,
            end_strays=self.execution.end_strays,
        )
        try:
            process.send(request, then_close=True)
            kind, stdout = process.read_to_end(started + timeout, self.execution.check_cancel)
            elapsed_ms = (time.monotonic() - started) * 1000.0
            if kind == "timeout":
                process.kill()
            code = process.exit_code(0.0) if kind == "done" else None
            stderr = process.take_stderr()
        finally:
            process.kill()
        if kind == "timeout":
            return Outcome(
                "timed_out",
                detail=f"timed out after {timeout:g} s (the process "
                "was killed)" + stderr_hint(stderr),
                stderr=stderr,
                elapsed_ms=timeout * 1000.0,
            )
        if kind == "too_long":
            return Outcome(
                "lost",
                detail=f"the process printed over {MAX_MESSAGE_BYTES} "
                f"bytes, starting {line_evidence(stdout)}",
                stderr=stderr,
                elapsed_ms=elapsed_ms,
            )
        return _per_case_outcome(code, stdout, stderr, seq, elapsed_ms)


def _per_case_outcome(
    code: int | None, stdout: bytes, stderr: str, seq: int, elapsed_ms: float
) -> Outcome | Refused:
    """Judge-ready outcome of one per-case process from its exit status and output.

    Exit 0 with an observation: returned. An ``error`` document (any exit status): raised,
    the implementation's own refusal. A non-zero exit without one: lost (errored, with
    the status and stderr): a command that could not start (a missing script, a syntax
    error, ``false``) exits non-zero too, and that is no refusal of the input. Killed by
    a signal: crashed. Exit 0 with anything else on stdout: lost.
    """
    text = stdout.decode("utf-8", "replace")
    if code is None or code < 0:
        return Outcome(
            "crashed",
            detail=f"the process {describe_exit(code)}" + stderr_hint(stderr),
            stdout=text,
            stderr=stderr,
            elapsed_ms=elapsed_ms,
            seen=code is not None,
        )
    outcome: Outcome | None = None
    problem = ""
    if stdout.strip():
        try:
            message = parse_message(stdout)
            refused = refusal_of(message, seq)
            if refused is not None:
                return Refused(refused, stderr)
            outcome = outcome_from_result(message, seq, envelope_optional=True)
        except ProtocolError as exc:
            outcome, problem = None, str(exc)
    if outcome is not None and outcome.kind == "returned" and code != 0:
        return Outcome(
            "lost",
            detail=f"the process exited with status {code} after printing "
            "an observation" + stderr_hint(stderr),
            stdout=text,
            stderr=stderr,
            elapsed_ms=elapsed_ms,
            fail_class="exited",
        )
    if outcome is not None:
        return replace(outcome, stderr=stderr, elapsed_ms=elapsed_ms)
    if code != 0:
        printed = f" after printing {clip(repr(text))}" if problem else ""
        return Outcome(
            "lost",
            detail=f"the process exited with status {code} without an error document"
            f"{printed}" + stderr_hint(stderr),
            stdout=text,
            stderr=stderr,
            elapsed_ms=elapsed_ms,
            fail_class="exited",
        )
    if problem:
        detail = (
            f"the process printed something that is not a result ({problem}): {clip(repr(text))}"
        )
    else:
        detail = "the process exited with status 0 without printing a result"
    return Outcome(
        "lost",
        detail=detail + stderr_hint(stderr),
        stdout=text,
        stderr=stderr,
        elapsed_ms=elapsed_ms,
        fail_class=None if problem else "exited",
    )
