"""The worker process: imports the implementation once and runs cases on request.

Started fresh by the supervisor for every run (``python -m cer.worker CTRL_IN CTRL_OUT``),
so edited code is always re-imported. It talks to the supervisor only through two
private pipes. With fork isolation each case runs in a forked child that has its own
process group, an empty stdin, captured stdout and stderr, and a private result pipe;
the worker itself runs no implementation code after the import, and enforces the
per-case timeout by killing the child's whole process group. With no isolation the
case runs in the worker, which the supervisor watches and recycles on any anomaly.

The worker never decides a verdict: it reports what it observed.
"""

from __future__ import annotations

import array
import builtins
import contextlib
import faulthandler
import fcntl
import gc
import importlib
import inspect
import operator
import os
import select
import signal
import struct
import sys
import termios
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from cer import plaindata, sandbox
from cer.caseview import CaseView
from cer.framing import (
    HEADER,
    KIND_CASE,
    KIND_JSON,
    KIND_RAW,
    MAX_FRAME,
    FrameError,
    pack,
    read_exact,
    read_frame,
    write_all,
)

_NO_FD = -1
_RESULT_LIMIT = 64 * 1024 * 1024
_STARTED = b"S"
"""What a case's process writes first on its result pipe, once it has read its case."""
_SEQ = struct.Struct(">Q")
"""The sequence number in front of a case message from the supervisor."""
_HEADER = HEADER
_FIONREAD = termios.FIONREAD
# Bound once: a case running inside the worker (no isolation) may rebind time's names.
_monotonic = time.monotonic
_perf_counter = time.perf_counter


