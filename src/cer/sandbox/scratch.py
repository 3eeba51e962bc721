"""Scratch folders of the implementation's side: made fresh, removed whole.

The run has one scratch folder (made by the supervisor, removed when the run ends), and
inside it each worker, each per-case command and each command harness gets one of
its own (:func:`make`). A per-case command's and a harness's are removed as soon as
that process is done with it (:func:`remove`); a worker's is emptied after each of its
cases (:class:`CaseFolder`; usually there is nothing to do), so that
nothing one case writes is there for the next. Removal takes
everything, including what was made hard to remove: folders without write permission,
and files or folders marked immutable or append-only (``chattr +i``, ``+a``), whose
flags are cleared first where this process may (a privileged supervisor can; the
implementation's side, which holds no capability, can set neither flag).

Shared by both sides: it imports nothing of ``cer``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import struct
from dataclasses import dataclass

__all__ = ["CaseFolder", "make", "remove"]

_FS_IOC_GETFLAGS = 0x80086601
_FS_IOC_SETFLAGS = 0x40086602
_STUCK = 0x00000010 | 0x00000020
"""FS_IMMUTABLE_FL and FS_APPEND_FL: an entry with either cannot be removed."""


def make(parent: str, name: str) -> str:
    """A fresh, empty folder ``name`` in ``parent`` (what was there under that name is
    removed first); its path."""
    path = os.path.join(parent, name)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        remove(path)
        os.mkdir(path, 0o700)
    return path


@dataclass(frozen=True)
class CaseFolder:
    """A worker's cases' scratch folder: one folder, emptied after each case.

    It stays the same folder (a Landlock rule names it by its inode), so what a case
    could leave on the folder itself, not in it, is checked too: its mode, owner, group
    and extended attributes are those it was made with, or the folder is not reused.
    Its times are not reset: they tell a case when the one before it last wrote there.
    """

    path: str
    identity: tuple[int, int, int, int]
    """Device, inode, owner and group, as made."""
    attributes: tuple[str, ...]
    """Its extended attributes as made (a security label, on some systems)."""

    @classmethod
    def make(cls, parent: str, name: str) -> CaseFolder:
        """A fresh, empty folder ``name`` in ``parent`` (see :func:`make`)."""
        path = make(parent, name)
        return cls(path, _identity(os.lstat(path)), _attributes(path))

    def untouched(self) -> bool:
        """Whether the folder is as made: a folder, the same one, mode ``0700``, the same
        owner, group and extended attributes, and empty (a few system calls: the usual
        case after a case)."""
        try:
            info = os.lstat(self.path)
            if stat.S_IMODE(info.st_mode) != 0o700 or not self._same(info):
                return False
            with os.scandir(self.path) as entries:
                return next(entries, None) is None
        except OSError:
            return False

    def empty(self) -> bool:
        """Leave the folder as made, keeping the folder itself: everything in it removed,
        its mode ``0700`` again, its immutable and append-only flags cleared. True when
        done; False when it is no longer the folder made, its owner, group or extended
        attributes changed, or something in it could not be removed: then it must not
        be reused."""
        try:
            info = os.lstat(self.path)
        except OSError:
            return False
        if not self._same(info):
            return False
        _unstick(self.path)
        if stat.S_IMODE(info.st_mode) != 0o700:
            try:
                os.chmod(self.path, 0o700)
            except OSError:
                return False
        for _ in range(3):  # what a process still running put there meanwhile, at most
            try:
                names = os.listdir(self.path)
            except OSError:
                return False
            if not names:
                break
            for name in names:
                _remove_tree(os.path.join(self.path, name))
        return self.untouched()

    def _same(self, info: os.stat_result) -> bool:
        return (
            stat.S_ISDIR(info.st_mode)
            and _identity(info) == self.identity
            and _attributes(self.path) == self.attributes
        )


def _identity(info: os.stat_result) -> tuple[int, int, int, int]:
    return (info.st_dev, info.st_ino, info.st_uid, info.st_gid)


def _attributes(path: str) -> tuple[str, ...]:
    try:
        return tuple(sorted(os.listxattr(path, follow_symlinks=False)))
    except OSError:  # no extended attributes on this file system
        return ()


def remove(path: str) -> bool:
    """Remove ``path`` and everything under it; True when it is gone. Never raises."""
    try:
        os.rmdir(path)  # the usual case: the process left its folder empty
        return True
    except FileNotFoundError:
        return True
    except OSError:
        pass
    for _ in range(3):  # what a process still running put there meanwhile, at most
        _remove_tree(path)
        if not os.path.lexists(path):
            return True
    return False


def _unstick(path: str) -> None:
    """Clear the immutable and append-only flags of the file or folder ``path``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return
    try:
        flags = struct.unpack("i", fcntl.ioctl(fd, _FS_IOC_GETFLAGS, b"\0" * 4))[0]
        if flags & _STUCK:
            fcntl.ioctl(fd, _FS_IOC_SETFLAGS, struct.pack("i", flags & ~_STUCK))
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove_tree(root: str) -> None:
    """Remove ``root`` without recursion (a tree may be deeper than Python's stack)."""
    folders: list[str] = []
    pending = [root]
    while pending:
        path = pending.pop()
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode):
            _remove_entry(path, info)
            continue
        folders.append(path)
        if info.st_mode & 0o700 != 0o700:
            with contextlib.suppress(OSError):
                os.chmod(path, 0o700)
        _unstick(path)
        try:
            names = os.listdir(path)
        except OSError:
            continue
        pending.extend(os.path.join(path, name) for name in names)
    for path in reversed(folders):
        with contextlib.suppress(OSError):
            os.rmdir(path)


def _remove_entry(path: str, info: os.stat_result) -> None:
    try:
        os.unlink(path)
        return
    except FileNotFoundError:
        return
    except OSError:
        pass
    if stat.S_ISREG(info.st_mode):
        _unstick(path)
    with contextlib.suppress(OSError):
        os.unlink(path)
