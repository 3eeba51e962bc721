"""What the sandboxed implementation may read in the folders it is imported from.

The working directory, the suite's folder and the ``--path`` folders hold more than an
implementation needs: a checkout's ``.git`` (the committed suite sits in its objects),
the drafts file, an earlier run's results with every expected value, notes, secrets.
Landlock only ever allows (it cannot deny a path beneath an allowed one), so those
folders are not allowed whole: their entries are allowed one by one, and the rest is
left out (:func:`refusals` names what, and why, for :func:`cer.sandbox.expand`):

- For a Python implementation, an entry of an import root is allowed when the import
  system can take it: a module (``.py``, bytecode, a compiled extension), a folder
  whose name is an identifier (a package, or a namespace package, with its data files)
  and ``__pycache__``. Anything else at the top of an import root is left out: data
  files, drafts, results, configuration, hidden folders.
- For a command, whose harness may need any file beside it (``package.json``,
  ``node_modules``), the folders it is imported from stay readable but for what cer
  itself keeps there.
- Everywhere, whatever the kind: version-control metadata (``.git``, ``.hg``,
  ``.svn``, ``.jj``), ``.cer`` folders, the suite's drafts file and every file cer has
  written as a report or result, in this run or an earlier one, wherever the user
  pointed it (:func:`remember_outputs` keeps their list: ``cer run``'s reports, the
  merged results of ``cer merge -o``, the page of ``cer history --html``).
- Everywhere, every Unix socket the machine has bound (:func:`machine_sockets`, as the
  kernel lists them in ``/proc/net/unix``): a folder lent whole is bound into the
  implementation's world with everything in it, and a server's socket in a subfolder
  of the project (a database's data folder, an app server's ``tmp/sockets``) let a case
  reach the server. Left out, it makes the folders above it lent entry by entry, and
  the socket itself is not bound.

An entry that holds something the rest of the policy allows (a virtual environment's
``.venv`` holding the interpreter, a folder on ``PATH``) stays allowed; so does every
path the user names with ``--sandbox-read`` or ``[tool.cer] sandbox_read``, except the
files cer keeps from the implementation in any case (the suite, the history, this
run's reports), which no option opens.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from cer.sandbox import MODULE_SUFFIXES, VCS_NAMES

__all__ = [
    "OUTPUTS_ENV",
    "VCS_NAMES",
    "Refusal",
    "outputs_record",
    "refusals",
    "remember_outputs",
    "remembered_outputs",
]


OUTPUTS_ENV = "CER_OUTPUTS_RECORD"
"""Where the list of files cer has written is kept, when set (tests point it at a
temporary file); by default ``$XDG_STATE_HOME/cer/outputs``."""

_RECORD_LIMIT = 2000
"""Lines past which the record of outputs is rewritten with the files still there."""

Why = Literal["vcs", "cer", "not-importable", "output", "socket"]


@dataclass(frozen=True)
class Refusal:
    """A path left out of what the implementation may read, and why."""

    path: str
    why: Why

    def explain(self, asked: str) -> str:
        """The words a case's reason gets when the implementation was refused
        ``asked``, this path or one beneath it."""
        if self.why == "cer":
            return "cer keeps its own files from the implementation"
        what = {
            "vcs": "version-control metadata",
            "output": "a file cer wrote (results or a report)",
            "socket": "a server's Unix socket (no socket the machine has bound is lent)",
            "not-importable": "not a module or package of the folders the implementation "
            "is imported from",
        }[self.why]
        return f"{what}; allow it with --sandbox-read {asked} or [tool.cer] sandbox_read"


def refusals(
    import_roots: Iterable[str],
    *,
    python: bool,
    kept: Iterable[str],
    named: Iterable[str],
    extra: Iterable[str],
    outputs: Iterable[str],
    sockets: Iterable[str],
) -> list[Refusal]:
    """What to leave out of the import roots (see the module's docstring).

    ``kept``: paths cer keeps from the implementation whatever the options (the suite,
    ``.cer`` folders, this run's reports); ``named``: the other paths the policy allows
    (an entry holding one stays allowed); ``extra``: the user's ``sandbox_read``;
    ``outputs``: files cer wrote in earlier runs; ``sockets``: the machine's bound Unix
    sockets (:func:`machine_sockets`, read once for the run)."""
    allowed = [os.path.realpath(path) for path in extra]
    others = [os.path.realpath(path) for path in named]
    found: dict[str, Refusal] = {}
    for path in kept:
        real = os.path.realpath(path)
        found.setdefault(real, Refusal(real, "cer"))

    def refuse(path: str, why: Why) -> None:
        real = os.path.realpath(path)
        if any(_within(real, root) for root in allowed):
            return
        inner = [root for root in (*allowed, *others) if _within(root, real)]
        if real in inner:
            return
        if not inner:
            found.setdefault(real, Refusal(real, why))
            return
        # Something allowed lies below: leave out the rest of the folder around it.
        try:
            names = os.listdir(real)
        except OSError:
            return
        for name in names:
            refuse(os.path.join(real, name), why)

    for path in outputs:
        real = os.path.realpath(path)
        if real not in allowed:
            found.setdefault(real, Refusal(real, "output"))
    for real in sockets:
        if not any(_within(real, root) for root in allowed):
            found.setdefault(real, Refusal(real, "socket"))
    wide = _wide_folders()
    for root in dict.fromkeys(os.path.realpath(path) for path in import_roots):
        # From the root folder or the home folder (a working directory of "/" in a
        # container), a folder without __init__.py is a namespace package only in name:
        # /root, /home, /work and ~/.ssh's parent are not lent whole on that ground.
        namespaces = root not in wide
        try:
            entries = os.scandir(root)
        except OSError:
            continue
        with entries:
            for entry in entries:
                name = entry.name
                if name in VCS_NAMES:
                    refuse(entry.path, "vcs")
                elif name == ".cer" or name.endswith(".drafts.toml"):
                    found.setdefault(entry.path, Refusal(entry.path, "cer"))
                elif python and not _importable(entry, namespaces):
                    refuse(entry.path, "not-importable")
                else:
                    # A folder lent whole that is a checkout of its own (a project one
                    # level below the working directory): its metadata is not lent.
                    for vcs in VCS_NAMES:
                        inner = os.path.join(entry.path, vcs)
                        if os.path.lexists(inner):
                            refuse(inner, "vcs")
    return list(found.values())


def machine_sockets(table: str = "/proc/net/unix") -> list[str]:
    """The resolved paths of the Unix sockets bound in this network namespace, as the
    kernel lists them, that are sockets at that path here (a path relative to its
    server's folder, or one unlinked since, is not). Read when a run's policy is made: a
    server that binds a socket later is not in the list."""
    try:
        with open(table, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()[1:]
    except OSError:
        return []
    found: dict[str, None] = {}
    for line in lines:
        fields = line.split(None, 7)
        if len(fields) < 8 or not fields[7].startswith("/"):
            continue
        try:
            if not stat.S_ISSOCK(os.lstat(fields[7]).st_mode):
                continue
        except OSError:
            continue
        found.setdefault(os.path.realpath(fields[7]), None)
    return list(found)


def _wide_folders() -> set[str]:
    """The folders whose sub-folders are lent as packages only when they are regular
    packages (hold ``__init__.py``): the root and the home folder."""
    return {"/", os.path.realpath(os.path.expanduser("~"))}


def _importable(entry: os.DirEntry[str], namespaces: bool = True) -> bool:
    """Whether Python's import system can take ``entry`` of a folder on its path (a
    folder without ``__init__.py`` only when ``namespaces``)."""
    name = entry.name
    try:
        folder = entry.is_dir()
    except OSError:
        return False
    if folder:
        if name == "__pycache__":
            return True
        if not name.isidentifier():
            return False
        return namespaces or os.path.isfile(os.path.join(entry.path, "__init__.py"))
    return name.endswith(MODULE_SUFFIXES) and name.partition(".")[0].isidentifier()


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


# --------------------------------------------------------------------------- outputs


def outputs_record() -> str:
    """The file that lists what cer has written (see :data:`OUTPUTS_ENV`)."""
    given = os.environ.get(OUTPUTS_ENV)
    if given:
        return given
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return os.path.join(state, "cer", "outputs")


def remembered_outputs() -> list[str]:
    """The files cer wrote in earlier runs that are still there."""
    try:
        with open(outputs_record(), encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return []
    return [line for line in dict.fromkeys(lines) if line and os.path.lexists(line)]


def remember_outputs(paths: Iterable[str]) -> str | None:
    """Add ``paths`` (files this run writes) to the record, so that later runs keep
    them from the implementation too; rewrites the record with the files still there
    once it grows long. Failing to keep the record is not a reason to stop a run: the
    reason is returned (None when the record was kept), for the run to say."""
    new = [os.path.abspath(path) for path in paths if "\n" not in path]
    if not new:
        return None
    record = outputs_record()
    try:
        os.makedirs(os.path.dirname(record), exist_ok=True)
        with open(record, "a", encoding="utf-8") as handle:
            handle.write("".join(f"{path}\n" for path in new))
        if os.path.getsize(record) > _RECORD_LIMIT * 80:
            kept = remembered_outputs()
            partial = f"{record}.{os.getpid()}"
            with open(partial, "w", encoding="utf-8") as handle:
                handle.write("".join(f"{path}\n" for path in kept))
            os.replace(partial, record)
    except OSError as exc:
        return (
            f"cer could not add the files this run writes to {record} "
            f"({exc.strerror or exc}): a later run's implementation may read them, and "
            "results and reports hold expected values; set XDG_STATE_HOME to a folder "
            "cer may write to"
        )
    return None
