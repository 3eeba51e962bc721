"""Which installed distribution a Python implementation's module belongs to.

A matrix names each implementation by what it is, not only by how it was given:
``tomli 2.0.1`` beside ``tomli_parse``. The supervisor finds the module's files as the
identity does (:func:`cer.engine.identity.scope_for`, without importing anything) and
looks for a distribution under the same folder whose ``RECORD`` lists one of them. A
module that no installed distribution lists (a local adapter, an editable checkout)
has no distribution of its own; nothing is guessed from names. Such an adapter may
name the distribution it adapts (``dist=jsonschema``: :func:`named_distribution`
reads that one's metadata, on the same folders); otherwise :func:`adapted_distribution`
reads the adapter's source, without importing it, for the modules its function (else
its module) imports, and takes the one distribution whose files hold them, found as
above. Two or more distributions name none. The metadata is text from the
implementation's side: it is shown escaped and never decides anything.
"""

from __future__ import annotations

import ast
import os
import re
import stat
import sys
from collections.abc import Iterable, Sequence

from cer.engine.identity import scope_for
from cer.model import ImplementationOrigin
from cer.text.safetext import scrub

__all__ = [
    "MAX_DISTRIBUTIONS",
    "adapted_distribution",
    "distribution_of",
    "named_distribution",
    "origin_of",
]

MAX_DISTRIBUTIONS = 2000
"""How many distributions of one folder are looked through at most."""
_CHARS = 200
_MAX_SOURCE = 2 * 1024 * 1024
"""The largest adapter module read for its imports."""
_MAX_IMPORTED = 20
"""How many imported packages are looked up for their distribution, at most."""


def distribution_of(impl: str, search: Sequence[str]) -> ImplementationOrigin | None:
    """The installed distribution (name and version) whose files hold the module of
    ``impl`` (``MODULE:ATTR``), looked for on ``search`` then this interpreter's
    ``sys.path``; None when none lists it or its metadata cannot be read."""
    module = impl.partition(":")[0]
    scope = scope_for(module, search)
    own = scope.own
    folder = _folder_of(scope.roots, own[-1], module) if own else None
    if folder is None:
        return None
    import importlib.metadata  # only a matrix names distributions

    wanted = {os.path.relpath(path, folder).replace(os.sep, "/") for path in own}
    try:
        found = importlib.metadata.distributions(path=[folder])
        for count, dist in enumerate(found):
            if count >= MAX_DISTRIBUTIONS:
                return None
            try:
                if not _plain_metadata(dist):
                    continue
                files = dist.files or ()
                if not any(str(item).replace(os.sep, "/") in wanted for item in files):
                    continue
                name, version = dist.metadata["Name"], dist.version
            except Exception:  # a broken distribution names nothing
                continue
            if isinstance(name, str) and isinstance(version, str):
                return ImplementationOrigin(
                    scrub(name[:_CHARS]), scrub(version[:_CHARS]), "distribution"
                )
    except Exception:  # an unreadable folder: no distribution is known
        return None
    return None


_METADATA_FILES = ("METADATA", "PKG-INFO", "RECORD", "installed-files.txt", "SOURCES.txt")
_MAX_METADATA = 16 * 1024 * 1024
"""The largest metadata file read: a ``RECORD`` of a huge distribution is a few MiB."""


def _plain_metadata(dist: object) -> bool:
    """Whether every metadata file of ``dist`` that importlib.metadata may read is a
    regular file of bounded size. The files sit among the implementation's: a ``RECORD``
    that is a FIFO once stalled the supervisor for good (SIGTERM too, its thread blocked
    in ``open``), one linked to ``/dev/zero`` would fill its memory."""
    path = getattr(dist, "_path", None)
    if not isinstance(path, os.PathLike):
        return False  # not a distribution found on disk: nothing known to read safely
    where = os.fspath(path)
    names = _METADATA_FILES if os.path.isdir(where) else ("",)
    for name in names:
        try:
            info = os.stat(os.path.join(where, name) if name else where)
        except FileNotFoundError:
            continue
        except OSError:
            return False
        if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_METADATA:
            return False
    return True


