"""The case list: a virtual, Line API list that draws only the rows on screen.

One widget per case (or a DataTable) takes seconds and a hundred megabytes at 65,000
cases; here a frame costs the same for 60 rows or 65,000. The cursor follows a case
*name*, so reruns, filters and reloaded suites keep the same case selected.

A header line names the columns (case, class, category, severity, time; with a
known-failures baseline, ``known`` before the time, where a known failure's row,
dimmed, says ``known`` and a listed case that passes says ``stale``). With several
implementations each row has one status cell per implementation, under the label that
names it, and a ``≠`` where they observed different things; the header line is drawn by
the list itself, so that it always lines up with the cells.
"""

from __future__ import annotations

from collections.abc import Sequence
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
from cer.results.matrix import Agreement
from cer.tui.keys import LIST_KEYS, bindings
from cer.tui.state.board import Board, Change, Row
from cer.tui.state.formatting import CHANGE_MARKS, FLAKY_MARK, SYMBOLS, column_labels, format_ms
from cer.tui.state.known import KNOWN_MARK, STALE_MARK, Listing

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

LANE_MIN = 3
LANE_MAX = 12
"""Bounds of an implementation's cell width (its label's length, plus a space): wide
enough for the status, change and flaky marks, narrow enough for four of them."""
NAME_ROOM = 24
"""Cells the name keeps before the implementations' cells give up their labels' width."""
AGREEMENT_WIDTH = 2
"""The ``≠`` mark of a row whose implementations disagree, and a space."""
AGREEMENT_MARKS: dict[Agreement | None, str] = {Agreement.DISAGREE: "≠"}
LISTING_WIDTH = 7
"""The ``known``/``stale`` column of a list with a known-failures baseline."""
LISTING_WORDS: dict[Listing, str] = {"known": KNOWN_MARK, "stale": STALE_MARK, "otherwise": ""}
"""What the column says of a listed case: a known failure, or a stale entry (a listed
case failing otherwise than listed is a regression, shown as any failure)."""
STALE_ENTRY_MARK = "!"
"""The mark of a lane's cell whose baseline entry is stale (several implementations)."""


@dataclass(frozen=True)
class Columns:
    """Widths of the list's columns for one widget width; zero hides a column."""

    name: int
    case_class: int
    category: int
    severity: int
    time: int = 8
    lanes: tuple[int, ...] = ()
    """With several implementations, the width of each one's cell."""
    listing: int = 0
    """The ``known``/``stale`` column, shown with a known-failures baseline."""


