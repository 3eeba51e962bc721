"""The state snapshot: what a case running inside the worker (no fork) could change
in the worker itself (the modules it relies on, signal handlers, timers, tracing, the
working directory, the environment, file descriptors), taken before the case and
compared after it."""

from __future__ import annotations

import importlib
import operator
import os
import resource
import signal
import sys
import threading
from typing import Any

from cer.worker.call import BUILTINS
from cer.worker.versions import Tag, Versions, version_reader

_GUARDED_MODULES = (
    "cer",
    "cer.worker",
    "cer.worker.main",
    "cer.worker.call",
    "cer.worker.isolation",
    "cer.worker.snapshot",
    "cer.worker.target",
    "cer.worker.versions",
    "cer.process_tree",
    "cer.wire.plaindata",
    "cer.wire.framing",
    "cer.wire.caseview",
    "json",
    "json.encoder",
    "json.decoder",
    "os",
    "time",
    "select",
    "signal",
    "traceback",
    "inspect",
    "base64",
    "struct",
    "contextlib",
    "importlib",
    "operator",
)
"""Modules the worker itself relies on; rebinding a name in one is a change of state."""


# Bound once, so that a case rebinding these names cannot change what the checks see.
_is = operator.is_


_getcwd = os.getcwd


_fstat = os.fstat


_gettrace = sys.gettrace


_getprofile = sys.getprofile


_getrecursionlimit = sys.getrecursionlimit


_getrlimit = resource.getrlimit
_RLIMITS = tuple(
    getattr(resource, name) for name in sorted(dir(resource)) if name.startswith("RLIMIT_")
)
"""Every resource limit of this process: a case that lowers one (``setrlimit``, files
open, CPU time, address space) would leave the next case in the worker to run under it."""


def _limits() -> tuple[tuple[int, int], ...]:
    return tuple(_getrlimit(number) for number in _RLIMITS)


_environ = os.environ


_active_count = threading.active_count


_raw_signal: Any = importlib.import_module("_signal")  # without signal's enum wrapping


_getsignal = _raw_signal.getsignal


_getitimer = signal.getitimer


def _readable_signals() -> tuple[int, ...]:
    """The signals whose handler can be read (on Linux, every valid one)."""
    readable = []
    for number in sorted(int(n) for n in _raw_signal.valid_signals()):
        try:
            _getsignal(number)
        except (OSError, ValueError):
            continue
        readable.append(number)
    return tuple(readable)


_SIGNALS: tuple[int, ...] = _readable_signals()


_TIMERS = (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF)


def _same_items(saved: list[Any] | tuple[Any, ...], now: list[Any] | tuple[Any, ...]) -> bool:
    """The same objects (by identity) in the same order."""
    return len(saved) == len(now) and all(map(_is, saved, now))


def _same_namespace(saved: dict[Any, Any], now: dict[Any, Any]) -> bool:
    """The same names bound to the same objects (by identity), in the same order."""
    return (
        len(saved) == len(now)
        and _same_items(list(saved), list(now))
        and all(map(_is, saved.values(), now.values()))
    )


def _environment_store() -> Any:
    """The dict ``os.environ`` reads from (or None): a case that puts another object in
    its place changes every variable at once, without touching the dict the snapshot
    holds and watches."""
    return getattr(_environ, "_data", None)


def _environment() -> dict[Any, Any]:
    data = _environment_store()
    return data.copy() if type(data) is dict else dict(_environ)


def _signal_handlers() -> list[object]:
    try:
        return list(map(_getsignal, _SIGNALS))  # in one go: these could all be read
    except (OSError, ValueError):
        pass
    handlers: list[object] = []
    for number in _SIGNALS:
        try:
            handlers.append(_getsignal(number))
        except (OSError, ValueError):
            handlers.append(None)
    return handlers


def _fd_identity(fd: int) -> tuple[int, int] | None:
    try:
        stat = _fstat(fd)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


def _fd_identities() -> tuple[tuple[int, int] | None, ...]:
    return (_fd_identity(0), _fd_identity(1), _fd_identity(2))


def _streams() -> tuple[tuple[object, object], ...]:
    return tuple(
        (stream, getattr(stream, "closed", None)) for stream in (sys.stdout, sys.stderr, sys.stdin)
    )


