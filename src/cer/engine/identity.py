"""The implementation id: which code a run ran, as the supervisor itself hashed it.

An id is ``impl@hash``. The hash covers what is run (``MODULE:ATTR``: adapters kept in
one module differ) and the content of every source file outside the standard library
that the worker's import loaded, installed packages included, each
with its path relative to the import root it lies in (not the checkout's location),
so the same code has the same id in any checkout and an edit to any file it
loaded, in the project or in a dependency, gives a new id. History uses the id to say
that two runs ran the same code (flaky cases), and the TUI watches the same files.

The worker names the files, but it names them after the implementation was imported,
so its list is data, never a fact: the supervisor checks its shape, hashes each file
itself, and reads only regular files (a path to a FIFO or a device cannot stall it). A
list that is missing or malformed cannot say which code ran; the run then gets an id
that no other run can have (``impl@unknown-…``), so it is never taken for the same code
as another run, and no file is watched on its word.

What the worker names is only a hint of where to look. The supervisor keeps a named
file only when it lies under an import root it resolved itself (the ``--path``
folders, the suite's folder, the working directory and its own interpreter's
``sys.path``: see :class:`Scope`, by its real path or through a link in a root), is a
regular file, and is not the same file (by
device and inode) as one already kept; it adds the implementation's own module, which
it finds under those roots without importing it, whatever the worker said. So a worker
cannot name a copy of older code in place of what ran, and the id of new code always
differs from the old one's. The work is bounded: at most :data:`HASH_BUDGET` bytes read
and :data:`TIME_BUDGET` seconds; past either, the run gets a one-off id
(``impl@unverified-…``) and a note saying the identity could not be verified, never an
id the supervisor did not compute.

A module a case imports for the first time while it runs (a lazy import, in the case's
own process) is code the run ran too: the case's process reports the files it loaded
with its answer, the supervisor checks and hashes them the same way and adds them
(:func:`extend`). The id of a run is therefore the hash of every file the run loaded,
at import or in a case, each hashed when it was first reported: a run whose cases load
more code has the id of all of it, the same id a run gets that imported the same files
up front. A case's list that is malformed makes the run's id a one-off.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from cer.engine import editable

__all__ = [
    "HASH_BUDGET",
    "MAX_FILES",
    "TIME_BUDGET",
    "UNKNOWN",
    "UNVERIFIED",
    "Budget",
    "Identity",
    "Scope",
    "extend",
    "file_digest",
    "identify",
    "one_off_id",
    "scope_for",
]

MAX_FILES = 100_000
"""More files than this is not a plausible import: the list is treated as malformed."""
MAX_PATH = 4096
_MAX_HASHED = 32 * 1024 * 1024
"""A file larger than this is identified by its size, inode and modification time
instead of its bytes."""
_CHUNK = 1 << 20
UNKNOWN = "unknown-"
"""Prefix of the hash part of an id whose file list could not be used."""
UNVERIFIED = "unverified-"
"""Prefix of the hash part of an id the supervisor could not finish within its budget."""
HASH_BUDGET = 512 * 1024 * 1024
"""Bytes the supervisor reads to identify one run's implementation, at most."""
TIME_BUDGET = 10.0
"""Seconds the supervisor spends identifying one run's implementation, at most (it
does so in its one thread, while no case is judged)."""


@dataclass(frozen=True)
class Scope:
    """Where the implementation's code can come from, as the supervisor resolved it:
    the import roots (real paths) and the implementation's own module files."""

    roots: tuple[str, ...]
    own: tuple[str, ...] = ()
    """The files of the implementation's module (and its parent packages), found by
    the supervisor under ``roots`` without importing anything."""

    def holds(self, path: str) -> bool:
        """Whether the real path ``path`` lies under one of the roots."""
        return any(path == root or path.startswith(root.rstrip("/") + "/") for root in self.roots)

    def place(self, name: str) -> str | None:
        """Where the file named ``name`` lies under the roots, relative to its root (the
        same code in another checkout has the same relative names); None when it lies
        under none. The name itself counts when, without ``..``, it leads under a root
        (a module that is a symbolic link the user put in a folder it is imported
        from), else its real path."""
        candidates = [os.path.normpath(name)] if ".." not in name.split("/") else []
        with contextlib.suppress(OSError, ValueError):
            candidates.append(os.path.realpath(name))
        for candidate in candidates:
            for root in self.roots:
                if candidate.startswith(root.rstrip("/") + "/"):
                    return candidate[len(root.rstrip("/")) + 1 :]
        return None


def scope_for(module: str, search: Iterable[str]) -> Scope:
    """The scope of a Python implementation whose module is ``module`` (dotted), looked
    for in ``search`` (the worker's import path: ``--path``, the suite's folder, the
    working directory) and then this interpreter's own ``sys.path``, with the folders
    its editable installs map packages from (:mod:`cer.engine.editable`)."""
    roots: list[str] = []
    for entry in [*search, *sys.path, *editable.mapped_folders(editable.site_folders())]:
        if not entry:
            continue
        try:
            real = os.path.realpath(entry)
        except (OSError, ValueError):
            continue
        if os.path.isdir(real) and real not in roots:
            roots.append(real)
    return Scope(tuple(roots), _module_files(module, roots))


