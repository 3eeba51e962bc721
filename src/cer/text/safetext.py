"""Text and values from the implementation's side, made safe to keep, store and show.

Whatever an implementation sends (an exception message, a returned value, captured
output, a harness's name) is data, and some data breaks the tools that handle it:

- a lone surrogate (``"\\ud800"``) cannot be encoded as UTF-8, so writing it to a
  terminal, a file, JSON or SQLite raises; :func:`scrub` replaces each one with its
  visible escape (the six characters ``\\ud800``);
- terminal control sequences and bidirectional overrides (``ESC [ 2 J``, ``\\r``,
  U+202E) can repaint a terminal or reorder what it shows, so that an implementation
  could make a failing run look green; :func:`for_terminal` shows them as escapes;
- a case can return tens of megabytes; :func:`retained` keeps a bounded copy of a
  judged result (with a visible marker where something was cut), so that the
  supervisor's memory does not grow with the number of cases.

None of this runs before a verdict: results are judged on exactly what was observed,
and only what is kept for reporting afterwards is scrubbed and bounded.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from cer.model import MISSING, CaseResult, Mismatch

__all__ = [
    "INVISIBLE_CHARS",
    "RETAINED_CHARS",
    "RETAINED_ITEMS",
    "RETAINED_TEXT",
    "RETAINED_TOTAL",
    "bound_text",
    "bound_value",
    "displayed",
    "for_json",
    "for_terminal",
    "retained",
    "scrub",
    "scrub_value",
]

RETAINED_CHARS = 16 * 1024
"""Longest string (or bytes) kept whole inside a retained observation or mismatch."""
RETAINED_ITEMS = 1000
"""Most items of one array or table kept in a retained observation."""
RETAINED_TOTAL = 256 * 1024
"""Characters (about) kept of one retained observation in all; the rest is cut."""
RETAINED_TEXT = 256 * 1024
"""Longest reason, output or traceback kept for one case (head and tail)."""

_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 controls but tab and newline, DEL, C1 controls, lone surrogates, and the
# invisible characters that change how a line is ordered or joined: the bidi
# embeddings, overrides and isolates, the marks, and the line/paragraph separators.
INVISIBLE_CHARS = "\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff"
"""A regular-expression class body: the bidi controls and marks, zero-width and
invisible characters and the line/paragraph separators (every renderer escapes them)."""
_UNSAFE_MULTILINE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{INVISIBLE_CHARS}\ud800-\udfff]")
_UNSAFE_LINE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ud800-\udfff]"
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def scrub(text: str) -> str:
    """``text`` with every lone surrogate replaced by its visible escape (``\\ud800``),
    so that it can be encoded as UTF-8; anything else is left as it is."""
    if _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(_escape, text)


def for_terminal(text: str, *, multiline: bool = True) -> str:
    """``text`` safe to print: control characters (but tab and newline when
    ``multiline``), bidirectional controls, invisible joiners and lone surrogates are
    shown as escapes (``\\x1b``, ``\\u202e``) instead of acting on the terminal."""
    pattern = _UNSAFE_MULTILINE if multiline else _UNSAFE_LINE
    if pattern.search(text) is None:
        return text
    return pattern.sub(_escape, text)


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def for_json(text: str) -> str:
    """JSON text (as ``json.dumps(..., ensure_ascii=False)`` writes it) with the
    characters :func:`for_terminal` escapes written as JSON escapes (``\\u001b``,
    ``\\u202e``, ``\\ud800``): the same document, which a reader decodes to the same
    values, but one that cannot act on a terminal it is printed to. Outside its strings
    JSON text holds only ASCII punctuation, spaces and line breaks, none of them escaped."""
    if _UNSAFE_MULTILINE.search(text) is None:
        return text
    return _UNSAFE_MULTILINE.sub(_json_escape, text)


def _map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """Plain data with ``change`` applied to every string and table key; containers
    are copied only where something changed."""
    kind = type(value)
    if kind is str:
        return change(value)
    if kind is list:
        items = [_map_strings(item, change) for item in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if kind is dict:
        changed = False
        table: dict[Any, Any] = {}
        for key, item in value.items():
            new_key = change(key) if type(key) is str else key
            new_item = _map_strings(item, change)
            changed = changed or new_key is not key or new_item is not item
            table[new_key] = new_item
        return table if changed else value
    return value


def scrub_value(value: Any) -> Any:
    """Plain data with every string (and table key) scrubbed; other values as they
    are. Containers are copied only where something changed."""
    return _map_strings(value, scrub)


def _digest(data: str | bytes) -> str:
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()[:12]


def _cut_marker(what: str, kept: int, total: int, digest: str) -> str:
    return f"… [cut: {total - kept} more {what} of {total}, sha256 {digest}…]"


class _Bounder:
    """Copies plain data within a budget of characters, marking every cut."""

    def __init__(self, budget: int) -> None:
        self.budget = budget

    def value(self, value: Any, depth: int = 0) -> Any:
        kind = type(value)
        if kind is str:
            return self.text(value)
        if kind is bytes:
            return self.data(value)
        if kind is list:
            return self.array(value, depth)
        if kind is dict:
            return self.table(value, depth)
        self.budget -= 8
        return value

    def text(self, value: str) -> str:
        keep = max(0, min(RETAINED_CHARS, self.budget))
        if len(value) <= keep:
            self.budget -= len(value) + 2
            return value
        self.budget -= keep + 80
        return value[:keep] + _cut_marker("characters", keep, len(value), _digest(value))

    def data(self, value: bytes) -> bytes | str:
        keep = max(0, min(RETAINED_CHARS, self.budget))
        if len(value) <= keep:
            self.budget -= len(value) * 2
            return value
        self.budget -= keep * 2 + 80
        # The cut bytes cannot carry a marker of their own: the retained value says
        # what it was in words (the verdict was made on the whole value).
        return f"<bytes {value[:keep]!r}" + _cut_marker("bytes", keep, len(value), _digest(value))

    def array(self, value: list[Any], depth: int) -> list[Any]:
        out: list[Any] = []
        for index, item in enumerate(value):
            if index >= RETAINED_ITEMS or self.budget <= 0:
                out.append(f"… [cut: {len(value) - index} more items of {len(value)}]")
                break
            out.append(self.value(item, depth + 1))
        return out

    def table(self, value: dict[Any, Any], depth: int) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for index, (key, item) in enumerate(value.items()):
            if index >= RETAINED_ITEMS or self.budget <= 0:
                out["…"] = f"[cut: {len(value) - index} more keys of {len(value)}]"
                break
            self.budget -= len(key) if type(key) is str else 8
            out[key] = self.value(item, depth + 1)
        return out


def bound_value(value: Any, budget: int = RETAINED_TOTAL) -> Any:
    """A copy of plain data that holds at most about ``budget`` characters: long
    strings and bytes, long arrays and big tables are cut, each with a marker saying
    how much was cut (and, for text, a digest of the whole value)."""
    return _Bounder(budget).value(value)


def bound_text(text: str, limit: int = RETAINED_TEXT) -> str:
    """``text`` when it is at most ``limit`` characters, else its head and its tail
    (where a traceback says what was raised) around a marker of what was cut."""
    if len(text) <= limit:
        return text
    half = limit // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n… [cut: {cut} characters of {len(text)}] …\n{text[-half:]}"


def _keep_text(text: str) -> str:
    return scrub(bound_text(text))


def _keep_value(value: Any) -> Any:
    if value is MISSING:
        return value
    return scrub_value(bound_value(value))


def retained(result: CaseResult) -> CaseResult:
    """What is kept of a judged result for reporting: every text scrubbed (see
    :func:`scrub`) and bounded, and the observation and mismatch values bounded (see
    :func:`bound_value`). The status never changes.

    A result without mismatches that neither scrubbing nor bounding would change (the
    common passing case) is kept as it is: one walk over it instead of two copies."""
    if not result.mismatches and _kept_as_is(result):
        return result
    return _retained_copy(result)


def _retained_copy(result: CaseResult) -> CaseResult:
    observation: Mapping[str, Any] | None = result.observation
    altered = result.observation_altered
    if observation is not None:
        whole = _observation_kept_whole(observation)
        kept = _keep_value(dict(observation))
        altered = altered or (not whole and kept != observation)
        observation = kept
    return replace(
        result,
        observation_altered=altered,
        case_name=scrub(result.case_name),
        reason=None if result.reason is None else _keep_text(result.reason),
        stdout=_keep_text(result.stdout),
        stderr=_keep_text(result.stderr),
        traceback=None if result.traceback is None else _keep_text(result.traceback),
        observation=observation,
        mismatches=tuple(
            Mismatch(
                _keep_text(m.path),
                _keep_text(m.message),
                _keep_value(m.expected),
                _keep_value(m.observed),
            )
            for m in result.mismatches
        ),
    )


def _clean(text: str) -> bool:
    return text.isascii() or _SURROGATE.search(text) is None


def _text_kept(text: str | None) -> bool:
    return text is None or (len(text) <= RETAINED_TEXT and _clean(text))


def _observation_kept_whole(observation: Mapping[str, Any]) -> bool:
    """Whether neither bounding nor scrubbing changes ``observation`` (it may say no
    where they would not: the safe side, as it only stops a proposal)."""
    if type(observation) is not dict:
        return False
    try:
        cost = _unchanged_cost(observation)
    except RecursionError:
        return False
    return 0 <= cost < RETAINED_TOTAL


def _kept_as_is(result: CaseResult) -> bool:
    """Whether :func:`retained` would give back a result equal to ``result`` (its
    mismatches aside): every text short enough and free of lone surrogates, and the
    observation a plain table that :class:`_Bounder` would copy whole."""
    if not (
        _clean(result.case_name)
        and _text_kept(result.reason)
        and _text_kept(result.stdout)
        and _text_kept(result.stderr)
        and _text_kept(result.traceback)
    ):
        return False
    observation = result.observation
    # What the bounder takes off its budget is exactly the cost counted: with less than
    # the whole budget spent, every string fits in what is left when it is reached, and
    # the budget never runs out before an item.
    return observation is None or _observation_kept_whole(observation)


def _unchanged_cost(value: Any) -> int:
    """What bounding ``value`` takes off the budget when neither :class:`_Bounder`
    (given enough budget) nor :func:`scrub_value` would change it; -1 when one would."""
    kind = type(value)
    if kind is dict:
        if len(value) > RETAINED_ITEMS:
            return -1
        total = 0
        for key, item in value.items():
            if type(key) is str:
                if not (key.isascii() or _clean(key)):
                    return -1
                total += len(key)
            else:
                total += 8
            if type(item) in _SMALL:
                total += 8
                continue
            cost = _unchanged_cost(item)
            if cost < 0:
                return -1
            total += cost
        return total
    if kind is str:
        if len(value) > RETAINED_CHARS or not _clean(value):
            return -1
        return len(value) + 2
    if kind is list:
        if len(value) > RETAINED_ITEMS:
            return -1
        total = 0
        for item in value:
            if type(item) in _SMALL:
                total += 8
                continue
            cost = _unchanged_cost(item)
            if cost < 0:
                return -1
            total += cost
        return total
    if kind is bytes:
        return -1 if len(value) > RETAINED_CHARS else len(value) * 2
    return 8


_SMALL = frozenset({int, float, bool, type(None)})
"""Values the bounder counts as 8 and keeps as they are."""


def _shown_value(value: Any) -> Any:
    return value if value is MISSING else _map_strings(value, for_terminal)


def displayed(result: CaseResult) -> CaseResult:
    """A copy of ``result`` for a screen: every text the implementation could have
    written (reason, output, traceback, observed and compared strings) passed through
    :func:`for_terminal`. Only for showing; the case name is the suite's and kept."""
    observation = result.observation
    return replace(
        result,
        reason=None if result.reason is None else for_terminal(result.reason),
        stdout=for_terminal(result.stdout),
        stderr=for_terminal(result.stderr),
        traceback=None if result.traceback is None else for_terminal(result.traceback),
        observation=None if observation is None else _shown_value(dict(observation)),
        mismatches=tuple(
            Mismatch(
                for_terminal(m.path),
                for_terminal(m.message),
                _shown_value(m.expected),
                _shown_value(m.observed),
            )
            for m in result.mismatches
        ),
    )
