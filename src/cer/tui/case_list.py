"""The case list: a virtual, Line API list that draws only the rows on screen.

One widget per case (or a DataTable) takes seconds and a hundred megabytes at 65,000
cases; here a frame costs the same for 60 rows or 65,000. The cursor follows a case
*name*, so reruns, filters and reloaded suites keep the same case selected.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from cer.model import Status
from cer.tui.board import Board, Change, Row
from cer.tui.formatting import CHANGE_MARKS, FLAKY_MARK, SYMBOLS, format_ms
from cer.tui.keys import LIST_KEYS, bindings

STATUS_COMPONENTS: dict[Status | None, str] = {
    Status.PASS: "case-list--pass",
    Status.FAIL: "case-list--fail",
    Status.ERRORED: "case-list--errored",
    Status.SKIPPED: "case-list--skipped",
    None: "case-list--pending",
}

PREFIX_WIDTH = 5
"""Cells before the name: a space, the status symbol, the change mark, the flaky mark
and a space."""


@dataclass(frozen=True)
class Columns:
    """Widths of the list's columns for one widget width; zero hides a column."""

    name: int
    case_class: int
    category: int
    severity: int
    time: int = 8


class CaseList(ScrollView, can_focus=True):
    """Rows of cases in declared order: status, change mark, flaky mark, name, class,
    category, severity and time."""

    BINDINGS: ClassVar[list[BindingType]] = list(bindings(LIST_KEYS))

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "case-list--pass",
        "case-list--fail",
        "case-list--errored",
        "case-list--skipped",
        "case-list--pending",
        "case-list--stale",
        "case-list--fixed",
        "case-list--regressed",
        "case-list--flaky",
        "case-list--column",
        "case-list--cursor",
        "case-list--empty",
    }

    DEFAULT_CSS = """
    CaseList {
        height: 1fr;
        overflow-x: hidden;
        scrollbar-size-vertical: 1;
    }
    CaseList > .case-list--flaky {
        color: $warning;
        text-style: bold;
    }
    """

    @dataclass
    class CaseHighlighted(Message):
        """The cursor moved to another case (None: the list is empty)."""

        case_list: CaseList
        name: str | None

        @property
        def control(self) -> CaseList:
            return self.case_list

    def __init__(
        self,
        board: Board,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.board = board
        self.cursor = 0
        self.cursor_name: str | None = None
        self._max_widths = (4, 10, 8, 8)
        self._columns: tuple[int, Columns] | None = None
        self._style_cache: dict[str, Style] = {}

    # -- data -----------------------------------------------------------------------

    def rows_changed(self, *, layout: bool = False) -> None:
        """Redraw after the board changed; keep the cursor on the same case."""
        if layout:
            self._measure()
        visible = self.board.visible()
        self.virtual_size = Size(self._content_width(), len(visible))
        position = (
            None if self.cursor_name is None else self.board.visible_position(self.cursor_name)
        )
        if position is None:
            self.cursor = max(0, min(self.cursor, len(visible) - 1))
        else:
            self.cursor = position
        self._announce()
        self.refresh()

    def _measure(self) -> None:
        rows = self.board.rows
        if not rows:
            self._max_widths = (4, 10, 8, 8)
        else:
            self._max_widths = (
                max(len(row.case.name) for row in rows),
                max(len(row.case.case_class) for row in rows),
                max(len(row.case.category) for row in rows),
                max(len(row.case.severity or "") for row in rows),
            )
        self._columns = None

    def _content_width(self) -> int:
        columns = self._layout(max(self.scrollable_content_region.width, 20))
        return (
            PREFIX_WIDTH
            + columns.name
            + columns.case_class
            + columns.category
            + columns.severity
            + (columns.time)
        )

    def _layout(self, width: int) -> Columns:
        if self._columns is not None and self._columns[0] == width:
            return self._columns[1]
        name_w, class_w, category_w, severity_w = self._max_widths
        name_w = min(max(name_w, 4), 60) + 2
        wanted = [class_w + 2, category_w + 2, severity_w + 2 if severity_w else 0]
        fixed = PREFIX_WIDTH + 8
        room = width - fixed - min(name_w, 24)
        shown: list[int] = []
        for extra in wanted:
            if extra and room >= extra:
                shown.append(extra)
                room -= extra
            else:
                shown.append(0)
        name_w = max(8, min(name_w, width - fixed - sum(shown)))
        columns = Columns(name_w, shown[0], shown[1], shown[2])
        self._columns = (width, columns)
        return columns

    # -- cursor -----------------------------------------------------------------------

    @property
    def highlighted_row(self) -> Row | None:
        visible = self.board.visible()
        if not visible:
            return None
        return self.board.rows[visible[min(self.cursor, len(visible) - 1)]]

    def move_to(self, position: int) -> None:
        """Put the cursor on the visible row at ``position`` (clamped)."""
        count = len(self.board.visible())
        if count == 0:
            return
        previous = self.cursor
        self.cursor = max(0, min(position, count - 1))
        self.scroll_to_region(
            Region(0, self.cursor, 1, 1), animate=False, immediate=True, force=True
        )
        if previous != self.cursor:
            self.refresh_line(previous)
            self.refresh_line(self.cursor)
        self._announce()

    def select_name(self, name: str) -> bool:
        """Put the cursor on the case called ``name``, if it is visible."""
        position = self.board.visible_position(name)
        if position is None:
            return False
        self.move_to(position)
        return True

    def refresh_line(self, position: int) -> None:
        """Redraw one visible row by its position in the list."""
        y = position - int(self.scroll_offset.y)
        if 0 <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    def _announce(self) -> None:
        row = self.highlighted_row
        name = None if row is None else row.name
        if name != self.cursor_name:
            self.cursor_name = name
            self.post_message(self.CaseHighlighted(self, name))

    def action_cursor_down(self) -> None:
        self.move_to(self.cursor + 1)

    def action_cursor_up(self) -> None:
        self.move_to(self.cursor - 1)

    def action_page_down(self) -> None:
        self.move_to(self.cursor + max(1, self.size.height - 1))

    def action_page_up(self) -> None:
        self.move_to(self.cursor - max(1, self.size.height - 1))

    def action_first(self) -> None:
        self.move_to(0)

    def action_last(self) -> None:
        self.move_to(len(self.board.visible()) - 1)

    def on_resize(self, event: events.Resize) -> None:
        self.rows_changed()

    def on_click(self, event: events.Click) -> None:
        self.move_to(int(self.scroll_offset.y) + event.y)

    # -- drawing ----------------------------------------------------------------------

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._style_cache.clear()

    def _style(self, component: str) -> Style:
        style = self._style_cache.get(component)
        if style is None:
            style = self._style_cache[component] = self.get_component_rich_style(
                component, partial=True
            )
        return style

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        position = y + scroll_y
        visible = self.board.visible()
        width = self.scrollable_content_region.width
        base = self.rich_style
        if position >= len(visible):
            if position == 0:
                message = "No cases match the filters." if self.board.rows else "No cases yet."
                empty = Strip([Segment(f" {message}", base + self._style("case-list--empty"))])
                return empty.adjust_cell_length(width, base)
            return Strip.blank(width, base)
        row = self.board.rows[visible[position]]
        strip = self._render_row(row, position == self.cursor, base)
        return strip.crop_extend(scroll_x, scroll_x + width, base)

    def _render_row(self, row: Row, is_cursor: bool, base: Style) -> Strip:
        columns = self._layout(max(self.scrollable_content_region.width, 20))
        status = row.status
        line_style = base
        if row.stale:
            line_style = base + self._style("case-list--stale")
        status_style = line_style + self._style(STATUS_COMPONENTS[status])
        change = None if row.stale else row.change
        change_style = status_style
        if change is Change.FIXED:
            change_style = line_style + self._style("case-list--fixed")
        elif change is Change.REGRESSED:
            change_style = line_style + self._style("case-list--regressed")
        column_style = line_style + self._style("case-list--column")
        case = row.case
        time = format_ms(row.result.elapsed_ms if row.result is not None else None)
        flaky = case.name in self.board.flaky
        segments = [
            Segment(f" {SYMBOLS[status]}", status_style),
            Segment(CHANGE_MARKS[change], change_style),
            Segment(
                f"{FLAKY_MARK if flaky else ' '} ",
                line_style + self._style("case-list--flaky") if flaky else line_style,
            ),
            Segment(_fit(case.name, columns.name), line_style),
        ]
        if columns.case_class:
            segments.append(Segment(_fit(case.case_class, columns.case_class), column_style))
        if columns.category:
            segments.append(Segment(_fit(case.category, columns.category), column_style))
        if columns.severity:
            segments.append(Segment(_fit(case.severity or "", columns.severity), column_style))
        segments.append(Segment(time.rjust(columns.time - 1) + " ", column_style))
        if is_cursor:
            cursor = self._style("case-list--cursor")
            segments = [Segment(text, (style or Style()) + cursor) for text, style, _ in segments]
        return Strip(segments)


def _fit(text: str, width: int) -> str:
    """``text`` padded or cut (with an ellipsis) to ``width`` cells, one space after."""
    room = width - 1
    if len(text) > room:
        text = text[: max(room - 1, 0)] + "…"
    return text.ljust(room) + " "
