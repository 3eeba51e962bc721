"""The lines of the Matrix view: cases by implementations, disagreements first.

Pure Rich, no Textual, so that the order and the wording can be tested directly. The
view lists the matrix in sections: first the cases the implementations observed
differently (whatever the suite expects, since divergence between implementations of
one module is what its author needs to see), then the cases they all errored, then
the cases not passed everywhere, then those passed everywhere, then those deselected
everywhere; declared order within each. Each case shows its input beside the cells.
Narrowed to one implementation's state (``only``: what it fails, errors on, knows to
fail or skips), the view lists just those cases. Per-implementation totals, the
ranking (fewest unsuccessful cases first, with a bar and the share passed) and a legend
close it.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass, field

from rich.style import Style
from rich.text import Text

from cer.model import RunResult, Status
from cer.results.conformance import conformance_of
from cer.results.matrix import Agreement, CellState, Matrix, Row
from cer.text.tomltext import inline
from cer.tui.state.formatting import SYMBOLS

WORDS: dict[Status | None, str] = {
    Status.PASS: "pass",
    Status.FAIL: "fail",
    Status.ERRORED: "error",
    Status.SKIPPED: "skip",
    None: "–",
}
STATE_CELLS: dict[str | None, str] = {
    **{status.value: f"{SYMBOLS[status]} {WORDS[status]}" for status in Status},
    "known": "◇ known",
    None: f"{SYMBOLS[None]} {WORDS[None]}",
}
"""A cell's text by its state (``known``: a failure the baseline lists, never a pass)."""
ONLY_WORDS: dict[str, str] = {
    "fail": "fails",
    "errored": "errors on",
    "known": "knows to fail",
    "skipped": "skips",
}
FILTER_STATES: tuple[CellState, ...] = ("fail", "errored", "known", "skipped")
INPUT_WIDTH = 28
"""Cells of a case's input beside its verdicts (cut with an ellipsis)."""
BAR = 20
_BAR_CHARS = {"pass": "█", "known": "▒", "fail": "▓", "errored": "▓", "skipped": "░"}
MARKS: dict[Agreement, str] = {Agreement.DISAGREE: "≠", Agreement.ALL_ERRORED: "‼"}
NAME_MAX = 40
CELL_MIN = 7
"""A cell holds a symbol and a word (``✔ pass``); its label may make it wider."""


@dataclass(frozen=True)
class Section:
    """A titled run of rows of the view."""

    kind: str
    """``disagree``, ``all_errored``, ``failing``, ``passed`` or ``deselected``."""
    title: str
    rows: tuple[Row, ...]


def _rank(row: Row) -> int:
    return row.rank


def sections(matrix: Matrix) -> tuple[Section, ...]:
    """The matrix's rows in the view's order; empty sections are left out."""
    apart = (Agreement.DISAGREE, Agreement.ALL_ERRORED)
    disagree: list[Row] = []
    errored: list[Row] = []
    by_rank: tuple[list[Row], ...] = ([], [], [])
    for row in matrix.declared:
        if row.agreement is Agreement.DISAGREE:
            disagree.append(row)
        elif row.agreement is Agreement.ALL_ERRORED:
            errored.append(row)
    # The rows are sorted by rank (failing, not passed, passed, deselected): find where
    # each rank starts by bisection, since a row's rank is costly to compute 65,000 times.
    rows = matrix.rows
    passed_from = bisect_left(rows, 2, key=_rank)
    deselected_from = bisect_left(rows, 3, lo=passed_from, key=_rank)
    for number, (start, end) in enumerate(
        ((0, passed_from), (passed_from, deselected_from), (deselected_from, len(rows)))
    ):
        by_rank[number].extend(row for row in rows[start:end] if row.agreement not in apart)
    failing, passed, deselected = (tuple(part) for part in by_rank)

    def plural(count: int, word: str) -> str:
        return f"{count} {word}{'s' if count != 1 else ''}"

    found = [
        Section(
            "disagree",
            f"≠ {plural(len(disagree), 'disagreement')}: the implementations observed "
            "different things",
            tuple(disagree),
        ),
        Section(
            "all_errored",
            f"‼ {plural(len(errored), 'case')} every implementation errored: nothing to compare",
            tuple(errored),
        ),
        Section(
            "failing",
            f"✘ {plural(len(failing), 'case')} not passed everywhere, in agreement",
            failing,
        ),
        Section(
            "passed",
            f"✔ {plural(len(passed), 'case')} passed everywhere, in agreement",
            passed,
        ),
        Section(
            "deselected",
            f"○ {plural(len(deselected), 'case')} deselected everywhere",
            deselected,
        ),
    ]
    return tuple(section for section in found if section.rows)


