"""The implementation's world: namespaces of its own, and a root that holds only what it
needs.

Landlock allows paths on the real file system, so what it refuses has to be listed, and
whatever nobody listed stays reachable: a file cer writes later, a socket a server
listens on. Here the implementation's side gets a file system built from the paths the
policy allows (:func:`enter`), in a mount namespace of its own, so that everything else
is simply absent:

- a fresh ``tmpfs`` is the root; every path the policy lets it read is bound onto the
  same path there, read-only (files one by one, not their folders: a folder the policy
  allows entry by entry is an empty folder holding only those entries), every path it
  may write read-write; the symbolic links on the way to them (``/bin``, ``/lib64``, a
  virtual environment's ``python``) are made again as they are;
- a private empty ``/tmp`` and ``/dev/shm``, a ``/dev`` of ``null``, ``zero``,
  ``full``, ``random``, ``urandom`` and ``tty``, and a ``/proc`` of its own PID
  namespace, read-only (none where there is no PID namespace: a case whose memory is
  measured, which may start no process anyway);
- the old root detached: the home folder, the checkout, its ``.git``, reports, caches,
  ``/run`` and every Unix socket path are not there, and neither is what anybody writes
  later outside the paths bound; a socket lent as an entry of a folder lent entry by
  entry is not bound either;
- an IPC namespace (System V shared memory, semaphores, queues), and, unless the
  machine's network is lent (``--network allow``), a network namespace holding only a
  loopback interface (up), so that no socket reaches a server outside, UDP or abstract
  Unix ones included.

Root makes the namespaces directly; any other user inside a user namespace of its own,
its user and group mapped to themselves. With a PID namespace the calling process
forks twice: the first parent stays outside as a relay, the second is process 1 of the
new namespace, which only reaps; the grandchild goes on (:func:`enter` returns there),
as process 2, so that it is not the process the kernel spares every signal it has no
handler for (an ``abort()`` or a stop it sends itself would do nothing). Both parents
pass on the signals they get and end as the grandchild ended; every process it starts
is inside, and when it ends, process 1 ends and the kernel ends every process left.

Run as a script (``world.py --probe``), it tries the whole construction in a child and
says whether it can be had here (:func:`probe`). Like :mod:`cer.sandbox.landlock`, this
module imports nothing but the standard library and nothing of ``cer``: the launcher
loads it by path.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import stat
import sys
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where a trial is run: the worker never runs one
    import subprocess

__all__ = ["DISABLE_ENV", "WorldError", "enter", "probe"]

DISABLE_ENV = "CER_SANDBOX_NO_NAMESPACES"
"""When set (to any non-empty text), :func:`probe` answers that no world can be built:
how tests and users exercise the Landlock-only fallback."""

_CLONE_NEWNS = 0x00020000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
_MS_RDONLY = 1
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_NOEXEC = 8
_MS_REMOUNT = 32
_MS_NOATIME = 1024
_MS_NODIRATIME = 2048
_MS_BIND = 4096
_MS_REC = 16384
_MS_PRIVATE = 1 << 18
_MS_RELATIME = 1 << 21
_MNT_DETACH = 2
_PR_SET_PDEATHSIG = 1
_CAP_SYS_ADMIN = 21
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 1
_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "arm64": 41}
_STATVFS_LOCKED = (
    (os.ST_RDONLY, _MS_RDONLY),
    (os.ST_NOSUID, _MS_NOSUID),
    (os.ST_NODEV, _MS_NODEV),
    (os.ST_NOEXEC, _MS_NOEXEC),
    (os.ST_NOATIME, _MS_NOATIME),
    (os.ST_NODIRATIME, _MS_NODIRATIME),
    (os.ST_RELATIME, _MS_RELATIME),
)
"""The flags a bind keeps from the mount it comes from: in a user namespace the kernel
refuses a remount that would clear one of them."""
_DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
_DEV_LINKS = (
    ("fd", "/proc/self/fd"),
    ("stdin", "/proc/self/fd/0"),
    ("stdout", "/proc/self/fd/1"),
    ("stderr", "/proc/self/fd/2"),
)
_BASE = "/tmp"
"""Where the building happens: a ``tmpfs`` mounted on it becomes a first root, with the
real root beneath it at ``/old`` and the world at ``/new``."""
_MADE = ("/proc", "/sys", "/dev")
"""Paths no read rule binds: ``/dev`` and ``/proc`` are made anew, ``/sys`` is left out."""
_OLD = "/old"
_NEW = "/new"
_RELAYED = (
    signal.SIGTERM,
    signal.SIGINT,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
)


class WorldError(OSError):
    """The world could not be built; the message says why (an ``OSError``, so that the
    launcher, which loads this module by path, catches it as one)."""


_libc_handle: ctypes.CDLL | None = None


def _libc() -> ctypes.CDLL:
    global _libc_handle
    if _libc_handle is None:
        _libc_handle = ctypes.CDLL(None, use_errno=True)
    return _libc_handle


def _fail(what: str) -> WorldError:
    return WorldError(f"{what}: {os.strerror(ctypes.get_errno())}")


def _mount(source: str | None, target: str, kind: str | None, flags: int, data: str = "") -> None:
    libc = _libc()
    if (
        libc.mount(
            None if source is None else source.encode(),
            target.encode(),
            None if kind is None else kind.encode(),
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        )
        != 0
    ):
        raise _fail(f"mount of {target}")


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _privileged() -> bool:
    """Whether this process may make mount namespaces without a user namespace: root
    holding ``CAP_SYS_ADMIN``."""
    if os.geteuid() != 0:
        return False
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) & (1 << _CAP_SYS_ADMIN))
    except (OSError, ValueError):
        return False
    return False


def enter(
    read: list[str],
    write: list[str],
    listable: list[str],
    aliases: list[str],
    *,
    network: bool,
    pids: bool,
    private_scratch: str = "",
) -> None:
    """Move this process into a world built from the paths given (see the module's
    docstring): ``read`` bound read-only, ``write`` read-write, ``listable`` made as
    empty folders, ``aliases`` (paths as named, through symbolic links) made again as
    links; ``network``: a network namespace of loopback only; ``pids``: a PID namespace
    and ``/proc`` (the caller forks; see the module's docstring); ``private_scratch``:
    a folder (one of ``write``) whose content is this world's own (a fresh folder in it
    is bound in its place, so that no other world sees what this one writes there).
    With ``pids``, this returns in a grandchild of the caller (see the module's
    docstring).

    WorldError when a step fails: the process may then be half-way (in a user namespace
    with no world), and must not run the implementation."""
    if not sys.platform.startswith("linux"):
        raise WorldError("namespaces are a Linux feature")
    cwd = os.getcwd()
    if private_scratch:
        own = os.path.join(private_scratch, f"world-{os.urandom(8).hex()}")
        try:
            os.mkdir(own, 0o700)
            # As the run's folder is: written to and searched, never listed.
            os.chmod(own, os.stat(private_scratch).st_mode & 0o7777)
        except OSError as exc:
            raise WorldError(
                f"the cases' scratch folder could not be made: {exc.strerror or exc}"
            ) from None
        scratch_source = own
    else:
        scratch_source = ""
    uid, gid = os.geteuid(), os.getegid()
    flags = _CLONE_NEWNS | _CLONE_NEWIPC
    if network:
        flags |= _CLONE_NEWNET
    if pids:
        flags |= _CLONE_NEWPID
    if not _privileged():
        flags |= _CLONE_NEWUSER
    if _libc().unshare(flags) != 0:
        raise _fail("unshare")
    if flags & _CLONE_NEWUSER:
        for name, text in (
            ("setgroups", "deny"),
            ("uid_map", f"{uid} {uid} 1"),
            ("gid_map", f"{gid} {gid} 1"),
        ):
            try:
                with open(f"/proc/self/{name}", "w", encoding="ascii") as handle:
                    handle.write(text)
            except OSError as exc:
                raise WorldError(f"writing /proc/self/{name}: {exc.strerror or exc}") from None
    if pids:
        report_r, report_w = os.pipe2(os.O_CLOEXEC)
        _split(report_r, init=False)  # returns in the child, which keeps the write end
    if network:
        _loopback_up()
    _build(read, write, listable, aliases, cwd, scratch_source, private_scratch, proc=pids)
    if pids:
        _split(report_w, init=True)  # returns in process 1's child


def _split(report: int, *, init: bool) -> None:
    """Fork; the parent waits for the child and ends as it ended (it never returns),
    the child returns. Both parents pass on to their child the signals they get.

    The relay (``init=False``) is outside the PID namespace; it keeps the read end of
    ``report``, the pipe through which process 1 tells how the program ended.
    Process 1 (``init=True``) reaps every orphan of the world and, when its child
    ends, writes that child's wait status to ``report``: process 1 cannot end by a
    signal it sends itself, so the relay ends as the status says."""
    # Opened and imported before the fork: the relay shares the mount namespace in
    # which the child is about to replace the root, and must need no path after it.
    import resource

    null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    try:
        child = os.fork()
    except OSError as exc:
        os.close(null)
        raise WorldError(f"fork: {exc.strerror or exc}") from None
    if child == 0:
        os.close(null)
        os.close(report)  # the relay's end, or process 1's
        _libc().prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        return
    _wait_as_parent(child, init, null, report, resource)


def _wait_as_parent(
    child: int, init: bool, null: int, report: int, resource: types.ModuleType
) -> None:
    """The parent's part of :func:`_split`: nothing of the implementation's, no
    descriptor but its standard error (and ``report``), then the child's end passed on
    as its own."""
    try:
        os.dup2(null, 0)
        os.dup2(null, 1)
        if init:
            os.dup2(null, 2)
        os.dup2(report, 3)
        os.closerange(4, 1 << 20)
        for number in _RELAYED:
            signal.signal(number, lambda got, _frame: _pass_on(child, got))
        status = -1
        while True:
            try:
                pid, found = os.waitpid(-1 if init else child, 0)
            except ChildProcessError:
                break
            except InterruptedError:
                continue
            if pid == child:
                status = found
                break
        if init:
            if status >= 0:
                os.write(3, status.to_bytes(4, "little"))
            os._exit(0)
        try:
            told = os.read(3, 4)
        except OSError:
            told = b""
        if len(told) == 4:
            status = int.from_bytes(told, "little")
        _end_as(_end_code(status) if status >= 0 else 1, resource)
    finally:
        os._exit(1)


def _pass_on(child: int, number: int) -> None:
    try:  # noqa: SIM105
        os.kill(child, number)
    except OSError:
        pass


def _end_code(status: int) -> int:
    """The exit code for ``status``: a code, or minus the signal that ended it."""
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.waitstatus_to_exitcode(status)


def _end_as(code: int, resource: types.ModuleType) -> None:
    """End this process as the child ended: with its code, or by its signal."""
    if code < 0:
        number = -code
        with contextlib.suppress(OSError, ValueError):
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if number not in (signal.SIGKILL, signal.SIGSTOP):  # no handler to reset
            with contextlib.suppress(OSError, ValueError):
                signal.signal(number, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, [number])
        with contextlib.suppress(OSError):
            os.kill(os.getpid(), number)
        os._exit(128 + number)
    os._exit(code)


class _IfReq(ctypes.Structure):
    _fields_ = (
        ("name", ctypes.c_char * 16),
        ("flags", ctypes.c_short),
        ("pad", ctypes.c_char * 22),
    )


def _loopback_up() -> None:
    """Bring up the loopback interface of the new network namespace."""
    libc = _libc()
    # A Unix socket: a case whose memory is measured may open no other (its worker is
    # under that filter before its world is built).
    fd = libc.socket(1, 1 | 0o2000000, 0)  # AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC
    if fd < 0:
        raise _fail("socket")
    try:
        request = _IfReq(b"lo", 0)
        if libc.ioctl(fd, _SIOCGIFFLAGS, ctypes.byref(request)) != 0:
            raise _fail("reading the loopback interface's flags")
        request.flags |= _IFF_UP
        if libc.ioctl(fd, _SIOCSIFFLAGS, ctypes.byref(request)) != 0:
            raise _fail("bringing the loopback interface up")
    finally:
        os.close(fd)


def _pivot(new: str, old: str) -> None:
    number = _PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise WorldError(f"no pivot_root is known for {os.uname().machine}")
    if _libc().syscall(number, new.encode(), old.encode()) != 0:
        raise _fail("pivot_root")


def _locked_flags(path: str) -> int:
    try:
        found = os.statvfs(path).f_flag
    except OSError:
        return 0
    flags = 0
    for bit, mount_flag in _STATVFS_LOCKED:
        if found & bit:
            flags |= mount_flag
    return flags


def _make_point(source: str, target: str) -> None:
    """The empty folder or file a bind of ``source`` mounts on, at ``target``."""
    if os.path.isdir(source):
        os.makedirs(target, 0o755, exist_ok=True)
        return
    os.makedirs(os.path.dirname(target), 0o755, exist_ok=True)
    if not os.path.lexists(target):
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))


def _bind(source: str, target: str, *, writable: bool) -> None:
    _make_point(source, target)
    _mount(source, target, None, _MS_BIND | _MS_REC)
    flags = _MS_BIND | _MS_REMOUNT | _locked_flags(source) | _MS_NOSUID | _MS_NODEV
    if writable:
        flags &= ~_MS_RDONLY
    else:
        flags |= _MS_RDONLY
    _mount(None, target, None, flags)


def _build(
    read: list[str],
    write: list[str],
    listable: list[str],
    aliases: list[str],
    cwd: str,
    scratch_source: str,
    scratch: str,
    *,
    proc: bool,
) -> None:
    """Build the world and make it this mount namespace's root (see the module's
    docstring); the working directory stays the one it was, made (empty) if none
    of the paths holds it."""
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    if not os.path.isdir(_BASE):
        raise WorldError(f"there is no {_BASE} to build the world in")
    _mount("tmpfs", _BASE, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=0755")
    os.mkdir(_BASE + _OLD)
    os.mkdir(_BASE + _NEW)
    _pivot(_BASE, _BASE + _OLD)
    os.chdir("/")
    _mount("tmpfs", _NEW, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=0755")
    # What goes where, parents first: a bind covers what lies beneath it.
    plan: list[tuple[str, str]] = [("tmp", "/tmp"), ("dev", "/dev")]
    plan += [("dir", path) for path in listable]
    plan += [("ro", path) for path in read if not any(_within(path, x) for x in _MADE)]
    plan += [("rw", path) for path in write if not _within(path, "/dev")]
    plan.sort(key=lambda item: (item[1].split("/"), item[0] != "dir"))
    bound: set[str] = set()
    for kind, path in plan:
        if not path.startswith("/"):
            continue
        if kind != "rw" and _covered(path, bound):
            continue  # already there, through the bind of a folder that holds it
        target = _NEW + path
        if kind == "tmp":
            os.makedirs(target, 0o755, exist_ok=True)
            _mount("tmpfs", target, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=1777")
        elif kind == "dev":
            _make_dev(target)
        elif kind == "dir":
            if os.path.isdir(_OLD + path):
                os.makedirs(target, 0o755, exist_ok=True)
        else:
            source = _OLD + (scratch_source if kind == "rw" and path == scratch else path)
            try:
                if stat.S_ISSOCK(os.lstat(source).st_mode):
                    continue  # a server's socket, lent as an entry of a folder: not bound
            except OSError:
                continue
            _bind(source, target, writable=kind == "rw")
            bound.add(path)
    for name in aliases:
        _link_again(name, bound)
    if proc:
        os.makedirs(_NEW + "/proc", 0o555, exist_ok=True)
        _mount("proc", _NEW + "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC | _MS_RDONLY)
    if not os.path.isdir(_NEW + cwd) and not _covered(cwd, bound):
        os.makedirs(_NEW + cwd, 0o755, exist_ok=True)
    os.chdir(_NEW)
    _pivot(".", ".")
    if _libc().umount2(b".", _MNT_DETACH) != 0:
        raise _fail("detaching the old root")
    os.chdir("/")
    # The root itself read-only: nothing can be made beside what was bound.
    with contextlib.suppress(WorldError):
        _mount(None, "/", None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | _MS_NODEV)
    with contextlib.suppress(OSError):
        os.chdir(cwd)


def _covered(path: str, bound: set[str]) -> bool:
    """Whether ``path`` is one of ``bound`` or lies beneath one (a walk up its
    folders: the world may bind hundreds of paths)."""
    while True:
        if path in bound:
            return True
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent


def _make_dev(target: str) -> None:
    """The world's ``/dev``: the few devices a program needs, bound from the real one,
    the links to ``/proc/self/fd``, and a fresh ``/dev/shm``."""
    os.makedirs(target, 0o755, exist_ok=True)
    for name in _DEVICES:
        source = f"{_OLD}/dev/{name}"
        if os.path.exists(source):
            point = f"{target}/{name}"
            os.close(os.open(point, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o666))
            _mount(source, point, None, _MS_BIND)
    for name, link in _DEV_LINKS:
        os.symlink(link, f"{target}/{name}")
    os.mkdir(f"{target}/shm", 0o1777)
    _mount("tmpfs", f"{target}/shm", "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=1777,size=50%")


def _link_again(name: str, bound: set[str]) -> None:
    """Make again, in the world, the symbolic links met on the way to ``name`` (the
    real root is at ``/old``), so that a path named through them resolves as it does
    outside; links inside a folder bound whole are there already."""
    pending = [os.path.abspath(name)]
    for _ in range(40):  # as many links as the kernel follows on one path
        if not pending:
            return
        path = pending.pop()
        parts = [part for part in path.split("/") if part]
        for index in range(1, len(parts) + 1):
            prefix = "/" + "/".join(parts[:index])
            host = _OLD + prefix
            if not os.path.islink(host):
                continue
            if _covered(prefix, bound):
                return
            target = os.readlink(host)
            point = _NEW + prefix
            if not os.path.lexists(point):
                try:
                    os.makedirs(os.path.dirname(point), 0o755, exist_ok=True)
                    os.symlink(target, point)
                except OSError:
                    return
            resolved = os.path.normpath(os.path.join(os.path.dirname(prefix), target))
            pending.append("/".join([resolved, *parts[index:]]))
            break


# --------------------------------------------------------------------------- probing


EARLY_TRIAL: subprocess.Popen[bytes] | None = None
"""The trial of :func:`probe`, started ahead of the run by the ``cer`` program
(:func:`cer.cli.entry.start_trial`) while the command line is imported; :func:`probe`
takes it when it is the very trial it would start now, and otherwise lets it end and
starts its own."""

EARLY_TRIAL_KEY: tuple[int, str] = (-1, "")
"""The user and the setting of :data:`DISABLE_ENV` the early trial was started under."""


def trial_command() -> list[str]:
    """The command of the child that tries to build a world (:func:`_trial`)."""
    return [sys.executable, "-I", "-S", "-B", os.path.abspath(__file__), "--probe"]


def discard_early_trial() -> None:
    """Let the early trial, if nobody took it, end (it ends by itself within
    milliseconds: it builds a small world and checks it)."""
    global EARLY_TRIAL
    trial, EARLY_TRIAL = EARLY_TRIAL, None
    if trial is None:
        return
    import subprocess

    try:
        trial.communicate(timeout=20)
    except (OSError, ValueError, subprocess.SubprocessError):
        trial.kill()
        trial.wait()


def _early_trial() -> subprocess.Popen[bytes] | None:
    """The early trial when it is the one :func:`probe` would start now."""
    global EARLY_TRIAL
    trial = EARLY_TRIAL
    if trial is None:
        return None
    now = (os.geteuid(), os.environ.get(DISABLE_ENV, ""))
    if trial.args != trial_command() or now != EARLY_TRIAL_KEY:
        discard_early_trial()
        return None
    EARLY_TRIAL = None
    return trial


def _no_world_here() -> str | None:
    """Why no world can be tried here at all, before any trial; None when one can."""
    if os.environ.get(DISABLE_ENV):
        return f"namespaces turned off ({DISABLE_ENV} is set)"
    if not sys.platform.startswith("linux"):
        return "namespaces are a Linux feature"
    if os.uname().machine not in _PIVOT_ROOT:
        return f"no pivot_root is known for {os.uname().machine}"
    return None


def probe() -> str | None:
    """Whether a world (user namespace where needed, mount, PID, IPC and network
    namespaces, a ``tmpfs`` root, a ``/proc``) can be built here: None when it can,
    else why not. A child process of this interpreter tries, so that nothing of it
    stays with the caller."""
    refused = _no_world_here()
    if refused is not None:
        discard_early_trial()
        return refused
    import subprocess

    try:
        trial = _early_trial()
        if trial is None:
            trial = subprocess.Popen(
                trial_command(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        with trial:  # as subprocess.run does
            try:
                stdout, _ = trial.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                trial.kill()
                trial.wait()
                raise
            except BaseException:
                trial.kill()
                raise
    except (OSError, subprocess.SubprocessError) as exc:
        return f"the trial could not be run ({exc})"
    if trial.returncode == 0:
        return None
    why = stdout.decode("utf-8", "replace").strip().splitlines()
    user = "" if os.geteuid() == 0 else "user "
    return f"{user}namespaces refused" + (f" ({why[-1][:200]})" if why else "")


def _trial() -> int:
    """The child's part of :func:`probe`: build a small world, check it, say why not."""
    here = os.path.dirname(os.path.abspath(__file__))
    read = sorted(
        {
            os.path.realpath(path)
            for path in (sys.prefix, sys.base_prefix, os.path.dirname(os.__file__), here)
        }
    )
    for path in ("/usr", "/lib", "/lib64", "/etc"):
        if os.path.exists(path):
            read.append(os.path.realpath(path))
    try:
        enter(read, [], [], [sys.executable, "/lib", "/lib64", "/bin"], network=True, pids=True)
        if not os.path.isdir("/proc/self") or os.path.exists(_OLD):
            raise WorldError("the world was not as built")
    except (WorldError, OSError) as exc:
        sys.stdout.write(f"{exc}\n")
        return 1
    return 0


if __name__ == "__main__" and sys.argv[1:] == ["--probe"]:
    sys.exit(_trial())
