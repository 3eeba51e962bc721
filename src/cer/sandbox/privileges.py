"""Root keeps no privilege on the implementation's side, and its ``/dev/shm`` is its own.

Landlock confines paths, not privilege: a process running as root still holds every
capability, and with them makes device nodes and reads the raw disk, sets the clock,
marks files immutable. So each process the sandbox confines (the worker once it is set
up, and so every case process it forks; a command harness and a per-case command,
through the launcher of :mod:`cer.sandbox.landlock`) also drops them all (:func:`drop`):

- the bounding set, so that no program it runs can gain one back (needs CAP_SETPCAP,
  which only a privileged process has; an unprivileged one has nothing to drop);
- the ambient set, and the effective, permitted and inheritable sets (``capset``);
- ``no_new_privs``, so that set-user-id programs and file capabilities give nothing;
- the secure bits ``NOROOT``, ``NO_SETUID_FIXUP`` and ``NO_CAP_AMBIENT_RAISE``, each
  locked, so that uid 0 never means capabilities again, even through ``execve``.

:func:`private_shm` gives the process a mount namespace of its own with a fresh
``tmpfs`` on ``/dev/shm`` (while it still may: Landlock forbids mounting, and so does
the seccomp filter of :mod:`cer.sandbox.seccomp`), so that what the implementation puts there is
seen by nothing outside and is gone when its last process ends. A process that may
not mount (not root) makes a user namespace of its own first, where the kernel lets
unprivileged users make one, mapping only its own user and group to themselves: its
files, its ids and those of the processes that watch it stay what they were, and the
capabilities it holds inside that namespace (all of them, for the moment it mounts)
are dropped by :func:`drop` like root's.

Like :mod:`cer.sandbox.landlock`, this module imports nothing but the standard library and
nothing of ``cer``: the launcher loads it by path.
"""

from __future__ import annotations

import ctypes
import os
import sys

__all__ = ["drop", "private_shm", "state"]

_PR_CAPBSET_DROP = 24
_PR_SET_SECUREBITS = 28
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAP_SETPCAP = 8
_CAP_SETFCAP = 31
_EINVAL = 22
_SECURE_BITS = 0b11101111
"""NOROOT, NO_SETUID_FIXUP, NO_CAP_AMBIENT_RAISE and KEEP_CAPS_LOCKED, each with its
lock (KEEP_CAPS itself stays off)."""
_CAPABILITY_VERSION_3 = 0x20080522
_CLONE_NEWNS = 0x00020000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWUSER = 0x10000000
_PR_GET_DUMPABLE = 3
_APPARMOR_RESTRICTS = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"
_MS_REC = 0x4000
_MS_PRIVATE = 1 << 18
_MS_NOSUID = 2
_MS_NODEV = 4
_SHM_SIZE = "size=50%"


class _Header(ctypes.Structure):
    _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))


class _Data(ctypes.Structure):
    _fields_ = (
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    )


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _error(what: str) -> str:
    return f"{what} failed: {os.strerror(ctypes.get_errno())}"


def state() -> dict[str, int]:
    """This process's capability sets, ``NoNewPrivs`` and ``Seccomp`` as
    ``/proc/self/status`` shows them (hexadecimal masks read as numbers)."""
    found: dict[str, int] = {}
    with open("/proc/self/status") as handle:
        for line in handle:
            key, _, value = line.partition(":")
            if key in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
                found[key] = int(value.strip(), 16)
            elif key in ("NoNewPrivs", "Seccomp"):
                found[key] = int(value.strip())
    return found


