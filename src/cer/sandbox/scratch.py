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

Removal works through open folders, never through paths below the one given: a process
of the implementation's side may still be running while its folder is removed (a
daemon of a per-case command is killed after its folder goes), and it could swap a
folder being emptied for a symbolic link to anywhere, which a remover that joins paths
would then follow, deleting there as the supervisor (outside every sandbox). Each
folder is opened without following links, checked to be a folder, and emptied by
names relative to it; going back up, the parent is checked to be the folder it came
from. A tree deeper than a path can name (``PATH_MAX``) is removed too, and the work is
bounded in time, so that a process that keeps adding to the tree cannot hold the
remover for ever.

Shared by both sides: it imports nothing of ``cer``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import struct
import time
from dataclasses import dataclass

__all__ = ["CaseFolder", "make", "make_run_folder", "remove"]

_FS_IOC_GETFLAGS = 0x80086601
_FS_IOC_SETFLAGS = 0x40086602
_STUCK = 0x00000010 | 0x00000020
"""FS_IMMUTABLE_FL and FS_APPEND_FL: an entry with either cannot be removed."""


_SHM = "/dev/shm"


def make_run_folder() -> str:
    """A new folder for a run's scratch folders, in the temporary folder; elsewhere
    when that lies in ``/dev/shm`` (``TMPDIR=/dev/shm``): the implementation's side
    gets a ``/dev/shm`` of its own, which would hide the run's folder from it.

    Only the supervisor makes one: :mod:`tempfile` (with :mod:`shutil` and
    :mod:`random`, 5 ms) is imported here, not by every worker that imports this
    module for its case folders."""
    import tempfile

    parent = tempfile.gettempdir()
    real = os.path.realpath(parent)
    if real == _SHM or real.startswith(_SHM + "/"):
        for candidate in ("/tmp", "/var/tmp", "/usr/tmp"):
            if os.path.isdir(candidate) and os.access(candidate, os.W_OK | os.X_OK):
                parent = candidate
                break
    return tempfile.mkdtemp(prefix="cer-scratch-", dir=parent)


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
        owner, group and extended attributes, empty, and not grown (a few system calls:
        the usual case after a case)."""
        try:
            info = os.lstat(self.path)
            if stat.S_IMODE(info.st_mode) != 0o700 or info.st_size > GROWN or not self._same(info):
                return False
            with os.scandir(self.path) as entries:
                return next(entries, None) is None
        except OSError:
            return False

    def empty(self) -> bool:
        """Leave the folder as made, keeping the folder itself: everything in it removed,
        its mode ``0700`` again, its immutable and append-only flags cleared. True when
        done; False when it is no longer the folder made, its owner, group or extended
        attributes changed, something in it could not be removed, or it has grown past
        :data:`GROWN`: then it must not be reused."""
        fd = _open_folder(self.path)
        if fd is None:
            return False
        try:
            info = os.fstat(fd)
            if not self._same(info, fd):
                return False
            _unstick_fd(fd)
            if stat.S_IMODE(info.st_mode) != 0o700:
                os.fchmod(fd, 0o700)
            _empty_whole(fd)
        except OSError:
            return False
        finally:
            os.close(fd)
        return self.untouched()

    def _same(self, info: os.stat_result, at: str | int | None = None) -> bool:
        return (
            stat.S_ISDIR(info.st_mode)
            and _identity(info) == self.identity
            and _attributes(self.path if at is None else at) == self.attributes
        )


def _identity(info: os.stat_result) -> tuple[int, int, int, int]:
    return (info.st_dev, info.st_ino, info.st_uid, info.st_gid)


def _attributes(path: str | int) -> tuple[str, ...]:
    try:
        if isinstance(path, int):
            return tuple(sorted(os.listxattr(path)))
        return tuple(sorted(os.listxattr(path, follow_symlinks=False)))
    except OSError:  # no extended attributes on this file system
        return ()


GROWN = 64 * 1024
"""The size past which an emptied folder is not reused. ext4 never shrinks a folder:
one that held forty thousand entries stays a megabyte of empty blocks, which checking
that it is empty then reads after every case (0.14 ms a case instead of 6 µs, as much
as the rest of the sandbox costs a case). A new folder costs about a millisecond, once."""

REMOVAL_SECONDS = 60.0
"""How long one removal (or one emptying) may work at most: far more than removing what
a case can write in its time takes, and a bound on a process that keeps adding to the
tree while it is removed (the rest is left; the folder is then not reused)."""

_monotonic = time.monotonic
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def remove(path: str) -> bool:
    """Remove ``path`` and everything under it; True when it is gone. Never raises."""
    try:
        os.rmdir(path)  # the usual case: the process left its folder empty
        return True
    except FileNotFoundError:
        return True
    except OSError:
        pass
    fd = _open_folder(path)
    if fd is None:  # not a folder (a file, a symbolic link): only the entry goes
        _unlink(path)
        return not os.path.lexists(path)
    try:
        _unstick_fd(fd)
        with contextlib.suppress(OSError):
            if stat.S_IMODE(os.fstat(fd).st_mode) & 0o700 != 0o700:
                os.fchmod(fd, 0o700)
        _empty_whole(fd)
    finally:
        os.close(fd)
    with contextlib.suppress(OSError):
        os.rmdir(path)
    return not os.path.lexists(path)


def _empty_whole(fd: int) -> None:
    """Remove everything in the open folder ``fd``: again, at most three times, while
    something is there (what a process still running put there meanwhile)."""
    deadline = _monotonic() + REMOVAL_SECONDS
    for _ in range(3):
        if not _clear(fd, deadline) or not _holds_anything(fd):
            return


def _open_folder(name: str, parent: int | None = None) -> int | None:
    """``name`` (in the open folder ``parent``, else a path) opened as a folder, never
    through a symbolic link, its mode made to let its owner list and empty it; None
    when it is not a folder or cannot be opened."""
    try:
        fd = os.open(name, _FOLDER, dir_fd=parent)
    except PermissionError:  # a folder without read permission: given it back first
        try:
            os.chmod(name, 0o700, dir_fd=parent, follow_symlinks=False)
            fd = os.open(name, _FOLDER, dir_fd=parent)
        except (OSError, ValueError, NotImplementedError):
            return None
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if stat.S_IMODE(info.st_mode) & 0o700 != 0o700:
            os.fchmod(fd, 0o700)
    except OSError:
        pass
    return fd


def _clear(root: int, deadline: float) -> bool:
    """Remove everything in the open folder ``root``, without recursion (a tree may be
    deeper than Python's stack or than a path can name) and without leaving it: every
    folder is entered by name relative to its parent, without following links. False
    when it had to stop: time is up, or a folder was moved while it was being emptied."""
    root_info = os.fstat(root)
    fd = os.dup(root)
    # One level per open folder: its folders still to remove, its identity, its name.
    levels: list[tuple[list[str], tuple[int, int], str]] = [
        (_sweep(fd), (root_info.st_dev, root_info.st_ino), "")
    ]
    try:
        while levels:
            folders, _, name = levels[-1]
            if folders:
                entry = folders.pop()
                with contextlib.suppress(OSError):
                    os.rmdir(entry, dir_fd=fd)  # an empty folder: the usual case
                    continue
                if _monotonic() > deadline:
                    return False
                child = _open_folder(entry, fd)
                if child is None:
                    continue
                info = os.fstat(child)
                _unstick_fd(child)
                levels.append((_sweep(child), (info.st_dev, info.st_ino), entry))
                os.close(fd)
                fd = child
                continue
            levels.pop()
            if not levels:
                break
            parent = os.open("..", _FOLDER, dir_fd=fd)
            info = os.fstat(parent)
            if (info.st_dev, info.st_ino) != levels[-1][1]:
                os.close(parent)  # moved meanwhile: not followed out of the tree
                return False
            os.close(fd)
            fd = parent
            with contextlib.suppress(OSError):
                os.rmdir(name, dir_fd=fd)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _sweep(fd: int) -> list[str]:
    """Remove every entry of the open folder ``fd`` that is not a folder, as it is
    read (a folder of a million files costs no list of them), and return the names of
    the folders in it (not following links)."""
    folders: list[str] = []
    try:
        with os.scandir(fd) as entries:
            for entry in entries:
                try:
                    is_folder = entry.is_dir(follow_symlinks=False)
                except OSError:
                    is_folder = False
                if is_folder or _unlink(entry.name, fd):
                    folders.append(entry.name)
    except OSError:
        pass
    return folders


def _holds_anything(fd: int) -> bool:
    """Whether the open folder ``fd`` has an entry (or cannot be read)."""
    try:
        with os.scandir(fd) as entries:
            return next(entries, None) is not None
    except OSError:
        return True


def _unlink(name: str, parent: int | None = None) -> bool:
    """Remove the file (or link, or anything but a folder) ``name``, clearing its
    immutable and append-only flags when that is what keeps it. True when ``name`` is
    a folder (one swapped in meanwhile): then nothing was done."""
    try:
        os.unlink(name, dir_fd=parent)
        return False
    except FileNotFoundError:
        return False
    except IsADirectoryError:
        return True
    except OSError:
        pass
    try:
        fd = os.open(name, _FILE, dir_fd=parent)
    except OSError:
        return False
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            _unstick_fd(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(name, dir_fd=parent)
    return False


def _unstick_fd(fd: int) -> None:
    """Clear the immutable and append-only flags of the open file or folder ``fd``."""
    try:
        flags = struct.unpack("i", fcntl.ioctl(fd, _FS_IOC_GETFLAGS, b"\0" * 4))[0]
        if flags & _STUCK:
            fcntl.ioctl(fd, _FS_IOC_SETFLAGS, struct.pack("i", flags & ~_STUCK))
    except OSError:
        pass