def _folder_of(roots: Sequence[str], path: str, module: str) -> str | None:
    """The import root the module file ``path`` was found under: the root below which
    it lies as the module's dotted name says."""
    stem = module.replace(".", "/")
    for root in roots:
        rel = os.path.relpath(path, root).replace(os.sep, "/")
        if rel == f"{stem}.py" or rel.startswith(f"{stem}/"):
            return root
    return None


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def named_distribution(name: str, search: Sequence[str]) -> ImplementationOrigin | None:
    """The installed distribution called ``name`` (``dist=jsonschema``; ``-``, ``_`` and
    ``.`` alike, any case), looked for on ``search`` then this interpreter's
    ``sys.path``; None when none is installed there or its metadata cannot be read."""
    import importlib.metadata  # only a matrix names distributions

    wanted = _normalised(name)
    folders: list[str] = []
    for entry in [*search, *sys.path]:
        real = os.path.realpath(entry) if entry else ""
        if real and os.path.isdir(real) and real not in folders:
            folders.append(real)
    try:
        for count, dist in enumerate(importlib.metadata.distributions(path=folders)):
            if count >= MAX_DISTRIBUTIONS * 4:
                return None
            try:
                if not _plain_metadata(dist):
                    continue
                found, version = dist.metadata["Name"], dist.version
            except Exception:  # a broken distribution names nothing
                continue
            if isinstance(found, str) and isinstance(version, str) and _normalised(found) == wanted:
                return ImplementationOrigin(
                    scrub(found[:_CHARS]), scrub(version[:_CHARS]), "distribution"
                )
    except Exception:  # an unreadable folder: no distribution is known
        return None
    return None


def _imported(tree: ast.AST) -> list[str]:
    """The top-level names of the modules ``tree`` imports (absolute imports only), in
    the order they first appear."""
    found: list[str] = []
    for node in ast.walk(tree):
        names: Iterable[str] = ()
        if isinstance(node, ast.Import):
            names = (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = (node.module,)
        for name in names:
            top = name.partition(".")[0]
            if top and top not in found:
                found.append(top)
    return found


def _bound(module: ast.Module) -> dict[str, str]:
    """Each name the module's own top-level imports bind, and the top-level module
    it comes from (``import tomli as t`` binds ``t`` to ``tomli``)."""
    bound: dict[str, str] = {}
    for node in module.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.partition(".")[0]
                bound[alias.asname or top] = (
                    top if alias.asname is None else alias.name.partition(".")[0]
                )
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for alias in node.names:
                bound[alias.asname or alias.name] = node.module.partition(".")[0]
    return bound


def _read_source(path: str) -> bytes | None:
    """The bytes of the regular file ``path``, at most :data:`_MAX_SOURCE` of them; None
    for anything else. Opened without blocking and checked once open, as the identity
    reads files, so that a module swapped for a FIFO or a device cannot stall the
    supervisor."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_SOURCE:
            return None
        chunks: list[bytes] = []
        left = info.st_size
        while left > 0 and (chunk := os.read(fd, left)):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _adapter_imports(path: str, attr: str) -> list[str]:
    """The top-level modules the adapter ``attr`` of the module file ``path`` imports:
    those imported in its own body, and the module's imports whose names it uses; when
    ``attr`` is not a function or class of the file (an instance, say), every import of
    the module. Empty when the file cannot be read or parsed."""
    source = _read_source(path)
    if source is None:
        return []
    try:
        module = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    head = attr.partition(".")[0]
    target = next(
        (
            node
            for node in module.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and node.name == head
        ),
        None,
    )
    if target is None:
        return _imported(module)
    found = _imported(target)
    bound = _bound(module)
    for node in ast.walk(target):
        name = node.id if isinstance(node, ast.Name) else None
        if name in bound and bound[name] not in found:
            found.append(bound[name])
    return found


def adapted_distribution(impl: str, search: Sequence[str]) -> ImplementationOrigin | None:
    """The distribution the adapter ``impl`` (``MODULE:ATTR``) adapts, found from what
    it imports: the one installed distribution whose files hold the third-party
    modules its function imports (see :func:`_adapter_imports`); None when it imports
    none, or modules of two distributions or more."""
    module, _, attr = impl.partition(":")
    own = scope_for(module, search).own
    if not own:
        return None
    skipped = {module.partition(".")[0], "cer", "__future__", *sys.stdlib_module_names}
    candidates = [name for name in _adapter_imports(own[-1], attr) if name not in skipped]
    origins = {
        origin
        for name in candidates[:_MAX_IMPORTED]
        if (origin := distribution_of(f"{name}:_", search)) is not None
    }
    return origins.pop() if len(origins) == 1 else None


def origin_of(
    impl: str, search: Sequence[str], dist: str | None = None
) -> tuple[ImplementationOrigin | None, str | None]:
    """What a Python implementation is, by name and version, and a note when the
    distribution it was said to adapt is not installed: its module's own distribution,
    else the one ``dist`` names, else the one it adapts by its imports."""
    if dist is not None:
        found = named_distribution(dist, search)
        if found is None:
            return None, f"dist={dist}: no distribution of that name is installed"
        return found, None
    return distribution_of(impl, search) or adapted_distribution(impl, search), None
