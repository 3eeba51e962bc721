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
or the class itself through ``type``'s own descriptors, never by calling anything of it
nor through a lookup a class or metaclass can hook, and made printable), and the id
hashes the code of every function that can run when the worker calls it and the files
they are defined in: ``callable:MODULE:QUALNAME@HASH``. Where that code cannot be found
without running any (a builtin, an object of a C type, a ``run_case`` a ``__getattr__``
decides), the name is ``callable <TYPE object>`` and the id a one-off, with a note.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import importlib
import io
import marshal
import os
import signal
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from importlib.machinery import SOURCE_SUFFIXES
from typing import Any

from cer.engine.identity import UNVERIFIED, Budget, Identity, file_digest, one_off_id
from cer.text.safetext import for_terminal

__all__ = ["LOAD_NAME", "Provided", "code_changed", "describe", "serve_forked"]

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
    code: tuple[types.CodeType, ...] | None = None
    """The code objects the id was made of, held (so that none is freed and its place
    taken), in order (None: the id is a one-off already); see :func:`code_changed`."""


_NAME_CHARS = 200
"""How much of a module name or a qualified name is kept: a name, not a document."""
_MAX_DEPTH = 16
"""How deep wrappers (bound methods, partials, a ``run_case`` attribute) are followed."""
_MAX_FUNCTIONS = 4096
"""The most functions one implementation's id hashes; past it, the id is a one-off."""
_MAX_NAMES = 20_000
"""The most names one class's namespace may hold to be read (a real one holds hundreds)."""
_MAX_MRO = 256
"""The longest method resolution order read (a real one is a few dozen classes)."""
_DYNAMIC = ("__getattr__", "__getattribute__")
"""Hooks that decide at run time what an attribute (``run_case``) is."""

_TYPE_DICT = type.__dict__["__dict__"]
_TYPE_MRO = type.__dict__["__mro__"]
_TYPE_QUALNAME = type.__dict__["__qualname__"]
_TYPE_MODULE = type.__dict__["__module__"]
"""The descriptors of ``type`` itself, read through their C code: nothing a metaclass
(or a lying ``__class__``) defines runs when a class's namespace, order or name is read."""
_DICT_KEYS = dict.keys
_DICT_GET = dict.get


class _NoCode(Exception):
    """The code that would run cannot be told from the object without running any of it."""


def _text(value: object) -> str:
    """A name read from the object: kept only when it is exactly a string (a subclass of
    str could run code when formatted), made printable and cut."""
    if type(value) is not str or not value:
        return "?"
    return for_terminal(value[:_NAME_CHARS], multiline=False)


def _plain_dict(mapping: object) -> dict[str, object]:
    """A namespace whose keys are all exactly strings (so that looking a name up in it
    calls no ``__eq__`` or ``__hash__`` of the implementation's), copied."""
    if type(mapping) is not dict or len(mapping) > _MAX_NAMES:
        raise _NoCode
    keys = list(_DICT_KEYS(mapping))
    if any(type(key) is not str for key in keys):
        raise _NoCode
    return {key: _DICT_GET(mapping, key) for key in keys}


def _class_dict(cls: type) -> dict[str, object]:
    """A class's own namespace, copied (a plain dict behind the proxy)."""
    proxy = _TYPE_DICT.__get__(cls, type)
    if len(proxy) > _MAX_NAMES:
        raise _NoCode
    keys = list(iter(proxy))
    if any(type(key) is not str for key in keys):
        raise _NoCode
    return {key: proxy[key] for key in keys}


def _mro(cls: type) -> tuple[type, ...]:
    """``cls``'s method resolution order as the interpreter holds it (a metaclass's
    ``mro()`` made it, so it is bounded: a longer one is no class cer can read)."""
    mro: tuple[type, ...] = _TYPE_MRO.__get__(cls, type)
    if len(mro) > _MAX_MRO:
        raise _NoCode
    return mro


def _unwrapped(value: object) -> list[types.FunctionType]:
    """The Python functions a class attribute holds: a function, the function of a
    static or class method, a property's accessors."""
    kind = type(value)
    if kind is types.FunctionType:
        return [value]  # type: ignore[list-item]
    if kind is staticmethod or kind is classmethod:
        return _unwrapped(value.__func__)  # type: ignore[attr-defined]
    if kind is property:
        return [f for f in (value.fget, value.fset, value.fdel) if type(f) is types.FunctionType]  # type: ignore[attr-defined]
    return []


