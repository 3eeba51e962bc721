"""A case that runs alone, inline in a worker of its own: a process the supervisor
started and reaps itself, so that the case's crash (``crashed = true``) and its memory
(``resident_memory_mb``) are the runner's own observation, never the worker's word.
The pool (:mod:`cer.engine.python.pool`) hands such cases here after its lanes are done."""

from __future__ import annotations

import contextlib
import select
import signal
import time
from dataclasses import dataclass, replace
from typing import Any

from cer.engine.plan import Planned
from cer.engine.python.imports import LOAD_TIMEOUT_MIN, Imports
from cer.engine.python.state import PythonExecution
from cer.engine.python.workerproc import (
    POLL,
    REPORT_GRACE,
    Message,
    WorkerLost,
    WorkerProcess,
    case_id,
    encode_case,
)
from cer.judge.verdict import (
    Outcome,
    asks_memory,
    errored,
    judge,
    outcome_from_worker,
)
from cer.sandbox import memory_cgroup


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


_MIB = 1024.0 * 1024.0


PROVIDED_CRASH = (
    "could not verify crashed: the implementation was given as an object, so its worker "
    "is a fork of the calling process, and --max-memory limits that fork's whole address "
    "space, the caller's memory included: the worker running out of it, or ending, is "
    "not shown to be the implementation's crash"
)
"""The reason of a case expecting ``crashed = true`` that a callable's worker "passed"
under a memory limit."""


@dataclass
class MemoryAccount:
    """How one case's memory is counted (see :mod:`cer.sandbox.memory_cgroup`): the cgroup its
    worker was moved into, or, without one, what ``/dev/shm`` held before the case."""

    group: memory_cgroup.CaseGroup | None
    shm: memory_cgroup.ShmListing | None
    unseen: str = ""
    """Why the count would miss memory the case may hold (then it is not verified), or
    empty."""

    def peak_mb(self, pid: int) -> float | None:
        """The case's peak memory in MiB, read while its process ``pid`` lives on after
        its answer; None when the kernel's account cannot be read.

        With a cgroup: the larger of the process's peak resident memory and the most
        memory the kernel charged to the cgroup at once (which counts memfd and tmpfs
        pages, mapped or not, but not the pages of shared libraries another process
        loaded first). Without: the peak resident memory plus the memory-backed files
        the process holds and left in ``/dev/shm`` when it answered (a file that is
        also mapped counts twice, which can only make the count larger)."""
        resident = _peak_resident_mb(pid)
        if resident is None:
            return None
        if self.group is not None:
            charged = self.group.peak()
            return None if charged is None else max(resident, round(charged / _MIB, 3))
        held = memory_cgroup.held_in_memory_files(pid, self.shm)
        return None if held is None else round(resident + held / _MIB, 3)

    def close(self) -> None:
        """Remove the cgroup, once the worker has ended."""
        if self.group is not None:
            self.group.remove()


