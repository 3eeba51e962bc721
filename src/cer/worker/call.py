"""One call of the implementation with one case's input, and what it produced as a
message for the supervisor: a returned value as plain data, or the exception it raised
(data for the supervisor to judge, never a verdict)."""

from __future__ import annotations

import builtins
import contextlib
import inspect
import os
import sys
import threading
import traceback
from collections.abc import Collection
from typing import Any

from cer.wire import plaindata
from cer.wire.caseview import CaseView
from cer.wire.messages import (
    AFTER_RETURN,
    BASE_EXCEPTION,
    ENCODE_FAILED,
    MISFIT,
    NOT_PLAIN,
    OUT_OF_MEMORY,
    RAISED,
    RETURNED,
    SETUP_FAILED,
    THREAD_FAILED,
    CaseMessage,
    Payload,
    PayloadKind,
)
from cer.worker.target import (
    CallMisfit,
    SetupFailed,
    Target,
    load_model,
)
from cer.worker.versions import KeptCopy


def payload_text(exc: BaseException) -> str:
    """``str(exc)``, or a note when the exception's own ``__str__`` fails."""
    try:
        return str(exc)
    except BaseException as inner:
        return f"<str() of the exception raised {type(inner).__name__}>"


def _exception_payload(kind: PayloadKind, exc: BaseException) -> Payload:
    exc_type = type(exc)
    try:
        message = str(exc)
    except BaseException as inner:
        message = f"<str() of the exception raised {type(inner).__name__}>"
    try:
        formatted = "".join(traceback.format_exception(exc))
    except BaseException:
        formatted = f"{exc_type.__qualname__}: {message}\n"
    return Payload(
        k=kind,
        type=exc_type.__name__,
        qualname=f"{exc_type.__module__}.{exc_type.__qualname__}",
        msg=message,
        tb=formatted,
    )


def execute_case(target: Target, message: CaseMessage) -> bytes:
    """Run one case in this process and return the payload describing what happened."""
    thread_failures: list[str] = []

    def on_thread_exception(args: threading.ExceptHookArgs) -> None:
        name = args.thread.name if args.thread is not None else "?"
        exc_text = "".join(
            traceback.format_exception(args.exc_type, args.exc_value, args.exc_traceback)
        )
        thread_failures.append(f"exception in thread {name}:\n{exc_text}")

    previous_hook = threading.excepthook
    threading.excepthook = on_thread_exception
    modules = _MODULES
    if modules.mapping is not sys.modules:  # rebound by an earlier case (no isolation)
        modules = KeptCopy(sys.modules)
    modules_before, modules_moved = modules.current(), modules.moved
    view = CaseView(
        name=message["name"],
        case_class=message["case_class"],
        category=message["category"],
        input=message["input"],
        tags=tuple(message["tags"]),
    )
    # What reports the result is taken now: rebinding names in the runner's modules or
    # in builtins while the implementation runs must not change how its result is sent.
    to_wire, dumps, not_plain = plaindata.to_wire, plaindata.dumps, plaindata.NotPlainData
    namespace, restore = BUILTINS, _restore_builtins
    saved_builtins = _BUILTINS.current()
    builtins_moved = _BUILTINS.moved
    box: list[Any] = [_UNSET]
    payload: Payload | None = None
    target.call_note = ""
    try:
        model = message.get("model", "call")
        try:
            if model == "call":
                target.invoke(view, box)
            else:
                try:
                    loaded = load_model(model)
                except Exception as exc:
                    raise SetupFailed(f"loading the category model {model!r} raised") from exc

                def invoke(data: Any) -> Any:
                    inner: list[Any] = [_UNSET]
                    target.invoke(
                        CaseView(view.name, view.case_class, view.category, data, view.tags),
                        inner,
                    )
                    return inner[0]

                box[0] = loaded.execute(invoke, view)
        finally:
            if builtins_moved():
                restore(namespace, saved_builtins)
    except CallMisfit as exc:
        payload = Payload(k=MISFIT, msg=payload_text(exc))
    except SetupFailed as exc:
        payload = _exception_payload(SETUP_FAILED, exc)
        cause = exc.__cause__
        if cause is not None:
            payload["msg"] = f"{exc} {type(cause).__name__}: {payload_text(cause)}"
    except MemoryError as exc:
        payload = _exception_payload(OUT_OF_MEMORY if box[0] is _UNSET else AFTER_RETURN, exc)
    except Exception as exc:
        payload = _exception_payload(RAISED if box[0] is _UNSET else AFTER_RETURN, exc)
    except BaseException as exc:
        payload = _exception_payload(BASE_EXCEPTION if box[0] is _UNSET else AFTER_RETURN, exc)
    finally:
        threading.excepthook = previous_hook
    if payload is None:
        # The implementation returned. Encoding its value is the runner's work, outside
        # the try above: whatever fails here (a value another thread keeps changing, a
        # hook raising) is never the implementation's refusal of the input.
        payload = _encode_returned(box[0], to_wire, not_plain)
    if thread_failures and payload["k"] in (RETURNED, NOT_PLAIN):
        payload = Payload(k=THREAD_FAILED, tb="\n".join(thread_failures))
    if target.call_note and payload["k"] in (RETURNED, RAISED, NOT_PLAIN):
        payload["via"] = target.call_note
    lazy = _lazy_files(modules_before) if modules_moved() else []
    if lazy:
        payload["files"] = lazy
    try:
        return dumps(payload)
    except BaseException as exc:
        return dumps(
            Payload(k=ENCODE_FAILED, msg=f"cannot encode the result: {type(exc).__name__}")
        )


