"""A scrollable pane of pre-rendered lines that draws only what is on screen.

Diffs of large HTML strings and captured output can run to thousands of lines; this
keeps them cheap to show and to scroll, and never wraps, so that columns and
whitespace marks stay where they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip


class LinePane(ScrollView, can_focus=True):
    """Lines of Rich text, scrolled by keys or mouse; long lines scroll sideways."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j,down", "scroll_down", "Down", show=False),
        Binding("k,up", "scroll_up", "Up", show=False),
        Binding("h,left", "scroll_left", "Left", show=False),
        Binding("l,right", "scroll_right", "Right", show=False),
        Binding("pagedown,space", "page_down", "Page down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("home", "scroll_home", "Top", show=False),
        Binding("end", "scroll_end", "Bottom", show=False),
    ]

    DEFAULT_CSS = """
    LinePane {
        height: 1fr;
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._lines: list[Text] = []
        self._strips: dict[int, Strip] = {}

    @property
    def lines(self) -> list[Text]:
        return self._lines

    @property
    def plain(self) -> str:
        """The pane's text without styles, as a user would copy it."""
        return "\n".join(line.plain for line in self._lines)

    def set_lines(self, lines: Sequence[Text]) -> None:
        """Replace the content and scroll back to the top."""
        self._lines = list(lines)
        self._strips.clear()
        width = max((cell_len(line.plain) for line in self._lines), default=0)
        self.virtual_size = Size(width + 1, len(self._lines))
        self.scroll_to(0, 0, animate=False, immediate=True)
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips.clear()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = y + scroll_y
        width = self.size.width
        base = self.rich_style
        if index >= len(self._lines):
            return Strip.blank(width, base)
        strip = self._strips.get(index)
        if strip is None:
            line = self._lines[index]
            segments = [
                segment for segment in line.render(self.app.console, end="") if segment.text != "\n"
            ]
            strip = Strip(Segment.apply_style(segments, base))
            self._strips[index] = strip
        return strip.crop_extend(scroll_x, scroll_x + width, base)
