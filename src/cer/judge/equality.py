"""Plain values side by side: whether two are equal in the format's strict sense (no
coercion between types, no float tolerance, offsets kept), and how one is shown in a
message, bounded in length and depth."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from datetime import date, datetime, time, timedelta, timezone
from types import MappingProxyType
from typing import Any

from cer.model import MISSING

# The kinds of plain data, decided by exact type identity (never isinstance, never a hash
# of the type, so no metaclass or subclass of an unknown object gets a say).
_KINDS: tuple[tuple[type, str], ...] = (
    (str, "str"),
    (int, "int"),
    (bool, "bool"),
    (float, "float"),
    (list, "list"),
    (dict, "dict"),
    (type(None), "None"),
    (bytes, "bytes"),
    (tuple, "list"),
    (MappingProxyType, "dict"),
    (datetime, "datetime"),
    (date, "date"),
    (time, "time"),
)


CONTAINER_KINDS: frozenset[str] = frozenset({"list", "dict"})


def kind_of(value: Any) -> str | None:
    """The plain-data kind of ``value``, or None for anything the runner does not know."""
    cls = type(value)
    for known, name in _KINDS:
        if cls is known:
            return name
    return None


def type_name(value: Any) -> str:
    """A name for the type of ``value``, obtained without touching the object itself."""
    kind = kind_of(value)
    if kind is not None:
        return kind
    if value is MISSING:
        return "missing"
    try:
        name = type.__dict__["__qualname__"].__get__(type(value))
    except Exception:
        return "object"
    return name if type(name) is str else "object"


def known_tzinfo(tz: Any) -> bool:
    """Only tzinfo objects of the standard library are asked for an offset. (zoneinfo
    is imported only when a value has some other tzinfo: it costs a run that compares
    no such value several milliseconds, as it reads the interpreter's configuration.)"""
    if tz is None or type(tz) is timezone:
        return True
    from zoneinfo import ZoneInfo

    return type(tz) is ZoneInfo


def _offset(value: datetime | time) -> timedelta | None:
    return value.utcoffset()


def values_equal(expected: Any, observed: Any) -> bool:
    """Strict equality of two plain values; never raises (an error means not equal).

    Types must match exactly at every level, floats are equal only when ``==`` or both
    NaN, tables need the same key set, date/time values need the same UTC offset.
    """
    try:
        return equal(expected, observed)
    except Exception:
        return False


def equal(expected: Any, observed: Any) -> bool:
    """Iterative strict equality; pairs of containers already under comparison are
    assumed equal, which is sound for shared and even cyclic structures."""
    stack: list[tuple[Any, Any]] = [(expected, observed)]
    seen: set[tuple[int, int]] = set()
    while stack:
        a, b = stack.pop()
        kind = kind_of(a)
        if kind is None or kind_of(b) != kind:
            return False
        if kind == "list":
            if len(a) != len(b):
                return False
            pair = (id(a), id(b))
            if pair in seen:
                continue
            seen.add(pair)
            stack.extend(zip(a, b, strict=True))
        elif kind == "dict":
            if not (_str_keys(a) and _str_keys(b)) or len(a) != len(b):
                return False
            pair = (id(a), id(b))
            if pair in seen:
                continue
            seen.add(pair)
            for key, value in a.items():
                if key not in b:
                    return False
                stack.append((value, b[key]))
        elif not scalar_equal(kind, a, b):
            return False
    return True


def _str_keys(table: Mapping[Any, Any]) -> bool:
    return all(type(key) is str for key in table)


def scalar_equal(kind: str, a: Any, b: Any) -> bool:
    """Equality of two non-container values already known to be of the same kind."""
    if kind == "None":
        return True
    if kind == "float":
        return bool(a == b or (math.isnan(a) and math.isnan(b)))
    if kind in ("str", "int", "bool", "bytes", "date"):
        return bool(a == b)
    if kind == "datetime":
        return datetime_problem(a, b) is None
    if kind == "time":
        return time_problem(a, b) is None
    return False


def datetime_problem(a: datetime, b: datetime) -> str | None:
    """Why two datetimes differ, or None when they are equal."""
    if not (known_tzinfo(a.tzinfo) and known_tzinfo(b.tzinfo)):
        return "a datetime with an unsupported tzinfo cannot be verified"
    oa, ob = _offset(a), _offset(b)
    if (oa is None) != (ob is None):
        which = ("offset-aware", "naive") if ob is None else ("naive", "offset-aware")
        return f"expected a {which[0]} datetime, observed a {which[1]} one"
    if a != b:
        return "the datetimes differ"
    if oa != ob:
        return (
            f"same instant but the UTC offset differs: expected {_fmt_offset(oa)}, "
            f"observed {_fmt_offset(ob)}"
        )
    return None


def time_problem(a: time, b: time) -> str | None:
    """Why two times of day differ, or None when they are equal."""
    if not (known_tzinfo(a.tzinfo) and known_tzinfo(b.tzinfo)):
        return "a time with an unsupported tzinfo cannot be verified"
    oa, ob = _offset(a), _offset(b)
    if (oa is None) != (ob is None):
        which = ("offset-aware", "naive") if ob is None else ("naive", "offset-aware")
        return f"expected a {which[0]} time, observed a {which[1]} one"
    if (a.hour, a.minute, a.second, a.microsecond) != (b.hour, b.minute, b.second, b.microsecond):
        return "the times differ"
    if oa != ob:
        return f"the UTC offset differs: expected {_fmt_offset(oa)}, observed {_fmt_offset(ob)}"
    return None


def _fmt_offset(offset: timedelta | None) -> str:
    if offset is None:
        return "none"
    return str(timezone(offset)) if abs(offset) < timedelta(hours=24) else str(offset)


def format_value(value: Any, limit: int = 200) -> str:
    """A short, bounded, unambiguous rendering of ``value`` for messages.

    Strings and bytes are shown with repr so whitespace is visible; anything long is cut
    with a marker such as ``… (1234 chars)``. Unknown objects are named by type only.
    """
    limit = max(limit, 8)
    try:
        return _render(value, limit, 0)
    except Exception:
        return f"<{type_name(value)}>"


def _render(value: Any, limit: int, depth: int) -> str:
    if value is MISSING:
        return "<missing>"
    kind = kind_of(value)
    if kind is None:
        return f"<{type_name(value)} object>"
    if kind in ("str", "bytes"):
        return _render_text(value, limit)
    if kind == "int":
        try:
            text = repr(value)
        except ValueError:
            return f"<int of {value.bit_length()} bits>"
        return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} digits)"
    if kind in ("None", "bool", "float"):
        return repr(value)
    if kind in ("datetime", "time"):
        if known_tzinfo(value.tzinfo):
            return str(value.isoformat())
        naive = value.replace(tzinfo=None).isoformat()
        return f"{naive}<unsupported tzinfo {type_name(value.tzinfo)}>"
    if kind == "date":
        return str(value.isoformat())
    if kind == "list":
        return _render_items(value, limit, depth, "[", "]", "element")
    return _render_items(value, limit, depth, "{", "}", "key")


