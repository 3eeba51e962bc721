"""The supervisor's handle on one worker process: start it, talk to it, kill it.

The worker is a fresh interpreter (``python -m cer.worker``) in its own session, so
that killing its process group never touches the supervisor, and so that the
implementation is imported anew on every run. The channel is a pair of private pipes;
the worker's stdin is empty and its stdout and stderr never reach the terminal.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cer.engine.python import spawn
from cer.engine.python.spawn import Started
from cer.process_tree import end_process, signal_name
from cer.wire import plaindata
from cer.wire.framing import (
    KIND_CASE,
    KIND_JSON,
    KIND_RAW,
    FrameError,
    pack,
    split_frames,
)
from cer.wire.messages import SEQ, CaseMessage

if TYPE_CHECKING:
    from cer.engine.plan import Planned

_READ_SIZE = 1 << 16
"""Bytes asked for by one read of the worker's channel: what a pipe holds by default,
so no read could get more. Asking for much more (a megabyte) made every read allocate,
map and unmap a buffer that large, three system calls and a page fault per message."""

WRITE_TIMEOUT = 30.0
"""How long a worker may leave a message to it untaken before it is lost, unless the
pool sets the run's case timeout (:attr:`WorkerProcess.write_timeout`)."""
REPORT_GRACE = 1.0
"""How long past a case's deadline the supervisor waits for the worker's own report of
the timeout (so that the worker can be kept). The case has timed out either way: the
deadline is the supervisor's own, fixed when the case was handed over."""
POLL = 0.05
"""The longest one wait on a worker's channel blocks before cancellation is checked."""


def case_id() -> int:
    """A fresh, unguessable identifier for one hand-over of one case: a result is
    accepted only when it names the case in flight, so that nothing can answer a case
    before it was handed over."""
    return int.from_bytes(os.urandom(8), "big")


def encode_case(item: Planned) -> bytes:
    """The case message that hands ``item`` to a worker (sent by
    :meth:`WorkerProcess.send_case` under a :func:`case_id`)."""
    case = item.case
    message = CaseMessage(
        name=case.name,
        case_class=case.case_class,
        category=case.category,
        tags=list(case.tags),
        model=item.model,
        input=plaindata.to_wire(item.input),
    )
    return plaindata.dumps(message)


class WorkerLost(Exception):
    """The worker process ended (``ended``) or broke its channel."""

    def __init__(self, description: str, *, ended: bool = False) -> None:
        super().__init__(description)
        self.description = description
        self.ended = ended


@dataclass(frozen=True)
class Message:
    """A control message from the worker, with the raw result bytes that follow it."""

    body: dict[str, Any]
    raw: bytes = b""


