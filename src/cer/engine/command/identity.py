"""The implementation id of a command: which program ran, as the supervisor hashed it."""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import shlex
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from cer.engine.identity import MAX_FILES, UNVERIFIED, Budget, Scope, file_digest
from cer.engine.kinds import kind_named


def _hash_file(digest: Any, path: Path, budget: Budget) -> None:
    # A harness names some of these files: a name it swaps for a FIFO after the
    # is_file check must not stall the supervisor (see cer.identity.file_digest).
    digest.update(file_digest(str(path), budget))


def _on_search_path(program: str) -> bool:
    folder = os.path.dirname(os.path.abspath(program))
    return any(
        os.path.abspath(entry) == folder
        for entry in os.environ.get("PATH", "").split(os.pathsep)
        if entry
    )


def command_identity(
    kind: str, words: list[str], extra_files: Iterable[str] = (), extra: Iterable[str] = ()
) -> tuple[str, tuple[str, ...]]:
    """A stable implementation id and the files it depends on.

    The id is ``cmd:COMMAND@HASH`` (``cmd-per-case:`` for one process per case: the
    prefix is the kind's, :mod:`cer.engine.kinds`); the
    hash covers the command's words, the content of every word that names an existing
    file (relative to the working directory; the program only when it is not in a PATH
    directory; files over 256 MiB by size and time), the files a harness listed in its
    handshake, and ``extra`` (the harness's name and version), so that editing the
    harness or the module it wraps changes the id.

    The harness's list is data: a file it names counts only under the working
    directory or the folder of a file the command names, once per inode, and the
    whole is read within a :class:`~cer.engine.identity.Budget`; past it, the id is a
    one-off ``…@unverified-…``.
    """
    digest = hashlib.sha256()
    files: list[str] = []
    inodes: set[tuple[int, int]] = set()
    budget = Budget()
    for word in words:
        digest.update(f"{len(word)}:{word}".encode("utf-8", "surrogateescape"))
    # The program itself counts unless it lives in a PATH directory (an interpreter
    # such as /usr/bin/node is not the implementation; ./build/impl is).
    named = words[1:] if words and _on_search_path(words[0]) else words
    roots = [os.path.realpath(os.getcwd())]
    listed = list(extra_files)[: MAX_FILES + 1]
    for index, name in enumerate([*named, *listed]):
        if not budget.spend(0):
            break
        path = Path(name)
        with contextlib.suppress(OSError, ValueError):
            if not path.is_file():
                continue
            resolved = str(path.resolve())
            if index >= len(named) and not Scope(tuple(roots)).holds(resolved):
                continue  # named by the harness alone, outside what the command names
            info = os.stat(resolved)
            if resolved in files or (info.st_dev, info.st_ino) in inodes:
                continue
            inodes.add((info.st_dev, info.st_ino))
            files.append(resolved)
            if index < len(named):
                roots.append(os.path.dirname(resolved))
    for name in sorted(files):
        digest.update(name.encode("utf-8", "surrogateescape"))
        _hash_file(digest, Path(name), budget)
    for text in extra:
        digest.update(f"{len(text)}:{text}".encode("utf-8", "surrogatepass"))
    stem = kind_named(kind).id_stem(shlex.join(words))
    if budget.over is not None or len(listed) > MAX_FILES:
        return f"{stem}@{UNVERIFIED}{secrets.token_hex(5)}", tuple(files)
    return f"{stem}@{digest.hexdigest()[:10]}", tuple(files)