def _describe_signal(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class SetupFailed(Exception):
    """Preparing to call the implementation failed (instantiating its class, loading a
    category model): not the implementation's answer to the input, so never a
    rejection."""


class _Target:
    """How to call the implementation for one case, decided once at import."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj
        if inspect.isclass(obj):
            self.kind = "class"
        elif callable(getattr(obj, "run_case", None)):
            self.kind = "run_case"
        elif callable(obj):
            self.kind = "callable"
        else:
            raise TypeError(
                f"{type(obj).__name__} object is neither a class, an object with "
                "run_case(case), nor a callable"
            )
        self.signature: inspect.Signature | None = None
        if self.kind == "callable":
            self.signature = _signature(obj)

    def invoke(self, view: CaseView, box: list[Any]) -> None:
        """Call the implementation for one case and put what it returned in ``box[0]``.

        The value is stored in the frame that made the call, on the same line, so that
        anything raised after the implementation returned (a profile or trace hook, the
        runner's own code) is told apart from the implementation's own refusal.
        """
        if self.kind == "class":
            try:
                instance = self.obj()
            except Exception as exc:
                raise SetupFailed(f"instantiating {self.obj.__name__}() raised") from exc
            run_case = getattr(instance, "run_case", None)
            if callable(run_case):
                _call(run_case, _signature(run_case), (view,), {}, box)
                return
            if not callable(instance):
                raise TypeError(
                    f"instances of {self.obj.__name__} have neither run_case(case) nor __call__"
                )
            _call_with_input(instance, _signature(instance), view.input, box)
            return
        if self.kind == "run_case":
            _call(self.obj.run_case, _signature(self.obj.run_case), (view,), {}, box)
            return
        _call_with_input(self.obj, self.signature, view.input, box)


def _signature(func: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(func)
    except (TypeError, ValueError):
        return None


def _name_of(func: Any) -> str:
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None)
    return name if type(name) is str else type(func).__name__


def _call_with_input(
    func: Any, signature: inspect.Signature | None, data: dict[str, Any], box: list[Any]
) -> None:
    """Call ``func`` with the input's keys as keyword arguments when its signature
    takes them, else with the input table as its one argument."""
    if signature is not None:
        try:
            signature.bind(**data)
        except TypeError:
            pass
        else:
            _call(func, None, (), data, box)
            return
    _call(func, signature, (data,), {}, box)


def _call(
    func: Any,
    signature: inspect.Signature | None,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    box: list[Any],
) -> None:
    """Call ``func`` once the arguments are known to bind: a function that cannot even
    be called with the case's input did not refuse the input, so that is never a
    rejection (SetupFailed)."""
    if signature is not None:
        try:
            signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise SetupFailed(
                f"cannot call {_name_of(func)} with the case's input: {exc}"
            ) from None
    if inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(
        getattr(func, "__call__", None)  # noqa: B004
    ):
        import asyncio

        box[0] = asyncio.run(func(*args, **kwargs))
        return
    box[0] = func(*args, **kwargs)


_MODELS: dict[str, Any] = {}


def _load_model(spec: str) -> Any:
    """The category model named ``entrypoint:MODULE:ATTR``, imported once."""
    if spec not in _MODELS:
        module_name, _, attr = spec.removeprefix("entrypoint:").partition(":")
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            if part:
                obj = getattr(obj, part)
        _MODELS[spec] = obj
    return _MODELS[spec]


def payload_text(exc: BaseException) -> str:
    """``str(exc)``, or a note when the exception's own ``__str__`` fails."""
    try:
        return str(exc)
    except BaseException as inner:
        return f"<str() of the exception raised {type(inner).__name__}>"


def _exception_payload(kind: str, exc: BaseException) -> dict[str, Any]:
    exc_type = type(exc)
    try:
        message = str(exc)
    except BaseException as inner:
        message = f"<str() of the exception raised {type(inner).__name__}>"
    try:
        formatted = "".join(traceback.format_exception(exc))
    except BaseException:
        formatted = f"{exc_type.__qualname__}: {message}\n"
    return {
        "k": kind,
        "type": exc_type.__name__,
        "qualname": f"{exc_type.__module__}.{exc_type.__qualname__}",
        "msg": message,
        "tb": formatted,
    }


def _execute(target: _Target, message: dict[str, Any]) -> bytes:
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
    modules_before = set(sys.modules)
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
    namespace = _BUILTINS
    saved_builtins = dict(namespace)
    box: list[Any] = [_UNSET]
    payload: dict[str, Any] | None = None
    try:
        model = message.get("model", "call")
        try:
            if model == "call":
                target.invoke(view, box)
            else:
                try:
                    loaded = _load_model(model)
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
            _restore_builtins(namespace, saved_builtins)
    except SetupFailed as exc:
        payload = _exception_payload("setup", exc)
        cause = exc.__cause__
        if cause is not None:
            payload["msg"] = f"{exc} {type(cause).__name__}: {payload_text(cause)}"
    except MemoryError as exc:
        payload = _exception_payload("mem" if box[0] is _UNSET else "after", exc)
    except Exception as exc:
        payload = _exception_payload("exc" if box[0] is _UNSET else "after", exc)
    except BaseException as exc:
        payload = _exception_payload("base" if box[0] is _UNSET else "after", exc)
    finally:
        threading.excepthook = previous_hook
    if payload is None:
        # The implementation returned. Encoding its value is the runner's work, outside
        # the try above: whatever fails here (a value another thread keeps changing, a
        # hook raising) is never the implementation's refusal of the input.
        payload = _encode_returned(box[0], to_wire, not_plain)
    if thread_failures and payload["k"] in ("ret", "bad"):
        payload = {"k": "thread", "tb": "\n".join(thread_failures)}
    lazy = _lazy_files(modules_before)
    if lazy:
        payload["files"] = lazy
    try:
        return dumps(payload)
    except BaseException as exc:
        return dumps({"k": "encode", "msg": f"cannot encode the result: {type(exc).__name__}"})


_STDLIB: list[_StdlibTrees] = []
"""Where the standard library is, found once by :meth:`Worker.load` (before the import)."""


def _lazy_files(before: set[str]) -> list[str] | str:
    """The files of modules first loaded while the case ran (outside the standard
    library), for the supervisor to add to the implementation id; ``"unknown"`` when
    they cannot be listed (the case broke ``sys.modules`` or a module's ``__file__``),
    which the supervisor takes as a list it cannot use."""
    if not _STDLIB:
        return []
    try:
        return _source_files(before, _STDLIB[0])
    except BaseException:
        return "unknown"


_CRASH_KINDS = frozenset({"base", "mem", "thread"})
"""Payload kinds the supervisor treats as a crash."""

_UNSET: Any = object()
"""What a case's box holds until the implementation returned."""


def _encode_returned(value: Any, to_wire: Any, not_plain: Any) -> dict[str, Any]:
    """The payload for a returned value; failures of the encoding are the runner's."""
    try:
        if inspect.iscoroutine(value) or inspect.isgenerator(value):
            with contextlib.suppress(BaseException):
                value.close()
        wire = to_wire(value)
    except not_plain as bad:
        return {"k": "bad", "path": bad.path, "why": bad.problem}
    except BaseException as exc:
        return {
            "k": "encode",
            "msg": f"{type(exc).__name__}: {payload_text(exc)[:500]}",
        }
    return {"k": "ret", "v": wire}


_BUILTINS: dict[str, Any] = builtins.__dict__


def _rehearsal_target() -> dict[str, Any]:
    return {"output": ["text", 1, 2.5, None, True, {"nested": [0]}]}


_REHEARSAL = plaindata.dumps(
    {
        "name": "rehearsal",
        "case_class": "functional",
        "category": "functional",
        "tags": [],
        "model": "call",
        "input": {},
    }
)


def _rehearse() -> None:
    """Run the runner's own part of a case once, with nothing of the implementation's.

    A forked process pays for every memory page it first writes to (copy on write),
    and Python writes to every object it touches. A spare does this while it waits
    for its case (while the previous case runs), so that what is left for the case is
    the implementation's own pages. Nothing is written anywhere and no state is kept.
    """
    with contextlib.suppress(Exception):
        _execute(_Target(_rehearsal_target), plaindata.loads(_REHEARSAL))


def _forbid_new_processes() -> str | None:
    """Forbid this process to create processes (threads it still can) or to run another
    program, with a seccomp filter, so that the kernel's peak resident memory of this
    one process (VmHWM) is the whole of what its case used: an attempt kills the process
    with SIGSYS. Returns None when the filter is in place, else why not."""
    if not sys.platform.startswith("linux"):
        return "only Linux can forbid new processes (seccomp)"
    import ctypes
    import platform

    machine = platform.machine()
    forks: tuple[int, ...]
    if machine == "x86_64":
        arch, forks, clone, clone3 = 0xC000003E, (57, 58, 59, 322), 56, 435
    elif machine in ("aarch64", "arm64"):
        arch, forks, clone, clone3 = 0xC00000B7, (221, 281), 220, 435
    else:
        return f"no seccomp filter is written for {machine}"
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    # An attempt is not refused but ends the process (SIGSYS): a refusal the runner
    # caused must never look like the implementation's own failure or refusal.
    allow, eperm, enosys = 0x7FFF0000, 0x80000000, 0x00050000 | 38
    program = [(ld, 0, 0, 4), (jeq, 1, 0, arch), (ret, 0, 0, eperm), (ld, 0, 0, 0)]
    if arch == 0xC000003E:
        program += [(jge, 0, 1, 0x40000000), (ret, 0, 0, eperm)]  # the x32 system calls
    for number in forks:
        program += [(jeq, 0, 1, number), (ret, 0, 0, eperm)]
    program += [(jeq, 0, 1, clone3), (ret, 0, 0, enosys)]  # threads fall back to clone
    program += [
        (jeq, 0, 3, clone),
        (ld, 0, 0, 16),  # the low half of clone's flags
        (jset, 1, 0, 0x00010000),  # CLONE_THREAD: a thread, not a process
        (ret, 0, 0, eperm),
        (ret, 0, 0, allow),
    ]

    class Filter(ctypes.Structure):
        _fields_ = [
            ("code", ctypes.c_ushort),
            ("jt", ctypes.c_ubyte),
            ("jf", ctypes.c_ubyte),
            ("k", ctypes.c_uint32),
        ]

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Filter))]

    filters = (Filter * len(program))(*[Filter(*insn) for insn in program])
    prog = Program(len(program), filters)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError) as exc:
        return f"prctl is not available ({exc})"
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    if prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        return f"PR_SET_NO_NEW_PRIVS failed: {os.strerror(ctypes.get_errno())}"
    if prctl(22, 2, ctypes.addressof(prog), 0, 0) != 0:  # PR_SET_SECCOMP, FILTER
        return f"the seccomp filter was refused: {os.strerror(ctypes.get_errno())}"
    return None


