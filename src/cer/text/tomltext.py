"""A case's declared tables as TOML text, the way the suite author wrote them, so that
every surface can show a case's input (and its expect) beside its verdict.

One formatter for every surface (the text report, the terminal UI, the HTML report,
JUnit bodies, the pytest plugin): :func:`inline` writes a value on one line, as TOML
writes a value after ``=``; :func:`table_lines` writes a table as ``key = value`` lines;
:func:`input_line` is the shortened one-line form a failure shows, which says when it
was cut and where the whole input is.

Every string is written as a TOML basic string with every control character, bidi
control and invisible joiner escaped (``\\u202e``), so that the text is always one line
per key and never acts on a terminal, whatever the suite holds.
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cer.text.safetext import INVISIBLE_CHARS

__all__ = [
    "INPUT_SHOWN_CHARS",
    "ShownInput",
    "basic_string",
    "inline",
    "input_line",
    "shown_input",
    "table_lines",
]

INPUT_SHOWN_CHARS = 300
"""Characters of a case's input that a failure shows before cutting it."""

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r", '"': '\\"'}
_ESCAPES["\\"] = "\\\\"
_NEEDS_ESCAPE = re.compile(f'["\\\\\x00-\x1f\x7f-\x9f{INVISIBLE_CHARS}\ud800-\udfff]')
_NEEDS_ESCAPE_MULTILINE = re.compile(
    f'["\\\\\x00-\x08\x0b-\x1f\x7f-\x9f{INVISIBLE_CHARS}\ud800-\udfff]'
)
"""As :data:`_NEEDS_ESCAPE`, less the tab and the line break a multi-line string keeps."""


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return _ESCAPES.get(char) or f"\\u{ord(char):04x}"


def basic_string(text: str, *, multiline: bool = False) -> str:
    """``text`` as a TOML basic string: the quote, the backslash, every control
    character, bidi control and invisible joiner (and a lone surrogate) escaped, so
    that it never acts on a terminal. Multi-line (in triple quotes) keeps its line breaks
    and tabs; a line break right after the opening quotes, which a reader drops, is doubled
    so that a first one is kept."""
    if not multiline:
        return f'"{_NEEDS_ESCAPE.sub(_escape, text)}"'
    lead = "\n" if text.startswith("\n") else ""
    return f'"""{lead}{_NEEDS_ESCAPE_MULTILINE.sub(_escape, text)}"""'


def _key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else basic_string(key)


def _float(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = repr(value)
    return text if any(c in text for c in ".en") else f"{text}.0"


def inline(value: Any) -> str:
    """``value`` as TOML writes it after ``key =``: tables inline, on one line. None is
    ``null``; another value TOML has no form for (bytes, an object) is a quoted repr."""
    kind = type(value)
    if value is None:
        return "null"  # TOML has no null; a returned None is shown as JSON writes it
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        try:
            return str(value)
        except ValueError:  # more digits than Python converts to text
            return f'"<an int of about {int(value.bit_length() * 0.30103) + 1} digits>"'
    if kind is float:
        return _float(value)
    if kind is str:
        return basic_string(value)
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        body = ", ".join(f"{_key(str(k))} = {inline(v)}" for k, v in value.items())
        return f"{{ {body} }}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(inline(item) for item in value) + "]"
    return basic_string(repr(value))


def table_lines(table: Mapping[str, Any]) -> list[str]:
    """``table`` as the ``key = value`` lines under its ``[header]``, one key a line."""
    return [f"{_key(str(key))} = {inline(value)}" for key, value in table.items()]


@dataclass(frozen=True)
class ShownInput:
    """A case's input on one line, as a failure shows it."""

    text: str
    """The inline table, cut to :data:`INPUT_SHOWN_CHARS` with ``…`` when longer."""
    total: int
    """Characters of the whole inline table."""
    cut: bool


def shown_input(table: Mapping[str, Any], limit: int = INPUT_SHOWN_CHARS) -> ShownInput:
    """``table`` inline, cut after ``limit`` characters."""
    whole = inline(table)
    if len(whole) <= limit:
        return ShownInput(whole, len(whole), False)
    return ShownInput(whole[:limit] + "…", len(whole), True)


def input_line(table: Mapping[str, Any], where: str = "", *, limit: int = INPUT_SHOWN_CHARS) -> str:
    """``input = { ... }``, cut after ``limit`` characters with how much was left out
    and ``where`` the whole input is (``evals.toml:12``, or a tab's name)."""
    shown = shown_input(table, limit)
    line = f"input = {shown.text}"
    if shown.cut:
        rest = f"{shown.total - limit} more characters"
        line += f"  ({rest}; whole at {where})" if where else f"  ({rest})"
    return line