class WorkerProcess:
    """One running worker. Not thread-safe: one supervisor thread owns it.

    The process starts at once and waits for its ``load`` message; until the first
    message is sent it has imported nothing but ``cer.worker`` (see :attr:`fresh`).
    """

    def __init__(
        self,
        cwd: str | None = None,
        *,
        provided: Callable[..., Any] | None = None,
        started: Started | None = None,
    ) -> None:
        """Start the worker in ``cwd`` (this process's working directory by default),
        or take over ``started``, a worker :func:`cer.engine.python.spawn.start` started.

        With ``provided`` (an implementation given as an object), the worker is a fork
        of this process that never starts a program of its own, so that it holds the
        object (:func:`cer.engine.python.provided.serve_forked`); otherwise a fresh
        interpreter."""
        if started is None:
            started = spawn.start(cwd, provided=provided)
        self._stderr = started.stderr
        self.process = started.process
        to_worker_w = started.to_worker
        from_worker_r = started.from_worker
        self._to_worker = to_worker_w
        # Writes never block: a worker that stops reading its channel (the worker is on
        # the implementation's side) must not stop the supervisor (see :meth:`_write`).
        os.set_blocking(to_worker_w, False)
        self._from_worker = from_worker_r
        self.write_timeout = WRITE_TIMEOUT
        """How long one message may take to be taken by the worker; the pool sets the
        run's case timeout, after which a case not even taken has timed out."""
        self._deaf: str | None = None
        self._buffer = bytearray()
        self._pending: list[tuple[int, bytes]] = []
        self._next = 0
        self._corrupted: str | None = None
        self.closed = False
        self.used = False
        """Whether anything was ever sent to this worker."""
        self.started_in = started.started_in
        self.started_with = started.started_with
        self.rusage: Any = None
        """The kernel's resource use of the ended worker (see :meth:`reap`)."""
        self._pidfd: int | None = None
        if hasattr(os, "pidfd_open"):
            with contextlib.suppress(OSError):
                self._pidfd = os.pidfd_open(self.process.pid)

    @property
    def fresh(self) -> bool:
        """Whether this worker was never sent anything and is still running, in the
        working directory and environment this process has now: exactly what a worker
        started now would be."""
        return (
            not self.used
            and not self.closed
            and self.process.poll() is None
            and self.started_in == os.getcwd()
            and self.started_with == os.environ
        )

    def fileno(self) -> int:
        """The descriptor to wait on for messages (see :meth:`read_available`)."""
        return self._from_worker

    def _write(self, data: bytes) -> None:
        """Write ``data`` to the worker, waiting while its channel is full, at most
        :attr:`write_timeout` seconds: a worker that stops reading (a case's input can
        be larger than the pipe holds) is lost, never a supervisor blocked for good,
        with no deadline enforced. Once that happened, every later write fails at once.
        """
        self.used = True
        if self._deaf is not None:
            raise WorkerLost(self._deaf)
        fd, view = self._to_worker, memoryview(data)
        deadline: float | None = None
        try:
            while view:
                try:
                    view = view[os.write(fd, view) :]
                    continue
                except BlockingIOError:
                    pass
                now = time.monotonic()
                if deadline is None:
                    deadline = now + self.write_timeout
                if now >= deadline:
                    self._deaf = (
                        "the worker stopped reading its channel: a message to it was not "
                        f"taken within {self.write_timeout:g} s"
                    )
                    raise WorkerLost(self._deaf)
                select.select([], [fd], [], deadline - now)
        except OSError as exc:
            raise WorkerLost(self._death_description(f"the channel broke ({exc})")) from exc

    def send(self, message: Mapping[str, Any]) -> None:
        self._write(pack(KIND_JSON, plaindata.dumps(message)))

    def send_case(self, seq: int, body: bytes) -> None:
        """Send one case: ``body`` is the encoded case message (see cer.wire.framing)."""
        self._write(pack(KIND_CASE, SEQ.pack(seq) + body))

    def receive(self, timeout: float) -> Message | None:
        """The next message, or None when ``timeout`` seconds pass without one."""
        deadline = time.monotonic() + timeout
        while True:
            message = self.next_message()
            if message is not None:
                return message
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([self._from_worker], [], [], remaining)
            if not ready:
                return None
            self.read_available()

    def read_available(self) -> None:
        """Read what the channel holds now (call when :meth:`fileno` is readable);
        WorkerLost when the worker has gone or its channel is corrupted."""
        try:
            chunk = os.read(self._from_worker, _READ_SIZE)
        except BlockingIOError:
            return
        except OSError as exc:
            raise WorkerLost(self._death_description(f"the channel broke ({exc})")) from exc
        if not chunk:
            raise WorkerLost(self._death_description("the worker process ended"), ended=True)
        if self._corrupted is not None:
            return  # nothing after the corruption can be trusted
        self._buffer += chunk
        try:
            self._pending.extend(split_frames(self._buffer))
        except FrameError as exc:
            # The messages before the corruption arrived intact and are handled first
            # (a case's result must not be lost to what the next case wrote).
            self._pending.extend(exc.frames)
            self._corrupted = f"the worker's channel was corrupted: {exc}"

    def death_fd(self) -> int | None:
        """A descriptor that becomes readable when the worker process ends (Linux), so
        that its end is seen even while a process it left behind holds the channel."""
        return None if self.closed else self._pidfd

    def read_remaining(self) -> None:
        """Read whatever the channel holds now, without waiting for its end (the worker
        has ended; a process it left behind may still hold the channel open)."""
        os.set_blocking(self._from_worker, False)
        for _ in range(1024):  # bounded: the pipe holds at most its buffer
            try:
                self.read_available()
            except BlockingIOError:
                return
            ready, _, _ = select.select([self._from_worker], [], [], 0)
            if not ready:
                return

    def next_message(self) -> Message | None:
        """The next complete message already read, or None."""
        pending, start = self._pending, self._next
        if start >= len(pending):
            if start:
                pending.clear()
                self._next = 0
            if self._corrupted is not None:
                raise WorkerLost(self._corrupted)
            return None
        kind, data = pending[start]
        if kind != KIND_JSON:
            self._next += 1
            raise WorkerLost("the worker's channel was corrupted: unexpected raw frame")
        try:
            body = plaindata.loads(data)
        except ValueError as exc:
            raise WorkerLost(f"the worker's channel was corrupted: {exc}") from exc
        if not isinstance(body, dict):
            raise WorkerLost("the worker's channel was corrupted: message is not a table")
        if body.get("op") == "result":
            if len(pending) < start + 2:
                if self._corrupted is not None:
                    raise WorkerLost(self._corrupted)
                return None  # its raw frame has not arrived yet
            raw_kind, raw = pending[start + 1]
            if raw_kind != KIND_RAW:
                raise WorkerLost("the worker's channel was corrupted: result without payload")
            self._next += 2
            return Message(body, raw)
        self._next += 1
        return Message(body)

    def reap(self, wait: float) -> int | None:
        """The worker's exit code once it has ended (waiting up to ``wait`` seconds), or
        None. The supervisor reaps it itself with ``wait4``, so that :attr:`rusage`
        holds the kernel's account of it: its peak resident memory, and that of every
        process it reaped."""
        if self.process.returncode is not None:
            return self.process.returncode
        deadline = time.monotonic() + wait
        while True:
            try:
                pid, status, usage = os.wait4(self.process.pid, os.WNOHANG)
            except ChildProcessError:
                return self.process.poll()
            if pid:
                self.rusage = usage
                self.process.returncode = os.waitstatus_to_exitcode(status)
                return self.process.returncode
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self._await_exit(min(remaining, 0.002) if self._pidfd is None else remaining)

    def _await_exit(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the worker process to end: on its pidfd,
        which wakes the moment it does (Linux), else by sleeping."""
        if self._pidfd is None:
            time.sleep(timeout)
            return
        try:
            select.select([self._pidfd], [], [], timeout)
        except (OSError, ValueError):
            time.sleep(min(timeout, 0.002))

    def _death_description(self, what: str) -> str:
        code = self.reap(0.5)
        if code is None:
            return what
        if code < 0:
            return f"{what}: killed by {signal_name(-code)}"
        return f"{what}: exited with status {code}"

    def exit_description(self) -> str:
        """How the process ended, for an error message."""
        return self._death_description("the worker process ended")

    def stderr_tail(self, limit: int = 4000) -> str:
        """The end of what the worker itself wrote to stderr (its own failures)."""
        try:
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - limit))
            return self._stderr.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""

    def kill(self) -> None:
        """Kill the worker's whole process group and release its resources."""
        if self.closed:
            return
        self.closed = True
        if self._pidfd is not None:
            with contextlib.suppress(OSError):
                os.close(self._pidfd)
            self._pidfd = None
        # The whole tree (the worker adopts what its cases leave behind, even in
        # sessions of their own), then its process group.
        end_process(self.process)
        for fd in (self._to_worker, self._from_worker):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._stderr.close()

    def ask_to_quit(self) -> None:
        """Tell the worker to quit, without waiting (see :meth:`close`)."""
        if not self.closed:
            self.write_timeout = 0.0  # a worker whose channel is full is not waited for
            with contextlib.suppress(WorkerLost):
                self.send({"op": "quit"})

    def close(self) -> None:
        """Ask the worker to quit, then make sure it is gone."""
        if self.closed:
            return
        self.ask_to_quit()
        if self._pidfd is not None:
            self._await_exit(1.0)  # wakes as it ends, where a timed wait polls and sleeps
        else:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=1)
        self.kill()