def _restore_builtins(namespace: dict[str, Any], saved: dict[str, Any]) -> None:
    """Undo whatever the implementation added, removed or rebound in builtins."""
    for key in [key for key in namespace if key not in saved]:
        del namespace[key]
    for key, value in saved.items():
        if key not in namespace or namespace[key] is not value:
            namespace[key] = value


def _flush_std_streams() -> None:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(BaseException):
            if stream is not None:
                stream.flush()


def _prctl() -> Callable[[int, int], Any] | None:
    """Linux's prctl(2), or None where it is not available."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl: Callable[[int, int], Any] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return prctl


def _parent_death_signal_setter() -> Callable[[], None]:
    """A function that asks Linux to kill the calling child if the worker dies, so no
    case outlives its run; resolved once in the worker, called in each child."""
    prctl = _prctl()
    if prctl is None:
        return lambda: None

    def set_signal() -> None:
        prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG

    return set_signal


def _become_subreaper() -> None:
    """Adopt the orphans of every process below this one (PR_SET_CHILD_SUBREAPER), so
    that a process a case started in a session of its own stays findable and killable."""
    prctl = _prctl()
    if prctl is not None:
        prctl(36, 1)


def _read_file(path: str) -> bytes:
    """The whole content of a (small) file, in as few system calls as possible: this
    runs twice per case."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _children(pid: int) -> list[int]:
    """The direct children of ``pid`` (on Linux; elsewhere none are found)."""
    found: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tids:
        try:
            listed = _read_file(f"/proc/{pid}/task/{tid}/children")
            found.extend(int(word) for word in listed.split())
        except FileNotFoundError:
            if not os.path.exists(f"/proc/{pid}/task/{tid}"):
                continue  # the thread ended meanwhile
            return _children_by_scan(pid)
        except (OSError, ValueError):
            return _children_by_scan(pid)
    return found


def _children_by_scan(pid: int) -> list[int]:
    """The direct children of ``pid``, found by reading every /proc/PID/stat."""
    found: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
            ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid:
            found.append(int(entry))
    return found


def kill_strays(keep: frozenset[int] = frozenset()) -> int:
    """Kill and reap every child of this process not in ``keep``; returns how many.

    Called by the worker after each case, with ``keep`` the children it had before the
    case (helpers the implementation started when it was imported): the case's own
    process has been reaped by then, so any other child is something the case started
    that outlived it (adopted here because the worker is a subreaper). Their children
    are adopted in turn and killed in the next round.
    """
    me = os.getpid()
    killed = 0
    for _ in range(1000):
        strays = [pid for pid in _children(me) if pid not in keep]
        if not strays:
            break
        for pid in strays:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for pid in strays:
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)
        killed += len(strays)
    return killed


def kill_process_tree(root: int) -> None:
    """SIGKILL ``root`` and every process below it.

    Everything is stopped first (a stopped process cannot fork), walking the tree again
    until a walk finds nothing new, then killed, so that nothing escapes by forking
    while the tree is being taken down.
    """
    stopped: list[int] = []
    known: set[int] = set()
    for _ in range(100):
        found_new = False
        stack = [root]
        visited: set[int] = set()
        while stack:
            pid = stack.pop()
            if pid in visited:
                continue
            visited.add(pid)
            if pid not in known:
                known.add(pid)
                stopped.append(pid)
                found_new = True
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGSTOP)
            stack.extend(_children(pid))
        if not found_new:
            break
    for pid in stopped:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


STACK_SIGNAL = signal.SIGUSR2
"""The signal that makes a timed-out case's process dump its stack (faulthandler)."""

STACK_LIMIT = 16 * 1024
"""Bytes of a timed-out case's stack kept."""

STACK_WAIT = 0.2
"""Seconds the worker waits for the stack before the kill, at most."""


