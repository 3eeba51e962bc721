"""Which installed distribution a Python implementation's module belongs to.

A matrix names each implementation by what it is, not only by how it was given:
``tomli 2.0.1`` beside ``tomli_parse``. The supervisor finds the module's files as the
identity does (:func:`cer.engine.identity.scope_for`, without importing anything) and
looks for a distribution under the same folder whose ``RECORD`` lists one of them. A
module that no installed distribution lists (a local adapter, an editable checkout)
has no distribution; nothing is guessed from names. The metadata is text from the
implementation's side: it is shown escaped and never decides anything.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence

from cer.engine.identity import scope_for
from cer.model import ImplementationOrigin
from cer.safetext import scrub

__all__ = ["MAX_DISTRIBUTIONS", "distribution_of"]

MAX_DISTRIBUTIONS = 2000
"""How many distributions of one folder are looked through at most."""
_CHARS = 200


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
