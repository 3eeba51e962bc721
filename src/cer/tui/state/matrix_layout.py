"""The lines of the Matrix view: cases by implementations, disagreements first.

Pure Rich, no Textual, so that the order and the wording can be tested directly. The
view lists the matrix in sections: first the cases the implementations observed
differently (whatever the suite expects, since divergence between implementations of
one module is what its author needs to see), then the cases they all errored, then
the cases not passed everywhere, then those passed everywhere, then those deselected
everywhere; declared order within each. Per-implementation totals and a legend close it.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass, field

from rich.style import Style
from rich.text import Text

from cer.matrix import Agreement, Matrix, Row
from cer.model import Status
from cer.tui.state.formatting import SYMBOLS

WORDS: dict[Status | None, str] = {
    Status.PASS: "pass",
    Status.FAIL: "fail",
    Status.ERRORED: "error",
    Status.SKIPPED: "skip",
    None: "–",
}
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


@dataclass
class MatrixLayout:
    """Column widths for a matrix, and its lines as styled text."""

    matrix: Matrix
    styles: Mapping[Status | None, Style] = field(default_factory=dict)
    heading: Style = field(default_factory=lambda: Style(bold=True))
    muted: Style = field(default_factory=lambda: Style(dim=True))
    mark: Style = field(default_factory=lambda: Style(bold=True))

    def __post_init__(self) -> None:
        names = [len(row.case_name) for row in self.matrix.rows]
        self.name_width = min(max([*names, len("case"), len("errored")]), NAME_MAX) + 2
        self.cell_widths = tuple(max(len(label), CELL_MIN) + 2 for label in self.matrix.labels)

    def entries(self) -> list[Entry]:
        """Every line below the header: section titles, their rows, a blank between."""
        lines: list[Entry] = []
        for number, section in enumerate(sections(self.matrix)):
            if number:
                lines.append("")
            lines.append(section.title)
            lines.extend(section.rows)
        return lines

    def _style(self, status: Status | None) -> Style:
        return self.styles.get(status, Style())

    def header(self) -> Text:
        text = Text("   ")
        text.append(_fit("case", self.name_width), self.heading)
        for label, width in zip(self.matrix.labels, self.cell_widths, strict=True):
            text.append(_fit(label, width), self.heading)
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
        for status, width in zip(row.statuses, self.cell_widths, strict=True):
            text.append(_fit(f"{SYMBOLS[status]} {WORDS[status]}", width), self._style(status))
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
        width = max(len(label) for label in self.matrix.labels)
        lines.append(Text(""))
        for column, summary in zip(self.matrix.columns, summaries, strict=True):
            legend = Text("   ")
            legend.append(column.label.ljust(width + 2), self.heading)
            legend.append(f"{column.implementation_id} — {summary.verdict}", self.muted)
            if not column.observed:
                legend.append("  (observed nothing: left out of the comparison)", self.muted)
            lines.append(legend)
        return lines

    def title(self, suite_name: str) -> str:
        matrix = self.matrix
        count = len(matrix.disagreements)
        return (
            f"Matrix of {suite_name}: {len(matrix.columns)} implementations × "
            f"{len(matrix.rows)} cases · {count} disagreement{'s' if count != 1 else ''}"
            " — enter shows the case, esc closes"
        )


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