def drop() -> str | None:
    """Drop every capability of this process for good (see the module's docstring);
    None when done, else what failed. Threads started later inherit the result; the
    caller has no other thread."""
    if not sys.platform.startswith("linux"):
        return "capabilities are a Linux feature"
    libc = _libc()
    prctl = libc.prctl
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    header = _Header(_CAPABILITY_VERSION_3, 0)
    data = (_Data * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        return _error("capget")
    if data[0].permitted & (1 << _CAP_SETPCAP):
        if prctl(_PR_SET_SECUREBITS, _SECURE_BITS, 0, 0, 0) != 0:
            return _error("prctl(PR_SET_SECUREBITS)")
        for cap in range(64):  # up to the first this kernel does not know (EINVAL)
            if prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                if ctypes.get_errno() == _EINVAL and cap > _CAP_SETPCAP:
                    break
                return _error(f"prctl(PR_CAPBSET_DROP, {cap})")
    # Without CAP_SETPCAP the bounding set cannot shrink, and needs not: a process
    # that holds no capability gains none through execve under no_new_privs.
    if prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0:
        return _error("prctl(PR_CAP_AMBIENT_CLEAR_ALL)")
    header = _Header(_CAPABILITY_VERSION_3, 0)
    if libc.capset(ctypes.byref(header), ctypes.byref((_Data * 2)())) != 0:
        return _error("capset")
    if prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return _error("prctl(PR_SET_NO_NEW_PRIVS)")
    return None


def private_shm() -> bool:
    """Enter a mount namespace (and an IPC namespace) of this process's own in which
    ``/dev/shm`` is a fresh, empty ``tmpfs``; True when done. Root can (before it drops
    its capabilities); any other user can where the kernel lets it make a user namespace of its own
    (:func:`_own_user_namespace`). Elsewhere (user namespaces refused by a sysctl, a
    security module or a container's seccomp filter) nothing changes and False is
    returned, as it is to a process with more than one thread, which the kernel gives
    no user namespace."""
    if not sys.platform.startswith("linux") or not os.path.isdir("/dev/shm"):
        return False
    libc = _libc()
    # With the mount namespace, an IPC namespace: System V shared memory, semaphores
    # and message queues, which no file system holds, are then the side's own too and
    # end with its last process (a 300 MiB segment once outlived the run, and lent a
    # later memory case a table it never paid for). Where the kernel has none, the
    # mount namespace alone.
    if (
        libc.unshare(_CLONE_NEWNS | _CLONE_NEWIPC) != 0
        and libc.unshare(_CLONE_NEWNS) != 0
        and not _own_user_namespace(libc)
    ):
        return False
    return _mount_shm(libc)


def _mount_shm(libc: ctypes.CDLL) -> bool:
    """Mount the fresh ``tmpfs`` on ``/dev/shm``, in the mount namespace just made."""
    # Nothing mounted from here on reaches the namespace this one was copied from.
    if libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        return False
    flags = _MS_NOSUID | _MS_NODEV
    mode = f"mode=1777,{_SHM_SIZE}".encode()
    return bool(libc.mount(b"tmpfs", b"/dev/shm", b"tmpfs", flags, mode) == 0)


def _own_user_namespace(libc: ctypes.CDLL) -> bool:
    """Enter a user namespace and a mount namespace of this process's own, its user
    and group mapped to themselves; True when done.

    Once in a user namespace a process cannot leave it, and one whose ids could not be
    mapped would be left seeing itself and its files as the overflow user
    (``nobody``): not nothing changed. The kernel may make the namespace and then
    refuse the map: to a process that is not dumpable (its ``/proc/self`` files belong
    to root), to root without ``CAP_SETFCAP`` (uid 0 is mapped only by who could set
    file capabilities), where a security module denies the capabilities a map needs
    (Ubuntu's AppArmor does for every unconfined program when
    ``kernel.apparmor_restrict_unprivileged_userns`` is 1). Those are checked first.
    Then a child process tries the whole of it, mount included, and this one follows
    only where the child got to the end. A process that already has a seccomp filter
    makes no child: the filter may end it for that (the worker of a case whose memory
    is measured forbids new processes before it is confined), and the checks stand
    alone."""
    if not _may_map(libc):
        return False
    uid, gid = os.geteuid(), os.getegid()
    if state().get("Seccomp", 0) == 0 and not _trial(libc, uid, gid):
        return False
    return _enter_user_namespace(libc, uid, gid)


def _may_map(libc: ctypes.CDLL) -> bool:
    """Whether nothing known stands between this process and the map of its own ids
    in a user namespace it makes (see :func:`_own_user_namespace`)."""
    if libc.prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0) != 1:
        return False
    if os.geteuid() == 0 and not state().get("CapEff", 0) & (1 << _CAP_SETFCAP):
        return False
    try:
        with open(_APPARMOR_RESTRICTS, encoding="ascii") as handle:
            return handle.read().strip() == "0"
    except OSError:
        return True  # no such setting: no such restriction


def _trial(libc: ctypes.CDLL, uid: int, gid: int) -> bool:
    """Whether a child of this process gets as far as a fresh ``/dev/shm`` in a user
    namespace of its own; the child ends right after, with what it made."""
    try:
        pid = os.fork()
    except OSError:
        return False
    if pid == 0:  # whatever happens, the child ends here
        try:
            done = _enter_user_namespace(libc, uid, gid) and _mount_shm(libc)
        except BaseException:
            done = False
        os._exit(0 if done else 1)
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:  # reaped elsewhere (SIGCHLD ignored): not known
        return False
    return os.waitstatus_to_exitcode(status) == 0


def _enter_user_namespace(libc: ctypes.CDLL, uid: int, gid: int) -> bool:
    """``unshare`` a user and a mount namespace and map ``uid`` and ``gid`` to
    themselves (``setgroups`` denied first, as the kernel requires of a process that
    maps its group without privilege)."""
    if (
        libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS | _CLONE_NEWIPC) != 0
        and libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS) != 0
    ):
        return False
    for name, text in (
        ("setgroups", "deny"),
        ("uid_map", f"{uid} {uid} 1"),
        ("gid_map", f"{gid} {gid} 1"),
    ):
        try:
            with open(f"/proc/self/{name}", "w", encoding="ascii") as handle:
                handle.write(text)
        except OSError:
            return False
    return True