def _ask_for_stack(pid: int, err_r: int, err: bytearray, limit: int) -> bytes:
    """Signal the timed-out case's process to dump its stack, and read the dump.

    What the case wrote to stderr before is read into ``err`` first, so that the dump
    is what comes after the signal. The wait is bounded (:data:`STACK_WAIT`) and so is
    the dump (:data:`STACK_LIMIT`): a case that blocks the signal or floods its stderr
    costs a fraction of a second, and what it sent is data, shown as its stack.
    """
    for _ in range(64):
        still_open, _lost = _read_available(err_r, err, limit)
        if not still_open or not _has_data(err_r):
            break
    try:
        os.kill(pid, STACK_SIGNAL)
    except OSError:
        return b""
    stack = bytearray()
    deadline = _monotonic() + STACK_WAIT
    while len(stack) < STACK_LIMIT:
        remaining = deadline - _monotonic()
        if remaining <= 0:
            break
        ready, _, _ = select.select([err_r], [], [], min(remaining, 0.05))
        if not ready:
            if stack:
                break  # the dump is written at once: a pause means it is complete
            continue
        still_open, _lost = _read_available(err_r, stack, STACK_LIMIT)
        if not still_open:
            break
    return bytes(stack)


def _read_available(fd: int, sink: bytearray, limit: int) -> tuple[bool, int]:
    """Read what ``fd`` has now. Returns (still open, bytes dropped past ``limit``)."""
    try:
        chunk = os.read(fd, 1 << 16)
    except BlockingIOError:
        return True, 0
    except OSError:
        return False, 0
    if not chunk:
        return False, 0
    room = max(0, limit - len(sink))
    sink += chunk[:room]
    return True, len(chunk) - min(room, len(chunk))


def _unread_bytes(fd: int) -> int:
    """How many bytes wait in the pipe ``fd`` belongs to (either end); -1 if unknown."""
    buffer = array.array("i", [0])
    try:
        fcntl.ioctl(fd, _FIONREAD, buffer, True)
    except OSError:
        return -1
    return buffer[0]


