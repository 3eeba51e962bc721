"""What a command needs to read to start: its program as the shell finds it, and the
chain of shims and version managers between that program and the interpreter that
finally runs.

``python3`` on ``PATH`` is often not Python but a shim: pyenv's and asdf's are shell
scripts that run the manager's own scripts, which read version files and then run an
interpreter installed under the manager's folder; mise's and volta's are links to the
manager's program; rye's is a program of its own; uv, conda and nvm put a real
interpreter in a folder of their own. Under the sandbox each link of that chain must
be readable, or the command cannot start. :func:`chain_reads` follows it the way the
shell would and lists what to allow:

- every program met on the way, the folder it is in and, where it was reached through
  symbolic links, each link's folder;
- the installation of each program that sits in a ``bin`` folder (its parent:
  ``versions/3.12.1`` holding ``bin/python3`` and ``lib/python3.12``), unless that is
  a folder as wide as ``/`` or the home folder;
- the interpreter a script names on its ``#!`` line (through ``env`` too), and every
  absolute path to a program the script names (pyenv's shim runs
  ``~/.pyenv/libexec/pyenv``);
- the manager's whole folder, for a program in a ``shims`` folder or beside one
  (``~/.pyenv``, ``~/.asdf``, ``~/.rye``, ``~/.local/share/mise``) or named like a
  shim (volta's ``volta-shim``), and the configuration, cache and state folders mise
  and volta keep elsewhere;
- the version files the managers read, in the working directory and every folder above
  it and in the home folder (``.python-version``, ``.tool-versions``, ``.nvmrc``, …).

Everything found is only read and executed; nothing here is ever written to.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable

from cer.sandbox import in_checkout

__all__ = [
    "VERSION_FILES",
    "chain_reads",
    "linked_installations",
    "node_module_folders",
    "resolve",
]

VERSION_FILES = (
    ".python-version",
    ".tool-versions",
    ".nvmrc",
    ".node-version",
    "mise.toml",
    ".mise.toml",
    ".rtx.toml",
    "pyproject.toml",
    "package.json",
)
"""The files version managers read to choose a version, in the working directory, the
folders above it and the home folder."""

_DEPTH = 6
_SCRIPT_BYTES = 64 * 1024
_ABSOLUTE = rb"""(?<![\w.$])(/[\w.+@%~-]+(?:/[\w.+@%~-]+)+)"""
"""An absolute path in a script, compiled (by :func:`re.finditer`) the first time a
script is read: a run of a Python implementation never reads one."""
_MANAGER_HOMES = {
    "mise": ("mise",),
    "rtx": ("rtx",),
    ".volta": ("volta",),
}
"""Managers that keep configuration, cache or state outside their own folder: their
subfolder of ``XDG_CONFIG_HOME``, ``XDG_CACHE_HOME`` and ``XDG_STATE_HOME``."""


def resolve(word: str, path: str | None = None) -> str | None:
    """The program ``word`` names, as the shell finds it: on ``PATH`` (or ``path``)
    for a bare name, else relative to the working directory; None when there is none."""
    if os.sep in word:
        found = os.path.abspath(word)
        return found if os.path.isfile(found) else None
    return shutil.which(word, path=path)


def chain_reads(word: str, *, cwd: str | None = None, home: str | None = None) -> list[str]:
    """The paths the program ``word`` needs to read to start (see the module's
    docstring); empty when it cannot be found."""
    home = os.path.realpath(home or os.path.expanduser("~"))
    found: list[str] = []
    seen: set[str] = set()
    start = resolve(word)
    if start is None:
        return []
    managed = _follow(start, found, seen, home, 0)
    if managed:
        found.extend(_version_files(cwd or os.getcwd(), home))
        for name in dict.fromkeys(name for name in managed if name):
            for variable, fallback in (
                ("XDG_CONFIG_HOME", ".config"),
                ("XDG_CACHE_HOME", ".cache"),
                ("XDG_STATE_HOME", os.path.join(".local", "state")),
            ):
                base = os.environ.get(variable) or os.path.join(home, fallback)
                found.append(os.path.join(base, name))
    return [path for path in dict.fromkeys(found) if os.path.exists(path)]


def _follow(program: str, found: list[str], seen: set[str], home: str, depth: int) -> list[str]:
    """Add what ``program`` needs to ``found``; returns the names of the managers met
    that keep files outside their folder (see :data:`_MANAGER_HOMES`), or ``[""]``
    when a manager was met that keeps none."""
    if depth > _DEPTH or program in seen:
        return []
    seen.add(program)
    managers: list[str] = []
    hops = _links(program)
    for hop in hops:
        found.append(hop)
        found.append(os.path.dirname(hop))
        venv = _virtual_environment(hop, home)
        if venv is not None:  # its pyvenv.cfg and site-packages, read at start-up
            found.append(venv)
        root = _manager_root(hop, home)
        if root is not None:
            found.append(root)
            managers.append(_MANAGER_HOMES.get(os.path.basename(root), ("",))[0])
    real = hops[-1]
    installation = _installation(real, home)
    if installation is not None:
        found.append(installation)
    for named in _script_programs(real):
        managers.extend(_follow(named, found, seen, home, depth + 1))
    return managers


def _links(program: str) -> list[str]:
    """``program``, then each path its symbolic links lead to, ending with the file."""
    hops = [os.path.abspath(program)]
    for _ in range(40):
        current = hops[-1]
        if not os.path.islink(current):
            break
        target = os.readlink(current)
        hops.append(os.path.normpath(os.path.join(os.path.dirname(current), target)))
    real = os.path.realpath(hops[-1])
    if real != hops[-1]:
        hops.append(real)
    return hops


def _manager_root(path: str, home: str) -> str | None:
    """The folder of the version manager ``path`` belongs to: the parent of the
    ``shims`` folder it is in, or of its own folder when that sits beside a ``shims``
    folder (``~/.pyenv/libexec``), or, for a program named like a shim, of its folder."""
    folder = os.path.dirname(path)
    parent = os.path.dirname(folder)
    if os.path.basename(folder) == "shims":
        return _narrow(parent, home)
    if os.path.isdir(os.path.join(parent, "shims")):
        return _narrow(parent, home)
    if "shim" in os.path.basename(path):
        return _narrow(parent, home)
    return None


def _virtual_environment(program: str, home: str) -> str | None:
    """The virtual environment whose ``bin`` holds ``program`` (a link to the base
    interpreter, which reads the environment's ``pyvenv.cfg`` and packages), or None."""
    folder = os.path.dirname(program)
    if os.path.basename(folder) != "bin":
        return None
    root = os.path.dirname(folder)
    if not os.path.isfile(os.path.join(root, "pyvenv.cfg")) or in_checkout(root):
        return None
    return _narrow(root, home)


def linked_installations(
    folders: Iterable[str], home: str | None = None, lent: Iterable[str] = ()
) -> list[str]:
    """The installations that the symbolic links in the ``PATH`` folders ``folders``
    lead into (Homebrew's ``bin/tool`` → ``Cellar/tool/1.0/bin/tool``, pipx's and nvm's
    links): a program run by name from there reads beside its target. Each is the
    folder above the target's ``bin`` (else the target's folder), never a folder as
    wide as the root or the home folder; at most :data:`_LINKS_PER_FOLDER` links a
    folder are followed. A folder inside one of ``lent`` (lent whole already: ``/usr``)
    and a target inside one are passed over."""
    home = os.path.realpath(home or os.path.expanduser("~"))
    wide = tuple(os.path.realpath(path).rstrip("/") + "/" for path in lent)
    found: list[str] = []
    for folder in dict.fromkeys(folders):
        if (os.path.realpath(folder) + "/").startswith(wide):
            continue
        try:
            entries = os.scandir(folder)
        except OSError:
            continue
        with entries:
            followed = 0
            for entry in entries:
                try:
                    if not entry.is_symlink():
                        continue
                except OSError:
                    continue
                followed += 1
                if followed > _LINKS_PER_FOLDER:
                    break
                target = os.path.realpath(entry.path)
                if os.path.dirname(target) == os.path.realpath(folder):
                    continue  # a link beside its target (python3 -> python3.12)
                if target.startswith(wide):
                    continue
                if not (os.path.isfile(target) and os.access(target, os.X_OK)):
                    continue  # a program is what a PATH folder is for
                home_of = _installation(target, home)
                if home_of is None:
                    home_of = _narrow(os.path.dirname(target), home)
                if home_of is not None and not in_checkout(home_of):
                    found.append(home_of)
    return list(dict.fromkeys(found))


_LINKS_PER_FOLDER = 4000


def node_module_folders(folder: str) -> list[str]:
    """The ``node_modules`` folders Node looks in for a script in ``folder``: in it and
    in every folder above it (a workspace's packages share the root's), as real paths."""
    found: list[str] = []
    current = os.path.abspath(folder)
    while True:
        candidate = os.path.join(current, "node_modules")
        # A folder, not a link: a link named node_modules could lend anything (/).
        real_folder = os.path.isdir(candidate) and not os.path.islink(candidate)
        if real_folder and not in_checkout(candidate):
            found.append(candidate)
        parent = os.path.dirname(current)
        if parent == current:
            return found
        current = parent


def _installation(program: str, home: str) -> str | None:
    """The installation a program in a ``bin`` folder belongs to (the folder above)."""
    folder = os.path.dirname(program)
    if os.path.basename(folder) not in ("bin", "sbin"):
        return None
    return _narrow(os.path.dirname(folder), home)


def _narrow(folder: str, home: str) -> str | None:
    """``folder``, unless allowing it whole would lend far more than a toolchain: the
    root, the home folder, a folder directly under the root (``/usr`` is lent already,
    ``/home`` is not a toolchain)."""
    real = os.path.realpath(folder)
    if real in ("/", home) or os.path.dirname(real) == "/" or real == os.path.dirname(home):
        return None
    if home.startswith(real.rstrip("/") + "/"):
        return None
    return real


def _script_programs(program: str) -> list[str]:
    """The programs a script runs that must be readable for it to start: the
    interpreter of its ``#!`` line (the word after ``env`` found on ``PATH``) and every
    existing absolute path to an executable file it names."""
    try:
        with open(program, "rb") as handle:
            head = handle.read(_SCRIPT_BYTES)
    except OSError:
        return []
    if not head.startswith(b"#!") or b"\0" in head:
        return []
    first, _, body = head.partition(b"\n")
    words = first[2:].decode("utf-8", "replace").split()
    found: list[str] = []
    if words:
        found.append(words[0])
        if os.path.basename(words[0]) == "env":
            rest = [word for word in words[1:] if not word.startswith("-")]
            if rest:
                named = resolve(rest[0])
                if named is not None:
                    found.append(named)
    for match in re.finditer(_ABSOLUTE, body):
        path = match.group(1).decode("utf-8", "replace")
        if os.path.isfile(path) and os.access(path, os.X_OK):
            found.append(path)
    return [path for path in dict.fromkeys(found) if os.path.isabs(path)]


def _version_files(cwd: str, home: str) -> Iterable[str]:
    folders = [os.path.realpath(cwd)]
    while folders[-1] != os.path.dirname(folders[-1]):
        folders.append(os.path.dirname(folders[-1]))
    if home not in folders:
        folders.append(home)
    for folder in folders:
        for name in VERSION_FILES:
            yield os.path.join(folder, name)
