"""The lines of the Matrix view: cases by implementations, disagreements first.

Pure Rich, no Textual, so that the order and the wording can be tested directly. The
view lists the matrix in sections: first the cases the implementations observed
differently (whatever the suite expects, since divergence between implementations of
one module is what its author needs to see), then the cases they all errored, then
the cases not passed everywhere, then those passed everywhere, then those deselected
everywhere; declared order within each. Per-implementation totals and a legend close it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from rich.style import Style
from rich.text import Text

from cer.matrix import Agreement, Matrix, Row
from cer.model import Status
from cer.tui.formatting import SYMBOLS

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


def sections(matrix: Matrix) -> tuple[Section, ...]:
    """The matrix's rows in the view's order; empty sections are left out."""
    disagree = matrix.disagreements
    errored = matrix.all_errored
    apart = {row.case_name for row in (*disagree, *errored)}
    failing = tuple(row for row in matrix.rows if row.rank in (0, 1) and row.case_name not in apart)
    passed = tuple(row for row in matrix.rows if row.rank == 2 and row.case_name not in apart)
    deselected = tuple(row for row in matrix.rows if row.rank == 3 and row.case_name not in apart)

    def plural(count: int, word: str) -> str:
        return f"{count} {word}{'s' if count != 1 else ''}"

    found = [
        Section(
            "disagree",
            f"≠ {plural(len(disagree), 'disagreement')}: the implementations observed "
            "different things",
            disagree,
        ),
        Section(
            "all_errored",
            f"‼ {plural(len(errored), 'case')} every implementation errored: nothing to compare",
            errored,
        ),
        Section(
            "failing",
            f"✘ {plural(len(failing), 'case')} not passed everywhere, observed alike",
            failing,
        ),
        Section(
            "passed",
            f"✔ {plural(len(passed), 'case')} passed everywhere, observed alike",
            passed,
        ),
        Section(
            "deselected",
            f"○ {plural(len(deselected), 'case')} deselected everywhere",
            deselected,
        ),
    ]
    return tuple(section for section in found if section.rows)


@dataclass(frozen=True)
class Entry:
    """One line of the view: a section's title (``row`` None), or a case."""

    text: str
    row: Row | None = None


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
                lines.append(Entry(""))
            lines.append(Entry(section.title))
            lines.extend(Entry(row.case_name, row) for row in section.rows)
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
        row = entry.row
        if row is None:
            return Text(f" {entry.text}", self.heading) if entry.text else Text("")
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
        for word, status, attribute in (
            ("passed", Status.PASS, "passed"),
            ("failed", Status.FAIL, "failed"),
            ("errored", Status.ERRORED, "errored"),
            ("skipped", Status.SKIPPED, "skipped"),
        ):
            text = Text("   ")
            text.append(_fit(word, self.name_width), self.heading)
            for column, width in zip(self.matrix.columns, self.cell_widths, strict=True):
                count: int = getattr(column.summary, attribute)
                text.append(_fit(str(count), width), self._style(status) if count else Style())
            lines.append(text)
        width = max(len(label) for label in self.matrix.labels)
        lines.append(Text(""))
        for column in self.matrix.columns:
            legend = Text("   ")
            legend.append(column.label.ljust(width + 2), self.heading)
            legend.append(f"{column.implementation_id} — {column.summary.verdict}", self.muted)
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