class AloneCases:
    """Runs the cases of ``execution`` that run alone, each in a worker of its own;
    what their workers say about the import goes to ``imports``, the pool's."""

    def __init__(self, execution: PythonExecution, imports: Imports) -> None:
        self.execution = execution
        self.imports = imports
        self.memory_controller: memory_cgroup.Controller | None = None
        """Where the cgroups of memory cases are made (found by the first such case)."""

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
            ready, _, _ = select.select(fds, [], [], min(remaining, POLL))
            self.execution.check_cancel()
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

    def run_alone(self, worker: WorkerProcess, item: Planned) -> None:
        """Run one case inline in a fresh worker of its own, then end that worker.

        The worker is a process the supervisor started, so its end is the runner's own
        observation: a crash it sees itself (``crashed = true`` can be verified), and
        the kernel's peak resident memory of it (``resident_memory_mb``). For a case
        that asks about memory the worker is first forbidden, before the import, to
        create any process or run another program, so that this one process is all the
        case used.
        """
        options, case = self.execution.options, item.case
        worker.write_timeout = options.timeout
        measure = asks_memory(case.expect)
        account = self.account_memory(worker) if measure else None
        try:
            self.run_alone_accounted(worker, item, account)
        finally:
            if account is not None:
                worker.kill()
                account.close()

    def account_memory(self, worker: WorkerProcess) -> MemoryAccount:
        """Start accounting for the memory of ``worker``, which has imported nothing
        yet: a cgroup of its own where one can be made (the run's first memory case
        looks for where), else a listing of ``/dev/shm`` to tell what the case leaves
        there (see :mod:`cer.sandbox.memory_cgroup`)."""
        if not self.execution.measured_by:
            found = memory_cgroup.locate()
            self.memory_controller = found if isinstance(found, memory_cgroup.Controller) else None
            self.execution.measured_by = (
                found.describe()
                if isinstance(found, memory_cgroup.Controller)
                else "peak resident memory plus the memory-backed files the case holds "
                f"(no cgroup: {found})"
            )
        controller = self.memory_controller
        if controller is not None:
            try:
                group = controller.open_case()
            except OSError:
                group = None
            if group is not None:
                try:
                    group.join(worker.process.pid)
                except OSError:
                    group.remove()
                    group = None
            if group is not None:
                return MemoryAccount(group, None)
        scratch = self.execution.policy.scratch if self.execution.policy is not None else ""
        if scratch and memory_cgroup.memory_backed(scratch):
            # The case's files there are RAM, emptied before it answers: no count sees them.
            unseen = (
                "the cases' scratch folder (TMPDIR) is on a memory-backed file system, "
                "whose files only a memory cgroup counts, and none could be made here"
            )
            return MemoryAccount(None, memory_cgroup.ShmListing.take(), unseen)
        return MemoryAccount(None, memory_cgroup.ShmListing.take())

    def run_alone_accounted(
        self, worker: WorkerProcess, item: Planned, account: MemoryAccount | None
    ) -> None:
        """:meth:`run_alone`, with the case's memory accounted for by ``account``
        (None when it does not ask about memory)."""
        execution = self.execution
        options, case = execution.options, item.case
        measure = account is not None
        confined = "the worker did not say whether new processes were forbidden"
        # Without a cgroup nothing counts the kernel's buffers of a pipe or socket:
        # 300 MiB held in socket pairs once passed a 100 MiB bound at 16 MiB.
        no_buffers = account is not None and account.group is None
        try:
            worker.send(self.imports.load_request("none", confine=measure, no_buffers=no_buffers))
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
        self.imports.announce(loaded.body)
        seq, timeout = case_id(), options.timeout
        body = encode_case(item)
        sent = time.monotonic()
        with contextlib.suppress(WorkerLost):  # its end is seen below
            worker.send_case(seq, body)
        kind, got = self.await_message(worker, sent + timeout)
        elapsed_ms = (time.monotonic() - sent) * 1000.0
        if kind == "message":
            answer = got.body
            if answer.get("op") != "result" or answer.get("seq") != seq:
                execution.record(
                    errored(
                        case,
                        "the runner lost this case: the worker sent a message that answers "
                        "no case in flight",
                        fail_class="lost",
                    )
                )
                return
            outcome = outcome_from_worker(
                answer, got.raw, timeout, options.capture_limit, elapsed_ms
            )
            self.imports.grow(outcome.loaded_files)
            if elapsed_ms > timeout * 1000.0 or outcome.kind == "timed_out":
                outcome = replace(
                    outcome, kind="timed_out", detail=f"timed out after {timeout:g} s"
                )
                outcome = replace(outcome, elapsed_ms=timeout * 1000.0)
            else:
                peak = None
                if account is not None:
                    peak = account.peak_mb(worker.process.pid)
                worker.ask_to_quit()
                after, _ = self.await_message(worker, time.monotonic() + REPORT_GRACE + 1)
                if after == "message":
                    execution.record(
                        errored(
                            case,
                            "the runner lost this case: the worker sent another message "
                            "after its answer",
                            fail_class="lost",
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
                fail_class="exited" if (worker.reap(0.5) or 0) > 0 else None,
            )
        else:
            execution.record(errored(case, f"the runner lost this case: {got}", fail_class="lost"))
            return
        if measure:
            worker.reap(0.5)
            if worker.process.returncode == -signal.SIGSYS:
                execution.record(
                    errored(
                        case,
                        "could not verify resident_memory_mb: the case tried to start a "
                        "process, or to open a network socket or io_uring, or to reach "
                        "another process through a Unix socket"
                        + (
                            ", or to make a pipe or socket, whose kernel buffers only a "
                            "memory cgroup counts (none could be made here)"
                            if no_buffers
                            else ""
                        )
                        + " (killed by SIGSYS), and a case whose memory is measured runs "
                        "alone in one process that keeps its data to itself",
                        fail_class="unverifiable",
                    )
                )
                return
            memory = self.memory_of(peak, outcome, confined, execution.policy is not None)
            if account is not None and account.unseen and "memory_mb" in memory:
                memory = {"memory_note": account.unseen}
            outcome = replace(outcome, **memory)
        if (
            outcome.kind == "crashed"
            and execution.provided is not None
            and options.max_memory is not None
            and case.expect.get("crashed") is True
        ):
            execution.record(errored(case, PROVIDED_CRASH, fail_class="unverifiable"))
            return
        execution.record(judge(case, outcome))

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
                "(it ended before it was read, or what it left in /dev/shm was too large "
                "to walk)"
            }
        return {"memory_mb": peak}

    def alone_load_failed(self, item: Planned, message: Message | None, failure: str) -> None:
        execution = self.execution
        if not execution.announced:
            self.imports.fail_import([item], message, failure)
            return
        body = message.body if message is not None else {}
        reason = str(body.get("reason") or failure)
        execution.record(
            errored(
                item.case,
                f"not run: the Python implementation {execution.options.impl} could not be "
                f"loaded in the case's own worker: {reason}",
                fail_class="not_run",
            )
        )