class CaseList(ScrollView, can_focus=True):
    """Rows of cases in declared order: status, change mark, flaky mark, name, class,
    category, severity and time; with several implementations (``labels``), one status
    cell per implementation and an agreement mark instead of one status and the time."""

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
        "case-list--header",
        "case-list--disagree",
        "case-list--known",
        "case-list--stale-entry",
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
    CaseList > .case-list--header {
        text-style: bold underline;
    }
    CaseList > .case-list--disagree {
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
        labels: Sequence[str] = (),
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.board = board
        self.labels = tuple(labels) if len(labels) > 1 else ()
        """The implementations' labels when there are several (the board's peers hold
        their rows); empty for one implementation."""
        self.header = 1
        """Lines above the rows: the columns' names (with several implementations, the
        labels over their cells)."""
        self.heads = column_labels(self.labels)
        """The labels as the header shows them (without a prefix they all share)."""
        self.cursor = 0
        self.cursor_name: str | None = None
        self._max_widths = (4, 10, 8, 8)
        self._columns: tuple[int, Columns] | None = None
        self._style_cache: dict[str, Style] = {}
        self._frame: tuple[int, Style] | None = None
        """The content width and base style while :meth:`render_lines` draws."""

    # -- data -----------------------------------------------------------------------

    def rows_changed(self, *, layout: bool = False) -> None:
        """Redraw after the board changed; keep the cursor on the same case."""
        if layout:
            self._measure()
        visible = self.board.visible()
        self.virtual_size = Size(self._content_width(), len(visible) + self.header)
        position = (
            None if self.cursor_name is None else self.board.visible_position(self.cursor_name)
        )
        if position is None:
            self.cursor = max(0, min(self.cursor, len(visible) - 1))
        else:
            self.cursor = position
        self._announce()
        self.refresh()

    def rows_recorded(self, indexes: Sequence[int] | None) -> None:
        """Redraw after results arrived for the rows at ``indexes`` (into the board's
        rows; None: the visible rows changed, see :meth:`Board.record`).

        While the visible rows stay the same, the size, the cursor and the other lines
        stay as they are: only the lines on screen whose row took a result are drawn
        again, so that a streaming run of 100,000 cases costs a frame what the rows on
        screen cost, not a repaint of the whole list per batch.
        """
        if indexes is None or not self.board.visible_settled:
            self.rows_changed()
            return
        visible = self.board.visible()
        top = int(self.scroll_offset.y)
        bottom = top + max(self.size.height - self.header, 0)
        if not isinstance(visible, range):
            for index in indexes:
                position = self.board.visible_position_of(index)
                if position is not None and top <= position < bottom:
                    self.refresh_line(position)
            return
        for index in indexes:
            position = index - visible.start
            if top <= position < bottom:
                self.refresh_line(position)

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

    @staticmethod
    def _prefix_width(columns: Columns) -> int:
        """Cells before the name."""
        if not columns.lanes:
            return PREFIX_WIDTH
        return 1 + sum(columns.lanes) + AGREEMENT_WIDTH

    def _content_width(self) -> int:
        columns = self._layout(max(self.scrollable_content_region.width, 20))
        return (
            self._prefix_width(columns)
            + columns.name
            + columns.case_class
            + columns.category
            + columns.severity
            + columns.listing
            + (columns.time)
        )

    def _layout(self, width: int) -> Columns:
        if self._columns is not None and self._columns[0] == width:
            return self._columns[1]
        name_w, class_w, category_w, severity_w = self._max_widths
        name_w = min(max(name_w, 4), 60) + 2
        wanted = [class_w + 2, category_w + 2, severity_w + 2 if severity_w else 0]
        lanes: tuple[int, ...] = ()
        listing = LISTING_WIDTH if self.board.known is not None and not self.labels else 0
        fixed = PREFIX_WIDTH + 8 + listing
        if self.labels:
            lanes = tuple(max(LANE_MIN, min(len(head), LANE_MAX)) + 1 for head in self.heads)
            if width - (1 + sum(lanes) + AGREEMENT_WIDTH) < NAME_ROOM:
                # Too narrow for the labels: symbols only, the header cut to fit.
                lanes = tuple(LANE_MIN + 1 for _ in self.heads)
            fixed = 1 + sum(lanes) + AGREEMENT_WIDTH
        # The name first: the other columns are shown only in the room the whole name
        # leaves (each as wide as its widest value), and a hidden one gives its room back.
        room = width - fixed - name_w
        shown: list[int] = []
        for extra in wanted:
            if extra and room >= extra:
                shown.append(extra)
                room -= extra
            else:
                shown.append(0)
        name_w = max(8, min(name_w, width - fixed - sum(shown)))
        columns = Columns(name_w, shown[0], shown[1], shown[2], 0 if lanes else 8, lanes, listing)
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
            Region(0, self.cursor, 1, 1 + self.header), animate=False, immediate=True, force=True
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
        y = position - int(self.scroll_offset.y) + self.header
        if self.header <= y < self.size.height:
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
        self.move_to(self.cursor + max(1, self.size.height - 1 - self.header))

    def action_page_up(self) -> None:
        self.move_to(self.cursor - max(1, self.size.height - 1 - self.header))

    def action_first(self) -> None:
        self.move_to(0)

    def action_last(self) -> None:
        self.move_to(len(self.board.visible()) - 1)

    def on_resize(self, event: events.Resize) -> None:
        self.rows_changed()

    def on_click(self, event: events.Click) -> None:
        if event.y < self.header:
            return
        self.move_to(int(self.scroll_offset.y) + event.y - self.header)

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

    def render_lines(self, crop: Region) -> list[Strip]:
        """Draw the lines of ``crop``, reading the widget's style and width once for
        all of them (each costs more to compute than a row costs to draw)."""
        self._frame = (self.scrollable_content_region.width, self.rich_style)
        try:
            return super().render_lines(crop)
        finally:
            self._frame = None

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        if self._frame is None:
            width, base = self.scrollable_content_region.width, self.rich_style
        else:
            width, base = self._frame
        if y < self.header:
            return self._render_header(base).crop_extend(scroll_x, scroll_x + width, base)
        position = y - self.header + scroll_y
        visible = self.board.visible()
        if position >= len(visible):
            if position == 0:
                message = "No cases match the filters." if self.board.rows else "No cases yet."
                empty = Strip([Segment(f" {message}", base + self._style("case-list--empty"))])
                return empty.adjust_cell_length(width, base)
            return Strip.blank(width, base)
        index = visible[position]
        if self.labels:
            strip = self._render_lanes(index, position == self.cursor, base)
        else:
            strip = self._render_row(self.board.rows[index], position == self.cursor, base)
        return strip.crop_extend(scroll_x, scroll_x + width, base)

    def _width(self) -> int:
        """The content's width (read once a frame while drawing)."""
        if self._frame is not None:
            return self._frame[0]
        return self.scrollable_content_region.width

    def _render_header(self, base: Style) -> Strip:
        """The labels over their cells, and the names of the other columns."""
        columns = self._layout(max(self._width(), 20))
        style = base + self._style("case-list--header")
        plain = base + self._style("case-list--column")
        if self.labels:
            segments = [Segment(" ", plain)]
            for label, lane_width in zip(self.heads, columns.lanes, strict=True):
                segments.append(Segment(_fit(label, lane_width), style))
            segments.append(Segment(" " * AGREEMENT_WIDTH, plain))
        else:
            segments = [Segment(" " * PREFIX_WIDTH, plain)]
        segments.append(Segment(_fit("case", columns.name), style))
        for title, column_width in (
            ("class", columns.case_class),
            ("category", columns.category),
            ("severity", columns.severity),
        ):
            if column_width:
                segments.append(Segment(_fit(title, column_width), style))
        if columns.listing:
            segments.append(Segment(_fit("known", columns.listing), style))
        if columns.time:
            segments.append(Segment(" " * (columns.time - 5), plain))
            segments.append(Segment("time", style))
            segments.append(Segment(" ", plain))
        return Strip(segments)

    def _render_lanes(self, index: int, is_cursor: bool, base: Style) -> Strip:
        """One case of several implementations: a cell each, then the agreement mark."""
        columns = self._layout(max(self._width(), 20))
        board = self.board
        lanes = board.lanes_at(index)
        case = lanes[0].case
        stale_style = base + self._style("case-list--stale")
        any_stale = any(lane.stale for lane in lanes)
        line_style = stale_style if any_stale else base
        segments = [Segment(" ", base)]
        for lane, lane_width, lane_board in zip(
            lanes, columns.lanes, (board, *board.peers), strict=True
        ):
            cell_style = stale_style if lane.stale else base
            listed = lane_board.listing(lane)
            if listed == "known":
                cell_style = cell_style + self._style("case-list--known")
            status_style = cell_style + self._style(STATUS_COMPONENTS[lane.status])
            change = None if lane.stale else lane.change
            change_style = status_style
            if change is Change.FIXED:
                change_style = cell_style + self._style("case-list--fixed")
            elif change is Change.REGRESSED:
                change_style = cell_style + self._style("case-list--regressed")
            flaky = case.name in lane_board.flaky
            segments.append(Segment(SYMBOLS[lane.status], status_style))
            if listed == "stale":
                # The entry must go: its mark outranks the change mark (a fix, surely).
                segments.append(
                    Segment(STALE_ENTRY_MARK, cell_style + self._style("case-list--stale-entry"))
                )
            else:
                segments.append(Segment(CHANGE_MARKS[change], change_style))
            segments.append(
                Segment(
                    FLAKY_MARK if flaky else " ",
                    cell_style + self._style("case-list--flaky") if flaky else cell_style,
                )
            )
            segments.append(Segment(" " * (lane_width - 3), cell_style))
        mark = AGREEMENT_MARKS.get(board.agreements.get(case.name), " ")
        segments.append(
            Segment(
                mark.ljust(AGREEMENT_WIDTH),
                line_style + self._style("case-list--disagree") if mark != " " else line_style,
            )
        )
        column_style = line_style + self._style("case-list--column")
        segments.append(Segment(_fit(case.name, columns.name), line_style))
        if columns.case_class:
            segments.append(Segment(_fit(case.case_class, columns.case_class), column_style))
        if columns.category:
            segments.append(Segment(_fit(case.category, columns.category), column_style))
        if columns.severity:
            segments.append(Segment(_fit(case.severity or "", columns.severity), column_style))
        if is_cursor:
            cursor = self._style("case-list--cursor")
            segments = [Segment(text, (style or Style()) + cursor) for text, style, _ in segments]
        return Strip(segments)

    def _render_row(self, row: Row, is_cursor: bool, base: Style) -> Strip:
        columns = self._layout(max(self._width(), 20))
        status = row.status
        line_style = base
        if row.stale:
            line_style = base + self._style("case-list--stale")
        listed = self.board.listing(row)
        if listed == "known":
            line_style = line_style + self._style("case-list--known")
        status_style = line_style + self._style(STATUS_COMPONENTS[status])
        change = None if row.stale else row.change
        change_style = status_style
        if change is Change.FIXED:
            change_style = line_style + self._style("case-list--fixed")
        elif change is Change.REGRESSED:
            change_style = line_style + self._style("case-list--regressed")
        column_style = line_style + self._style("case-list--column")
        case = row.case
        time = format_ms(row.elapsed_ms)
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
        if columns.listing:
            word = LISTING_WORDS.get(listed, "") if listed is not None else ""
            listing_style = column_style
            if listed == "stale":
                listing_style = line_style + self._style("case-list--stale-entry")
            segments.append(Segment(_fit(word, columns.listing), listing_style))
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
