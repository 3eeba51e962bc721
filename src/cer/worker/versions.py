"""Dict version tags: telling at once, without comparing a namespace name by name,
that a dict did not change (builtins, ``sys.modules``, the modules the worker relies
on). Used by the per-case work of :mod:`cer.worker.call` and by the state check of
:mod:`cer.worker.snapshot`; wherever the tags cannot be trusted, both compare in full."""

from __future__ import annotations

import operator
import sys
from collections.abc import Callable
from typing import Any, Protocol


class Tag(Protocol):
    """One dict's version tag, read live through :attr:`value`."""

    @property
    def value(self) -> int: ...


Reader = Callable[[dict[Any, Any]], Tag]
"""Gives, for one dict, its :class:`Tag` (valid while the caller holds the dict)."""

_value = operator.attrgetter("value")


def dict_version_reader() -> Reader | None:
    """A way to read a dict's version tag (PEP 509), or None where it cannot be trusted.

    CPython 3.11 to 3.13 give every dict a tag that takes a new value on each change
    to the dict (an insertion, a deletion, a rebinding to another object), kept in the
    dict's header; reading it costs a fraction of a microsecond, against about a
    hundred for comparing a namespace name by name. It is only an internal field, so
    it is used only where the header has the expected layout and the tag moves as
    expected on a probe dict; anywhere else every check compares in full.
    """
    if sys.implementation.name != "cpython" or not (3, 11) <= sys.version_info[:2] <= (3, 13):
        return None
    try:
        import ctypes
    except ImportError:  # pragma: no cover - CPython without ctypes
        return None
    tag_type, used_type = ctypes.c_uint64, ctypes.c_ssize_t
    header = 2 * ctypes.sizeof(ctypes.c_void_p)  # reference count and type

    def reader(mapping: dict[Any, Any]) -> Tag:
        tag: Tag = tag_type.from_address(id(mapping) + header + ctypes.sizeof(used_type))
        return tag

    probe: dict[Any, Any] = {"a": object()}
    used = used_type.from_address(id(probe) + header)
    tag = reader(probe)
    seen = [tag.value]
    probe["b"] = object()
    seen.append(tag.value)
    probe["a"] = object()
    seen.append(tag.value)
    del probe["b"]
    seen.append(tag.value)
    if used.value != len(probe) or len(set(seen)) != len(seen):
        return None
    return reader


_READER: Reader | None = None
_READER_KNOWN = False


def version_reader() -> Reader | None:
    """:func:`dict_version_reader`, found once per worker (before any case's process
    is forked, so that none of them pays for the probe)."""
    global _READER, _READER_KNOWN
    if not _READER_KNOWN:
        _READER = dict_version_reader()
        _READER_KNOWN = True
    return _READER


class Versions:
    """The version tags of several dicts, to tell at once that none of them changed."""

    __slots__ = ("cells", "dicts", "tags")

    def __init__(self, dicts: list[dict[Any, Any]], reader: Reader) -> None:
        self.dicts = dicts  # held, so that every address read stays this dict's
        self.cells = [reader(mapping) for mapping in dicts]
        self.tags = list(map(_value, self.cells))

    def unchanged(self) -> bool:
        return list(map(_value, self.cells)) == self.tags  # integers: no __eq__ of anyone's

    def refresh(self) -> None:
        self.tags = list(map(_value, self.cells))


class KeptCopy:
    """A dict and a shallow copy of it, taken again only once the dict changed.

    A case needs the state of builtins (to restore it) and of ``sys.modules`` (to see
    the modules it imported) as they were when it started. Copying them for every case
    costs microseconds and, in a forked case process, the copy-on-write faults of every
    page that holds one of their hundreds of entries (each copy writes a reference count
    into every entry). Kept here, taken in the worker before the case processes are
    forked, the copy is inherited as it is, and a case compares the dict's version
    tag instead. Without trustworthy tags every call copies and every check says moved.
    """

    __slots__ = ("cell", "copy", "mapping", "tag")

    def __init__(self, mapping: dict[Any, Any]) -> None:
        self.mapping = mapping
        reader = version_reader()
        self.cell = reader(mapping) if reader is not None else None
        self.tag = -1
        self.copy: dict[Any, Any] = {}
        self.current()

    def current(self) -> dict[Any, Any]:
        """A copy of the dict as it is now: the kept one while the dict is unchanged."""
        cell = self.cell
        if cell is None:
            return dict(self.mapping)
        tag = cell.value
        if tag != self.tag:
            # The tag is read first: a change made while the copy is taken (by a thread
            # of the implementation's) makes the next check see a moved tag.
            self.copy = dict(self.mapping)
            self.tag = tag
        return self.copy

    def moved(self) -> bool:
        """Whether the dict may differ from the copy :meth:`current` returned last."""
        cell = self.cell
        return cell is None or cell.value != self.tag
