"""The sandbox around everything on the implementation's side: its policy.

Shared by both sides, like a wire format, and importing nothing of the supervisor: the
supervisor builds a :class:`Policy` (which paths the implementation may read, where it
may write, whether it may use TCP; see :mod:`cer.engine.confinement`) and hands it on; the
worker applies it to itself before it imports the implementation (so every case
process inherits it), each case process adds a layer of its own (so that it cannot
signal or trace the worker), and command implementations are started through the
launcher of :mod:`cer.sandbox.landlock`, which applies the policy and then executes the
command. The kernel interface itself is :mod:`cer.sandbox.landlock`.
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import stat
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from cer.sandbox import landlock, privileges, seccomp, world

__all__ = [
    "DISABLE_ENV",
    "MODULE_SUFFIXES",
    "NETWORKS",
    "VCS_NAMES",
    "Network",
    "Policy",
    "SandboxError",
    "SandboxStatus",
    "apply",
    "case_ruleset",
    "confine_case",
    "confine_case_within",
    "enter_case",
    "expand",
    "filters",
    "in_checkout",
    "launcher_command",
    "status",
    "world_refused",
]

VCS_NAMES = (".git", ".hg", ".svn", ".jj")
"""Folders (or, for a git worktree, files) of version-control metadata: never lent on a
guess, and left out of the folders lent entry by entry (:mod:`cer.sandbox.readset`)."""

MODULE_SUFFIXES = tuple(importlib.machinery.all_suffixes())
"""The endings of the files Python's import system loads (``.py``, bytecode, compiled
extensions): what a link lends, and what an import root lends of its top."""


def in_checkout(folder: str) -> bool:
    """Whether ``folder`` is, holds at its top or lies in version-control metadata (a
    checkout's root holds the committed suite in ``.git``): such a folder is never lent
    whole on a guess."""
    real = os.path.realpath(folder)
    if any(part in VCS_NAMES for part in real.split(os.sep)):
        return True
    return any(os.path.lexists(os.path.join(real, name)) for name in VCS_NAMES)


DISABLE_ENV = landlock.DISABLE_ENV
"""When set (to any non-empty text), :func:`status` reports Landlock as unavailable:
how tests and users simulate a kernel without it."""

Network = Literal["allow", "loopback", "deny"]
"""The network of the implementation's side: ``allow``, the machine's; ``loopback``, a
network namespace of its own holding only a loopback interface (in the world only);
``deny``, that namespace (where the world is built) and TCP bind and connect refused by
Landlock too."""
NETWORKS: tuple[Network, ...] = ("allow", "loopback", "deny")


class SandboxError(Exception):
    """The sandbox could not be applied; the message says why."""


@dataclass(frozen=True)
class SandboxStatus:
    """Whether this machine can sandbox: the Landlock ABI (0 when none) and why not."""

    abi: int
    why_not: str = ""

    @property
    def available(self) -> bool:
        return self.abi > 0

    def describe(self) -> str:
        """``landlock ABI 7``, or ``none: <why>``, as run records say it."""
        return f"landlock ABI {self.abi}" if self.abi > 0 else f"none: {self.why_not}"


_WORLD_REFUSED: dict[tuple[int, str, str], str | None] = {}


def world_refused() -> str | None:
    """Why no world (:mod:`cer.sandbox.world`) can be built here, or None when one can:
    tried once per process, user and setting of :data:`cer.sandbox.world.DISABLE_ENV`."""
    key = (os.geteuid(), os.environ.get(world.DISABLE_ENV, ""), sys.executable)
    if key not in _WORLD_REFUSED:
        _WORLD_REFUSED[key] = world.probe()
    return _WORLD_REFUSED[key]


def status() -> SandboxStatus:
    """What Landlock this process can use (asked of the kernel every time)."""
    version, why_not = landlock.abi()
    return SandboxStatus(version, why_not)


@dataclass(frozen=True)
class Policy:
    """What the implementation's side may reach, as absolute paths already expanded
    (see :func:`expand`): ``read`` may be read and executed, ``write`` may also be
    written, created and removed; everything else is refused. ``network``: see
    :data:`Network`."""

    read: tuple[str, ...]
    write: tuple[str, ...]
    network: Network = "allow"
    scratch: str = ""
    """The per-run folder the implementation writes to (TMPDIR points at it)."""
    listable: tuple[str, ...] = ()
    """Folders allowed entry by entry: their names may be listed (Python's import
    system lists every folder on ``sys.path``), their denied entries not read."""
    aliases: tuple[str, ...] = ()
    """Allowed paths as they were named, where a symbolic link leads to them (``/bin``,
    ``/lib64``, a virtual environment's ``python``): made again in the world."""
    world: bool = False
    """Whether the implementation's side lives in a world built from this policy
    (:mod:`cer.sandbox.world`), Landlock and seccomp inside it; else Landlock and
    seccomp alone, on the real file system."""

    def to_json(self) -> str:
        return json.dumps(
            {
                "read": list(self.read),
                "write": list(self.write),
                "network": self.network,
                "scratch": self.scratch,
                "listable": list(self.listable),
                "aliases": list(self.aliases),
                "world": self.world,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> Policy:
        data = json.loads(text)
        network = data.get("network", "allow")
        if network not in NETWORKS:
            raise ValueError(f"network must be one of {', '.join(NETWORKS)}, not {network!r}")
        return cls(
            tuple(str(p) for p in data["read"]),
            tuple(str(p) for p in data["write"]),
            network,
            str(data.get("scratch", "")),
            tuple(str(p) for p in data.get("listable", ())),
            tuple(str(p) for p in data.get("aliases", ())),
            data.get("world") is True,
        )

    def with_scratch(self, folder: str) -> Policy:
        """This policy with ``folder`` (inside the run's scratch) as the only scratch
        folder written to: what one process of the implementation's side gets."""
        run = os.path.realpath(self.scratch) if self.scratch else ""
        write = tuple(path for path in self.write if path != run)
        return replace(self, write=(folder, *write), scratch=folder)

    def environment(self) -> dict[str, str]:
        """The variables that point temporary files at the scratch folder."""
        if not self.scratch:
            return {}
        return {"TMPDIR": self.scratch, "TEMP": self.scratch, "TMP": self.scratch}

    def explain(self, path: str) -> str:
        """Why the sandbox refused ``path``, in words for a case's reason."""
        target = os.path.abspath(path)
        if any(_within(target, root) for root in self.write):
            return f"the sandbox denied access to {target}"
        if any(_within(target, root) for root in self.read):
            where = f" ({self.scratch})" if self.scratch else ""
            return (
                f"the sandbox denied access to {target} (the implementation may only "
                f"read there; it may write only to its scratch folder{where})"
            )
        return f"the sandbox denied access to {target} (not in the implementation's allowed paths)"


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def expand(
    read_roots: Iterable[str],
    write_roots: Iterable[str],
    denied: Iterable[str],
    *,
    network: Network = "allow",
    scratch: str = "",
) -> Policy:
    """The policy that allows ``read_roots`` and ``write_roots`` except ``denied``.

    Landlock can only allow, never carve a hole into something allowed. So a root that
    holds a denied path is not allowed whole: its entries are allowed one by one,
    leaving out the denied one (and descending into the entry that leads to it). Paths
    are compared after resolving symbolic links, and an entry that is another name
    (a hard link) of a denied file is left out too. Roots that do not exist are
    dropped.
    """
    refused: set[str] = set()
    refused_ids: set[tuple[int, int]] = set()
    for path in denied:
        real = os.path.realpath(path)
        refused.add(real)
        try:
            info = os.stat(real)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode):
            refused_ids.add((info.st_dev, info.st_ino))
    write: list[str] = []
    listable: list[str] = []
    read_roots, write_roots = list(read_roots), list(write_roots)
    aliases = [
        os.path.abspath(root)
        for root in (*read_roots, *write_roots)
        if root and os.path.abspath(root) != os.path.realpath(root)
    ]
    walk = _Refused(refused, refused_ids)
    for root in write_roots:
        walk.allow(root, write, listable)
    read: list[str] = []
    for root in read_roots:
        walk.allow(root, read, listable)
    # The links in a folder lent entry by entry (a module linked into the project):
    # made again in the world, where they lead to what they lead to here if that is
    # lent, and to nothing otherwise.
    for folder in listable:
        try:
            with os.scandir(folder) as entries:
                aliases.extend(entry.path for entry in entries if entry.is_symlink())
        except OSError:
            continue
    return Policy(
        tuple(dict.fromkeys(read)),
        tuple(dict.fromkeys(write)),
        network,
        scratch,
        tuple(dict.fromkeys(listable)),
        tuple(dict.fromkeys(aliases)),
    )


def _package_folder(real: str) -> bool:
    """Whether the folder ``real`` holds a module (or an ``__init__.py``) at its top and
    no socket there: a package an import loads, not a server's folder."""
    try:
        with os.scandir(real) as entries:
            found = False
            for entry in entries:
                if stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode):
                    return False
                found = found or (entry.is_file() and entry.name.endswith(MODULE_SUFFIXES))
            return found
    except OSError:
        return False


class _Refused:
    """The refused paths (each resolved, as :func:`os.path.realpath` gives it) as
    :func:`expand` walks the roots against them: looked up in sets, the path and each
    folder above it, rather than compared with every refused path in turn (a lent
    temporary folder of a thousand entries, with some dozens of refused paths under
    it, once took a tenth of a second)."""

    def __init__(self, refused: set[str], refused_ids: set[tuple[int, int]]) -> None:
        self.refused = refused
        self.refused_ids = refused_ids
        self.everything = any(not bad.rstrip("/") for bad in refused)
        """``/`` is refused: every path is within it."""
        self.above: set[str] = set()
        """Every folder that holds a refused path (below it, not the path itself)."""
        for bad in refused:
            parent = os.path.dirname(bad)
            while parent not in self.above:
                self.above.add(parent)
                if os.path.dirname(parent) == parent:
                    break
                parent = os.path.dirname(parent)
        self.listed: set[str] = set()
        """The folders lent entry by entry so far (reached again through a link: once)."""

    def within_refused(self, real: str) -> bool:
        """Whether ``real`` is a refused path or lies in one."""
        if self.everything:
            return True
        path = real
        while True:
            if path in self.refused:
                return True
            parent = os.path.dirname(path)
            if parent == path:
                return False
            path = parent

    def holds_refused(self, real: str) -> bool:
        """Whether ``real`` is a refused path or holds one."""
        return real in self.refused or real in self.above

    def link_lendable(self, real: str) -> bool:
        """Whether ``real``, the target of a link in a folder lent entry by entry (a
        module linked into the project), may be lent: only what an import loads, a
        module file (named with one of the import system's suffixes) or a folder that
        holds one or an ``__init__.py`` at its top and no socket there, never a folder
        holding anything refused, no checkout, never in version-control metadata, never
        as wide as the root. A link is the implementation's own doing: one to a
        token file in the home folder (named ``n.py`` in the project) read it, and one
        to a terminal multiplexer's folder lent its socket, through which a server
        outside ran what the case asked; a node_modules link to / once lent every
        folder on the machine but the refused ones, and a checkout's .git with them."""
        if any(part in VCS_NAMES for part in real.split(os.sep)):
            return False
        if not os.path.isdir(real):
            return real.endswith(MODULE_SUFFIXES)
        if real == "/" or os.path.dirname(real) == "/" or in_checkout(real):
            return False
        return not self.holds_refused(real) and _package_folder(real)

    def allow(
        self, path: str, out: list[str], listable: list[str], inside: str = "", real: str = ""
    ) -> None:
        """Allow ``path`` into ``out`` whole, or entry by entry (into ``listable``) when
        it holds a refused path; ``real`` is its resolved path when already known (an
        entry of a resolved folder that is no symbolic link resolves to itself)."""
        real = real or os.path.realpath(path)
        if inside and not _within(real, inside) and not self.link_lendable(real):
            return
        if self.within_refused(real):
            return
        try:
            info = os.stat(real)
        except OSError:
            return
        if (info.st_dev, info.st_ino) in self.refused_ids:
            return
        if not stat.S_ISDIR(info.st_mode) or not self.holds_refused(real):
            out.append(real)
            return
        if real in self.listed:  # reached again through a symbolic link
            return
        self.listed.add(real)
        listable.append(real)
        try:
            with os.scandir(real) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError:
            return
        for entry in entries:
            entry_path = os.path.join(real, entry.name)
            resolved = "" if entry.is_symlink() else entry_path
            self.allow(entry_path, out, listable, inside or real, resolved)


# --------------------------------------------------------------------------- applying


def apply(policy: Policy, abi: int | None = None, *, pids: bool = True) -> int:
    """Confine this process (and everything it starts from now on) to ``policy``;
    returns the ABI used. SandboxError when Landlock is unavailable or refuses, or the
    world cannot be built.

    First, while mounting is still possible, the world (:mod:`cer.sandbox.world`) when
    the policy asks for one (``pids``: with a PID namespace and its ``/proc``; the
    process forks, and this returns in the child), else a private ``/dev/shm``
    (:func:`cer.sandbox.privileges.private_shm`); then the Landlock rules, every
    capability dropped (:func:`cer.sandbox.privileges.drop`) and the seccomp filter
    (:mod:`cer.sandbox.seccomp`)."""
    if abi is None:
        found = status()
        if not found.available:
            raise SandboxError(found.why_not)
        abi = found.abi
    if policy.network == "loopback" and not policy.world:
        raise SandboxError("a network namespace of its own is made only with the world")
    if policy.world:
        try:
            world.enter(
                list(policy.read),
                list(policy.write),
                list(policy.listable),
                list(policy.aliases),
                network=policy.network != "allow",
                pids=pids,
                private_scratch=os.path.realpath(policy.scratch) if policy.scratch else "",
            )
        except (world.WorldError, OSError) as exc:
            raise SandboxError(f"the world could not be built: {exc}") from None
    else:
        privileges.private_shm()
    try:
        landlock.restrict(
            abi,
            list(policy.read),
            list(policy.write),
            list(policy.listable),
            deny_network=policy.network == "deny",
        )
    except landlock.LandlockError as exc:
        raise SandboxError(str(exc)) from None
    harden()
    return abi


def harden() -> None:
    """Drop every capability and install the seccomp filter (where one is written for
    this machine); SandboxError when either fails."""
    why = privileges.drop()
    code = seccomp.program()
    if why is None and code is not None:
        why = seccomp.install(code)
    if why is not None:
        raise SandboxError(why)


def filters() -> bool:
    """Whether every process the sandbox confines gets the seccomp filter on this
    machine: :func:`harden` (and the launcher) installs it or fails wherever one is
    written for the machine, and does without it elsewhere."""
    return seccomp.program() is not None


def confine_case(abi: int) -> None:
    """Put this case's process in a domain nested inside the worker's, so that it can
    neither signal (ABI 6) nor trace (any ABI) the worker or another case."""
    try:
        landlock.nest(abi)
    except landlock.LandlockError as exc:
        raise SandboxError(str(exc)) from None


def confine_case_within(abi: int, write: Sequence[str]) -> None:
    """:func:`confine_case`, with writes allowed only beneath ``write`` (the case's
    own scratch folder instead of the run's, ``/dev/null``, ``/dev/shm``)."""
    try:
        landlock.nest_within(abi, list(write))
    except landlock.LandlockError as exc:
        raise SandboxError(str(exc)) from None


def case_ruleset(abi: int, write: Sequence[str] | None = None) -> int:
    """The ruleset of :func:`confine_case` (or, given ``write``, of
    :func:`confine_case_within`) as a descriptor, made once by the worker so that each
    case's process only enters it (:func:`enter_case`)."""
    try:
        return landlock.nest_ruleset(abi, None if write is None else list(write))
    except landlock.LandlockError as exc:
        raise SandboxError(str(exc)) from None


def enter_case(ruleset: int) -> None:
    """:func:`confine_case` with the ruleset made by :func:`case_ruleset`: the domain
    is this process's own all the same."""
    try:
        landlock.enter(ruleset)
    except landlock.LandlockError as exc:
        raise SandboxError(str(exc)) from None


def launcher_command(policy: Policy, words: Sequence[str], abi: int) -> list[str]:
    """The command line that runs ``words`` confined to ``policy`` (the launcher is
    :mod:`cer.sandbox.landlock` run as a script: it builds the world when the policy
    asks for one, applies the rules, then executes)."""
    rules = landlock.encode(
        abi,
        list(policy.read),
        list(policy.write),
        list(policy.listable),
        policy.network,
        aliases=list(policy.aliases) if policy.world else None,
    )
    return [sys.executable, "-I", "-S", "-B", landlock.__file__, rules, "--", *words]
