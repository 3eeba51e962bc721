"""Typed values on the command protocol: every value travels with its type tag (so
``1``, ``1.0``, ``true`` and ``"1"`` stay different), and what comes back is decoded
strictly, within bounds on depth, size and digits (docs/protocol.md)."""

from __future__ import annotations

import base64
import datetime as _dt
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

MAX_DEPTH = 100
"""Deepest nesting of typed arrays and tables accepted in an observation."""


MAX_NODES = 2_000_000
"""Most typed values accepted in one observation."""


MAX_INT_DIGITS = 100_000
"""Longest integer text accepted in a typed value."""


_INT_CHUNK = 4000


_INT_TEXT = re.compile(r"[+-]?[0-9]+")


_FLOAT_TEXT = re.compile(r"[+-]?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


_FLOAT_NAMES: Mapping[str, float] = {
    "nan": math.nan,
    "+nan": math.nan,
    "-nan": math.nan,
    "NaN": math.nan,
    "inf": math.inf,
    "+inf": math.inf,
    "-inf": -math.inf,
    "Infinity": math.inf,
    "+Infinity": math.inf,
    "-Infinity": -math.inf,
}


_SURROGATE = re.compile("[\ud800-\udfff]")


_DATE = r"[0-9]{4}-[0-9]{2}-[0-9]{2}"


_TIME = r"[0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?"


_ISO_FORMS: Mapping[str, re.Pattern[str]] = {
    "datetime": re.compile(rf"{_DATE}[Tt ]{_TIME}(?:[Zz]|[+-][0-9]{{2}}:[0-9]{{2}})"),
    "datetime-local": re.compile(rf"{_DATE}[Tt ]{_TIME}"),
    "date-local": re.compile(_DATE),
    "time-local": re.compile(_TIME),
}


class ProtocolError(Exception):
    """A message from a harness broke the protocol; the text says where and how."""


class NotEncodable(Exception):
    """A case input holds a value the protocol has no type tag for."""


def _child(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if key.isidentifier():
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key)}]"


def _int_text(value: int) -> str:
    """Decimal text of ``value`` at any size (``str`` refuses past 4,300 digits)."""
    if -(10**_INT_CHUNK) < value < 10**_INT_CHUNK:
        return str(value)
    sign, value = ("-", -value) if value < 0 else ("", value)
    parts: list[str] = []
    unit = 10**_INT_CHUNK
    while value:
        value, low = divmod(value, unit)
        parts.append(str(low).zfill(_INT_CHUNK) if value else str(low))
    return sign + "".join(reversed(parts))


def _int_from_text(text: str) -> int:
    """The int spelled by ``text`` (already checked against ``_INT_TEXT``), any size."""
    sign = -1 if text.startswith("-") else 1
    digits = text.lstrip("+-")
    value = 0
    for start in range(0, len(digits), _INT_CHUNK):
        chunk = digits[start : start + _INT_CHUNK]
        value = value * 10 ** len(chunk) + int(chunk)
    return sign * value


