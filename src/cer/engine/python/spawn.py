"""Starting a worker process: its interpreter, its arguments, its environment and its
channel, decided here only.

Importing this imports nothing of cer's but :mod:`cer.engine.spawned` (and the standard
library's ``subprocess``), so that the ``cer`` program can start the first worker of a
run before it imports the rest of the command line (:mod:`cer.cli.entry`); the worker
it starts is exactly the one :class:`cer.engine.python.workerproc.WorkerProcess` would
start then, and is handed to it (``WorkerProcess(started=...)``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any, BinaryIO

import cer
from cer.engine import spawned

__all__ = ["Started", "scratch_file", "start"]


class Started:
    """A worker process just started, with its end of the channel, its stderr, and the
    working directory and environment it was started in."""

    __slots__ = ("from_worker", "process", "started_in", "started_with", "stderr", "to_worker")

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        to_worker: int,
        from_worker: int,
        stderr: BinaryIO,
        started_in: str,
        started_with: dict[str, str],
    ) -> None:
        self.process = process
        self.to_worker = to_worker
        self.from_worker = from_worker
        self.stderr = stderr
        self.started_in = started_in
        self.started_with = started_with


def scratch_file() -> BinaryIO:
    """An anonymous file for the worker's own stderr (in memory on Linux)."""
    if hasattr(os, "memfd_create"):
        return os.fdopen(os.memfd_create("cer-worker-stderr"), "w+b")
    import tempfile

    return tempfile.TemporaryFile()


def start(cwd: str | None = None, *, provided: Callable[..., Any] | None = None) -> Started:
    """Start a worker in ``cwd`` (this process's working directory by default).

    With ``provided`` (an implementation given as an object), the worker is a fork of
    this process that never starts a program of its own, so that it holds the object
    (:func:`cer.engine.python.provided.serve_forked`); otherwise a fresh interpreter."""
    to_worker_r, to_worker_w = os.pipe()
    from_worker_r, from_worker_w = os.pipe()
    stderr = scratch_file()
    # As Path(cer.__file__).resolve().parent.parent, without importing pathlib.
    package_root = os.path.dirname(os.path.dirname(os.path.realpath(cer.__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    env.pop("PYTHONSTARTUP", None)
    # Unbuffered, so that what a case printed before it hung or crashed is kept.
    env["PYTHONUNBUFFERED"] = "1"
    try:
        # -P: the working directory is not put first on the worker's path. It is the
        # implementation's folder, and a `cer` package or a module named like the
        # standard library's there would run as the worker, before the sandbox.
        forked = None
        if provided is not None:
            import functools

            from cer.engine.python.provided import serve_forked

            forked = functools.partial(serve_forked, provided, to_worker_r, from_worker_w)
        with spawned.LOCK:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-P",
                    "-m",
                    "cer.worker",
                    str(to_worker_r),
                    str(from_worker_w),
                ],
                pass_fds=(to_worker_r, from_worker_w),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                start_new_session=True,
                cwd=cwd,
                env=env,
                preexec_fn=forked,  # the worker is then this fork itself
            )
            spawned.started(process)
    finally:
        os.close(to_worker_r)
        os.close(from_worker_w)
    return Started(
        process,
        to_worker_w,
        from_worker_r,
        stderr,
        os.getcwd() if cwd is None else cwd,
        dict(os.environ),
    )
