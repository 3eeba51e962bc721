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
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cer
from cer import plaindata
from cer.framing import KIND_JSON, KIND_RAW, FrameError, pack, split_frames, write_all
from cer.worker import kill_process_tree


class WorkerLost(Exception):
    """The worker process ended or broke its channel."""

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


@dataclass(frozen=True)
class Message:
    """A control message from the worker, with the raw result bytes that follow it."""

    body: dict[str, Any]
    raw: bytes = b""


class WorkerProcess:
    """One running worker. Not thread-safe: one supervisor thread owns it."""

    def __init__(self, cwd: str | None = None) -> None:
        to_worker_r, to_worker_w = os.pipe()
        from_worker_r, from_worker_w = os.pipe()
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the worker
        package_root = str(Path(cer.__file__).resolve().parent.parent)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (package_root, env.get("PYTHONPATH", "")) if p
        )
        env.pop("PYTHONSTARTUP", None)
        # Unbuffered, so that what a case printed before it hung or crashed is kept.
        env["PYTHONUNBUFFERED"] = "1"
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "cer.worker", str(to_worker_r), str(from_worker_w)],
                pass_fds=(to_worker_r, from_worker_w),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._stderr,
                start_new_session=True,
                cwd=cwd,
                env=env,
            )
        finally:
            os.close(to_worker_r)
            os.close(from_worker_w)
        self._to_worker = to_worker_w
        self._from_worker = from_worker_r
        self._buffer = bytearray()
        self._pending: list[tuple[int, bytes]] = []
        self.closed = False

    def send(self, message: dict[str, Any]) -> None:
        try:
            write_all(self._to_worker, pack(KIND_JSON, plaindata.dumps(message)))
        except OSError as exc:
            raise WorkerLost(self._death_description(f"the channel broke ({exc})")) from exc

    def receive(self, timeout: float) -> Message | None:
        """The next message, or None when ``timeout`` seconds pass without one."""
        deadline = time.monotonic() + timeout
        while True:
            message = self._take_message()
            if message is not None:
                return message
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([self._from_worker], [], [], remaining)
            if not ready:
                return None
            try:
                chunk = os.read(self._from_worker, 1 << 20)
            except OSError as exc:
                raise WorkerLost(self._death_description(f"the channel broke ({exc})")) from exc
            if not chunk:
                raise WorkerLost(self._death_description("the worker process ended"))
            self._buffer += chunk
            try:
                self._pending.extend(split_frames(self._buffer))
            except FrameError as exc:
                raise WorkerLost(f"the worker's channel was corrupted: {exc}") from exc

    def _take_message(self) -> Message | None:
        if not self._pending:
            return None
        kind, data = self._pending[0]
        if kind != KIND_JSON:
            self._pending.pop(0)
            raise WorkerLost("the worker's channel was corrupted: unexpected raw frame")
        try:
            body = plaindata.loads(data)
        except ValueError as exc:
            raise WorkerLost(f"the worker's channel was corrupted: {exc}") from exc
        if not isinstance(body, dict):
            raise WorkerLost("the worker's channel was corrupted: message is not a table")
        if body.get("op") == "result":
            if len(self._pending) < 2:
                return None  # its raw frame has not arrived yet
            raw_kind, raw = self._pending[1]
            if raw_kind != KIND_RAW:
                raise WorkerLost("the worker's channel was corrupted: result without payload")
            del self._pending[:2]
            return Message(body, raw)
        self._pending.pop(0)
        return Message(body)

    def _death_description(self, what: str) -> str:
        code = self.process.poll()
        if code is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = self.process.wait(timeout=0.5)
        if code is None:
            return what
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"{what}: killed by {name}"
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
        # The whole tree first (the worker adopts what its cases leave behind, even in
        # sessions of their own), then its process group.
        if self.process.poll() is None:  # still ours: its pid cannot have been reused
            kill_process_tree(self.process.pid)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        for fd in (self._to_worker, self._from_worker):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._stderr.close()

    def close(self) -> None:
        """Ask the worker to quit, then make sure it is gone."""
        if self.closed:
            return
        with contextlib.suppress(WorkerLost):
            self.send({"op": "quit"})
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=1)
        self.kill()