class WarmWorkers:
    """Worker processes started ahead of the next run, for a shell that runs again and
    again (the TUI): a run takes a waiting worker instead of starting an interpreter,
    so only the implementation's import remains between a save and the first result.

    Every worker handed out is :attr:`WorkerProcess.fresh`: a process that has imported
    nothing but ``cer.worker``, was never sent anything, and runs in this process's
    current working directory and environment. A worker is never reused: a run takes
    it, and :meth:`fill` starts a replacement. Thread-safe; :meth:`close` ends them all.
    """

    def __init__(self, count: int = 1) -> None:
        self.count = max(0, count)
        self._lock = threading.Lock()
        self._ready: list[WorkerProcess] = []
        self._closed = False

    def fill(self) -> None:
        """Start workers until ``count`` fresh ones wait (a few ms each: the new
        interpreters start in the background)."""
        with self._lock:
            if self._closed:
                return
            self._drop_stale()
            while len(self._ready) < self.count:
                self._ready.append(WorkerProcess())

    def hold(self, worker: WorkerProcess) -> None:
        """Keep ``worker``, started elsewhere as :meth:`fill` would start it
        (:func:`cer.cli.entry.early_workers`), among the waiting ones."""
        with self._lock:
            if self._closed:
                worker.kill()
                return
            self._ready.append(worker)

    def take(self) -> WorkerProcess | None:
        """A fresh waiting worker, or None when none is ready."""
        with self._lock:
            self._drop_stale()
            return self._ready.pop(0) if self._ready else None

    def pids(self) -> frozenset[int]:
        """The process ids of the waiting workers."""
        with self._lock:
            return frozenset(worker.process.pid for worker in self._ready)

    def close(self) -> None:
        """Kill every waiting worker; later calls to :meth:`fill` start none."""
        with self._lock:
            self._closed = True
            ready, self._ready = self._ready, []
        for worker in ready:
            worker.kill()

    def _drop_stale(self) -> None:
        for worker in [w for w in self._ready if not w.fresh]:
            self._ready.remove(worker)
            worker.kill()
