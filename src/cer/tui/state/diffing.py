"""Expected-versus-observed diffs as lines of Rich text, with whitespace made visible.

Strings are compared line by line with :mod:`difflib` (no junk heuristics, so large
HTML with repeated lines diffs correctly), only the changed hunks with three lines of
context are rendered, and changed line pairs get a character-level highlight. Tabs,
trailing spaces, carriage returns and line ends are drawn as visible marks, so that a
missing final newline or a tab-for-spaces swap cannot hide. Pure Rich, no Textual:
the app runs this in a thread.
"""

from __future__ import annotations

import pprint
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any

from rich.style import Style
from rich.text import Text

from cer.judge.compare import shown_mismatch_observed
from cer.judge.equality import format_value
from cer.model import MISSING, CaseResult, Mismatch, Status

CONTEXT_LINES = 3
"""Unchanged lines shown around each change."""

INTRALINE_LIMIT = 400
"""Longer line pairs are highlighted by common prefix and suffix instead of difflib,
whose character matching is quadratic in the worst case."""

TAB_SIZE = 4

NEWLINE_MARK = "⏎"
CARRIAGE_RETURN_MARK = "␍"
TAB_MARK = "→"
SPACE_MARK = "·"
NBSP_MARK = "⍽"


@dataclass(frozen=True)
class DiffStyles:
    """The styles a diff is drawn with; the diff pane fills them from the theme."""

    header: Style = field(default_factory=lambda: Style(bold=True))
    hunk: Style = field(default_factory=lambda: Style(dim=True))
    gutter: Style = field(default_factory=lambda: Style(dim=True))
    context: Style = field(default_factory=Style)
    removed: Style = field(default_factory=lambda: Style(color="red"))
    added: Style = field(default_factory=lambda: Style(color="green"))
    removed_strong: Style = field(default_factory=lambda: Style(color="red", reverse=True))
    added_strong: Style = field(default_factory=lambda: Style(color="green", reverse=True))
    whitespace: Style = field(default_factory=lambda: Style(dim=True))
    note: Style = field(default_factory=lambda: Style(italic=True, dim=True))


def render_result_diff(result: CaseResult, styles: DiffStyles) -> list[Text]:
    """Every mismatch of ``result`` as a diff, one :class:`Text` per screen line."""
    if not result.mismatches:
        if result.status is Status.PASS:
            return [Text("No differences: the case passed.", styles.note)]
        reason = result.reason or f"The case is {result.status.value}; nothing to compare."
        return [Text(line, styles.note) for line in reason.splitlines() or [""]]
    lines: list[Text] = []
    for number, mismatch in enumerate(result.mismatches):
        if number:
            lines.append(Text(""))
        lines.extend(render_mismatch(mismatch, styles))
    return lines


@dataclass(frozen=True)
class Sides:
    """What the two sides of a diff are called: the suite's expectation against the
    observation, or one implementation's observation against another's."""

    before: str = "expected"
    after: str = "observed"
    typed: bool = False
    """Name each scalar's type (``float 2.0`` against ``int 2``): between
    implementations the type is often the whole difference."""


EXPECTED_OBSERVED = Sides()


def render_mismatch(
    mismatch: Mismatch, styles: DiffStyles, sides: Sides = EXPECTED_OBSERVED
) -> list[Text]:
    """One mismatch: a heading with its path, then the difference."""
    heading = Text.assemble((f"▸ {mismatch.path or '(observation)'}", styles.header))
    lines = [heading]
    lines.extend(Text(f"  {line}", styles.note) for line in mismatch.message.splitlines())
    if shown_mismatch_observed(mismatch) is not None:
        # A missed bound on a measurement: the message says both, the measurement as
        # people read it (1129 ms); its raw float would only repeat it less readably.
        return lines
    lines.extend(render_values(mismatch.expected, mismatch.observed, styles, sides))
    return lines


