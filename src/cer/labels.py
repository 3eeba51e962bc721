"""Short labels that name implementations: matrix columns, report file suffixes.

A label is chosen by the user (``label`` in ``[tool.cer] impls``) or made from how the
implementation is named (:func:`short_label`), then made unique (:func:`unique_labels`).
Every run resolves its labels, so this stays apart from :mod:`cer.matrix`, which only
runs of several implementations need.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path

from cer.engine.kinds import kind_named

__all__ = ["LABEL_PATTERN", "MAX_LABEL", "short_label", "unique_labels"]

LABEL_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")
"""What a label may look like: it names a column and suffixes report file names."""
MAX_LABEL = 32
_AUTO_LABEL = 24
_INTERPRETERS = re.compile(
    r"(python[0-9.]*|pypy[0-9.]*|node|nodejs|deno|bun|ruby|perl|php|bash|sh|zsh|dash|"
    r"java|dotnet|Rscript|lua|luajit|tclsh|guile|racket|sbcl|env|uv|uvx)(\.exe)?\Z"
)


def _sanitise(text: str) -> str:
    label = re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("._-")
    return label[:_AUTO_LABEL].rstrip("._-") or "impl"


def short_label(kind: str, impl: str) -> str:
    """A short column label for an implementation: the module of ``MODULE:ATTR``
    (``calc_ref`` for ``calc_ref:evaluate``), or for a command the name of the script an
    interpreter runs (``calc_harness`` for ``python3 examples/harnesses/calc_harness.py``)
    or of the program itself."""
    if kind_named(kind).python:
        module = impl.partition(":")[0]
        return _sanitise(module.rsplit(".", 1)[-1] or impl)
    try:
        words = shlex.split(impl)
    except ValueError:
        words = impl.split()
    if not words:
        return "impl"
    chosen = words[0]
    if _INTERPRETERS.match(os.path.basename(chosen)):
        rest = iter(words[1:])
        for word in rest:
            if word == "-m":
                module = next(rest, "")
                chosen = module.rsplit(".", 1)[-1] or chosen
                break
            if word.startswith("-") or "=" in word:
                continue
            chosen = word
            break
    name = Path(chosen).name
    stem = Path(chosen).stem if "." in name and not name.startswith(".") else name
    return _sanitise(stem or name)


def unique_labels(
    candidates: Sequence[str], fixed: Iterable[str | None] | None = None
) -> tuple[str, ...]:
    """Labels from ``candidates`` made unique with ``-2``, ``-3``…; an entry of ``fixed``
    that is not None is kept as it is (an explicit label), and no generated label takes
    it."""
    chosen = list(fixed) if fixed is not None else [None] * len(candidates)
    if len(chosen) != len(candidates):
        raise ValueError("fixed labels must match the candidates one for one")
    taken = {label for label in chosen if label is not None}
    out: list[str] = []
    for candidate, explicit in zip(candidates, chosen, strict=True):
        if explicit is not None:
            out.append(explicit)
            continue
        label, number = candidate, 1
        while label in taken:
            number += 1
            label = f"{candidate}-{number}"
        taken.add(label)
        out.append(label)
    return tuple(out)
