"""The matrix table: cases by lanes under a fixed header line, a Line API view that
draws only the lines on screen (a matrix has as many rows as the suite has cases); the
cursor moves over cases only."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from cer.model import Status
from cer.results.matrix import CellState, Matrix
from cer.tui.state.matrix_layout import Entry, MatrixLayout

STATUS_COMPONENTS: dict[Status | None, str] = {
    Status.PASS: "matrix-table--pass",
    Status.FAIL: "matrix-table--fail",
    Status.ERRORED: "matrix-table--errored",
    Status.SKIPPED: "matrix-table--skipped",
    None: "matrix-table--pending",
}


class MatrixTable(ScrollView, can_focus=True):
    """The matrix's lines under a fixed header line; the cursor moves over cases only."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j,down", "cursor_down", "Down", show=False),
        Binding("k,up", "cursor_up", "Up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("home", "first", "First", show=False),
        Binding("end,G", "last", "Last", show=False),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "matrix-table--pass",
        "matrix-table--fail",
        "matrix-table--errored",
        "matrix-table--skipped",
        "matrix-table--pending",
        "matrix-table--heading",
        "matrix-table--muted",
        "matrix-table--mark",
        "matrix-table--cursor",
    }

    DEFAULT_CSS = """
    MatrixTable {
        height: 1fr;
        overflow-x: hidden;
        scrollbar-size-vertical: 1;
    }
    MatrixTable > .matrix-table--pass { color: $success; }
    MatrixTable > .matrix-table--fail { color: $error; text-style: bold; }
    MatrixTable > .matrix-table--errored { color: $accent; text-style: bold; }
    MatrixTable > .matrix-table--skipped { color: $text-muted; }
    MatrixTable > .matrix-table--pending { color: $text-muted; }
    MatrixTable > .matrix-table--heading { text-style: bold; }
    MatrixTable > .matrix-table--muted { color: $text-muted; }
    MatrixTable > .matrix-table--mark { color: $warning; text-style: bold; }
    MatrixTable > .matrix-table--cursor { background: $primary 25%; }
    MatrixTable:focus > .matrix-table--cursor { background: $primary 50%; }
    """

    def __init__(
        self,
        matrix: Matrix,
        *,
        statuses: Mapping[Status | None, Style] | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.matrix = matrix
        self.statuses = statuses
        """The case list's status styles, so that the theme colours both alike; the
        table's own component styles when None."""
        self.layout_: MatrixLayout | None = None
        self.entries: list[Entry] = []
        self.case_lines: list[int] = []
        """Which entries are cases: the cursor moves over these."""
        self.cursor = 0
        self.only: tuple[int, CellState] | None = None
        self._lines: dict[int, Strip] = {}

    # -- content ------------------------------------------------------------------------

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._lines.clear()
        if self.layout_ is not None:
            self.layout_ = self.make_layout(self.matrix, self.only)

    def _style(self, component: str) -> Style:
        return self.get_component_rich_style(component, partial=True)

    def make_layout(
        self, matrix: Matrix, only: tuple[int, CellState] | None = None
    ) -> MatrixLayout:
        """The layout with the theme's styles."""
        statuses = self.statuses
        if statuses is None:
            statuses = {status: self._style(name) for status, name in STATUS_COMPONENTS.items()}
        return MatrixLayout(
            matrix,
            styles=statuses,
            heading=self._style("matrix-table--heading"),
            muted=self._style("matrix-table--muted"),
            mark=self._style("matrix-table--mark"),
            only=only,
        )

    def show(
        self,
        matrix: Matrix,
        keep: str | None = None,
        only: tuple[int, CellState] | None = None,
    ) -> MatrixLayout:
        """Show ``matrix`` (narrowed to ``only``: one implementation's state); the
        cursor stays on the case called ``keep`` when it can. Returns the layout, whose
        totals and title the screen shows."""
        self.matrix = matrix
        self.only = only
        self.layout_ = self.make_layout(matrix, only)
        self.entries = self.layout_.entries()
        self.case_lines = [i for i, entry in enumerate(self.entries) if not isinstance(entry, str)]
        self._lines.clear()
        width = max((len(self.layout_.line(entry)) for entry in self.entries[:200]), default=20)
        self.virtual_size = Size(width, len(self.entries) + 1)
        position = 0
        if keep is not None:
            position = next(
                (n for n, line in enumerate(self.case_lines) if _name(self.entries[line]) == keep),
                0,
            )
        self.move_to(position)
        self.refresh()
        return self.layout_

    @property
    def cursor_name(self) -> str | None:
        """The highlighted case, if any."""
        if not self.case_lines:
            return None
        return _name(self.entries[self.case_lines[self.cursor]])

    @property
    def plain(self) -> str:
        """The header and every line as plain text, as a user would copy them."""
        if self.layout_ is None:
            return ""
        lines = [self.layout_.header().plain]
        lines.extend(self.layout_.line(entry).plain for entry in self.entries)
        return "\n".join(line.rstrip() for line in lines)

    # -- cursor -------------------------------------------------------------------------

    def move_to(self, position: int) -> None:
        if not self.case_lines:
            return
        previous = self.cursor
        self.cursor = max(0, min(position, len(self.case_lines) - 1))
        line = self.case_lines[self.cursor]
        # The header takes the first line; a section's title stays in sight at the top.
        top = line - 1 if line and isinstance(self.entries[line - 1], str) else line
        self.scroll_to_region(
            Region(0, top, 1, line - top + 2), animate=False, immediate=True, force=True
        )
        for old in (previous, self.cursor):
            if old < len(self.case_lines):
                self._lines.pop(self.case_lines[old], None)
        self.refresh()

    def action_cursor_down(self) -> None:
        self.move_to(self.cursor + 1)

    def action_cursor_up(self) -> None:
        self.move_to(self.cursor - 1)

    def action_page_down(self) -> None:
        self.move_to(self._case_near(self.case_lines[self.cursor] + self._page()))

    def action_page_up(self) -> None:
        self.move_to(self._case_near(self.case_lines[self.cursor] - self._page()))

    def action_first(self) -> None:
        self.move_to(0)

    def action_last(self) -> None:
        self.move_to(len(self.case_lines) - 1)

    def _page(self) -> int:
        return max(1, self.size.height - 2)

    def _case_near(self, line: int) -> int:
        """The position of the case at or before entry ``line`` (the first at worst)."""
        return max(0, bisect_right(self.case_lines, line) - 1)

    def on_click(self, event: events.Click) -> None:
        if event.y < 1:
            return
        line = int(self.scroll_offset.y) + event.y - 1
        if line < len(self.entries) and not isinstance(self.entries[line], str):
            self.move_to(self._case_near(line))

    # -- drawing ------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        base = self.rich_style
        if self.layout_ is None:
            return Strip.blank(width, base)
        if y == 0:
            return self._strip(self.layout_.header(), base).crop_extend(
                scroll_x, scroll_x + width, base
            )
        line = y - 1 + scroll_y
        if line >= len(self.entries):
            return Strip.blank(width, base)
        strip = self._lines.get(line)
        if strip is None:
            text = self.layout_.line(self.entries[line])
            if self.case_lines and line == self.case_lines[self.cursor]:
                text.pad_right(max(0, width - len(text)))
                text.stylize(self._style("matrix-table--cursor"))
            strip = self._strip(text, base)
            self._lines[line] = strip
        return strip.crop_extend(scroll_x, scroll_x + width, base)

    def _strip(self, text: Text, base: Style) -> Strip:
        segments = [
            segment for segment in text.render(self.app.console, end="") if segment.text != "\n"
        ]
        return Strip(Segment.apply_style(segments, base))


def _name(entry: Entry) -> str:
    """The case an entry shows (a title's own text for a title)."""
    return entry if isinstance(entry, str) else entry.case_name