def render_values(
    expected: Any, observed: Any, styles: DiffStyles, sides: Sides = EXPECTED_OBSERVED
) -> list[Text]:
    """The difference between two values: a line diff for strings and containers, the
    two values labelled for anything else."""
    lines: list[Text] = []
    if expected is MISSING or observed is MISSING:
        lines.append(_labelled(sides.before, expected, styles.removed, sides.typed))
        lines.append(_labelled(sides.after, observed, styles.added, sides.typed))
        return lines
    if isinstance(expected, str) and isinstance(observed, str):
        lines.extend(diff_strings(expected, observed, styles, sides))
        return lines
    if _is_container(expected) or _is_container(observed):
        before = pprint.pformat(expected, width=72, sort_dicts=False).splitlines()
        after = pprint.pformat(observed, width=72, sort_dicts=False).splitlines()
        lines.extend(diff_lines(before, after, styles, visible_whitespace=False, sides=sides))
        return lines
    lines.append(_labelled(sides.before, expected, styles.removed, sides.typed))
    lines.append(_labelled(sides.after, observed, styles.added, sides.typed))
    return lines


def diff_strings(
    expected: str, observed: str, styles: DiffStyles, sides: Sides = EXPECTED_OBSERVED
) -> list[Text]:
    """A line diff of two strings that keeps every line end and whitespace visible."""
    lines: list[Text] = []
    if expected == "":
        lines.append(Text(f"  ({_said(sides.before)} the empty string)", styles.note))
    if observed == "":
        lines.append(Text(f"  ({_said(sides.after)} the empty string)", styles.note))
    before = expected.splitlines(keepends=True)
    after = observed.splitlines(keepends=True)
    lines.extend(diff_lines(before, after, styles, visible_whitespace=True, sides=sides))
    return lines


def _said(side: str) -> str:
    """``expected``/``observed`` as they are, an implementation's label as ``X observed``."""
    return side if side in ("expected", "observed") else f"{side} observed"


def diff_lines(
    before: Sequence[str],
    after: Sequence[str],
    styles: DiffStyles,
    *,
    visible_whitespace: bool,
    sides: Sides = EXPECTED_OBSERVED,
) -> list[Text]:
    """Unified-style hunks of ``before`` (expected) against ``after`` (observed)."""
    matcher = SequenceMatcher(None, before, after, autojunk=False)
    width = len(str(max(len(before), len(after), 1)))
    lines: list[Text] = [
        Text.assemble(
            (f"- {sides.before}", styles.removed), "   ", (f"+ {sides.after}", styles.added)
        )
    ]

    def emit(sign: str, number: int, segments: list[tuple[str, Style]], style: Style) -> None:
        text = Text.assemble((f"{sign} {number:>{width}} │ ", styles.gutter))
        if sign != " ":
            text.stylize(style, 0, 1)
        for chunk, chunk_style in segments:
            text.append(chunk, chunk_style)
        lines.append(text)

    def plain(line: str, style: Style, changed: bool) -> list[tuple[str, Style]]:
        return _visible(line, style, styles.whitespace, visible_whitespace, all_spaces=changed)

    for group in matcher.get_grouped_opcodes(CONTEXT_LINES):
        first, last = group[0], group[-1]
        lines.append(
            Text(
                f"@@ {sides.before} {first[1] + 1}-{last[2]}, "
                f"{sides.after} {first[3] + 1}-{last[4]} @@",
                styles.hunk,
            )
        )
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for offset, line in enumerate(before[i1:i2]):
                    emit(" ", i1 + offset + 1, plain(line, styles.context, False), styles.context)
                continue
            removed = list(before[i1:i2])
            added = list(after[j1:j2])
            paired = min(len(removed), len(added)) if tag == "replace" else 0
            highlights = [_intraline(removed[k], added[k]) for k in range(paired)]
            for k, line in enumerate(removed):
                spans = highlights[k][0] if k < paired else None
                segments = _marked(
                    line, spans, styles.removed, styles.removed_strong, styles, visible_whitespace
                )
                emit("-", i1 + k + 1, segments, styles.removed)
            for k, line in enumerate(added):
                spans = highlights[k][1] if k < paired else None
                segments = _marked(
                    line, spans, styles.added, styles.added_strong, styles, visible_whitespace
                )
                emit("+", j1 + k + 1, segments, styles.added)
    if len(lines) == 1:
        lines.append(Text("  (no line differences)", styles.note))
    return lines