Entry = str | Row
"""One line of the view: a section's title (a string, empty for a blank line), or a
case's row. Rows are the matrix's own, so that 65,000 of them cost no new objects."""


def legend_word(run: RunResult) -> str:
    """The verdict word a lane's legend shows: decided as every surface decides it
    (:func:`cer.results.conformance.conformance_of`), but ``passed`` where that would
    be ``conformant``: the matrix does not judge the module's coverage, so it never
    claims conformance (cer run's verdict and the Coverage pane do)."""
    word = conformance_of(run).word
    return "passed" if word == "conformant" else word


@dataclass
class MatrixLayout:
    """Column widths for a matrix, and its lines as styled text."""

    matrix: Matrix
    styles: Mapping[Status | None, Style] = field(default_factory=dict)
    heading: Style = field(default_factory=lambda: Style(bold=True))
    muted: Style = field(default_factory=lambda: Style(dim=True))
    mark: Style = field(default_factory=lambda: Style(bold=True))
    known: Style = field(default_factory=lambda: Style(color="magenta", bold=True))
    only: tuple[int, CellState] | None = None
    """Show only the cases column ``only[0]`` has in state ``only[1]``."""

    def __post_init__(self) -> None:
        names = [len(row.case_name) for row in self.matrix.rows]
        self.name_width = min(max([*names, len("case"), len("errored")]), NAME_MAX) + 2
        self.cell_widths = tuple(max(len(label), CELL_MIN) + 2 for label in self.matrix.labels)

    def entries(self) -> list[Entry]:
        """Every line below the header: section titles, their rows, a blank between."""
        lines: list[Entry] = []
        number = 0
        for section in sections(self.matrix):
            rows = section.rows
            if self.only is not None:
                index, state = self.only
                rows = tuple(row for row in rows if row.states and row.states[index] == state)
                if not rows:
                    continue
            if number:
                lines.append("")
            shown = f" ({len(rows)} shown)" if len(rows) != len(section.rows) else ""
            lines.append(section.title + shown)
            lines.extend(rows)
            number += 1
        return lines

    def _style(self, status: Status | None) -> Style:
        return self.styles.get(status, Style())

    def header(self) -> Text:
        text = Text("   ")
        text.append(_fit("case", self.name_width), self.heading)
        for label, width in zip(self.matrix.labels, self.cell_widths, strict=True):
            text.append(_fit(label, width), self.heading)
        text.append(_fit("input", INPUT_WIDTH + 2), self.heading)
        text.append("differs in", self.heading)
        return text

    def line(self, entry: Entry) -> Text:
        """A section title in bold, or a case: its mark, name, cells and differing keys."""
        if isinstance(entry, str):
            return Text(f" {entry}", self.heading) if entry else Text("")
        row = entry
        mark = MARKS.get(row.agreement, " ")
        text = Text(" ")
        text.append(f"{mark} ", self.mark if mark.strip() else Style())
        text.append(_fit(row.case_name, self.name_width))
        states = row.states or tuple(None if s is None else s.value for s in row.statuses)
        for state, width in zip(states, self.cell_widths, strict=True):
            style = self.known if state == "known" else self._style(_status(state))
            text.append(_fit(STATE_CELLS[state], width), style)
        text.append(_fit(" ".join(inline(dict(row.input)).split()), INPUT_WIDTH + 2), self.muted)
        if row.agreement is Agreement.DISAGREE:
            text.append(differs_in(row), self.muted)
        return text

    def totals(self) -> list[Text]:
        """Per-implementation counts under the cells, then each label's implementation."""
        lines = []
        # A run's summary is counted afresh on each look: count each one once.
        summaries = [column.summary for column in self.matrix.columns]
        for word, status, attribute in (
            ("passed", Status.PASS, "passed"),
            ("failed", Status.FAIL, "failed"),
            ("errored", Status.ERRORED, "errored"),
            ("skipped", Status.SKIPPED, "skipped"),
        ):
            text = Text("   ")
            text.append(_fit(word, self.name_width), self.heading)
            for summary, width in zip(summaries, self.cell_widths, strict=True):
                count: int = getattr(summary, attribute)
                text.append(_fit(str(count), width), self._style(status) if count else Style())
            lines.append(text)
        known = [
            sum(1 for row in self.matrix.rows if row.states and row.states[index] == "known")
            for index in range(len(self.matrix.columns))
        ]
        if any(known):
            text = Text("   ")
            text.append(_fit("known", self.name_width), self.heading)
            for count, width in zip(known, self.cell_widths, strict=True):
                text.append(_fit(str(count), width), self.known if count else Style())
            lines.append(text)
        width = max(len(label) for label in self.matrix.labels)
        lines.append(Text(""))
        lines.extend(self.ranking())
        lines.append(Text(""))
        for column in self.matrix.columns:
            legend = Text("   ")
            legend.append(column.label.ljust(width + 2), self.heading)
            legend.append(f"{column.implementation_id} — {legend_word(column.run)}", self.muted)
            if not column.observed:
                legend.append("  (observed nothing: left out of the comparison)", self.muted)
            lines.append(legend)
        return lines

    def ranking(self) -> list[Text]:
        """``1. ref  ████████████████████ 100.0%  12 pass · 0 fail · 0 error · 0 skip``."""
        standings = self.matrix.ranking
        width = max(len(s.label) for s in standings)
        lines = [Text("   ranking, fewest unsuccessful cases first", self.heading)]
        order: tuple[CellState, ...] = ("pass", "known", "fail", "errored", "skipped")
        for standing in standings:
            text = Text(f"   {standing.rank}. ")
            text.append(standing.label.ljust(width + 2), self.heading)
            widths = _bar_widths([standing.count(state) for state in order], BAR)
            for state, part in zip(order, widths, strict=True):
                style = self.known if state == "known" else self._style(_status(state))
                text.append(_BAR_CHARS[state] * part, style)
            text.append(" " * (BAR - sum(widths)))
            counts = (
                f"{standing.passed} pass · {standing.failed} fail · "
                f"{standing.errored} error · {standing.skipped} skip"
            )
            if standing.known:
                counts += f" · {standing.known} known"
            text.append(f" {standing.percent:5.1f}%  {counts}")
            lines.append(text)
        return lines

    def title(self, suite_name: str) -> str:
        matrix = self.matrix
        count = len(matrix.disagreements)
        only = ""
        if self.only is not None:
            index, state = self.only
            only = f" · only what {matrix.labels[index]} {ONLY_WORDS[state]}"
        return (
            f"Matrix of {suite_name}: {len(matrix.columns)} implementations × "
            f"{len(matrix.rows)} cases · {count} disagreement{'s' if count != 1 else ''}"
            f"{only} — enter shows the case, f filters, esc closes"
        )


