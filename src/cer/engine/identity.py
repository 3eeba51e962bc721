"""The implementation id: which code a run ran, as the supervisor itself hashed it.

An id is ``impl@hash``. The hash covers the content (not the location) of every source
file outside the standard library that the worker's import loaded, installed packages
included, so the same code has the same id in any checkout and an edit to any file it
loaded, in the project or in a dependency, gives a new id. History uses the id to say
that two runs ran the same code (flaky cases), and the TUI watches the same files.

The worker names the files, but it names them after the implementation was imported,
so its list is data, never a fact: the supervisor checks its shape, hashes each file
itself, and reads only regular files (a path to a FIFO or a device cannot stall it). A
list that is missing or malformed cannot say which code ran; the run then gets an id
that no other run can have (``impl@unknown-…``), so it is never taken for the same code
as another run, and no file is watched on its word.

A module a case imports for the first time while it runs (a lazy import, in the case's
own process) is code the run ran too: the case's process reports the files it loaded
with its answer, the supervisor checks and hashes them the same way and adds them
(:func:`extend`). The id of a run is therefore the hash of every file the run loaded,
at import or in a case, each hashed when it was first reported: a run whose cases load
more code has the id of all of it, the same id a run gets that imported the same files
up front. A case's list that is malformed makes the run's id a one-off.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
from dataclasses import dataclass, field

__all__ = ["MAX_FILES", "UNKNOWN", "Identity", "extend", "file_digest", "identify"]

MAX_FILES = 100_000
"""More files than this is not a plausible import: the list is treated as malformed."""
MAX_PATH = 4096
_MAX_HASHED = 256 * 1024 * 1024
"""A file larger than this is identified by its size and modification time instead."""
_CHUNK = 1 << 20
UNKNOWN = "unknown-"
"""Prefix of the hash part of an id whose file list could not be used."""


@dataclass(frozen=True)
class Identity:
    """An implementation id and the files it was computed from."""

    implementation_id: str
    files: tuple[str, ...]
    """The reported files the id covers: what a watcher should watch. Empty when the
    list could not be used."""
    digests: tuple[bytes, ...] = field(default=(), repr=False, compare=False)
    """The digest of each file of ``files``, in the same order (see :func:`extend`)."""

    @property
    def known(self) -> bool:
        """Whether the id names code (False: a one-off id for an unusable list)."""
        return not self.implementation_id.rpartition("@")[2].startswith(UNKNOWN)


def identify(impl: str, reported: object) -> Identity:
    """The identity of ``impl`` from the file list a worker ``reported``.

    The list must be a list of absolute paths (strings without NUL, at most
    :data:`MAX_PATH` characters, at most :data:`MAX_FILES` of them); otherwise the id is
    a one-off ``impl@unknown-…``. Duplicates are dropped; a path that is missing or not
    a regular file still counts, as such, so that the id stays tied to the list.
    """
    files = _checked(reported)
    if files is None:
        return _unknown(impl, None)
    digests = tuple(file_digest(path) for path in files)
    return Identity(_named(impl, digests), files, digests)


def extend(identity: Identity, impl: str, reported: object) -> Identity:
    """``identity`` grown by the files a case ``reported`` it loaded while it ran.

    Checked like an import's list; a malformed one makes the id a one-off (the files
    known so far stay watched). Files already covered are not hashed again; when the
    list adds nothing, ``identity`` itself is returned.
    """
    files = _checked(reported)
    if files is None:
        return identity if not identity.known else _unknown(impl, identity)
    new = tuple(path for path in files if path not in set(identity.files))
    if not new:
        return identity
    if len(identity.files) + len(new) > MAX_FILES:
        return identity if not identity.known else _unknown(impl, identity)
    merged = sorted(
        zip(
            (*identity.files, *new),
            (*identity.digests, *(file_digest(path) for path in new)),
            strict=True,
        )
    )
    files_now = tuple(path for path, _ in merged)
    digests = tuple(digest for _, digest in merged)
    if not identity.known:
        return Identity(identity.implementation_id, files_now, digests)
    return Identity(_named(impl, digests), files_now, digests)


def _named(impl: str, digests: tuple[bytes, ...]) -> str:
    return f"{impl}@{hashlib.sha256(b''.join(sorted(digests))).hexdigest()[:10]}"


def _unknown(impl: str, known: Identity | None) -> Identity:
    """A one-off id; the files and digests of ``known`` stay (and stay watched)."""
    name = f"{impl}@{UNKNOWN}{secrets.token_hex(5)}"
    if known is None:
        return Identity(name, ())
    return Identity(name, known.files, known.digests)


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


def file_digest(path: str) -> bytes:
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
            marker = f"<large:{info.st_size}:{info.st_mtime_ns}>"
            return hashlib.sha256(marker.encode()).digest()
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