def _render_text(value: str | bytes, limit: int) -> str:
    """repr of a prefix of ``value`` whose rendering fits in about ``limit`` characters."""
    n = min(len(value), limit)
    text = repr(value[:n])
    while len(text) > limit + 3 and n > 1:
        n = max(1, n * limit // len(text) - 1)
        text = repr(value[:n])
    if n < len(value):
        unit = "chars" if type(value) is str else "bytes"
        text += f"… ({len(value)} {unit})"
    return text


def _render_items(value: Any, limit: int, depth: int, open_: str, close: str, noun: str) -> str:
    count = len(value)
    suffix = f" ({count} {noun}{'s' if count != 1 else ''})"
    if count == 0:
        return open_ + close
    if depth >= 20:
        return f"{open_}…{close}{suffix}"
    parts: list[str] = []
    used = len(open_) + len(close)
    entries: Iterator[tuple[Any, Any]] = (
        iter(value.items()) if noun == "key" else ((None, item) for item in value)
    )
    complete = True
    for key, item in entries:
        budget = limit - used
        if budget < 8:
            complete = False
            break
        if noun == "key":
            piece = f"{_render(key, budget, depth + 1)}: {_render(item, budget, depth + 1)}"
        else:
            piece = _render(item, budget, depth + 1)
        if len(piece) > budget and parts:
            complete = False
            break
        parts.append(piece)
        used += len(piece) + 2
    if complete and len(parts) == count:
        return open_ + ", ".join(parts) + close
    return open_ + ", ".join([*parts, "…"]) + close + suffix


def describe(value: Any) -> str:
    """``int 1``, ``str 'a'``, ``None``: the type name and a bounded rendering."""
    if value is None:
        return "None"
    if value is MISSING:
        return "nothing"
    kind = kind_of(value)
    if kind is None:
        return f"a value of unsupported type {type_name(value)}"
    return f"{kind} {format_value(value)}"
