"""Plain data across process boundaries: exact type checks, a typed wire encoding.

Observations leave the implementation's process as bytes and are rebuilt as fresh
values in the supervisor, so nothing the implementation defined (a lying ``__eq__``, a
``__bool__`` that raises, a lazy proxy) can reach a comparison. The encoding is JSON
with explicit tags for the types JSON lacks, so ``1``, ``1.0``, ``True`` and ``"1"`` stay
different, NaN and infinities survive, and bytes and date-times keep their type.

This module is imported by the worker process; it must stay small and import nothing
from the rest of the package.
"""

from __future__ import annotations

import base64
import datetime as _dt
import json
from collections.abc import Callable
from typing import Any

MAX_DEPTH = 100
"""Deepest nesting accepted in an observation."""
MAX_NODES = 2_000_000
"""Most values (containers and scalars) accepted in one observation."""

_TAG_BYTES = "$bytes"
_TAG_DATETIME = "$datetime"
_TAG_DATE = "$date"
_TAG_TIME = "$time"
_TAG_INT = "$int"
_TAGS = frozenset({_TAG_BYTES, _TAG_DATETIME, _TAG_DATE, _TAG_TIME, _TAG_INT})
_BIG_INT_BITS = 12_000
"""Integers wider than this travel as hexadecimal: decimal conversion of huge integers
is limited by the interpreter (and quadratic), hexadecimal is neither."""

# Bound once so that an implementation rebinding builtins in its own process cannot
# change what these checks mean.
_type = type
_id = id
_len = len
_str = str
_int = int
_float = float
_bool = bool
_bytes = bytes
_list = list
_tuple: type = tuple
_dict = dict
_NoneType = type(None)
_datetime = _dt.datetime
_date = _dt.date
_time = _dt.time
_SCALARS = frozenset({_str, _int, _float, _bool, _NoneType})