def _class_code(cls: type) -> list[types.FunctionType]:
    """Every Python function defined along ``cls``'s method resolution order, in that
    order and by name: the code any call of the class or of its instances can run."""
    functions: list[types.FunctionType] = []
    for klass in _mro(cls):
        namespace = _class_dict(klass)
        for key in sorted(namespace):
            functions.extend(_unwrapped(namespace[key]))
    if len(functions) > _MAX_FUNCTIONS:
        raise _NoCode
    return functions


def _class_names(cls: type) -> tuple[str, str]:
    try:
        module = _TYPE_MODULE.__get__(cls, type)
    except AttributeError:  # a class whose namespace lost its __module__
        module = None
    return _text(module), _text(_TYPE_QUALNAME.__get__(cls, type))


def _first(cls: type, name: str) -> object:
    """``name`` as the first class along ``cls``'s order defines it (None: none does)."""
    for klass in _mro(cls):
        namespace = _class_dict(klass)
        if name in namespace:
            return namespace[name]
    return None


def _dynamic(cls: type) -> bool:
    """Whether the attributes of ``cls``'s instances are decided at run time by code of
    the implementation's (a ``__getattr__`` or ``__getattribute__`` that is not a C
    type's own)."""
    for hook in _DYNAMIC:
        found = _first(cls, hook)
        if found is not None and type(found) is not types.WrapperDescriptorType:
            return True
    return False


def _instance_dict(obj: object, cls: type) -> dict[str, object]:
    """The attributes the instance ``obj`` holds itself (none when it has no
    ``__dict__``), read through the descriptor ``type`` made for it."""
    descriptor = _first(cls, "__dict__")
    if descriptor is None:
        return {}
    if type(descriptor) is not types.GetSetDescriptorType:
        raise _NoCode
    try:
        held = descriptor.__get__(obj, cls)
    except (TypeError, AttributeError):
        raise _NoCode from None
    return _plain_dict(held)


def _held_run_case(obj: object, cls: type) -> object:
    """The ``run_case`` the instance ``obj`` holds as a value (in a slot, or in its own
    ``__dict__``), which the worker calls rather than any code of its class; None when
    it holds none. A ``run_case`` that is any other descriptor (a property, say) gives
    a value only code of the class's can tell: raises :class:`_NoCode`."""
    found = _first(cls, "run_case")
    if type(found) is types.MemberDescriptorType:  # a slot: its value, read in C
        try:
            return found.__get__(obj, cls)
        except AttributeError:  # an empty slot: the worker calls the object itself
            return None
    if found is not None and not _unwrapped(found) and _first(type(found), "__get__") is not None:
        raise _NoCode
    own = _instance_dict(obj, cls)
    return own.get("run_case")


def _what_runs(obj: Any, depth: int = 0) -> tuple[str, str, list[types.FunctionType]]:
    """The module and qualified name of ``obj`` and the Python functions that run when
    the worker calls it (by the rules of :class:`cer.worker.target.Target`): read from
    the object's real type and namespaces only, never through an attribute lookup that
    a class can hook, so that no code of the implementation runs in the supervisor.
    Raises :class:`_NoCode` when that code cannot be told: a builtin, an object of a C
    type, an object whose ``run_case`` a ``__getattr__`` decides."""
    if depth > _MAX_DEPTH:
        raise _NoCode
    kind = type(obj)
    if kind is types.FunctionType:
        # A function's own attributes are held by it (no class of the implementation's
        # can hook them): a run_case attribute is what the worker calls instead.
        module, qualname = _text(obj.__module__), _text(obj.__qualname__)
        functions: list[types.FunctionType] = [obj]
        own = _plain_dict(obj.__dict__)
        if "run_case" in own:
            functions = _what_runs(own["run_case"], depth + 1)[2] + functions
        return module, qualname, functions
    if kind is types.MethodType:
        module, qualname, functions = _what_runs(obj.__func__, depth + 1)
        return module, qualname, functions
    if kind is functools.partial:
        module, qualname, functions = _what_runs(obj.func, depth + 1)
        own = _plain_dict(obj.__dict__)
        if "run_case" in own:
            functions = _what_runs(own["run_case"], depth + 1)[2] + functions
        return module, qualname, functions
    if type in _mro(kind):  # a class: instances are made of it, then called
        cls: type = obj
        functions = _class_code(cls)
        if _dynamic(cls):
            raise _NoCode
        if kind is not type:  # its metaclass's __call__ makes the instances
            functions = _class_code(kind) + functions
        if not functions:
            raise _NoCode
        module, qualname = _class_names(cls)
        return module, qualname, functions
    # An instance: its class's run_case or __call__ (or a run_case it holds) runs.
    if _dynamic(kind):
        raise _NoCode
    functions = _class_code(kind)
    held = _held_run_case(obj, kind)
    if held is not None:
        functions = _what_runs(held, depth + 1)[2] + functions
    elif not any(_unwrapped(_first(kind, name)) for name in ("run_case", "__call__")):
        raise _NoCode
    module, qualname = _class_names(kind)
    return module, f"{qualname} instance", functions