def filters(matrix: Matrix) -> list[tuple[int, CellState]]:
    """The states worth narrowing the view to, per implementation: those some case has."""
    found = []
    for index in range(len(matrix.columns)):
        for state in FILTER_STATES:
            if any(row.states and row.states[index] == state for row in matrix.rows):
                found.append((index, state))
    return found


def _status(state: str | None) -> Status | None:
    return None if state is None or state == "known" else Status(state)


def _bar_widths(counts: list[int], width: int) -> list[int]:
    """Parts of a bar proportional to ``counts``, each count shown by one cell at least."""
    total = sum(counts)
    if not total:
        return [0] * len(counts)
    parts = [max(1, count * width // total) if count else 0 for count in counts]
    while sum(parts) > width:
        parts[parts.index(max(parts))] -= 1
    for index in sorted(range(len(counts)), key=lambda i: -(counts[i] * width % total)):
        if sum(parts) >= width:
            break
        if counts[index]:
            parts[index] += 1
    return parts


def differs_in(row: Row) -> str:
    """What a disagreement is about: the differing keys, who observed nothing, or only
    the status."""
    parts = []
    if row.differing_keys:
        parts.append(", ".join(row.differing_keys))
    silent = [label for group in row.groups if group.observation is None for label in group.labels]
    if silent:
        parts.append(f"{', '.join(silent)} observed nothing")
    return "; ".join(parts) or "the status only"


def _fit(text: str, width: int) -> str:
    """``text`` padded or cut (with an ellipsis) to ``width`` cells, one space after."""
    room = width - 1
    if len(text) > room:
        text = text[: max(room - 1, 0)] + "…"
    return text.ljust(room) + " "