class Snapshot:
    """Process state a case must leave alone when it runs inside the worker.

    Taken before each case and compared with the live state after it. Objects are
    held and compared by identity (a rebinding to an equal object still counts as a
    change, and no object of the implementation's is ever asked whether it is equal);
    the copies are made with built-in dict and list copies, so a check costs tens of
    microseconds rather than a millisecond.
    """

    __slots__ = (
        "builtins",
        "cwd",
        "environ",
        "environ_store",
        "fds",
        "limits",
        "modules",
        "path",
        "recursion",
        "signals",
        "streams",
        "sys_modules",
        "threads",
        "timers",
        "tracing",
        "versions",
    )

    builtins: dict[str, Any]
    cwd: str
    environ: dict[Any, Any]
    environ_store: Any
    fds: tuple[tuple[int, int] | None, ...]
    limits: tuple[tuple[int, int], ...]
    modules: list[tuple[str, Any, dict[str, Any]]]
    path: list[Any]
    recursion: int
    signals: list[object]
    streams: tuple[tuple[object, object], ...]
    sys_modules: tuple[dict[str, Any], Tag, int] | None
    threads: int
    timers: tuple[tuple[float, float], ...]
    tracing: tuple[object, ...]
    versions: Versions | None

    @classmethod
    def take(cls) -> Snapshot:
        reader = version_reader()  # first: finding it binds names in its module
        snap = cls()
        snap.cwd = _safe_cwd()
        snap.environ_store = _environment_store()
        snap.environ = _environment()
        snap.path = list(sys.path)
        snap.builtins = dict(BUILTINS)
        snap.threads = _active_count()
        snap.streams = _streams()
        snap.fds = _fd_identities()
        snap.modules = []
        for name in _GUARDED_MODULES:
            module = sys.modules.get(name)
            if module is not None:
                snap.modules.append((name, module, dict(vars(module))))
        snap.signals = _signal_handlers()
        snap.timers = tuple(_getitimer(which) for which in _TIMERS)
        snap.tracing = (_gettrace(), _getprofile())
        snap.recursion = _getrecursionlimit()
        snap.limits = _limits()
        snap.versions = None
        snap.sys_modules = None
        if reader is not None:
            modules = sys.modules
            tag = reader(modules)
            snap.sys_modules = (modules, tag, tag.value)
            dicts = [BUILTINS, *(vars(module) for _, module, _ in snap.modules)]
            data = getattr(_environ, "_data", None)
            if type(data) is dict:
                dicts.append(data)
                snap.versions = Versions(dicts, reader)
        return snap

    def differences(self) -> str | None:
        """A description of what the case changed, or None."""
        try:
            return self._differences()
        except RuntimeError:  # a thread of the case changed a namespace while it was read
            return "changed the runner's modules or the standard modules it uses"

    def _differences(self) -> str | None:
        changes = []
        versions = self.versions
        # Unchanged tags: environ, builtins and every guarded namespace hold the same
        # names bound to the same objects, without comparing them name by name.
        quiet = versions is not None and versions.unchanged()
        if _safe_cwd() != self.cwd:
            changes.append("changed the working directory")
        if _environment_store() is not self.environ_store or (
            not quiet and _environment() != self.environ
        ):
            changes.append("changed environment variables")
        if not _same_items(self.path, sys.path):
            changes.append("changed sys.path")
        if not quiet and not _same_namespace(self.builtins, BUILTINS):
            changes.append("changed builtins")
        if _active_count() != self.threads:
            changes.append("left threads running")
        streams = _streams()
        if not all(
            saved[0] is now[0] and saved[1] is now[1]
            for saved, now in zip(self.streams, streams, strict=True)
        ):
            changes.append("replaced or closed sys.stdout, sys.stderr or sys.stdin")
        if _fd_identities() != self.fds:
            changes.append("closed or redirected file descriptor 0, 1 or 2")
        if not self._same_modules(quiet):
            changes.append("changed the runner's modules or the standard modules it uses")
        timers = tuple(_getitimer(which) for which in _TIMERS)
        if not _same_items(self.signals, _signal_handlers()) or timers != self.timers:
            changes.append("changed signal handlers or left a timer armed")
        tracing = (_gettrace(), _getprofile())
        if not _same_items(self.tracing, tracing) or _getrecursionlimit() != self.recursion:
            changes.append("installed a trace or profile function or changed the recursion limit")
        if _limits() != self.limits:
            changes.append("changed a resource limit")
        if not changes and versions is not None and not quiet:
            versions.refresh()  # changed back to the same objects: still the snapshot
        known = self.sys_modules
        if not changes and known is not None and known[1].value != known[2]:
            # Modules were imported (lazily, by the case): the guarded ones were found
            # unchanged above, so the record holds with the new tag.
            self.sys_modules = (known[0], known[1], known[1].value)
        return "; ".join(changes) or None

    def _same_modules(self, quiet: bool) -> bool:
        """The same guarded modules, each still holding its namespace; name by name
        unless the namespaces' version tags say that none of them changed (and that of
        ``sys.modules`` that no module was added, removed or replaced)."""
        if quiet and self.sys_modules is not None:
            modules, tag, value = self.sys_modules
            if sys.modules is modules and tag.value == value:
                return True
        present = [name for name in _GUARDED_MODULES if name in sys.modules]
        if present != [name for name, _, _ in self.modules]:
            return False
        for name, module, namespace in self.modules:
            if sys.modules.get(name) is not module:
                return False
            if not quiet and not _same_namespace(namespace, vars(module)):
                return False
        return True


def _safe_cwd() -> str:
    try:
        return _getcwd()
    except OSError:
        return "<unavailable>"
