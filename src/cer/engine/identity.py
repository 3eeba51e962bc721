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
"""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
from dataclasses import dataclass

__all__ = ["MAX_FILES", "UNKNOWN", "Identity", "file_digest", "identify"]

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
        return Identity(f"{impl}@{UNKNOWN}{secrets.token_hex(5)}", ())
    digests = sorted(file_digest(path) for path in files)
    digest = hashlib.sha256(b"".join(digests)).hexdigest()[:10]
    return Identity(f"{impl}@{digest}", files)


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
