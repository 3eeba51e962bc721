"""The Linux kernel's Landlock, through ``ctypes``, and the launcher built on it.

Landlock is the kernel's unprivileged access control (Linux 5.13 and later), reached
through three syscalls (444-446, the same number on every architecture). Each kernel
speaks an ABI version; the rights a lower ABI does not know are left out of every
ruleset, so a policy never asks the kernel for what it cannot do. What a domain denies,
by ABI:

- 1: file access outside its rules, and ptrace of processes outside the domain;
- 2 and 3: moving files across folders, truncating files;
- 4: TCP ``bind`` and ``connect``, when the network is denied;
- 5: ioctl on devices;
- 6: signals to processes outside the domain, and abstract Unix sockets outside it.

Run as a script, this file is the launcher of command implementations::

    python -I -S -B landlock.py RULES -- COMMAND ARGS

It confines itself to RULES (see :func:`encode`), then becomes COMMAND; it never runs
the command unconfined: it also drops every capability (:mod:`cer.sandbox.privileges`) and
installs the seccomp filter (:mod:`cer.sandbox.seccomp`), both loaded by path, after giving
itself a private ``/dev/shm`` where it may. It imports nothing but ``os``, ``sys``,
``ctypes`` and those two (it starts once per case of ``--impl-cmd-per-case``, so its
start-up is kept short), and nothing else of ``cer``: :mod:`cer.sandbox` builds the
rules.
"""

from __future__ import annotations

import ctypes
import os
import sys
import types

DISABLE_ENV = "CER_SANDBOX_UNAVAILABLE"
"""When set (to any non-empty text), :func:`abi` answers that Landlock is unavailable:
how tests and users simulate a kernel without it."""

_NETWORKS = ("allow", "loopback", "deny")
"""The networks of :data:`cer.sandbox.Network`, as the rules text names them."""
_SYS_CREATE_RULESET = 444
_SYS_ADD_RULE = 445
_SYS_RESTRICT_SELF = 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_ENOSYS = 38
_EOPNOTSUPP = 95

FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_MAKE_CHAR = 1 << 6
FS_MAKE_BLOCK = 1 << 11
MAKE_DEVICE = FS_MAKE_CHAR | FS_MAKE_BLOCK
"""Making device nodes: handled by every ruleset, granted by no rule."""
FS_REFER = 1 << 13
FS_TRUNCATE = 1 << 14
FS_IOCTL_DEV = 1 << 15
FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
"""The only rights a rule on a file (not a folder) may carry."""
READ_RIGHTS = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
NET_BIND_TCP = 1 << 0
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
SCOPE_SIGNAL = 1 << 1


class LandlockError(Exception):
    """Landlock is unavailable or refused a request; the message says why."""


def fs_rights(abi: int) -> int:
    """Every file-system right the kernel of ``abi`` knows."""
    rights = (1 << 13) - 1  # ABI 1: execute .. make_sym
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    if abi >= 5:
        rights |= FS_IOCTL_DEV
    return rights


def scopes(abi: int) -> int:
    """The scopes the kernel of ``abi`` knows (signals, abstract Unix sockets: ABI 6)."""
    return SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX_SOCKET if abi >= 6 else 0


_libc: ctypes.CDLL | None = None


def _call() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def abi() -> tuple[int, str]:
    """The Landlock ABI this process can use, and why none when it is 0."""
    if os.environ.get(DISABLE_ENV):
        return 0, f"Landlock is unavailable ({DISABLE_ENV} is set)"
    if not sys.platform.startswith("linux"):
        return 0, f"Landlock is a Linux feature (this is {sys.platform})"
    try:
        version = _call().syscall(
            _SYS_CREATE_RULESET, None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION
        )
    except (OSError, AttributeError) as exc:
        return 0, f"cannot call the kernel: {exc}"
    if version > 0:
        return int(version), ""
    err = ctypes.get_errno()
    if err == _ENOSYS:
        return 0, "this kernel has no Landlock (it needs Linux 5.13 or later)"
    if err == _EOPNOTSUPP:
        return 0, "Landlock is turned off in this kernel (see its lsm= boot setting)"
    return 0, f"Landlock is unavailable ({os.strerror(err)})"


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


