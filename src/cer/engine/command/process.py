"""One command process: its own session, piped stdin, stdout and stderr, waits bounded
by deadlines kept here, and its tree ended when it is done with."""

from __future__ import annotations

import contextlib
import errno
import os
import select
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable

from cer import sandbox
from cer.engine import spawned
from cer.engine.command import startup
from cer.engine.command.protocol import MAX_MESSAGE_BYTES
from cer.engine.command.values import EVIDENCE_CHARS
from cer.engine.execution import Execution
from cer.engine.plan import Planned
from cer.events import ImplementationFailed
from cer.judge.verdict import errored
from cer.process_tree import end_process, signal_name
from cer.sandbox import scratch

STOP_GRACE = 1.0
"""How long a harness gets to exit after ``stop`` before its process group is killed."""


_POLL = 0.05


_READ_CHUNK = 1 << 16
"""Bytes asked for by one read: what a pipe holds. A larger request makes every read
allocate, map and unmap a buffer that large."""


def not_found(program: str) -> str:
    """Why ``program`` (a command's first word) cannot be run, in words: it is not on
    ``PATH``, not there, or there but not executable."""
    if os.sep in program and os.path.isfile(program):
        return f"cannot run {program!r}: it is not executable (chmod +x {program})"
    return f"cannot run {program!r}: no such executable"


def describe_exit(code: int | None) -> str:
    if code is None:
        return "closed its stdout"
    if code < 0:
        return f"was killed by {signal_name(-code)}"
    return f"exited with status {code}"


