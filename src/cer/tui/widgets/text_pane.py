"""A scrollable pane of wrapped rich content, for the short Reason and Case panes."""

from __future__ import annotations

from typing import ClassVar

from rich.console import RenderableType
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static


class TextPane(VerticalScroll, can_focus=True):
    """Wrapped content that scrolls vertically with the same keys as the other panes."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j,down", "scroll_down", "Down", show=False),
        Binding("k,up", "scroll_up", "Up", show=False),
        Binding("pagedown,space", "page_down", "Page down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
    ]

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._body = Static("", classes="text-pane--body")
        self._content: RenderableType = ""

    def compose(self) -> ComposeResult:
        yield self._body

    @property
    def content(self) -> RenderableType:
        return self._content

    def show(self, content: RenderableType) -> None:
        """Replace the content and scroll back to the top."""
        self._content = content
        self._body.update(content)
        self.scroll_home(animate=False)