class NotPlainData(Exception):
    """A value that is not plain data, or exceeds the limits; ``path`` locates it."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path or '<value>'}: {problem}")
        self.path = path
        self.problem = problem


def _tagged(kind: type, value: Any) -> dict[str, str] | None:
    """The wire form of a bytes, datetime, date or time ``value`` of type ``kind``
    (a table of one tagged string); None for any other kind."""
    if kind is _bytes:
        return {_TAG_BYTES: base64.b64encode(value).decode("ascii")}
    if kind is _datetime:
        return {_TAG_DATETIME: value.isoformat()}
    if kind is _date:
        return {_TAG_DATE: value.isoformat()}
    if kind is _time:
        return {_TAG_TIME: value.isoformat()}
    return None


def _child_path(path: str, key: str | int) -> str:
    if _type(key) is _int:
        return f"{path}[{key}]"
    if _type(key) is _str and key.isidentifier():
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key)}]"


class _Walker:
    """Turns plain data into JSON-ready values, checking exact types and limits."""

    def __init__(self) -> None:
        self.nodes = 0
        self.active: set[int] = set()

    def walk(self, value: Any, path: str, depth: int) -> Any:
        kind = _type(value)
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise NotPlainData(path, f"more than {MAX_NODES} values")
        if kind in _SCALARS:
            if kind is _int and value.bit_length() > _BIG_INT_BITS:
                return {_TAG_INT: hex(value)}
            return value
        if depth >= MAX_DEPTH:
            raise NotPlainData(path, f"nested deeper than {MAX_DEPTH} levels")
        if kind is _list or kind is _tuple:
            ident = _id(value)
            if ident in self.active:
                raise NotPlainData(path, "the value contains itself")
            self.active.add(ident)
            out = [self.walk(item, _child_path(path, i), depth + 1) for i, item in enumerate(value)]
            self.active.discard(ident)
            return out
        if kind is _dict:
            ident = _id(value)
            if ident in self.active:
                raise NotPlainData(path, "the value contains itself")
            self.active.add(ident)
            result: dict[str, Any] = {}
            for key, item in value.items():
                if _type(key) is not _str:
                    raise NotPlainData(
                        path, f"table key of type {_type(key).__name__} (keys must be str)"
                    )
                wire_key = "$" + key if key.startswith("$") else key
                result[wire_key] = self.walk(item, _child_path(path, key), depth + 1)
            self.active.discard(ident)
            return result
        tagged = _tagged(kind, value)
        if tagged is None:
            raise NotPlainData(path, f"value of type {_type_name(kind)} is not plain data")
        return tagged


class _Retry(Exception):
    """The fast walk met something to refuse: the full walk says what, and where."""


class _FastWalker:
    """:class:`_Walker` without the path of every value: the same checks and the same
    result, about twice as fast. Anything it would refuse makes :func:`to_wire` walk
    again with paths, to name the offending one."""

    __slots__ = ("active", "nodes")

    def __init__(self) -> None:
        self.nodes = 0
        self.active: set[int] = set()

    def walk(self, value: Any, depth: int) -> Any:
        kind = _type(value)
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise _Retry
        if kind in _SCALARS:
            if kind is _int and value.bit_length() > _BIG_INT_BITS:
                return {_TAG_INT: hex(value)}
            return value
        if depth >= MAX_DEPTH:
            raise _Retry
        if kind is _dict:
            ident = _id(value)
            active = self.active
            if ident in active:
                raise _Retry
            active.add(ident)
            result: dict[str, Any] = {}
            walk, deeper = self.walk, depth + 1
            for key, item in value.items():
                if _type(key) is not _str:
                    raise _Retry
                result["$" + key if key.startswith("$") else key] = walk(item, deeper)
            active.discard(ident)
            return result
        if kind is _list or kind is _tuple:
            ident = _id(value)
            active = self.active
            if ident in active:
                raise _Retry
            active.add(ident)
            walk, deeper = self.walk, depth + 1
            out = [walk(item, deeper) for item in value]
            active.discard(ident)
            return out
        tagged = _tagged(kind, value)
        if tagged is None:
            raise _Retry
        return tagged


def _type_name(kind: type) -> str:
    module = getattr(kind, "__module__", "")
    name = getattr(kind, "__qualname__", None) or getattr(kind, "__name__", "?")
    if _type(name) is not _str:
        name = "?"
    if module in ("builtins", "") or _type(module) is not _str:
        return _str(name)
    return f"{module}.{name}"


def to_wire(value: Any, path: str = "") -> Any:
    """``value`` as JSON-ready data, or NotPlainData naming the offending path.

    Accepted: None, bool, int, float, str, bytes, list, tuple (becomes a list), dict
    with str keys, and datetime/date/time, checked with ``type(x) is T`` so that no
    subclass and no method of the implementation's is ever involved.
    """
    try:
        return _FastWalker().walk(value, 0)
    except _Retry:
        return _Walker().walk(value, path, 0)


def _from_wire_object(obj: dict[str, Any]) -> Any:
    if _len(obj) == 1:
        ((key, item),) = obj.items()
        if key in _TAGS:
            if _type(item) is not _str:
                raise ValueError(f"malformed {key} value")
            if key == _TAG_INT:
                return _int(item, 16)
            if key == _TAG_BYTES:
                return base64.b64decode(item.encode("ascii"), validate=True)
            if key == _TAG_DATETIME:
                return _datetime.fromisoformat(item)
            if key == _TAG_DATE:
                return _date.fromisoformat(item)
            return _time.fromisoformat(item)
    if any(k.startswith("$") for k in obj):
        return {(k[1:] if k.startswith("$") else k): v for k, v in obj.items()}
    return obj


def _no_default(value: Any) -> Any:
    raise TypeError(f"value of type {_type(value).__name__} is not JSON serializable")


def _bind_encoder() -> Callable[[Any], str]:
    """The encoding function, made once: the C encoder when there is one, so that no
    name looked up while encoding (``json.dumps``, ``JSONEncoder`` methods) can be
    rebound to change what is sent. Output is exactly ``json.dumps(message,
    separators=(",", ":"))``."""
    try:
        from _json import encode_basestring_ascii, make_encoder
    except ImportError:  # pragma: no cover - CPython always has _json
        fallback: Callable[[Any], str] = json.JSONEncoder(separators=(",", ":")).encode
        return fallback
    encoder = make_encoder(
        None, _no_default, encode_basestring_ascii, None, ":", ",", False, False, True
    )
    join = "".join

    def encode(message: Any) -> str:
        text: str = join(encoder(message, 0))
        return text

    return encode


_encode_json = _bind_encoder()


def dumps(message: Any) -> bytes:
    """Serialise a message whose values already went through :func:`to_wire`."""
    return _encode_json(message).encode("utf-8")


def loads(data: bytes) -> Any:
    """Parse bytes made by :func:`dumps`, rebuilding tagged values; raises ValueError
    (or a subclass) on anything malformed, nested too deeply included.

    Every tag and every escaped key starts with ``$``, which :func:`dumps` writes as is
    (never as an escape), right after a quote; bytes without ``"$`` therefore hold no
    tag and are parsed without calling back into Python for every table. Bytes that
    spell the quote or the ``$`` as an escape can only come from something other than
    :func:`dumps`, and their tables stay tables.
    """
    try:
        tagged = b'"$' in data
        scan = _scan_tagged if tagged else _scan_plain
        if scan is not None:
            # The C scanner straight on the text: what json.loads does, less its
            # Python-level steps. Anything it does not take whole (whitespace around
            # the value, another encoding, an error) goes the full way below, which
            # decides exactly as json.loads does.
            try:
                text = data.decode("utf-8")
                value, end = scan(text, 0)
            except (ValueError, StopIteration):
                pass
            else:
                if end == len(text):
                    return value
        if not tagged:
            return _json_loads(data)
        return _json_loads(data, object_hook=_from_wire_object)
    except RecursionError:
        raise ValueError("the data is nested too deeply to read") from None


_json_loads = json.loads


def _bind_scanners() -> tuple[Any, Any]:
    """The C scanners json.loads uses, without and with the tag hook (None, None
    where there is no C scanner)."""
    try:
        from _json import make_scanner as _make_scanner
    except ImportError:  # pragma: no cover - CPython always has _json
        return None, None
    make_scanner: Any = _make_scanner  # typeshed types its argument as itself
    return (
        make_scanner(json.JSONDecoder()),
        make_scanner(json.JSONDecoder(object_hook=_from_wire_object)),
    )


_scan_plain, _scan_tagged = _bind_scanners()


def encode(value: Any) -> bytes:
    """Plain data to bytes in one step."""
    return dumps(to_wire(value))


def decode(data: bytes) -> Any:
    """Bytes from :func:`encode` back to plain data."""
    return loads(data)