STDLIB: list[StdlibTrees] = []
"""Where the standard library is, found once by :meth:`Worker.load` (before the import)."""


def _lazy_files(before: Collection[str]) -> list[str] | str:
    """The files of modules first loaded while the case ran (outside the standard
    library), for the supervisor to add to the implementation id; ``"unknown"`` when
    they cannot be listed (the case broke ``sys.modules`` or a module's ``__file__``),
    which the supervisor takes as a list it cannot use."""
    if not STDLIB:
        return []
    try:
        return source_files(before, STDLIB[0])
    except BaseException:
        return "unknown"


_UNSET: Any = object()
"""What a case's box holds until the implementation returned."""


def _encode_returned(value: Any, to_wire: Any, not_plain: Any) -> Payload:
    """The payload for a returned value; failures of the encoding are the runner's."""
    try:
        if inspect.iscoroutine(value) or inspect.isgenerator(value):
            with contextlib.suppress(BaseException):
                value.close()
        wire = to_wire(value)
    except not_plain as bad:
        return Payload(k=NOT_PLAIN, path=bad.path, why=bad.problem)
    except BaseException as exc:
        return Payload(k=ENCODE_FAILED, msg=f"{type(exc).__name__}: {payload_text(exc)[:500]}")
    return {"k": RETURNED, "v": wire}


BUILTINS: dict[str, Any] = builtins.__dict__

_BUILTINS = KeptCopy(BUILTINS)
"""Builtins as a case must find them and leave them (see :func:`keep_state`)."""

_MODULES = KeptCopy(sys.modules)
"""The loaded modules, to tell which a case imported (see :func:`keep_state`)."""


def keep_state() -> None:
    """Take the copies of builtins and of ``sys.modules`` a case starts from, now: in
    the worker once the implementation is imported, so that every case's process
    inherits them and a case that changes neither copies nothing (see
    :class:`~cer.worker.versions.KeptCopy`)."""
    global _MODULES
    if _MODULES.mapping is not sys.modules:
        _MODULES = KeptCopy(sys.modules)
    _BUILTINS.current()
    _MODULES.current()


def _restore_builtins(namespace: dict[str, Any], saved: dict[str, Any]) -> None:
    """Undo whatever the implementation added, removed or rebound in builtins."""
    for key in [key for key in namespace if key not in saved]:
        del namespace[key]
    for key, value in saved.items():
        if key not in namespace or namespace[key] is not value:
            namespace[key] = value


class StdlibTrees:
    """Where the standard library lives, and where installed packages live inside it
    (``lib/python3.X/site-packages`` sits below the standard library's own folder)."""

    def __init__(self, stdlib: tuple[str, ...], packages: tuple[str, ...]) -> None:
        self.stdlib = stdlib
        self.packages = packages

    @classmethod
    def find(cls) -> StdlibTrees:
        import site
        import sysconfig

        paths = sysconfig.get_paths()
        stdlib = {paths.get(key) for key in ("stdlib", "platstdlib")}
        packages = {paths.get(key) for key in ("purelib", "platlib")}
        with contextlib.suppress(AttributeError):
            packages.update(site.getsitepackages())
        with contextlib.suppress(AttributeError):
            packages.add(site.getusersitepackages())
        return cls(
            tuple(os.path.realpath(p) for p in stdlib if p),
            tuple(os.path.realpath(p) for p in packages if p),
        )

    def holds(self, path: str) -> bool:
        """Whether ``path`` (already resolved) is a file of the standard library."""
        return _below(path, self.stdlib) and not _below(path, self.packages)


def _below(path: str, folders: tuple[str, ...]) -> bool:
    return any(path.startswith(folder.rstrip(os.sep) + os.sep) for folder in folders)


def source_files(before: Collection[str], stdlib: StdlibTrees) -> list[str]:
    """Files of the modules the import added, outside the standard library: the
    implementation's own, and those of installed packages it loaded (``.py`` and
    compiled extensions alike), so that the implementation id changes with any of them.
    """
    files = set()
    for name in set(sys.modules).difference(before):
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if not isinstance(path, str) or not path:
            continue
        real = os.path.realpath(path)
        if stdlib.holds(real) or not os.path.isfile(real):
            continue
        files.add(real)
    return sorted(files)
