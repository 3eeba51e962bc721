"""Where editable installs map their packages from: code that no folder on the import
path holds.

``pip install -e .`` with setuptools (its default mode) puts no folder of the project
on ``sys.path``: it installs an import hook, a ``__editable___NAME_finder.py`` module
in ``site-packages`` whose ``MAPPING`` names each top-level package and the folder it
is imported from. The sandbox must lend those folders (the package, with its data
files) and the implementation's identity must count the files in them, or an
implementation installed that way can neither be imported under the sandbox nor be
told from its next edit. :func:`mapped_folders` reads the mappings without importing
anything: each finder's ``MAPPING`` is a literal, read with :mod:`ast`.
"""

from __future__ import annotations

import ast
import os
import stat
import sys
from collections.abc import Iterable

__all__ = ["mapped_folders", "site_folders"]

_FINDER_PREFIX = "__editable___"
_FINDER_SUFFIX = "_finder.py"
_FINDER_BYTES = 1 << 20
"""A finder larger than this is not one setuptools wrote: it is passed over."""


def site_folders() -> list[str]:
    """The folders of this interpreter's ``sys.path`` that are site folders (where
    ``.pth`` files run, and so where an editable install's finder is installed); a
    finder anywhere else (a folder on ``PYTHONPATH``, the project) installs nothing."""
    import site

    sites = {*site.getsitepackages(), site.getusersitepackages()}
    return [entry for entry in sys.path if entry in sites]


def mapped_folders(path: Iterable[str]) -> list[str]:
    """The folders the editable finders in the folders of ``path`` (site folders: see
    :func:`site_folders`) map packages from, as real paths, each once; folders that do
    not exist are left out, and so is a folder as wide as the root, a folder just
    under it or the home folder."""
    home = os.path.realpath(os.path.expanduser("~"))
    found: list[str] = []
    for entry in dict.fromkeys(path):
        if not entry:
            continue
        try:
            names = os.listdir(entry)
        except OSError:
            continue
        for name in names:
            if name.startswith(_FINDER_PREFIX) and name.endswith(_FINDER_SUFFIX):
                found.extend(_mapping(os.path.join(entry, name)))
    wide = {"/", home, os.path.dirname(home)}
    return list(
        dict.fromkeys(
            path
            for path in found
            if os.path.isdir(path) and path not in wide and os.path.dirname(path) != "/"
        )
    )


def _mapping(finder: str) -> list[str]:
    """The folders of the ``MAPPING`` literal of the finder module ``finder``."""
    try:
        # Without blocking, and a regular file only: a FIFO of that name once held the
        # supervisor before any case ran.
        fd = os.open(finder, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return []
            source = os.read(fd, _FINDER_BYTES + 1)
        finally:
            os.close(fd)
        if len(source) > _FINDER_BYTES:
            return []
        tree = ast.parse(source)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return []  # not a finder setuptools wrote (a nesting no parser takes, say)
    for node in tree.body:
        target: ast.expr
        if isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        else:
            continue
        if not (isinstance(target, ast.Name) and target.id == "MAPPING") or value is None:
            continue
        try:
            mapping = ast.literal_eval(value)
        except ValueError:
            return []
        if not isinstance(mapping, dict):
            return []
        return [
            os.path.realpath(folder)
            for folder in mapping.values()
            if isinstance(folder, str) and os.path.isabs(folder)
        ]
    return []
