"""A Python implementation given as an object (``RunOptions(implementation=f)``, the
Python API) instead of ``MODULE:ATTR``: how it is named and identified, and the worker
that runs it.

Nothing can import such an object, so its workers are forked from the caller's process
(:func:`serve_forked`), where it already lives: a lambda, a closure or a bound method
runs as it is. Each forked worker is then the same worker as ``python -m cer.worker``:
it closes every descriptor of the caller's but its channel, applies the run's sandbox
before it runs a case, and keeps each case apart with the run's isolation. What differs
is said in docs/execution-model.md ("Naming it").

The name is ``callable:MODULE:QUALNAME`` (the object's own names, read from the function
itself, never by calling anything of it), and the id hashes the function's code and the
file it is defined in: ``callable:MODULE:QUALNAME@HASH``. Where no code can be found (a
builtin, an object of a C type), the name is ``callable <TYPE object>`` and the id a
one-off, with a note.
"""

from __future__ import annotations

import functools
import gc
import hashlib
import importlib
import inspect
import io
import marshal
import os
import signal
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cer.engine.identity import UNKNOWN, Identity, file_digest

__all__ = ["LOAD_NAME", "Provided", "describe", "serve_forked"]

_MODULE = "_cer_provided_implementation"
_ATTR = "implementation"
LOAD_NAME = f"{_MODULE}:{_ATTR}"
"""What a forked worker is asked to load: the module it finds the object in, made by
:func:`serve_forked` before the worker starts."""

_RESET_SIGNALS = ("SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGCHLD")
"""Signals whose handlers the caller may have set: a worker has the default ones."""


@dataclass(frozen=True)
class Provided:
    """How a run names and identifies an implementation given as an object."""

    name: str
    """``callable:MODULE:QUALNAME``, or ``callable <TYPE object>`` without code."""
    identity: Identity
    note: str
    """The run's note: how it was run, and what its id covers (or why it is a one-off)."""


def _function_of(obj: object) -> types.FunctionType | None:
    """The Python function that runs when ``obj`` is called, when there is one: the
    function itself, a bound method's, a ``functools.partial``'s, or the ``__call__`` of
    an instance's class. Only attributes of the object's own type are read, so that no
    code of the implementation runs in the supervisor."""
    for _ in range(16):  # partials of partials, bounded
        if isinstance(obj, types.FunctionType):
            return obj
        if isinstance(obj, types.MethodType):
            obj = obj.__func__
        elif isinstance(obj, functools.partial):
            obj = obj.func
        elif isinstance(obj, type):
            init = obj.__dict__.get("__init__")
            return init if isinstance(init, types.FunctionType) else None
        else:
            call = getattr(type(obj), "__call__", None)  # noqa: B004 - the type's, not the object's
            return call if isinstance(call, types.FunctionType) else None
    return None


def _type_name(obj: object) -> str:
    kind = type(obj)
    return f"{kind.__module__}.{kind.__qualname__}"


def describe(obj: Callable[..., Any]) -> Provided:
    """The name, id and note of the implementation ``obj``."""
    function = _function_of(obj)
    how = "given as a Python object, run in workers forked from the caller's process"
    if function is None:
        name = f"callable <{_type_name(obj)} object>"
        identity = Identity(f"{name}@{UNKNOWN}{os.urandom(5).hex()}", ())
        note = (
            f"the implementation {name} was {how}; cer found no Python code for it to "
            "hash, so its id is a one-off and no two runs of it compare as the same code"
        )
        return Provided(name, identity, note)
    owner = obj if isinstance(obj, (types.FunctionType, types.MethodType, type)) else function
    module = getattr(owner, "__module__", None) or function.__module__ or "?"
    qualname = getattr(owner, "__qualname__", None) or function.__qualname__
    if not isinstance(obj, (types.FunctionType, types.MethodType, type, functools.partial)):
        qualname = f"{type(obj).__qualname__} instance"
        module = type(obj).__module__
    name = f"callable:{module}:{qualname}"
    digest = hashlib.sha256(marshal.dumps(function.__code__))
    files: tuple[str, ...] = ()
    digests: tuple[bytes, ...] = ()
    try:
        source = inspect.getsourcefile(function)
    except TypeError:
        source = None
    if source and os.path.isfile(source):
        path = os.path.realpath(source)
        content = file_digest(path)
        digest.update(content)
        files, digests = (path,), (content,)
    identity = Identity(f"{name}@{digest.hexdigest()[:10]}", files, digests)
    where = f" and the file it is defined in ({files[0]})" if files else ""
    note = (
        f"the implementation {name} was {how}; its id covers its code{where}, not the "
        "values it closes over or the globals it reads"
    )
    return Provided(name, identity, note)


def _close_all_but(keep: set[int]) -> None:
    """Close every descriptor of this process except ``keep``."""
    low = 0
    for fd in sorted(keep):
        if fd > low:
            os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 20)


def serve_forked(obj: Callable[..., Any], ctrl_in: int, ctrl_out: int) -> None:
    """Become a worker that runs ``obj``: called in the child the supervisor forks
    (``subprocess.Popen``'s ``preexec_fn``, after the child's standard descriptors were
    pointed at the worker's and its session made), it never returns.

    Only the caller's memory is kept: every other descriptor is closed (the caller's
    files and sockets, other workers' channels, and the pipe on which ``Popen`` waits
    for the child to start its program, which tells it the worker has started), signal
    handlers are the default ones, and the standard streams are fresh ones over the
    worker's descriptors. Then the worker of ``python -m cer.worker`` runs, which finds
    ``obj`` where it looks for what it is asked to load (:data:`LOAD_NAME`). The
    supervisor's side imports no module of the worker: this process does, as the worker
    it has become.
    """
    try:
        _close_all_but({0, 1, 2, ctrl_in, ctrl_out})
        gc.enable()  # Popen turns it off around its fork
        for name in _RESET_SIGNALS:
            number = getattr(signal, name, None)
            if number is not None:
                signal.signal(number, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
        out, err = (
            io.TextIOWrapper(
                io.FileIO(fd, "w", closefd=False),
                encoding="utf-8",
                errors="backslashreplace",
                write_through=True,
            )
            for fd in (1, 2)
        )
        sys.stdout, sys.stderr = out, err
        vars(sys)["__stdout__"], vars(sys)["__stderr__"] = out, err
        module = types.ModuleType(_MODULE)
        setattr(module, _ATTR, obj)
        sys.modules[_MODULE] = module
        worker = importlib.import_module("cer.worker.main")
        worker.main([str(ctrl_in), str(ctrl_out)])
    finally:
        os._exit(70)
