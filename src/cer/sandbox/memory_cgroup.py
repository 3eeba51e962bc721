"""A case's memory as the kernel charges it: a memory cgroup of its own, or what the
case holds in memory-backed files.

The peak resident memory of a process (``VmHWM``) counts only pages mapped into it:
a ``memfd`` written and never mapped, or a file written to ``/dev/shm`` (any tmpfs),
is RAM that no resident count sees. The kernel's memory controller charges those pages
to the cgroup of the process that wrote them, so a case whose memory is measured gets a
cgroup of its own where cer may create one, and its peak is the cgroup's:

- cgroup v2, where the supervisor's own cgroup hands the memory controller to its
  children (``memory`` in its ``cgroup.subtree_control``): ``memory.peak``;
- cgroup v1, where the memory hierarchy is mounted and the supervisor's group in it is
  writable (root in most containers): ``memory.max_usage_in_bytes``.

Each case's worker is a fresh process that the supervisor moves into a new cgroup
before it imports anything of the implementation; the cgroup is removed once the
worker was reaped. Where no cgroup can be made, :func:`held_in_memory_files` counts
the memory-backed files the case's process holds open, and the files it left in
``/dev/shm`` (:class:`ShmListing`): both are counted as they stand when the case
answered. :func:`method` names which way a run measured, for its run conditions.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import stat
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "DISABLE_ENV",
    "CaseGroup",
    "Controller",
    "ShmListing",
    "held_in_memory_files",
    "locate",
    "memory_backed",
]

DISABLE_ENV = "CER_MEMORY_CGROUP_UNAVAILABLE"
"""When set (to any non-empty text), :func:`locate` finds no cgroup: how tests and
users exercise the fallback."""

Version = Literal["v1", "v2"]

_PEAK_FILE: dict[Version, str] = {"v2": "memory.peak", "v1": "memory.max_usage_in_bytes"}
_SHM = "/dev/shm"
_counter = itertools.count()


@dataclass(frozen=True)
class Controller:
    """A cgroup folder where cer may create the cgroups of cases, and its version."""

    version: Version
    parent: str

    def describe(self) -> str:
        """How run conditions name this method."""
        return f"cgroup {self.version} of its own per case ({_PEAK_FILE[self.version]})"

    def open_case(self) -> CaseGroup:
        """A new, empty cgroup for one case; OSError when it cannot be made."""
        path = os.path.join(self.parent, f"cer-case-{os.getpid()}-{next(_counter)}")
        os.mkdir(path)
        return CaseGroup(self.version, path)


@dataclass(frozen=True)
class CaseGroup:
    """One case's cgroup: :meth:`join` a process before it allocates, read its
    :meth:`peak` once the case answered, :meth:`remove` it once the process ended."""

    version: Version
    path: str

    def join(self, pid: int) -> None:
        """Move ``pid`` into this cgroup (its memory from now on is charged here)."""
        with open(os.path.join(self.path, "cgroup.procs"), "w", encoding="ascii") as handle:
            handle.write(str(pid))

    def peak(self) -> int | None:
        """The most memory charged to this cgroup at once, in bytes (page cache, shmem,
        memfd and kernel memory included); None when it cannot be read."""
        try:
            with open(os.path.join(self.path, _PEAK_FILE[self.version]), "rb") as handle:
                return int(handle.read().strip())
        except (OSError, ValueError):
            return None

    def remove(self) -> None:
        """Remove the cgroup (its processes have ended); a failure is left behind
        quietly, an empty cgroup costing nothing."""
        with contextlib.suppress(OSError):
            os.rmdir(self.path)


def locate() -> Controller | str:
    """Where this process may create memory cgroups, or why it may not."""
    if os.environ.get(DISABLE_ENV):
        return f"memory cgroups are unavailable ({DISABLE_ENV} is set)"
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as handle:
            memberships = handle.read().splitlines()
        with open("/proc/self/mountinfo", encoding="utf-8") as handle:
            mounts = handle.read().splitlines()
    except OSError as exc:
        return f"cannot read this process's cgroups ({exc.strerror or exc})"
    why: list[str] = []
    for version in ("v2", "v1"):
        found, not_here = _candidate(version, memberships, mounts)
        if not_here:
            why.append(not_here)
            continue
        probe = os.path.join(found, f"cer-probe-{os.getpid()}")
        try:
            os.mkdir(probe)
            os.rmdir(probe)
        except OSError as exc:
            why.append(f"cgroup {version}: cannot create a cgroup in {found} ({exc.strerror})")
            continue
        return Controller(version, found)
    return "; ".join(why)


def _candidate(version: Version, memberships: list[str], mounts: list[str]) -> tuple[str, str]:
    """The folder of this process's cgroup in the hierarchy of ``version`` that has
    the memory controller, or (second) why there is none."""
    mine = ""
    for line in memberships:
        _, controllers, path = [*line.split(":", 2), "", ""][:3]
        names = controllers.split(",")
        if (version == "v2" and controllers == "") or (version == "v1" and "memory" in names):
            mine = path
            break
    else:
        return "", f"cgroup {version}: this process is in no memory cgroup"
    for line in mounts:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(" "), right.split(" ")
        if len(fields) < 5 or len(tail) < 3:
            continue
        fstype, options = tail[0], tail[2].split(",")
        wanted = (
            fstype == "cgroup2" if version == "v2" else (fstype == "cgroup" and "memory" in options)
        )
        if not wanted:
            continue
        root, point = fields[3], fields[4]
        relative = os.path.relpath(mine, root) if mine.startswith(root) else None
        if relative is None or relative.startswith(".."):
            continue
        folder = os.path.normpath(os.path.join(point, relative))
        if version == "v2" and "memory" not in _words(
            os.path.join(folder, "cgroup.subtree_control")
        ):
            return "", f"cgroup v2: {folder} does not hand the memory controller to its children"
        return folder, ""
    return "", f"cgroup {version}: no memory hierarchy is mounted for this process"


def _words(path: str) -> list[str]:
    try:
        with open(path, encoding="ascii") as handle:
            return handle.read().split()
    except OSError:
        return []


# --------------------------------------------------------------------------- the fallback


@dataclass(frozen=True)
class ShmListing:
    """The files in ``/dev/shm`` as they stood before a case (by device and inode), so
    that what the case left there can be told from what was there already."""

    before: frozenset[tuple[int, int]]

    @classmethod
    def take(cls) -> ShmListing:
        # Past the bound, nothing is known to have been there: all found later counts.
        return cls(frozenset(_shm_files() or ()))

    def left_since(self, pid: int | None = None) -> dict[tuple[int, int], int] | None:
        """The files in ``/dev/shm`` that were not there before, with their size in
        bytes as the kernel allocated it; with ``pid``, in the ``/dev/shm`` that process
        sees (the sandbox gives the implementation's side one of its own). None when
        the tree holds more than :data:`SHM_ENTRIES_MAX` entries."""
        where = f"/proc/{pid}/root" if pid is not None else ""
        found = _shm_files(where)
        if found is None:
            return None
        return {key: size for key, size in found.items() if key not in self.before}


SHM_ENTRIES_MAX = 100_000
"""Entries of a ``/dev/shm`` tree past which it is not walked: a case could make one
deep or wide enough to hold the supervisor for as long as it likes."""


def _shm_files(root: str = "") -> dict[tuple[int, int], int] | None:
    """The regular files of the ``/dev/shm`` tree under ``root``, by device and inode,
    with their allocated size; walked without recursion (a case made one 1500 folders
    deep, past Python's recursion limit) and without following links; None past
    :data:`SHM_ENTRIES_MAX` entries."""
    found: dict[tuple[int, int], int] = {}
    folders, seen = [root + _SHM], 0
    while folders:
        try:
            entries = os.scandir(folders.pop())
        except OSError:
            continue
        with entries:
            for entry in entries:
                seen += 1
                if seen > SHM_ENTRIES_MAX:
                    return None
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(info.st_mode):
                    folders.append(entry.path)
                elif stat.S_ISREG(info.st_mode):
                    found[(info.st_dev, info.st_ino)] = info.st_blocks * 512
    return found


def _tmpfs_devices(pid: int | str = "self") -> set[int]:
    devices: set[int] = set()
    try:
        with open(f"/proc/{pid}/mountinfo", encoding="utf-8") as handle:
            for line in handle:
                left, _, right = line.partition(" - ")
                if right.split(" ", 1)[0] in ("tmpfs", "shmem", "ramfs"):
                    major, _, minor = left.split(" ")[2].partition(":")
                    devices.add(os.makedev(int(major), int(minor)))
    except (OSError, ValueError, IndexError):
        pass
    return devices


def memory_backed(path: str) -> bool:
    """Whether ``path`` lies on a memory-backed file system (tmpfs, ramfs), whose files
    are RAM that a resident count does not see."""
    try:
        device = os.stat(path).st_dev
    except OSError:
        return False
    return device in _tmpfs_devices()


def held_in_memory_files(pid: int, shm: ShmListing | None) -> int | None:
    """The bytes the live process ``pid`` holds in memory-backed files: every ``memfd``
    and tmpfs file it has open, and every file left in ``/dev/shm`` since ``shm`` was
    taken, each counted once; None when its descriptors cannot be read or that
    ``/dev/shm`` is too large to walk."""
    left = shm.left_since(pid) if shm is not None else {}
    if left is None:
        return None
    counted: dict[tuple[int, int], int] = dict(left)
    memory_devices = _tmpfs_devices() | _tmpfs_devices(pid)
    folder = f"/proc/{pid}/fd"
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    for name in names:
        path = os.path.join(folder, name)
        try:
            target = os.readlink(path)
            info = os.stat(path)
        except OSError:
            continue
        if not stat.S_ISREG(info.st_mode):
            continue
        if target.startswith("/memfd:") or info.st_dev in memory_devices:
            counted[(info.st_dev, info.st_ino)] = info.st_blocks * 512
    return sum(counted.values())