def _attr_size(version: int) -> int:
    """How much of the ruleset attribute the kernel of ABI ``version`` reads."""
    return 24 if version >= 6 else 16 if version >= 4 else 8


def _create_ruleset(version: int, fs: int, net: int, scoped: int) -> int:
    attr = _RulesetAttr(fs, net, scoped)
    size = ctypes.c_size_t(_attr_size(version))
    fd = _call().syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), size, 0)
    if fd < 0:
        raise LandlockError(f"landlock_create_ruleset failed: {os.strerror(ctypes.get_errno())}")
    return int(fd)


def _restrict(ruleset: int) -> None:
    libc = _call()
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise LandlockError(f"prctl(PR_SET_NO_NEW_PRIVS) failed: {os.strerror(ctypes.get_errno())}")
    if libc.syscall(_SYS_RESTRICT_SELF, ruleset, 0) != 0:
        raise LandlockError(f"landlock_restrict_self failed: {os.strerror(ctypes.get_errno())}")


def _add_path(ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # gone since the rules were made: nothing to allow
    try:
        if not _is_dir(fd):
            rights &= FILE_RIGHTS
        rule = _PathBeneath(rights, fd)
        if _call().syscall(_SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0):
            err = ctypes.get_errno()
            raise LandlockError(f"landlock_add_rule failed for {path}: {os.strerror(err)}")
    finally:
        os.close(fd)


def _is_dir(fd: int) -> bool:
    return (os.fstat(fd).st_mode & 0o170000) == 0o040000


def restrict(
    version: int,
    read: list[str],
    write: list[str],
    listable: list[str],
    *,
    deny_network: bool,
) -> None:
    """Confine this process, and everything it starts from now on, at Landlock ABI
    ``version``: ``read`` may be read and executed, ``write`` also changed, the
    folders in ``listable`` only listed; everything else is refused, and so are
    signals and abstract sockets outside the domain, and with ``deny_network`` TCP.
    No rule allows making a device node, not even where writing is allowed."""
    if deny_network and version < 4:
        raise LandlockError(f"Landlock ABI {version} cannot deny the network (it needs ABI 4)")
    handled = fs_rights(version)
    net = NET_BIND_TCP | NET_CONNECT_TCP if deny_network else 0
    ruleset = _create_ruleset(version, handled, net, scopes(version))
    try:
        writable = handled & ~MAKE_DEVICE
        for rights, paths in ((FS_READ_DIR, listable), (READ_RIGHTS, read), (writable, write)):
            for path in paths:
                _add_path(ruleset, path, rights & handled)
        _restrict(ruleset)
    finally:
        os.close(ruleset)


def nest(version: int) -> None:
    """Put this process in a domain nested inside its current one, so that it can
    neither signal (ABI 6) nor trace (any ABI) the processes of the outer domain. The
    layer adds no file rule: it handles only making device nodes, which nothing
    needs."""
    ruleset = nest_ruleset(version)
    try:
        enter(ruleset)
    finally:
        os.close(ruleset)


def nest_within(version: int, write: list[str]) -> None:
    """:func:`nest`, with a layer that also allows writing only beneath ``write`` (a
    case's scratch folder, say): reading stays as the outer domain allows."""
    ruleset = nest_ruleset(version, write)
    try:
        _restrict(ruleset)
    finally:
        os.close(ruleset)


def nest_ruleset(version: int, write: list[str] | None = None) -> int:
    """The ruleset :func:`nest` (or, given ``write``, :func:`nest_within`) enters, as a
    descriptor: made once, it can be entered by any number of processes, and each that
    enters it gets a domain of its own."""
    if write is None:
        return _create_ruleset(version, MAKE_DEVICE, 0, scopes(version))
    handled = fs_rights(version) & ~(READ_RIGHTS | FS_IOCTL_DEV)
    ruleset = _create_ruleset(version, handled, 0, scopes(version))
    try:
        for path in write:
            _add_path(ruleset, path, handled & ~MAKE_DEVICE)
    except BaseException:
        os.close(ruleset)
        raise
    return ruleset


def enter(ruleset: int) -> None:
    """Put this process in a new domain made of ``ruleset``, nested in its current one."""
    _restrict(ruleset)


# --------------------------------------------------------------------------- rules text


def encode(
    version: int,
    read: list[str],
    write: list[str],
    listable: list[str],
    network: str,
    aliases: list[str] | None = None,
) -> str:
    """The rules as one line-based text (for an argument or a message): a header
    ``landlock VERSION allow|loopback|deny`` (the network, as :data:`cer.sandbox.Network`
    names it; ``world`` after it: build the world first, with ``a`` lines naming the
    aliases; see :mod:`cer.sandbox.world`), then one ``r``, ``w`` or ``l`` line per path.
    Paths holding a line break are left out (they are then simply not allowed)."""
    if network not in _NETWORKS:
        raise LandlockError(f"not a network of the sandbox: {network!r}")
    header = f"landlock {version} {network}"
    lines = [header if aliases is None else f"{header} world"]
    for tag, paths in (("r", read), ("w", write), ("l", listable), ("a", aliases or [])):
        lines.extend(f"{tag} {path}" for path in paths if "\n" not in path)
    return "\n".join(lines)


def decode(text: str) -> tuple[int, str, bool, dict[str, list[str]]]:
    """The rules of :func:`encode`: the ABI version, the network (``allow``,
    ``loopback`` or ``deny``), whether a world is built, and the paths by tag (``r``,
    ``w``, ``l``, ``a``)."""
    header, *rest = text.split("\n")
    words = header.split(" ")
    if (
        len(words) not in (3, 4)
        or words[0] != "landlock"
        or words[2] not in _NETWORKS
        or (words[2] == "loopback" and words[3:] != ["world"])
        or words[3:] not in ([], ["world"])
    ):
        raise LandlockError(f"not a Landlock rule text: {header[:80]!r}")
    found: dict[str, list[str]] = {"r": [], "w": [], "l": [], "a": []}
    for line in rest:
        tag, _, path = line.partition(" ")
        if tag not in found:
            raise LandlockError(f"not a Landlock rule: {line[:80]!r}")
        found[tag].append(path)
    return int(words[1]), words[2], words[3:] == ["world"], found


def apply_encoded(text: str) -> int:
    """Apply rules made by :func:`encode` (not the world); returns the ABI version used."""
    version, network, _, found = decode(text)
    restrict(version, found["r"], found["w"], found["l"], deny_network=network == "deny")
    return version


def _sibling(name: str) -> types.ModuleType:
    """The module ``name`` of this file's folder (``cer.sandbox.privileges``,
    ``cer.sandbox.seccomp``), loaded by path: the launcher runs isolated (``-I``), with
    no ``cer`` on its path."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        f"_cer_{name}", os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str]) -> int:
    """``landlock.py RULES -- COMMAND ARGS``: apply RULES, then become COMMAND.

    Exits 126 when the rules cannot be applied and 127 when the command cannot be
    executed, with the reason on stderr."""
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write("usage: landlock.py RULES -- COMMAND [ARGS]\n")
        return 2
    privileges, seccomp = _sibling("privileges"), _sibling("seccomp")
    try:
        version, network, world, found = decode(argv[0])
        if world:
            # Process 1 of the world stays to reap; this returns in its child.
            _sibling("world").enter(
                found["r"],
                found["w"],
                found["l"],
                found["a"],
                network=network != "allow",
                pids=True,
            )
        else:
            privileges.private_shm()  # before the rules: a confined process cannot mount
        restrict(version, found["r"], found["w"], found["l"], deny_network=network == "deny")
        why = privileges.drop()
        code = seccomp.program()
        if why is None and code is not None:
            why = seccomp.install(code)
        if why is not None:
            raise LandlockError(why)
    except (LandlockError, ValueError, OSError) as exc:
        sys.stderr.write(f"cer sandbox: cannot confine the command: {exc}\n")
        return 126
    words = argv[2:]
    try:
        os.execvp(words[0], words)
    except OSError as exc:
        sys.stderr.write(f"cer sandbox: cannot run {words[0]!r}: {exc.strerror or exc}\n")
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