class _Child:
    """A process forked for one case: a spare waiting for its case, or the case running.

    The worker forks the next case's process while the current case runs (a *spare*),
    so that forking costs no time between cases. A spare runs nothing but the runner's
    own code until it reads its case; it proves it started the case by writing
    :data:`_STARTED` first on its result pipe, and it accepts only a case frame that
    begins with its own random token, chosen after every other case's process was
    forked, so that bytes some other process wrote into its pipe are never run.
    """

    __slots__ = ("err_r", "input_w", "out_r", "pid", "pidfd", "result_r", "token")

    def __init__(
        self,
        pid: int,
        token: bytes,
        input_w: int,
        result_r: int,
        out_r: int,
        err_r: int,
        pidfd: int,
    ) -> None:
        self.pid = pid
        self.token = token
        self.input_w = input_w
        self.result_r = result_r
        self.out_r = out_r
        self.err_r = err_r
        self.pidfd = pidfd

    def worker_fds(self) -> tuple[int, ...]:
        """The descriptors the worker holds for this process."""
        return tuple(
            fd
            for fd in (self.input_w, self.result_r, self.out_r, self.err_r, self.pidfd)
            if fd != _NO_FD
        )

    def untouched(self) -> bool:
        """Whether this spare is alive, not stopped, and nothing touched its pipes.

        Checked right before a case is handed over, when nothing of the previous case
        is left alive: a spare that anything could have disturbed is replaced.
        """
        try:
            waited, _ = os.waitpid(self.pid, os.WNOHANG | os.WUNTRACED)
        except ChildProcessError:
            return False
        if waited:
            return False
        return all(
            _unread_bytes(fd) == 0 for fd in (self.input_w, self.result_r, self.out_r, self.err_r)
        )

    def close_fds(self) -> None:
        for fd in self.worker_fds():
            with contextlib.suppress(OSError):
                os.close(fd)
        self.input_w = self.result_r = self.out_r = self.err_r = self.pidfd = _NO_FD

    def discard(self) -> None:
        """Kill this process and its group, reap it and close its pipes."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
        self.close_fds()


class Worker:
    """The worker's state: its channels, the loaded implementation and its settings."""

    def __init__(self, ctrl_in: int, ctrl_out: int) -> None:
        self.ctrl_in = ctrl_in
        self.ctrl_out = ctrl_out
        self.target: _Target | None = None
        self.alone = False
        """This worker runs one case inline and ends: after a case that crashed (an
        exception outside Exception, a thread's failure), it ends itself, so that the
        supervisor sees the crash as its own child's end."""
        self.isolation = "fork"
        self.capture_limit = 65536
        self.max_memory: int | None = None
        self.timeout = 10.0
        self.devnull = os.open(os.devnull, os.O_RDONLY)
        self.capture_fd = _NO_FD
        self.set_death_signal = _parent_death_signal_setter()
        self.set_memory_limit: Callable[[], None] = lambda: None
        self.sandbox_abi = 0
        """The Landlock ABI this worker confined itself with (0: not sandboxed)."""
        self.spare: _Child | None = None
        """The next case's process, forked ahead of time (fork isolation)."""
        self.running: _Child | None = None
        """The process of the case in progress (fork isolation)."""
        self._case_seq = 0
        self._helpers: frozenset[int] = frozenset()
        self._started = 0.0
        # Bound once: without isolation a case runs in this process, and rebinding these
        # module names must not change what the worker tells the supervisor.
        self._channel = (plaindata.dumps, pack, write_all)
        self._snapshot: _Snapshot | None = None
        """The state every case inside the worker must leave as it found it (no
        isolation); taken before the first case and kept while no case changes it."""

    # --- channel -------------------------------------------------------------------

    def send(self, message: dict[str, Any], raw: bytes | None = None) -> None:
        dumps, pack_frame, write = self._channel
        data = pack_frame(KIND_JSON, dumps(message))
        if raw is not None:
            data += pack_frame(KIND_RAW, raw)
        write(self.ctrl_out, data)

    # --- capture of the worker's own stdout/stderr (import time, no isolation) -------

    def _open_capture(self) -> None:
        if hasattr(os, "memfd_create"):
            self.capture_fd = os.memfd_create("cer-capture")
        else:  # pragma: no cover - non-Linux
            import tempfile

            with tempfile.TemporaryFile() as handle:
                self.capture_fd = os.dup(handle.fileno())
        os.dup2(self.devnull, 0)
        os.dup2(self.capture_fd, 1)
        os.dup2(self.capture_fd, 2)

    def _reset_capture(self) -> None:
        _flush_std_streams()
        # A case may have closed or redirected the standard descriptors: point them
        # back at the capture before the next one runs.
        os.dup2(self.devnull, 0)
        os.dup2(self.capture_fd, 1)
        os.dup2(self.capture_fd, 2)
        os.ftruncate(self.capture_fd, 0)
        os.lseek(self.capture_fd, 0, os.SEEK_SET)
        # fds 1 and 2 share the file offset with capture_fd through dup2.

    def _take_capture(self) -> tuple[str, int]:
        _flush_std_streams()
        size = os.fstat(self.capture_fd).st_size
        data = os.pread(self.capture_fd, min(size, self.capture_limit), 0)
        return data.decode("utf-8", "replace"), max(0, size - self.capture_limit)

    # --- loading ---------------------------------------------------------------------

    def load(self, message: dict[str, Any]) -> None:
        self.alone = bool(message.get("alone"))
        if message.get("confine"):
            # Before the import: nothing of the implementation's can undo it.
            why = _forbid_new_processes()
            self.send({"op": "confined", "ok": why is None, "why": why or ""})
        self.isolation = message["isolation"]
        self.capture_limit = int(message["capture_limit"])
        self.max_memory = message.get("max_memory")
        self.timeout = float(message["timeout"])
        before = set(sys.modules)
        stdlib = _StdlibTrees.find()  # before the import, which may change what it sees
        _STDLIB[:] = [stdlib]
        if self.max_memory:
            import resource

            limit = (self.max_memory, self.max_memory)
            if self.isolation != "fork":
                resource.setrlimit(resource.RLIMIT_AS, limit)
            else:  # applied in each case's process; imported here, not once per case
                self.set_memory_limit = lambda: resource.setrlimit(resource.RLIMIT_AS, limit)
        failure = self._confine(message.get("sandbox"), message.get("sandbox_abi"))
        if failure is not None:
            self.send({"op": "loaded", "ok": False, "reason": failure, "files": []})
            return
        self._open_capture()
        self._reset_capture()
        # Only now, inside the sandbox and with everything of the worker's own
        # imported: a module in an import root named like one the worker imports
        # (`sysconfig`, `resource`) is the implementation's code, and runs confined.
        for path in reversed(message["paths"]):
            if path not in sys.path:
                sys.path.insert(0, path)
        module_name, _, attr = message["impl"].partition(":")
        try:
            if not module_name or not attr:
                raise ValueError(f"--impl must look like MODULE:ATTR, got {message['impl']!r}")
            obj: Any = importlib.import_module(module_name)
            for part in attr.split("."):
                obj = getattr(obj, part)
            self.target = _Target(obj)
        except BaseException as exc:
            output, _ = self._take_capture()
            self.send(
                {
                    "op": "loaded",
                    "ok": False,
                    "reason": f"{type(exc).__name__}: {exc}",
                    "traceback": "".join(traceback.format_exception(exc)),
                    "output": output,
                    "files": _source_files(before, stdlib),
                }
            )
            return
        # Every case starts from the same heap: garbage the import left behind (which
        # a case walking gc.get_objects() could otherwise trip over) is gone first.
        gc.collect()
        output, _ = self._take_capture()
        self.send(
            {
                "op": "loaded",
                "ok": True,
                "kind": self.target.kind,
                "output": output,
                "files": _source_files(before, stdlib),
            }
        )
        if self.isolation == "fork":
            self.spare = self._fork_child()  # ready before the first case arrives

    def _confine(self, policy_text: Any, abi: Any) -> str | None:
        """Apply the run's sandbox policy before anything of the implementation is
        imported, so that the import, every case process and everything they start
        are confined; the reason when it cannot be applied (the run then errors)."""
        if not policy_text:
            return None
        try:
            policy = sandbox.Policy.from_json(str(policy_text))
            os.environ.update(policy.environment())
            if "tempfile" in sys.modules:  # forget a temporary folder chosen earlier
                vars(sys.modules["tempfile"])["tempdir"] = None
            self.sandbox_abi = sandbox.apply(policy, int(abi) if abi else None)
        except (sandbox.SandboxError, ValueError, KeyError) as exc:
            return f"the sandbox could not be applied: {exc}"
        return None

    # --- running cases ---------------------------------------------------------------

    def run_case(self, seq: int, body: bytes) -> None:
        """Run the case whose encoded message is ``body`` (no isolation only; with fork
        isolation the main loop calls :meth:`hand_over` and :meth:`finish_case`)."""
        assert self.target is not None
        message = plaindata.loads(body)
        self._run_inline(seq, message)

    def _run_inline(self, seq: int, message: dict[str, Any]) -> None:
        assert self.target is not None
        # A case that changed nothing left the state equal to the snapshot, so the
        # snapshot stays valid for the next case; any change ends the worker below.
        snapshot = self._snapshot
        if snapshot is None:
            snapshot = self._snapshot = _Snapshot.take()
        helpers = frozenset(_children(os.getpid()))
        self._reset_capture()
        payload = _execute(self.target, message)
        output, dropped = self._take_capture()
        strays = kill_strays(helpers)
        anomaly = snapshot.differences()
        if strays:
            left = f"left {strays} child process{'es' if strays != 1 else ''} running"
            anomaly = f"{anomaly}; {left}" if anomaly else left
        self.send(
            {
                "op": "result",
                "seq": seq,
                "exit": {"how": "inline"},
                "stdout": output,
                "stderr": "",
                "dropped": dropped,
                "anomaly": anomaly,
            },
            payload,
        )
        if self.alone and plaindata.loads(payload).get("k") in _CRASH_KINDS:
            os._exit(70)
        if anomaly:
            os._exit(0)

    # --- fork isolation --------------------------------------------------------------

    def _own_fds(self) -> list[int]:
        """Descriptors of the worker's own that a newly forked case process must close."""
        fds = [self.ctrl_in, self.ctrl_out]
        if self.capture_fd != _NO_FD:
            fds.append(self.capture_fd)
        for child in (self.running, self.spare):
            if child is not None:
                fds.extend(child.worker_fds())
        return fds

    def _fork_child(self) -> _Child:
        """Fork a process that waits for its case; see :class:`_Child`."""
        token = os.urandom(16)
        input_r, input_w = os.pipe()
        result_r, result_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        close = (input_w, result_r, out_r, err_r, *self._own_fds())
        _flush_std_streams()
        pid = os.fork()
        if pid == 0:  # the case's own process
            try:
                self._child_main(token, input_r, result_w, out_w, err_w, close)
            finally:
                os._exit(0)
        with contextlib.suppress(OSError):
            os.setpgid(pid, pid)
        for fd in (input_r, result_w, out_w, err_w):
            os.close(fd)
        for fd in (result_r, out_r, err_r):
            os.set_blocking(fd, False)
        pidfd = _NO_FD
        if hasattr(os, "pidfd_open"):
            with contextlib.suppress(OSError):
                pidfd = os.pidfd_open(pid)
        return _Child(pid, token, input_w, result_r, out_r, err_r, pidfd)

    def _child_main(
        self,
        token: bytes,
        input_r: int,
        result_w: int,
        out_w: int,
        err_w: int,
        close: tuple[int, ...],
    ) -> None:
        """The case's process: wait for the case, then run it and report."""
        assert self.target is not None
        os.setpgid(0, 0)
        self.set_death_signal()
        if self.sandbox_abi:
            # A domain of its own inside the worker's: the case cannot signal or trace
            # the worker, nor any other case.
            sandbox.confine_case(self.sandbox_abi)
        for fd in close:
            with contextlib.suppress(OSError):
                os.close(fd)
        os.dup2(self.devnull, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.close(out_w)
        os.close(err_w)
        _rehearse()
        try:
            # Each part is checked as soon as it arrives, so that bytes some other
            # process wrote into the pipe end this spare at once rather than at a timeout.
            length, kind = _HEADER.unpack(read_exact(input_r, _HEADER.size))
            if kind != KIND_CASE or not len(token) <= length <= MAX_FRAME:
                return
            if read_exact(input_r, len(token)) != token:
                return  # not the worker's frame: the case is never started
            body = read_exact(input_r, length - len(token))
        except (EOFError, OSError):
            return  # the worker discarded this spare, or something broke its pipe
        os.close(input_r)
        write_all(result_w, _STARTED)
        message = plaindata.loads(body)
        del body
        self.set_memory_limit()
        # At a timeout the worker asks for the case's stack before the kill: it goes to
        # the stderr pipe, which the worker reads apart from the case's own stderr.
        with contextlib.suppress(RuntimeError, ValueError, OSError):
            faulthandler.register(STACK_SIGNAL, all_threads=True, chain=False)
        payload = _execute(self.target, message)
        _flush_std_streams()
        write_all(result_w, pack(KIND_RAW, payload))

    def hand_over(self, seq: int, body: bytes) -> None:
        """Give the case to the spare process (forking one if there is no good spare).

        Called with nothing of the previous case alive, which is when a spare is
        checked. The caller drops ``body`` before :meth:`finish_case` forks the next
        spare, so that no process of another case holds this case's input.
        """
        child = self.spare
        self.spare = None
        if child is None or not child.untouched():
            if child is not None:
                child.discard()
            child = self._fork_child()
        self.running = child
        self._case_seq = seq
        self._helpers = frozenset(_children(os.getpid())) - {child.pid}
        self._started = _monotonic()
        with contextlib.suppress(OSError):  # a dead spare: reported as never started
            write_all(child.input_w, pack(KIND_CASE, child.token + body))
        os.close(child.input_w)
        child.input_w = _NO_FD

    def finish_case(self) -> None:
        """Fork the next spare while the case runs, then supervise the case and report."""
        child = self.running
        assert child is not None
        try:
            self.spare = self._fork_child()
        except OSError:  # no spare now; the next case forks its own process
            self.spare = None
        try:
            self._supervise_child(child)
        finally:
            self.running = None
            child.close_fds()

    def discard_spare(self) -> None:
        if self.spare is not None:
            self.spare.discard()
            self.spare = None

    def _supervise_child(self, child: _Child) -> None:
        seq, pid, started = self._case_seq, child.pid, self._started
        deadline = started + self.timeout
        result = bytearray()
        out = bytearray()
        err = bytearray()
        result_r, out_r, err_r, pidfd = child.result_r, child.out_r, child.err_r, child.pidfd
        dropped = {out_r: 0, err_r: 0}
        sinks = {result_r: result, out_r: out, err_r: err}
        limit = self.capture_limit
        limits = {result_r: _RESULT_LIMIT + 16, out_r: limit, err_r: limit}
        poller = select.poll()
        for fd in sinks:
            poller.register(fd, select.POLLIN)
        if pidfd != _NO_FD:
            poller.register(pidfd, select.POLLIN)
        open_fds = set(sinks)
        status: int | None = None
        how: dict[str, Any] | None = None
        stack = b""
        while status is None:
            remaining = deadline - _monotonic()
            if remaining <= 0:
                how = {"how": "timeout"}
                stack = _ask_for_stack(pid, err_r, err, limit)
                break
            wait_ms = remaining * 1000 if pidfd != _NO_FD else min(remaining * 1000, 5)
            exited = pidfd == _NO_FD
            for fd, _event in poller.poll(wait_ms):
                if fd == pidfd:
                    exited = True
                    continue
                still_open, lost = _read_available(fd, sinks[fd], limits[fd])
                if fd in dropped:
                    dropped[fd] += lost
                if not still_open:
                    poller.unregister(fd)
                    open_fds.discard(fd)
            if len(result) > _RESULT_LIMIT:
                how = {"how": "too_large"}
                break
            if exited:
                waited, raw_status = os.waitpid(pid, os.WNOHANG)
                if waited:
                    status = raw_status
        # Whatever happened, nothing of the case may outlive it: its process group, and
        # whatever it started in a session of its own (adopted here, as the subreaper).
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        if status is None:
            _, status = os.waitpid(pid, 0)
        keep = self._helpers if self.spare is None else self._helpers | {self.spare.pid}
        strays = kill_strays(keep)
        for fd in list(open_fds):
            for _ in range(64):  # bounded: all writers are gone, only buffers remain
                still_open, lost = _read_available(fd, sinks[fd], limits[fd])
                if fd in dropped:
                    dropped[fd] += lost
                if not still_open or not _has_data(fd):
                    break
        if not result.startswith(_STARTED):
            # The process never started the case (it was disturbed before it read it):
            # the supervisor sends the case again; nothing of the implementation ran.
            self.send({"op": "result", "seq": seq, "exit": {"how": "unstarted"}}, b"")
            return
        if how is None:
            if os.WIFSIGNALED(status):
                number = os.WTERMSIG(status)
                how = {"how": "signal", "signal": number, "name": _describe_signal(number)}
            else:
                how = {"how": "exited", "code": os.WEXITSTATUS(status)}
        self.send(
            {
                "op": "result",
                "seq": seq,
                "exit": how,
                "stdout": out.decode("utf-8", "replace"),
                "stderr": err.decode("utf-8", "replace"),
                "dropped": dropped[out_r] + dropped[err_r],
                "anomaly": None,
                "strays": strays,
                "stack": stack.decode("utf-8", "replace"),
            },
            bytes(memoryview(result)[len(_STARTED) :]),
        )


def _has_data(fd: int) -> bool:
    ready, _, _ = select.select([fd], [], [], 0)
    return bool(ready)


class _StdlibTrees:
    """Where the standard library lives, and where installed packages live inside it
    (``lib/python3.X/site-packages`` sits below the standard library's own folder)."""

    def __init__(self, stdlib: tuple[str, ...], packages: tuple[str, ...]) -> None:
        self.stdlib = stdlib
        self.packages = packages

    @classmethod
    def find(cls) -> _StdlibTrees:
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


def _source_files(before: set[str], stdlib: _StdlibTrees) -> list[str]:
    """Files of the modules the import added, outside the standard library: the
    implementation's own, and those of installed packages it loaded (``.py`` and
    compiled extensions alike), so that the implementation id changes with any of them.
    """
    files = set()
    for name in set(sys.modules) - before:
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if not isinstance(path, str) or not path:
            continue
        real = os.path.realpath(path)
        if stdlib.holds(real) or not os.path.isfile(real):
            continue
        files.add(real)
    return sorted(files)


_GUARDED_MODULES = (
    "cer",
    "cer.worker",
    "cer.worker.main",
    "cer.plaindata",
    "cer.framing",
    "cer.caseview",
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
_environ = os.environ
_active_count = threading.active_count
_raw_signal: Any = importlib.import_module("_signal")  # without signal's enum wrapping
_getsignal = _raw_signal.getsignal
_getitimer = signal.getitimer
_SIGNALS: tuple[int, ...] = tuple(sorted(int(n) for n in _raw_signal.valid_signals()))
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


def _environment() -> dict[Any, Any]:
    data = getattr(_environ, "_data", None)
    return data.copy() if type(data) is dict else dict(_environ)


def _signal_handlers() -> list[object]:
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


def _dict_version_reader() -> Callable[[dict[Any, Any]], Callable[[], int]] | None:
    """A way to read a dict's version tag (PEP 509), or None where it cannot be trusted.

    CPython 3.11 to 3.13 give every dict a tag that takes a new value on each change
    to the dict (an insertion, a deletion, a rebinding to another object), kept in the
    dict's header; reading it costs a fraction of a microsecond, against about a
    hundred for comparing a namespace name by name. It is only an internal field, so
    it is used only where the header has the expected layout and the tag moves as
    expected on a probe dict; anywhere else every check compares in full.
    """
    if sys.implementation.name != "cpython" or not (3, 11) <= sys.version_info[:2] <= (3, 13):
        return None
    try:
        import ctypes
    except ImportError:  # pragma: no cover - CPython without ctypes
        return None
    tag_type, used_type = ctypes.c_uint64, ctypes.c_ssize_t
    header = 2 * ctypes.sizeof(ctypes.c_void_p)  # reference count and type

    def reader(mapping: dict[Any, Any]) -> Callable[[], int]:
        cell = tag_type.from_address(id(mapping) + header + ctypes.sizeof(used_type))
        return lambda: cell.value  # valid while the caller holds the dict (it does)

    probe: dict[Any, Any] = {"a": object()}
    used = used_type.from_address(id(probe) + header)
    read = reader(probe)
    seen = [read()]
    probe["b"] = object()
    seen.append(read())
    probe["a"] = object()
    seen.append(read())
    del probe["b"]
    seen.append(read())
    if used.value != len(probe) or len(set(seen)) != len(seen):
        return None
    return reader


class _Versions:
    """The version tags of the dicts a snapshot guards, to tell at once that none of
    them changed (see :func:`_dict_version_reader`)."""

    __slots__ = ("dicts", "readers", "tags")

    def __init__(
        self, dicts: list[dict[Any, Any]], reader: Callable[[dict[Any, Any]], Callable[[], int]]
    ) -> None:
        self.dicts = dicts  # held, so that every address read stays this dict's
        self.readers = [reader(mapping) for mapping in dicts]
        self.tags = [read() for read in self.readers]

    def unchanged(self) -> bool:
        return all(read() == tag for read, tag in zip(self.readers, self.tags, strict=True))

    def refresh(self) -> None:
        self.tags = [read() for read in self.readers]


_VERSION_READER: Callable[[dict[Any, Any]], Callable[[], int]] | None = None
_VERSION_READER_KNOWN = False


def _version_reader() -> Callable[[dict[Any, Any]], Callable[[], int]] | None:
    """:func:`_dict_version_reader`, found once (only without isolation is it used)."""
    global _VERSION_READER, _VERSION_READER_KNOWN
    if not _VERSION_READER_KNOWN:
        _VERSION_READER = _dict_version_reader()
        _VERSION_READER_KNOWN = True
    return _VERSION_READER


class _Snapshot:
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
        "fds",
        "modules",
        "path",
        "recursion",
        "signals",
        "streams",
        "threads",
        "timers",
        "tracing",
        "versions",
    )

    builtins: dict[str, Any]
    cwd: str
    environ: dict[Any, Any]
    fds: tuple[tuple[int, int] | None, ...]
    modules: list[tuple[str, Any, dict[str, Any]]]
    path: list[Any]
    recursion: int
    signals: list[object]
    streams: tuple[tuple[object, object], ...]
    threads: int
    timers: tuple[tuple[float, float], ...]
    tracing: tuple[object, ...]
    versions: _Versions | None

    @classmethod
    def take(cls) -> _Snapshot:
        reader = _version_reader()  # first: finding it binds names in this module
        snap = cls()
        snap.cwd = _safe_cwd()
        snap.environ = _environment()
        snap.path = list(sys.path)
        snap.builtins = dict(_BUILTINS)
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
        snap.versions = None
        if reader is not None:
            dicts = [_BUILTINS, *(vars(module) for _, module, _ in snap.modules)]
            data = getattr(_environ, "_data", None)
            if type(data) is dict:
                dicts.append(data)
                snap.versions = _Versions(dicts, reader)
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
        if not quiet and _environment() != self.environ:
            changes.append("changed environment variables")
        if not _same_items(self.path, sys.path):
            changes.append("changed sys.path")
        if not quiet and not _same_namespace(self.builtins, _BUILTINS):
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
        if not changes and versions is not None and not quiet:
            versions.refresh()  # changed back to the same objects: still the snapshot
        return "; ".join(changes) or None

    def _same_modules(self, quiet: bool) -> bool:
        """The same guarded modules, each still holding its namespace; name by name
        unless the namespaces' version tags say that none of them changed."""
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


def main(argv: list[str] | None = None) -> None:
    """Serve the supervisor until it says quit or closes the channel."""
    args = sys.argv[1:] if argv is None else argv
    worker = Worker(int(args[0]), int(args[1]))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _become_subreaper()
    while True:
        try:
            kind, data = read_frame(worker.ctrl_in)
        except (EOFError, OSError, FrameError):
            worker.discard_spare()
            kill_strays()
            os._exit(0)
        if kind == KIND_CASE and worker.target is not None and len(data) >= _SEQ.size:
            (seq,) = _SEQ.unpack_from(data)
            if worker.isolation == "fork":
                worker.hand_over(seq, data[_SEQ.size :])
                del data  # the next case's process is forked without this case's input
                worker.finish_case()
            else:
                worker.run_case(seq, data[_SEQ.size :])
                del data
            continue
        if kind != KIND_JSON:
            os._exit(3)
        message = plaindata.loads(data)
        op = message.get("op")
        if op == "load":
            worker.load(message)
        elif op == "quit":
            worker.discard_spare()
            kill_strays()  # whatever the implementation started ends with the run
            os._exit(0)
