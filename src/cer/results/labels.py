"""Short labels that name implementations: matrix columns, report file suffixes.

A label is chosen by the user (``label`` in ``[tool.cer] impls``) or made from how the
implementation is named (:func:`short_label`), then made unique (:func:`unique_labels`).
Every run resolves its labels, so this stays apart from :mod:`cer.results.matrix`, which only
runs of several implementations need.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path

from cer.engine.kinds import kind_named

__all__ = [
    "DIST_PATTERN",
    "LABEL_PATTERN",
    "MAX_LABEL",
    "implementation_labels",
    "label_problem",
    "short_label",
    "split_dist",
    "split_label",
    "unique_labels",
]

LABEL_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")
"""What a label may look like: it names a column and suffixes report file names."""
MAX_LABEL = 32
DIST_PATTERN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,98}[A-Za-z0-9])?\Z")
"""What a distribution's name may look like (the names of the packaging metadata)."""
_DIST_SUFFIX = re.compile(r"(.*?),\s*dist=(.*)\Z", re.DOTALL)
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


def label_problem(label: str) -> str | None:
    """Why ``label`` cannot name an implementation, or None when it can."""
    if len(label) > MAX_LABEL or not LABEL_PATTERN.match(label):
        return (
            f"a label must be letters, digits, '_', '.' or '-' (starting with a letter or "
            f"digit, at most {MAX_LABEL} characters), got {label!r}"
        )
    return None


_NAMED = re.compile(r"([^=:\s'\"]+)=(\S.*)\Z", re.DOTALL)


def split_label(kind: str, impl: str) -> tuple[str | None, str]:
    """``NAME=MODULE:ATTR`` or ``NAME=COMMAND ARGS``: the label the user gave (None
    without one) and the implementation. A module never holds ``=``, and a command is
    never run through a shell, so a first word ``NAME=…`` can only be a name. ValueError
    when the name cannot be a label."""
    found = _NAMED.match(impl)
    if found is None:
        return None, impl
    name, rest = found.groups()
    if kind_named(kind).python and ":" not in rest:
        return None, impl
    problem = label_problem(name)
    if problem is not None:
        raise ValueError(problem)
    return name, rest


def split_dist(kind: str, impl: str) -> tuple[str, str | None]:
    """``MODULE:ATTR,dist=NAME``: the implementation and the distribution it adapts
    (None without one). Only a Python implementation takes one (an attribute never
    holds a comma; a command harness declares itself). ValueError when the name cannot
    be a distribution's."""
    found = _DIST_SUFFIX.match(impl)
    if found is None or not kind_named(kind).python:
        return impl, None
    rest, dist = found.group(1), found.group(2).strip()
    if not DIST_PATTERN.match(dist):
        raise ValueError(
            f"dist= must name an installed distribution (letters, digits, '.', '_' and "
            f"'-', as pip names it), got {dist!r}"
        )
    return rest, dist


def implementation_labels(
    named: Sequence[tuple[str, str]], fixed: Iterable[str | None] | None = None
) -> tuple[str, ...]:
    """Unique labels for implementations given as ``(kind, impl)``: each one's
    :func:`short_label`, except that Python implementations in one module (three
    adapters of ``toml_adapters``) are named by their attribute (``tomli_parse``) instead
    of ``toml_adapters``, ``toml_adapters-2``… Entries of ``fixed`` that are not None are
    explicit labels, kept as they are."""
    short = [short_label(kind, impl) for kind, impl in named]
    candidates = list(short)
    python = [(index, impl) for index, (kind, impl) in enumerate(named) if kind_named(kind).python]
    for index, impl in python:
        attr = impl.partition(":")[2]
        others = {other for i, other in python if i != index and short[i] == short[index]}
        if attr and others - {impl}:
            candidates[index] = _sanitise(attr.rsplit(".", 1)[-1] or attr)
    return unique_labels(candidates, fixed)


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
