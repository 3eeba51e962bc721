"""The ``cer`` program's entry point: for ``cer run``, the first worker starts before
the command line is imported.

A worker takes tens of milliseconds to be ready (an interpreter, then ``cer.worker``);
importing the command line takes about as long. Started first, the worker is ready by
the time the suite is loaded, and a one-case run costs about the longer of the two
rather than their sum. The worker is an ordinary warm worker
(:class:`cer.engine.python.workerproc.WarmWorkers`): a fresh interpreter that has imported
nothing of the implementation's and is handed over only while it still runs in this
process's working directory and environment; otherwise the run starts its own. It is
started (:mod:`cer.engine.python.spawn`) before the rest of the worker's handle is
imported. So is the sandbox's trial of a world (:func:`start_trial`), which the run
would otherwise wait for before it could start.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import subprocess

    from cer.engine.python.workerproc import WarmWorkers


def wants_early_worker(argv: Sequence[str]) -> bool:
    """Whether the command line looks like a ``cer run`` of a Python implementation
    (a command implementation has no use for a worker; a wrong guess only costs an
    interpreter that is killed at exit)."""
    from cer.engine.kinds import KINDS  # a table of names: it imports nothing

    others = tuple(kind.option for kind in KINDS.values() if not kind.python)
    return (
        bool(argv)
        and argv[0] == "run"
        and not any(word in ("-h", "--help") or word.startswith(others) for word in argv)
    )


def early_workers(argv: Sequence[str]) -> WarmWorkers | None:
    """A pool holding one worker already starting, when ``argv`` is a ``cer run``."""
    if not wants_early_worker(argv):
        return None
    from cer.engine.python import spawn  # the standard library's subprocess, little else

    started = spawn.start()  # before the rest of the worker's handle is imported
    from cer.engine.python.workerproc import WarmWorkers, WorkerProcess

    pool = WarmWorkers(1)
    pool.hold(WorkerProcess(started=started))
    pool.count = 0  # one worker, for the first run only: none is started after it
    return pool


WORLD_DISABLE_ENV = "CER_SANDBOX_NO_NAMESPACES"
""":data:`cer.sandbox.world.DISABLE_ENV`, named here so that the trial starts before
the sandbox (and ctypes with it) is imported."""


def start_trial(argv: Sequence[str]) -> tuple[subprocess.Popen[bytes], tuple[int, str]] | None:
    """The sandbox's trial of a world (:func:`cer.sandbox.world.probe`), started now
    so that it runs while the command line is imported, with the user and setting it
    was started under; None when the run would not try (``--sandbox off``, the
    namespaces turned off, no Linux). A run that tries takes it only when it is the
    very trial it would start then; one nobody took is left to end at exit."""
    sandbox_off = any(
        word == "--sandbox=off" or (word == "--sandbox" and following == "off")
        for word, following in zip(argv, [*argv[1:], ""], strict=True)
    )
    if sandbox_off or os.environ.get(WORLD_DISABLE_ENV) or not sys.platform.startswith("linux"):
        return None
    import subprocess

    world_py = os.path.join(os.path.dirname(os.path.dirname(__file__)), "sandbox", "world.py")
    try:
        trial = subprocess.Popen(
            [sys.executable, "-I", "-S", "-B", os.path.abspath(world_py), "--probe"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
    except OSError:  # the run starts its own, and says why that failed
        return None
    return trial, (os.geteuid(), os.environ.get(WORLD_DISABLE_ENV, ""))


def answers_alone(argv: Sequence[str]) -> str | None:
    """What ``cer --version`` prints, answered before the command line is imported
    (importing it is most of a short command's time); None for any other command line."""
    if list(argv) == ["--version"]:
        from cer import __version__

        return f"cer {__version__}\n"
    return None


def main() -> int:
    """The ``cer`` program (see :func:`cer.cli.main.main`).

    The cyclic garbage collector is kept out of start-up and exit, where it finds
    almost nothing: importing the command line makes some hundred thousand objects that
    live as long as the process, and each collection while it does so walks them again
    (about a tenth of a short run's time); so collection waits until the imports are
    done, and what they made is then frozen (:func:`gc.freeze`) out of every later
    collection. At exit the interpreter collects once more before it ends; freezing
    everything first leaves that walk nothing to do. Collection stays on while a run
    runs, so a long run's garbage is collected as usual.
    """
    try:
        os.getcwd()
    except OSError as exc:  # every path of the run is relative to it
        sys.stderr.write(
            f"cer: error: the working directory cannot be read ({exc.strerror}): it was "
            "removed or made unreadable; change to a folder that exists and run again\n"
        )
        return 2
    answer = answers_alone(sys.argv[1:])
    if answer is not None:
        sys.stdout.write(answer)
        return 0
    gc.disable()
    try:
        pool = early_workers(sys.argv[1:])
        trial = start_trial(sys.argv[1:]) if pool is not None else None
        from cer.cli import main as command_line

        command_line.import_commands(sys.argv[1:])  # the one subcommand's module
        if pool is not None:
            from cer.cli import run

            run.EARLY_WORKERS = pool
        if trial is not None:
            from cer.sandbox import world  # imported by the run's module already

            world.EARLY_TRIAL, world.EARLY_TRIAL_KEY = trial
    finally:
        gc.freeze()
        gc.enable()
    try:
        return command_line.main()
    finally:
        if pool is not None:
            pool.close()  # a worker the run did not take
        if trial is not None:
            world.discard_early_trial()  # a trial the run did not need
        gc.freeze()