class CommandProcess:
    """One harness process: its own session, piped stdin/stdout/stderr, bounded waits.

    Not thread-safe; the run's thread owns it. stdout is split into lines; stderr is
    drained continuously (so a flood never blocks the harness) into a capture that
    keeps the last ``capture_limit`` bytes.
    """

    def __init__(
        self,
        words: list[str],
        capture_limit: int,
        policy: sandbox.Policy | None = None,
        abi: int = 0,
        end_strays: Callable[[], None] | None = None,
    ) -> None:
        env = None
        self._end_strays = end_strays
        """Ends what the process left running (a daemon in a session of its own, adopted
        by cer) when it is killed: before its folder is removed, so that nothing of it
        can write into the folder while it is emptied."""
        self.scratch = ""
        """The process's own scratch folder (TMPDIR), removed when it is done with."""
        if policy is not None:
            # Started through the sandbox's launcher, which confines itself and then
            # becomes the command: nothing of the command ever runs unconfined.
            program = words[0]
            if shutil.which(program) is None:
                code = (
                    errno.EACCES if os.sep in program and os.path.isfile(program) else errno.ENOENT
                )
                raise OSError(code, os.strerror(code), program)
            if policy.scratch:
                # A folder of its own inside the run's, the only one it may write to.
                self.scratch = scratch.make(policy.scratch, f"process-{os.urandom(8).hex()}")
                policy = policy.with_scratch(self.scratch)
            words = sandbox.launcher_command(policy, words, abi)
            env = {**os.environ, **policy.environment()}
        try:
            with spawned.LOCK:
                self.popen = subprocess.Popen(
                    words,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    bufsize=0,
                    start_new_session=True,
                    env=env,
                )
                spawned.started(self.popen)
        except BaseException:
            scratch.remove(self.scratch)
            raise
        assert self.popen.stdin and self.popen.stdout and self.popen.stderr
        self._in: int | None = self.popen.stdin.fileno()
        self._out = self.popen.stdout.fileno()
        self._err = self.popen.stderr.fileno()
        os.set_blocking(self._in, False)
        self._outbound = bytearray()
        self._close_when_sent = False
        self._stdout = bytearray()
        self._scan = 0
        self.stdout_open = True
        self.stderr_open = True
        self._capture = bytearray()
        self._dropped = 0
        self._limit = max(1024, capture_limit)
        self.closed = False

    # writing

    def send(self, data: bytes, *, then_close: bool = False) -> None:
        """Queue ``data`` for the harness's stdin; it is written while waiting."""
        if self._in is not None:
            self._outbound += data
        self._close_when_sent = self._close_when_sent or then_close
        self._write()

    def _write(self) -> None:
        if self._in is None:
            return
        while self._outbound:
            try:
                written = os.write(self._in, self._outbound[:65536])
            except BlockingIOError:
                return
            except OSError:  # the harness closed its stdin or ended
                self._outbound.clear()
                self._close_stdin()
                return
            del self._outbound[:written]
        if self._close_when_sent:
            self._close_stdin()

    def _close_stdin(self) -> None:
        if self._in is not None:
            self._in = None
            with contextlib.suppress(OSError):
                assert self.popen.stdin is not None
                self.popen.stdin.close()

    # reading

    def _pump(self, timeout: float) -> None:
        readers = [
            fd
            for fd, is_open in ((self._out, self.stdout_open), (self._err, self.stderr_open))
            if is_open
        ]
        writers = [self._in] if self._in is not None and self._outbound else []
        if not readers and not writers:  # both pipes closed: wait for the exit itself
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=timeout)
            return
        ready_r, ready_w, _ = select.select(readers, writers, [], timeout)
        for fd in ready_r:
            try:
                chunk = os.read(fd, _READ_CHUNK)
            except OSError:
                chunk = b""
            if fd == self._out:
                if chunk:
                    self._stdout += chunk
                else:
                    self.stdout_open = False
            elif chunk:
                self._keep_stderr(chunk)
            else:
                self.stderr_open = False
        if ready_w:
            self._write()

    def _keep_stderr(self, chunk: bytes) -> None:
        self._capture += chunk
        excess = len(self._capture) - self._limit
        if excess > 0:
            del self._capture[:excess]
            self._dropped += excess

    def _take_line(self) -> bytes | None:
        end = self._stdout.find(b"\n", self._scan)
        if end < 0:
            self._scan = len(self._stdout)
            return None
        line = bytes(self._stdout[:end])
        del self._stdout[: end + 1]
        self._scan = 0
        return line

    def next_line(self, deadline: float, check: Callable[[], None]) -> tuple[str, bytes]:
        """Wait for the next stdout line until ``deadline`` (a monotonic time).

        Returns ``("line", line)``, ``("eof", partial)`` when stdout closed,
        ``("timeout", b"")`` or ``("too_long", head)``. ``check`` runs between slices
        of at most 50 ms (it raises to cancel the run).
        """
        while True:
            line = self._take_line()
            if line is not None:
                return "line", line
            if len(self._stdout) > MAX_MESSAGE_BYTES:
                return "too_long", bytes(self._stdout[:EVIDENCE_CHARS])
            if not self.stdout_open:
                return "eof", bytes(self._stdout)
            check()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return "timeout", b""
            self._pump(min(remaining, _POLL))

    def read_to_end(self, deadline: float, check: Callable[[], None]) -> tuple[str, bytes]:
        """Everything the process writes to stdout until it closes it and exits.

        Returns ``("done", stdout)``, ``("timeout", stdout)`` or ``("too_long", head)``.
        """
        while True:
            if len(self._stdout) > MAX_MESSAGE_BYTES:
                return "too_long", bytes(self._stdout[:EVIDENCE_CHARS])
            if not self.stdout_open and self.popen.poll() is not None:
                self.drain_stderr(0.2)
                return "done", bytes(self._stdout)
            check()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return "timeout", bytes(self._stdout)
            self._pump(min(remaining, _POLL))

    def drain_stderr(self, wait: float = 0.0) -> None:
        """Read what stderr holds now, waiting up to ``wait`` s for it to close."""
        until = time.monotonic() + wait
        while self.stderr_open:
            ready, _, _ = select.select([self._err], [], [], max(0.0, until - time.monotonic()))
            if not ready:
                return
            try:
                chunk = os.read(self._err, _READ_CHUNK)
            except OSError:
                chunk = b""
            if chunk:
                self._keep_stderr(chunk)
            else:
                self.stderr_open = False

    def take_stderr(self) -> str:
        """What stderr captured since the last call (its tail, when it overflowed)."""
        self.drain_stderr()
        text = self._capture.decode("utf-8", "replace")
        if self._dropped:
            text = f"[{self._dropped} earlier bytes of stderr dropped]\n{text}"
        self._capture.clear()
        self._dropped = 0
        return text

    # ending

    def exit_code(self, wait: float) -> int | None:
        """The exit status (negative: killed by that signal), or None if still running."""
        try:
            return self.popen.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        """SIGKILL the harness, everything below it and its process group; reap it."""
        if self.closed:
            return
        self.closed = True
        end_process(self.popen)
        if self._end_strays is not None:
            self._end_strays()
        if self.scratch:
            scratch.remove(self.scratch)
        self.drain_stderr(0.2)  # what it wrote before it died is evidence
        self._in = None
        self.stdout_open = self.stderr_open = False
        for stream in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


def fail_all(execution: Execution, items: Iterable[Planned], reason: str, stderr: str) -> None:
    """The implementation could not be started: the cause is said once, in the run's
    note (with the end of stderr) and its ImplementationFailed event, and every case
    is errored ``not run: <cause>`` (:mod:`cer.engine.command.startup`)."""
    options = execution.options
    line = startup.headline(
        options.kind, options.impl, reason, stderr, execution.policy, execution.refused
    )
    execution.notes.append(startup.note(line, stderr))
    execution.emit(ImplementationFailed(line, stderr))
    for item in items:
        execution.record(
            errored(item.case, f"not run: {line}", fail_class="not_run", stderr=stderr)
        )