def _module_files(module: str, roots: list[str]) -> tuple[str, ...]:
    """The files of ``module`` in the first root that has it: each parent package's
    ``__init__.py`` and the module's own file (a package: every ``.py`` below it)."""
    parts = [part for part in module.split(".") if part]
    if not parts or any(part in (".", "..") or "/" in part for part in parts):
        return ()
    for root in roots:
        base = os.path.join(root, *parts)
        found: list[str] = []
        for depth in range(1, len(parts)):
            init = os.path.join(root, *parts[:depth], "__init__.py")
            if os.path.isfile(init):
                found.append(init)
        if os.path.isfile(base + ".py"):
            return (*found, base + ".py")
        if os.path.isdir(base):
            below: list[str] = []
            for folder, dirs, names in os.walk(base):
                dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__pycache__")))
                below.extend(os.path.join(folder, n) for n in sorted(names) if n.endswith(".py"))
                if len(below) > MAX_FILES:
                    break
            if below:
                return (*found, *below[:MAX_FILES])
    return ()


class Budget:
    """What identifying one implementation may still cost: bytes read and time."""

    def __init__(self, size: int = HASH_BUDGET, seconds: float = TIME_BUDGET) -> None:
        self.left = size
        self.deadline = time.monotonic() + seconds
        self.over: str | None = None
        """Why the budget ran out (then the id is a one-off), or None."""

    def spend(self, size: int) -> bool:
        """Take ``size`` bytes; False (and :attr:`over` set) when the budget is spent."""
        if self.over is None and time.monotonic() > self.deadline:
            self.over = f"identifying it took longer than {TIME_BUDGET:g} s"
        if self.over is None and size > self.left:
            self.over = f"its files hold more than {HASH_BUDGET // (1024 * 1024)} MiB to read"
        if self.over is not None:
            return False
        self.left -= size
        return True


@dataclass(frozen=True)
class Identity:
    """An implementation id and the files it was computed from."""

    implementation_id: str
    files: tuple[str, ...]
    """The files the id covers: what a watcher should watch. Empty when the list could
    not be used."""
    digests: tuple[bytes, ...] = field(default=(), repr=False, compare=False)
    """The digest of each file of ``files``, in the same order (see :func:`extend`)."""
    problem: str | None = field(default=None, compare=False)
    """Why the supervisor could not verify the identity (its budget ran out), or None."""
    inodes: frozenset[tuple[int, int]] = field(default=frozenset(), repr=False, compare=False)
    """The (device, inode) of each file of ``files``: one file under many names counts
    once."""

    @property
    def known(self) -> bool:
        """Whether the id names code (False: a one-off id for an unusable list)."""
        return not self.implementation_id.rpartition("@")[2].startswith((UNKNOWN, UNVERIFIED))


def identify(impl: str, reported: object, scope: Scope | None = None) -> Identity:
    """The identity of ``impl`` from the file list a worker ``reported``.

    The list must be a list of absolute paths (strings without NUL, at most
    :data:`MAX_PATH` characters, at most :data:`MAX_FILES` of them); otherwise the id is
    a one-off ``impl@unknown-…``. With a ``scope`` (what the runner passes), a named
    file counts only when it lies under one of its roots, and the implementation's own
    module files count whatever was named. Duplicates (by name, and by device and
    inode) are dropped; a path that is missing or not a regular file still counts, as
    such, so that the id stays tied to the list. Past the :class:`Budget`, the id is a
    one-off ``impl@unverified-…`` with the reason in :attr:`Identity.problem`.
    """
    files = _checked(reported)
    if files is None:
        return _unknown(impl, None)
    start = Identity("", ())
    found = _grown(start, impl, (*(scope.own if scope is not None else ()), *files), scope)
    if scope is not None and not found.files and found.known:
        # No file it loaded lies where the supervisor can place it (a package an import
        # hook maps from elsewhere): an id of no code would call any two runs the same.
        why = "no file its import loaded lies in a folder it is imported from"
        return _unverified(impl, found, why)
    return found


def extend(identity: Identity, impl: str, reported: object, scope: Scope | None = None) -> Identity:
    """``identity`` grown by the files a case ``reported`` it loaded while it ran.

    Checked like an import's list; a malformed one makes the id a one-off (the files
    known so far stay watched). Files already covered are not hashed again; when the
    list adds nothing, ``identity`` itself is returned.
    """
    files = _checked(reported)
    if files is None:
        return identity if not identity.known else _unknown(impl, identity)
    known = set(identity.files)
    new = tuple(path for path in files if path not in known)
    if not new:
        return identity
    if len(identity.files) + len(new) > MAX_FILES:
        return identity if not identity.known else _unknown(impl, identity)
    return _grown(identity, impl, new, scope)