def _intraline(a: str, b: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Character ranges that differ between two paired lines, for each side."""
    if len(a) > INTRALINE_LIMIT or len(b) > INTRALINE_LIMIT:
        prefix = 0
        limit = min(len(a), len(b))
        while prefix < limit and a[prefix] == b[prefix]:
            prefix += 1
        suffix = 0
        while suffix < limit - prefix and a[len(a) - 1 - suffix] == b[len(b) - 1 - suffix]:
            suffix += 1
        return [(prefix, len(a) - suffix)], [(prefix, len(b) - suffix)]
    spans_a: list[tuple[int, int]] = []
    spans_b: list[tuple[int, int]] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if i2 > i1:
            spans_a.append((i1, i2))
        if j2 > j1:
            spans_b.append((j1, j2))
    return spans_a, spans_b


def _marked(
    line: str,
    spans: list[tuple[int, int]] | None,
    base: Style,
    strong: Style,
    styles: DiffStyles,
    visible_whitespace: bool,
) -> list[tuple[str, Style]]:
    """A changed line, its differing ranges in the strong style."""
    strong_at = bytearray(len(line))
    for start, end in spans or ():
        strong_at[start:end] = b"\x01" * (end - start)

    def style_at(index: int) -> Style:
        return strong if index < len(strong_at) and strong_at[index] else base

    return _visible(line, style_at, styles.whitespace, visible_whitespace, all_spaces=True)


def _visible(
    text: str,
    style: Style | Callable[[int], Style],
    whitespace: Style,
    enabled: bool,
    all_spaces: bool,
) -> list[tuple[str, Style]]:
    """``text`` split into styled runs, with invisible characters replaced by marks.

    Line ends, tabs and carriage returns are always marked; spaces are marked on
    changed lines, and trailing spaces everywhere. ``style`` may vary by position.
    """
    style_at = style if callable(style) else (lambda index: style)
    if not enabled:
        body = text.rstrip("\n")
        return _runs([(char, style_at(i)) for i, char in enumerate(body)])
    body = text
    ending = ""
    if body.endswith("\r\n"):
        body, ending = body[:-2], CARRIAGE_RETURN_MARK + NEWLINE_MARK
    elif body.endswith(("\n", "\r")):
        body, ending = body[:-1], NEWLINE_MARK if body.endswith("\n") else CARRIAGE_RETURN_MARK
    trailing_from = len(body.rstrip(" "))
    cells: list[tuple[str, Style]] = []
    column = 0
    for index, char in enumerate(body):
        mark: str | None = None
        if char == "\t":
            pad = TAB_SIZE - column % TAB_SIZE
            mark = TAB_MARK + " " * (pad - 1)
        elif char == " " and (all_spaces or index >= trailing_from):
            mark = SPACE_MARK
        elif char == "\u00a0":
            mark = NBSP_MARK
        elif char == "\r":
            mark = CARRIAGE_RETURN_MARK
        elif unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp"):
            mark = f"⟨U+{ord(char):04X}⟩"
        if mark is None:
            cells.append((char, style_at(index)))
            column += 1
        else:
            cells.append((mark, style_at(index) + whitespace))
            column += len(mark)
    if ending:
        cells.append((ending, style_at(len(text) - 1) + whitespace))
    return _runs(cells)


def _runs(cells: list[tuple[str, Style]]) -> list[tuple[str, Style]]:
    """Adjacent cells of one style joined into one run."""
    runs: list[tuple[str, Style]] = []
    chunk: list[str] = []
    current: Style | None = None
    for text, style in cells:
        if current is not None and style != current:
            runs.append(("".join(chunk), current))
            chunk = []
        current = style
        chunk.append(text)
    if current is not None:
        runs.append(("".join(chunk), current))
    return runs


def _labelled(label: str, value: Any, style: Style, typed: bool = False) -> Text:
    shown = "<missing>" if value is MISSING else format_value(value, limit=2000)
    if typed:
        shown = describe_value(value, limit=2000)
    return Text.assemble((f"  {label}: ", style), shown)


def describe_value(value: Any, limit: int = 80) -> str:
    """``float 2.0``, ``int 2``, ``None``, ``<missing>``: a value with its type, for
    comparing implementations whose observations may differ by type alone."""
    if value is MISSING:
        return "<missing>"
    if value is None:
        return "None"
    return f"{type(value).__name__} {format_value(value, limit)}"


def _is_container(value: Any) -> bool:
    return isinstance(value, (list, tuple, dict))