def _float_text(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def encode_value(value: Any, path: str = "input") -> dict[str, Any]:
    """``value`` as a typed protocol value (docs/protocol.md, "Typed values").

    Types are decided by exact identity (``type(x) is int``) so that ``True`` is never
    sent as an integer; raises NotEncodable for anything else.
    """
    kind = type(value)
    if kind is bool:
        return {"type": "bool", "value": value}
    if kind is int:
        return {"type": "integer", "value": _int_text(value)}
    if kind is float:
        return {"type": "float", "value": _float_text(value)}
    if kind is str:
        return {"type": "string", "value": value}
    if value is None:
        return {"type": "null"}
    if kind is list or kind is tuple:
        return {
            "type": "array",
            "value": [encode_value(item, _child(path, i)) for i, item in enumerate(value)],
        }
    if kind is dict:
        table: dict[str, Any] = {}
        for key, item in value.items():
            if type(key) is not str:
                raise NotEncodable(f"{path}: a table key of type {type(key).__name__}")
            table[key] = encode_value(item, _child(path, key))
        return {"type": "table", "value": table}
    if kind is _dt.datetime:
        tag = "datetime" if value.tzinfo is not None else "datetime-local"
        return {"type": tag, "value": value.isoformat()}
    if kind is _dt.date:
        return {"type": "date-local", "value": value.isoformat()}
    if kind is _dt.time:
        if value.tzinfo is not None:
            raise NotEncodable(f"{path}: a time of day with a UTC offset")
        return {"type": "time-local", "value": value.isoformat()}
    if kind is bytes:
        return {"type": "bytes", "value": base64.b64encode(value).decode("ascii")}
    raise NotEncodable(f"{path}: a value of type {kind.__name__}")


class _Decoder:
    """Typed protocol values back to plain data, refusing anything ambiguous."""

    def __init__(self) -> None:
        self.nodes = 0

    def value(self, obj: Any, path: str, depth: int) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise ProtocolError(f"{path}: more than {MAX_NODES} values")
        if depth > MAX_DEPTH:
            raise ProtocolError(f"{path}: nested deeper than {MAX_DEPTH} levels")
        if type(obj) is not dict:
            raise ProtocolError(
                f'{path}: expected a typed value {{"type": ..., "value": ...}}, got {snippet(obj)}'
            )
        tag = obj.get("type")
        if type(tag) is not str:
            raise ProtocolError(f'{path}: a typed value needs a string "type"')
        if tag == "null":
            extra = set(obj) - {"type", "value"}
            if extra or obj.get("value") is not None:
                raise ProtocolError(f'{path}: a null has no value (only "type": "null")')
            return None
        if set(obj) != {"type", "value"}:
            keys = ", ".join(sorted(set(obj) - {"type"})) or "nothing"
            raise ProtocolError(f'{path}: a {tag} needs exactly "type" and "value" (got {keys})')
        item = obj["value"]
        decode = _SCALAR_DECODERS.get(tag)
        if decode is not None:
            return decode(item, path)
        if tag == "array":
            if type(item) is not list:
                raise ProtocolError(f"{path}: an array's value must be a JSON array")
            return [self.value(v, _child(path, i), depth + 1) for i, v in enumerate(item)]
        if tag == "table":
            if type(item) is not dict:
                raise ProtocolError(f"{path}: a table's value must be a JSON object")
            table: dict[str, Any] = {}
            for key, v in item.items():
                _check_text(key, path)
                table[key] = self.value(v, _child(path, key), depth + 1)
            return table
        raise ProtocolError(f"{path}: unknown type {tag!r}")


def _check_text(text: str, path: str) -> str:
    if _SURROGATE.search(text):
        raise ProtocolError(f"{path}: a string holds an unpaired surrogate")
    return text


def _decode_string(item: Any, path: str) -> str:
    if type(item) is not str:
        raise ProtocolError(f"{path}: a string's value must be a JSON string")
    return _check_text(item, path)


def _decode_integer(item: Any, path: str) -> int:
    if type(item) is int:
        return item
    if type(item) is str and len(item) <= MAX_INT_DIGITS + 1 and _INT_TEXT.fullmatch(item):
        return _int_from_text(item)
    raise ProtocolError(
        f"{path}: an integer's value must be decimal digits in a string (or a JSON "
        f"integer), got {snippet(item)}"
    )


def _decode_float(item: Any, path: str) -> float:
    if type(item) is float:
        return item
    if type(item) is int:
        try:
            return float(item)
        except OverflowError:
            raise ProtocolError(f"{path}: float value out of range") from None
    if type(item) is str:
        if item in _FLOAT_NAMES:
            return _FLOAT_NAMES[item]
        if len(item) <= 1000 and _FLOAT_TEXT.fullmatch(item):
            return float(item)
    raise ProtocolError(
        f"{path}: a float's value must be a JSON number, a decimal string, or one of "
        f'"nan", "inf", "-inf", got {snippet(item)}'
    )


def _decode_bool(item: Any, path: str) -> bool:
    if type(item) is not bool:
        raise ProtocolError(f"{path}: a bool's value must be true or false")
    return item


def _decode_datetime(item: Any, path: str) -> _dt.datetime:
    return _iso(item, path, "datetime", _dt.datetime.fromisoformat)


def _decode_datetime_local(item: Any, path: str) -> _dt.datetime:
    return _iso(item, path, "datetime-local", _dt.datetime.fromisoformat)


def _decode_date(item: Any, path: str) -> _dt.date:
    return _iso(item, path, "date-local", _dt.date.fromisoformat)


def _decode_time(item: Any, path: str) -> _dt.time:
    return _iso(item, path, "time-local", _dt.time.fromisoformat)


_T = TypeVar("_T")


def _iso(item: Any, path: str, tag: str, parse: Callable[[str], _T]) -> _T:
    """An RFC 3339 form checked against the tag's own pattern (an offset exactly for
    ``datetime``), then parsed."""
    if type(item) is not str or not _ISO_FORMS[tag].fullmatch(item):
        raise ProtocolError(
            f"{path}: a {tag} must be RFC 3339 text"
            + (" with a UTC offset" if tag == "datetime" else " without an offset")
            + f", got {snippet(item)}"
        )
    try:
        return parse(item.upper() if tag.startswith("datetime") else item)
    except ValueError as exc:
        raise ProtocolError(f"{path}: {exc}") from None


def _decode_bytes(item: Any, path: str) -> bytes:
    if type(item) is not str:
        raise ProtocolError(f"{path}: bytes must be a base64 string")
    try:
        return base64.b64decode(item.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise ProtocolError(f"{path}: bytes must be a base64 string") from None


_SCALAR_DECODERS: Mapping[str, Callable[[Any, str], Any]] = {
    "string": _decode_string,
    "integer": _decode_integer,
    "float": _decode_float,
    "bool": _decode_bool,
    "datetime": _decode_datetime,
    "datetime-local": _decode_datetime_local,
    "date-local": _decode_date,
    "time-local": _decode_time,
    "bytes": _decode_bytes,
}


def decode_value(obj: Any, path: str = "observation") -> Any:
    """A typed protocol value as plain data; raises ProtocolError on anything malformed."""
    return _Decoder().value(obj, path, 0)


def snippet(value: Any) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return clip(text)


EVIDENCE_CHARS = 300


def clip(text: str, limit: int = EVIDENCE_CHARS) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} chars)"
