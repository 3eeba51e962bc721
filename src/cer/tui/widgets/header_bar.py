"""The header line: what is verified against what, what is watched, what triggered the run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.widget import Widget


@dataclass(frozen=True)
class HeaderState:
    """What the header shows; the app builds one after every change."""

    target: str = ""
    implementation: str = ""
    watch: str = ""
    trigger: str = ""


class HeaderBar(Widget):
    """One line: ``cer · target version · impl · watching N paths · rerun: file changed``."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "header-bar--title",
        "header-bar--muted",
        "header-bar--trigger",
    }

    DEFAULT_CSS = """
    HeaderBar {
        height: 1;
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.state = HeaderState()

    def show(self, state: HeaderState) -> None:
        if state != self.state:
            self.state = state
            self.refresh()

    def render(self) -> Text:
        state = self.state
        title = self.get_component_rich_style("header-bar--title", partial=True)
        muted = self.get_component_rich_style("header-bar--muted", partial=True)
        trigger = self.get_component_rich_style("header-bar--trigger", partial=True)
        text = Text(" ")
        text.append("cer", title)
        parts = [part for part in (state.target, state.implementation) if part]
        for part in parts:
            text.append(" · ", muted)
            text.append(part)
        if state.watch:
            text.append(" · ", muted)
            text.append(state.watch, muted)
        if state.trigger:
            text.append(" · ", muted)
            text.append(state.trigger, trigger)
        return text