def _grown(identity: Identity, impl: str, names: Iterable[str], scope: Scope | None) -> Identity:
    """``identity`` with the files ``names`` added: each kept only under the scope's
    roots, once per inode, hashed within one budget."""
    budget = Budget()
    paths = list(identity.files)
    digests = list(identity.digests)
    inodes = set(identity.inodes)
    seen = set(paths)
    for name in names:
        if not budget.spend(0):  # the time budget, checked for every name
            return _unverified(impl, identity, budget.over or "")
        if name in seen:
            continue
        seen.add(name)
        where = scope.place(name) if scope is not None else os.path.basename(name)
        if where is None:
            continue  # not code the supervisor can place: the worker's word alone
        try:
            info = os.stat(name)
        except (OSError, ValueError):
            info = None
        if info is not None:
            inode = (info.st_dev, info.st_ino)
            if inode in inodes:
                continue
            inodes.add(inode)
        paths.append(name)
        # Where the file sits counts with what it holds: two files that swap their
        # contents are other code (one import gets the other's), once the same id.
        digests.append(hashlib.sha256(where.encode() + b"\0" + file_digest(name, budget)).digest())
        if budget.over is not None:
            return _unverified(impl, identity, budget.over)
    if identity.implementation_id and len(paths) == len(identity.files):
        return identity
    merged = sorted(zip(paths, digests, strict=True))
    files_now = tuple(path for path, _ in merged)
    digests_now = tuple(digest for _, digest in merged)
    if identity.implementation_id and not identity.known:
        return Identity(
            identity.implementation_id, files_now, digests_now, identity.problem, frozenset(inodes)
        )
    return Identity(_named(impl, digests_now), files_now, digests_now, None, frozenset(inodes))


def _unverified(impl: str, known: Identity, why: str) -> Identity:
    """A one-off id for an identity the budget did not cover (the files known so far
    stay watched)."""
    name = one_off_id(impl, UNVERIFIED)
    problem = f"the implementation's identity could not be verified: {why}"
    return Identity(name, known.files, known.digests, problem, known.inodes)


def _named(impl: str, digests: tuple[bytes, ...]) -> str:
    """``impl@hash``: the hash covers ``impl`` (``MODULE:ATTR``) with the files, so that
    two adapters kept in one module (``adapters:tomli_parse``, ``adapters:tomlkit_parse``)
    load the same files yet have ids of their own, hash part included."""
    hasher = hashlib.sha256(impl.encode("utf-8", "surrogatepass") + b"\0")
    hasher.update(b"".join(sorted(digests)))
    return f"{impl}@{hasher.hexdigest()[:10]}"


def one_off_id(impl: str, prefix: str = UNKNOWN) -> str:
    """``impl@unknown-…`` (or with ``prefix``): an id no other run shares, for code
    whose identity cannot be told, so that no two runs of it compare as the same code."""
    import secrets  # only for code whose identity cannot be told

    return f"{impl}@{prefix}{secrets.token_hex(5)}"


def _unknown(impl: str, known: Identity | None) -> Identity:
    """A one-off id; the files and digests of ``known`` stay (and stay watched)."""
    name = one_off_id(impl)
    if known is None:
        return Identity(name, ())
    return Identity(name, known.files, known.digests, known.problem, known.inodes)


def _checked(reported: object) -> tuple[str, ...] | None:
    """The reported list, deduplicated and sorted, or None when it is malformed."""
    if type(reported) is not list or len(reported) > MAX_FILES:
        return None
    for item in reported:
        if (
            type(item) is not str
            or not item.startswith("/")
            or "\x00" in item
            or len(item) > MAX_PATH
        ):
            return None
    return tuple(sorted(set(reported)))


def file_digest(path: str, budget: Budget | None = None) -> bytes:
    """SHA-256 of one file's content, read without following it into anything but a
    regular file; a stand-in digest for a missing, special or very large file.

    The file is opened without blocking and checked after it was opened, so a name
    swapped for a FIFO or a device after any earlier check cannot stall the reader;
    only the size it had when opened is read, so a file that keeps growing cannot
    keep it reading."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError:
        return hashlib.sha256(b"<unreadable>").digest()
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return hashlib.sha256(b"<not a regular file>").digest()
        if info.st_size > _MAX_HASHED:
            marker = f"<large:{info.st_size}:{info.st_ino}:{info.st_mtime_ns}>"
            return hashlib.sha256(marker.encode()).digest()
        if budget is not None and not budget.spend(info.st_size):
            return hashlib.sha256(b"<over budget>").digest()
        hasher = hashlib.sha256()
        left = info.st_size
        while left > 0 and (chunk := os.read(fd, min(_CHUNK, left))):
            hasher.update(chunk)
            left -= len(chunk)
        return hasher.digest()
    except OSError:
        return hashlib.sha256(b"<unreadable>").digest()
    finally:
        os.close(fd)