def _type_name(obj: object) -> str:
    try:
        module, qualname = _class_names(type(obj))
    except _NoCode:
        return "?"
    return f"{module}.{qualname}"


def _source_file(function: types.FunctionType) -> str | None:
    """The Python source file ``function`` was compiled from, when it is one here."""
    path = function.__code__.co_filename
    if type(path) is not str or not path.endswith(tuple(SOURCE_SUFFIXES)):
        return None
    return os.path.realpath(path) if os.path.isfile(path) else None


def _code_digest(functions: list[types.FunctionType]) -> bytes:
    """The hash of the compiled code of ``functions``, in order; raises ValueError for
    code that cannot be marshalled."""
    digest = hashlib.sha256()
    for function in functions:
        code = marshal.dumps(function.__code__, 2)  # version 2: no refcount-driven refs
        digest.update(len(code).to_bytes(8, "big") + code)
    return digest.digest()


def code_changed(provided: Provided, obj: Callable[..., Any]) -> bool:
    """Whether the code that runs when ``obj`` is called is no longer the code its id
    was made of (:attr:`Provided.code`): something in the caller's process (a thread
    of its, a callback of the run) swapped a function's ``__code__`` or a method of its
    class during the run. Checked before each worker is forked, so that a worker
    running other code never does so under the run's id."""
    if provided.code is None:
        return False
    try:
        now = tuple(function.__code__ for function in _what_runs(obj)[2])
    except (_NoCode, RecursionError):
        return True
    # Code objects cannot change: the same objects are the same code (and cost no
    # hashing before each fork).
    return len(now) != len(provided.code) or any(
        a is not b for a, b in zip(now, provided.code, strict=True)
    )


def describe(obj: Callable[..., Any]) -> Provided:
    """The name, id and note of the implementation ``obj``: the code that runs when it
    is called, found without running any of it (see :func:`_what_runs`)."""
    how = "given as a Python object, run in workers forked from the caller's process"
    try:
        module, qualname, functions = _what_runs(obj)
        code = _code_digest(functions)
    except (_NoCode, ValueError, RecursionError):
        name = f"callable <{_type_name(obj)} object>"
        identity = Identity(one_off_id(name), ())
        note = (
            f"the implementation {name} was {how}; cer found no Python code for it to "
            "hash, so its id is a one-off and no two runs of it compare as the same code"
        )
        return Provided(name, identity, note)
    name = f"callable:{module}:{qualname}"
    digest = hashlib.sha256(code)
    files: list[str] = []
    digests: list[bytes] = []
    budget = Budget()  # a class of many functions in many large files is read within it
    for function in functions:
        path = _source_file(function)
        if path is not None and path not in files:
            content = file_digest(path, budget)
            digest.update(content)
            files.append(path)
            digests.append(content)
    if budget.over is not None:
        name_id = one_off_id(name, UNVERIFIED)
        note = (
            f"the implementation {name} was {how}; cer could not verify its identity "
            f"({budget.over}), so its id is a one-off"
        )
        return Provided(name, Identity(name_id, (), problem=budget.over), note)
    identity = Identity(f"{name}@{digest.hexdigest()[:10]}", tuple(files), tuple(digests))
    where = f" and the files it is defined in ({', '.join(files)})" if files else ""
    note = (
        f"the implementation {name} was {how}; its id covers its code{where}, not the "
        "values it closes over or the globals it reads"
    )
    return Provided(name, identity, note, tuple(function.__code__ for function in functions))


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
    except BaseException:
        # As `python -m cer.worker` ends on an exception of its own: the traceback on
        # the worker's stderr and status 1 (70 is what a worker of one case ends with
        # after its case crashed).
        with contextlib.suppress(BaseException):
            import traceback  # here only: the supervisor never prints one

            traceback.print_exc(file=sys.stderr)
    finally:
        os._exit(1)
